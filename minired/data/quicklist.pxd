# C types for the compiled build of quicklist.py (setup.py): the list type is an extension
# type, so its buffers and length are struct fields. Keep the fields equal to the class's
# __slots__.
cdef class QuickList:
    cdef public list left, nodes, right
    cdef public Py_ssize_t length
