# C types for the compiled build of server.py (setup.py): the connection is an extension type
# whose fields, and its client's and parser's (client.pxd, resp.pxd), are read as struct
# members on every read and every reply. Keep the fields equal to ClientProtocol.__slots__.
from minired.client cimport Client
from minired.resp cimport RequestParser

cdef class ClientProtocol:
    cdef public object server, transport, pending
    cdef public Client client
    cdef public RequestParser parser
