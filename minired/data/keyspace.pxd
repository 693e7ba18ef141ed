# C types for the compiled build of keyspace.py (setup.py): the clock and the databases are
# extension types, so every lookup's bookkeeping (the data and expiry dicts, the clock) is a
# struct read. Keep each field list equal to the class's __slots__.
#
# The lookups and changes every command makes are cpdef: modules that declare a variable as
# Database (the command helpers' .pxd files) call them as C functions, not by attribute name.
cimport cython

from minired.data.monotonic cimport monotonic_ns, realtime_ns

cdef class Clock:
    cdef public object listeners
    # Read and written on every command (dispatch.call) and expiry check: C values, and the
    # clock's arithmetic on them C's.
    cdef public long long offset_ms
    cdef public long depth
    cdef public long long command_start_ns, command_ms, script_ms
    cdef public bint loading
    @cython.locals(now_ns=cython.longlong)
    cpdef long long ms(self)
    @cython.locals(now_ns=cython.longlong)
    cpdef long long us(self)
    cpdef long long enter(self) except? -1
    cpdef long long leave(self) except? -1
    @cython.locals(now_ns=cython.longlong, elapsed_ns=cython.longlong)
    cpdef long long command_instant(self)
    cpdef long long expiry_now(self)
    cpdef bint passed(self, long long deadline_ms)
    cpdef bint already_passed(self, long long deadline_ms)
    cpdef object start_script(self)
    cpdef object end_script(self)

cdef class Database:
    cdef public object index, avg_ttl_hint, tracking, notifier, on_expired, on_freed, keytrack, own_expires
    cdef public long long keyspace_hits, keyspace_misses, expired_lazily, dirty
    cdef public bint keep_expired
    cdef public dict data, expires, watchers, blocking_keys
    cdef public list ready_keys, _expiry_heap
    cdef public dict blocked_types
    cdef public Clock clock

    cpdef object get(self, object key, bint touch=*)
    cpdef object get_typed(self, object key, object cls)
    cpdef bint is_expired(self, object key)
    cpdef bint exists(self, object key)
    cpdef object read(self, object key, bint notify=*, bint touch=*)
    cpdef object read_typed(self, object key, object cls)
    cpdef object set(self, object key, object value, bint keep_ttl=*)
    cpdef bint delete(self, object key)
    cpdef bint delete_without_lookup(self, object key)
    cpdef object pop(self, object key)
    # (final and inline: delete, pop and delete_without_lookup pay no method call for sharing it)
    @cython.final
    cdef inline int _remove(self, object key) except -1
    cpdef object delete_if_empty(self, object key, object value)
    cpdef object signal_modified(self, object key, bint expired=*)
    cpdef object signal_ready(self, object key, object value_type)
    cpdef object set_expiry(self, object key, object deadline_ms)
    cpdef object expiry(self, object key)
    cpdef object _expire(self, object key)
    cpdef object _expire_lazily(self, object key)
