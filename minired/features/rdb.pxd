# C types for the compiled build of rdb.py (setup.py): the decoders take a typed Reader, so its
# reads are C calls, and so are the format's and the containers' functions they call per
# element (cimported below from rdb_format.pxd, rdb_containers.pxd and rdb_streams.pxd).
import cython

from minired.features.rdb_containers cimport (
    int_text, listpack_element, listpack_items, listpack_of, read_packed, read_ziplist)
from minired.features.rdb_format cimport Reader, encode_length, encode_string, integer_value
from minired.features.rdb_streams cimport decode_stream

cpdef bytes d2string(value)

# Sorted set listpacks: the pair loop on C indexes.
@cython.locals(items=list, count=Py_ssize_t, i=Py_ssize_t, scores=dict)
cpdef dict _zset_listpack(bytes blob)

# The decoders that read through a Reader.
cpdef object decode_object(int rdb_type, Reader reader, bint packing=*)
cpdef set _set(Reader reader)
cpdef dict _decode_hash(Reader reader)
cpdef object _read_quicklist(Reader reader, bint version_2)
