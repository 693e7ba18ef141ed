# C types for the compiled build of commands/streams.py (setup.py): XADD's and XTRIM's
# options are an extension type, read as struct members. Keep the field list equal to the
# class's __slots__.
cdef class TrimArgs:
    cdef public object maxlen, minid, approx, limit, id, id_given, seq_given, no_mkstream
from minired.client cimport Client

# Command handlers, registered by command(...)(handler) after their definition: Cython
# drops a cpdef function's decorators (tests/core/test_packaging.py checks for them).
cpdef object xadd(Client c, list argv)
