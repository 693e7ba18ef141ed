# C types for the compiled build of resp.py (setup.py): Cython reads this file beside the .py,
# which stays plain Python. The byte scanner is typed: its indexes and lengths become C
# integers and `data` a pointer into buf, so canonical requests parse without a Python object
# per header, and each argument is copied straight out of buf. Every index is checked against
# n before it is read. Edit it together with parse_canonical's locals.
import cython

# The parser's fields are read by server.pxd's connection on every read; keep them equal to
# RequestParser.__slots__.
cdef class RequestParser:
    cdef public object _chunks, buffered, _need, max_bulk_len, max_multibulk, max_inline, error
    cdef public object unauthenticated, _hiredis
    cpdef list feed_and_parse(self, data)

@cython.locals(n=cython.Py_ssize_t, pos=cython.Py_ssize_t, p=cython.Py_ssize_t,
               q=cython.Py_ssize_t, start=cython.Py_ssize_t, stop=cython.Py_ssize_t,
               count=cython.longlong, size=cython.longlong, i=cython.longlong, args=list,
               data=cython.p_uchar)
cpdef Py_ssize_t parse_canonical(bytes buf, list out, long long max_bulk,
                                 long long max_multibulk) except -1

cpdef encode_into(value, proto, list out)
@cython.locals(count=cython.Py_ssize_t)
cpdef _encode_array(object v, object proto, list out)
@cython.locals(size=cython.Py_ssize_t)
cpdef _encode_bulk(object v, object proto, list out)
cpdef _encode_int(object v, object proto, list out)
@cython.locals(size=cython.Py_ssize_t)
cpdef bytes encode_command(object argv)

# Module dicts read per reply: typed, so their lookups are C calls, not method lookups.
cdef dict _ENCODERS
cdef set _ONLY_BYTES
cdef list _BULK_HEADS, _SMALL_INTEGERS, _ARRAY_HEADS
cdef Py_ssize_t _TABLED

@cython.locals(size=cython.Py_ssize_t, i=cython.Py_ssize_t, digit=cython.int,
               value=cython.ulonglong, below=cython.longlong, negative=cython.bint,
               data=cython.p_uchar)
cpdef object string2ll(object raw)
# string2ll's bounds, compared with its unsigned digits: C integers, so the checks build no object.
cdef unsigned long long _POSITIVE_LIMIT, _NEGATIVE_LIMIT
cdef bint _PURE
