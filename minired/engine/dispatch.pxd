# C types for the compiled build of dispatch.py (setup.py): with the client typed, the checks
# every command passes through read the client's and the spec's fields directly (client.pxd,
# table.pxd).
from minired.data.keyspace cimport Clock
from minired.engine.client cimport Client
from minired.engine.table cimport CommandSpec, CommandStats
cimport cython

cpdef object execute(Client c, list argv)
@cython.locals(spec=CommandSpec)
cpdef object _execute(Client c, list argv)
@cython.locals(start=cython.longlong, finish=cython.longlong, elapsed=cython.longlong,
               histogram=list, extras=cython.bint, changes=cython.longlong,
               threshold=cython.longlong, clock=Clock, table=list, stats=CommandStats,
               slot=cython.int)
cpdef object call(Client c, CommandSpec spec, list argv)
# Run for every denyoom command and every command inside MULTI: a C call.
@cython.locals(refused=cython.bint, queued=CommandSpec)
cdef bint _refused_for_memory(Client c, CommandSpec spec) except -1
@cython.locals(bits=cython.int)
cdef int _bit_length(long long nanoseconds)
cdef bint _COMPILED

# Read per command: typed, so the lookup is a C call, not a method lookup.
cdef dict _BY_SPELLING
cdef bint _extras_in_use
cdef dict _busy
cdef dict _loading
