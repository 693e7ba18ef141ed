# C types for the compiled build of quicklist.py (setup.py): the list type is an extension
# type, so its buffers and length are struct fields. Keep the fields equal to the class's
# __slots__.
cimport cython

cdef class QuickList:
    cdef public list left, nodes, right
    cdef public Py_ssize_t length

    @cython.locals(limit=Py_ssize_t, removed=Py_ssize_t, taken=Py_ssize_t, part=Py_ssize_t,
                   from_tail=bint, parts=list, emptied=list, items=list, kept=list)
    cpdef Py_ssize_t remove_equal(self, object item, Py_ssize_t count)
