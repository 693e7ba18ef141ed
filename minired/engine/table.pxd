# C types for the compiled build of table.py (setup.py): a command spec is an extension type,
# so dispatch (dispatch.pxd) reads its handler, bounds and counters as struct members. Keep
# each field list equal to the class's __slots__.
cdef class CommandSpec:
    cdef public object name, handler, arity, flags, first_key, last_key, step, group
    cdef public object key_finder, parent, subcommands, summary, denyoom, write, min_args, max_args
    cdef public bint protected
    cdef public Py_ssize_t index

cdef class CommandStats:
    cdef public object latency_histogram, kept_histogram
    # INFO commandstats counters: C integers, so counting a call allocates nothing.
    cdef public long long calls, nanoseconds, failed_calls, rejected_calls
