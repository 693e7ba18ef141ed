# C types for the compiled build of commands/args.py (setup.py): the integer parsers every
# command module uses are cpdef, and the modules whose .pxd cimports them call them as C
# functions rather than through their Python names.
cimport cython

@cython.locals(size=cython.Py_ssize_t, i=cython.Py_ssize_t, digit=cython.int,
               value=cython.ulonglong, below=cython.longlong, negative=cython.bint,
               data=cython.p_uchar)
cpdef object parse_int(object raw, object error=*)
cdef unsigned long long _POSITIVE_LIMIT, _NEGATIVE_LIMIT
cpdef object parse_non_negative(object raw, object error=*)

@cython.locals(number=cython.longlong)
cpdef bytes int_text(object value)
