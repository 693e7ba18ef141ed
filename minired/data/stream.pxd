# C types for the compiled build of stream.py (setup.py): a stream and its nodes are extension
# types, so XADD's size bookkeeping and the range walks read their fields as struct members.
# Keep each field list equal to the class's __slots__.
cimport cython
from minired.protocol.resp cimport string2ll

# The listpack size arithmetic runs for every XADD: C integers and C calls.
cpdef int _backlen_size(long long encoded)
cpdef int _int_size(long long value)
cpdef long long _str_size(object raw)
cpdef object _as_signed(object value)
@cython.locals(ms=cython.ulonglong, seq=cython.ulonglong)
cpdef bytes format_id(object stream_id)

cdef class StreamNode:
    cdef public object master_id, master_fields, last_id
    cdef public list ids, values
    cdef public long long deleted, _fixed_bytes, _entries_bytes

    @cython.locals(numfields=cython.Py_ssize_t, i=cython.Py_ssize_t, size=cython.longlong,
                   same_fields=cython.bint)
    cpdef append(self, stream_id, pairs)
    cpdef long long byte_size(self)

cdef class Stream:
    cdef public object nodes, length, last_id, first_id, max_deleted_id, entries_added, groups

    @cython.locals(tail=StreamNode)
    cpdef append(self, stream_id, pairs, node_max_bytes, node_max_entries)
