# C types for the compiled build of commands/streams.py (setup.py): XADD's and XTRIM's
# options are an extension type, read as struct members (keep the field list equal to the
# class's __slots__), and XADD's helpers take the client and the stream typed, so they read
# the keyspace and the stream as C.
from minired.engine.client cimport Client
from minired.engine.args cimport parse_int
from minired.data.stream cimport Stream, format_id
from minired.data.keyspace cimport Database
cimport cython

cdef class TrimArgs:
    cdef public object maxlen, minid, approx, limit, id, id_given, seq_given, no_mkstream

cpdef object get_stream(Client c, object key)
cpdef object _node_max_entries(Client c)
cpdef object _node_max_bytes(Client c)
@cython.locals(args=TrimArgs, limit_given=cython.bint, argc=cython.Py_ssize_t,
               i=cython.Py_ssize_t, more=cython.Py_ssize_t)
cpdef tuple _parse_add_or_trim(Client c, object argv, bint xadd)

