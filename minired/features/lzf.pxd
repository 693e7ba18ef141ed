# C types for the compiled build of lzf.py (setup.py): the loops run on C integers and read the
# input through `buf`, an unsigned char pointer into it (every index is checked against the
# length before it is read, as in the .py). Edit it together with lzf.py's functions.
import cython

cdef Py_ssize_t _HSIZE, _MAX_LIT, _MAX_OFF, _MAX_REF
cdef unsigned int _MASK32

cpdef unsigned int _idx(unsigned int h)

@cython.locals(in_len=Py_ssize_t, out_len=Py_ssize_t, lit=Py_ssize_t, run_at=Py_ssize_t,
               ip=Py_ssize_t, in_end=Py_ssize_t, hval=cython.uint, slot=cython.uint,
               ref=Py_ssize_t, off=Py_ssize_t, length=Py_ssize_t, maxlen=Py_ssize_t,
               matched=cython.bint, buf=cython.p_uchar, out=bytearray, htab=dict)
cpdef object compress(bytes data, Py_ssize_t out_len)

cdef bint _COMPILED
cdef Py_ssize_t _MAX_RATIO

cpdef bytes decompress(bytes data, expected)

@cython.locals(i=Py_ssize_t, o=Py_ssize_t, k=Py_ssize_t, ctrl=cython.int, run=Py_ssize_t,
               length=Py_ssize_t, ref=Py_ssize_t, buf=cython.p_uchar, obuf=cython.p_uchar,
               out=bytearray, pattern=bytearray)
cpdef bytes decompress_span(bytes data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t expected)
