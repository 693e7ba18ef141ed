# C types for the compiled build of rdb_format.py (setup.py): the reader's cursor is a C integer,
# the bytes it reads are read through `buf`, an unsigned char pointer into them (every index is
# checked against the length first, as in the .py), and calls between the reader's methods are
# C calls. Keep Reader's fields equal to its __slots__; edit it together with rdb_format.py.
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

cpdef bint is_object_type(int kind)

# The writers a save calls per element: C calls between them.
cpdef object integer_value(raw)
cpdef bytes encode_length(n)
@cython.locals(size=Py_ssize_t)
cpdef bytes encode_string(value, compress_from=*)
