# C types for the compiled build of rdb.py (setup.py): the reader's cursor is a C integer, the
# bytes it reads are read through `buf`, an unsigned char pointer into them (every index is
# checked against the length first, as in the .py), and calls between the reader's methods are
# C calls. Keep Reader's fields equal to its __slots__; edit it together with rdb.py.
import cython

# LZF's decompress_span as a C call from the reader's string reads.
from minired.features cimport lzf

cdef class Reader:
    cdef public bytes data
    cdef public Py_ssize_t pos
    cdef public bint deep
    cdef public Py_ssize_t sanitized
    cpdef bytes take(self, n)
    @cython.locals(data=bytes, buf=cython.p_uchar, pos=Py_ssize_t)
    cpdef int byte(self) except -1
    @cython.locals(first=cython.int, kind=cython.int)
    cpdef tuple length(self)
    @cython.locals(data=bytes, buf=cython.p_uchar, pos=Py_ssize_t, i=Py_ssize_t,
                   value=cython.ulonglong)
    cpdef object big_endian(self, Py_ssize_t n)
    @cython.locals(data=bytes, buf=cython.p_uchar, pos=Py_ssize_t)
    cpdef object count(self)
    @cython.locals(data=bytes, buf=cython.p_uchar, pos=Py_ssize_t, size=Py_ssize_t,
                   end=Py_ssize_t, first=cython.int, compressed_len=cython.int,
                   plain_len=cython.int)
    cpdef bytes string(self)
    # (the stream fields' and old scores' reads: C calls from the decoders below)
    @cython.locals(first=cython.int)
    cpdef object unchecked_count(self)
    cpdef object double(self)
    cpdef object string_double(self)
    cpdef object ms(self)
    cpdef tuple stream_id(self)

cdef Py_ssize_t _SHARED_INTEGERS
cdef list _INT_TEXT

cpdef bytes _int_text(long long value)
cpdef bint is_object_type(int kind)

@cython.locals(entries=list, buf=cython.p_uchar, pos=Py_ssize_t, end=Py_ssize_t,
               first=cython.int, size=Py_ssize_t, n=Py_ssize_t, value=cython.int,
               width=Py_ssize_t, made=bint)
cpdef list listpack_items(bytes blob, bint text=*, bint keys_only=*)

# The writers a save calls per element: C calls between them.
cpdef object integer_value(raw)
cpdef bytes encode_length(n)
@cython.locals(size=Py_ssize_t)
cpdef bytes encode_string(value, compress_from=*)
cpdef bytes _lp_backlen(size)
cpdef bytes _lp_int(value)
@cython.locals(n=Py_ssize_t)
cpdef bytes _lp_element(item)
cpdef bytes _listpack_of(list elements)
cpdef bytes d2string(value)

# Sorted set listpacks: the pair loop on C indexes.
@cython.locals(items=list, count=Py_ssize_t, i=Py_ssize_t, scores=dict)
cpdef dict _zset_listpack(bytes blob)

# The decoders that read through a Reader: typed, so their reads are C calls (a method call on
# an untyped reader costs ~1,100 instructions; a loaded stream made ~13 of them).
cpdef object decode_object(int rdb_type, Reader reader, bint packing=*)
cpdef bytes _read_packed(Reader reader, object check)
cpdef bytes _read_ziplist(Reader reader)
cpdef set _set(Reader reader)
cpdef dict _decode_hash(Reader reader)
cpdef object _read_quicklist(Reader reader, bint version_2)
cpdef object _decode_stream(Reader reader, bint version_2)
cpdef object _decode_node(tuple master_id, bytes blob, bint deep=*)
cpdef bytes _as_bytes(item)
