# C types for the compiled build of stream.py (setup.py): a stream and its nodes are extension
# types, so XADD's size bookkeeping and the range walks read their fields as struct members.
# Keep each field list equal to the class's __slots__.
cimport cython

cdef class StreamNode:
    cdef public object master_id, master_fields, ids, values, deleted, last_id, _fixed_bytes
    cdef public object _entries_bytes

cdef class Stream:
    cdef public object nodes, length, last_id, first_id, max_deleted_id, entries_added, groups

    @cython.locals(tail=StreamNode)
    cpdef append(self, stream_id, pairs, node_max_bytes, node_max_entries)
