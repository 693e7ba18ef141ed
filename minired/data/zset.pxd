# C types for the compiled build of zset.py (setup.py): the sorted set is an extension type, so
# its two fields are struct reads, and the changes every ZADD, ZREM and ZREMRANGEBY* makes are
# cpdef. Keep the field list equal to the class's __slots__.
cimport cython

cdef class ZSet:
    cdef public dict scores
    cdef public object order
    cdef public bint skiplist

    @cython.locals(value=object)
    cpdef bint add(self, object member, double score)
    cpdef bint remove(self, object member)
    cpdef Py_ssize_t delete_span(self, Py_ssize_t start, Py_ssize_t stop)
    cpdef list entries(self, Py_ssize_t start, Py_ssize_t stop, bint reverse=*)
    cpdef tuple score_span(self, object spec)
    @cython.locals(scores=dict)
    cpdef bint fits_listpack(self, long long max_entries, long long max_value, object members=*)
