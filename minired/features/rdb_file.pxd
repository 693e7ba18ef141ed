# C types for the compiled build of rdb_file.py (setup.py): the load loop's cursor and type byte
# are C integers, the type byte read through `buf`, an unsigned char pointer into the file's
# bytes (checked against the length first, as in the .py), and the reader's methods are C calls
# (rdb_format.pxd). Edit it together with _read.
import cython

from minired.features.rdb_format cimport Reader, is_object_type

@cython.locals(data=bytes, buf=cython.p_uchar, pos=Py_ssize_t, size=Py_ssize_t,
               kind=cython.int, keys=Py_ssize_t, expired=Py_ssize_t, target=dict,
               target_expires=dict)
cpdef _read(Reader reader, loaded, list staged, list staged_expires, now_ms, keep_expired,
            databases)
