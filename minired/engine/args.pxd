# C types for the compiled build of engine/args.py (setup.py): the integer parsers every
# command module uses are cpdef, and the modules whose .pxd cimports them call them as C
# functions rather than through their Python names.
cimport cython

from minired.protocol.resp cimport string2ll

cpdef object parse_int(object raw, object error=*)
cpdef object parse_non_negative(object raw, object error=*)
cpdef object parse_float(object raw, object error=*)
cpdef object parse_range_double(object raw)

@cython.locals(number=cython.longlong)
cpdef bytes int_text(object value)
