# C types for the compiled build of commands/strings.py (setup.py): SET's helpers take the
# client typed, so their keyspace calls are C calls (keyspace.pxd).
from minired.engine.client cimport Client
from minired.engine.args cimport int_text, parse_int
from minired.data.keyspace cimport Database
cimport cython

@cython.locals(flags=cython.int, bit=cython.int, j=cython.Py_ssize_t, argc=cython.Py_ssize_t)
cpdef tuple _parse_set_options(object argv, Py_ssize_t start, bint is_set)

@cython.locals(value=cython.longlong, now=cython.longlong, in_seconds=cython.int)
cpdef object _deadline(Client c, object raw, int flags, object command_name)
@cython.locals(db=Database)
cpdef object _set_generic(Client c, object key, object value, int flags, object deadline,
                          object ok_reply=*, object abort_reply=*)
@cython.locals(db=Database)
cpdef object _incr_by(Client c, object key, object increment)

cdef dict _OPTION_BITS
# The option flags and expiry bounds, read on every SET with options: C integers.
cdef int _NX, _XX, _GET, _KEEPTTL, _PERSIST, _EX, _PX, _EXAT, _PXAT, _ANY_EXPIRE
cdef long long _MAX_SECONDS, _MAX_EXPIRE

