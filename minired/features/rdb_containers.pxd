# C types for the compiled build of rdb_containers.py (setup.py): a listpack's walk reads
# through `buf`, an unsigned char pointer into its bytes (every index checked against the
# length first, as in the .py), and the per-element writers are C calls. Edit it together with
# rdb_containers.py.
import cython

from minired.features.rdb_format cimport Reader, integer_value

cdef Py_ssize_t _SHARED_INTEGERS
cdef list _INT_TEXT

cpdef bytes int_text(long long value)

@cython.locals(entries=list, buf=cython.p_uchar, pos=Py_ssize_t, end=Py_ssize_t,
               first=cython.int, size=Py_ssize_t, n=Py_ssize_t, value=cython.int,
               width=Py_ssize_t, made=bint)
cpdef list listpack_items(bytes blob, bint text=*, bint keys_only=*)

cpdef bytes _lp_backlen(size)
cpdef bytes _lp_int(value)
@cython.locals(n=Py_ssize_t)
cpdef bytes listpack_element(item)
cpdef bytes listpack_of(list elements)
cpdef bytes element_text(item)

cpdef bytes read_packed(Reader reader, object check)
cpdef bytes read_ziplist(Reader reader)
