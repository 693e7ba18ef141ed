# C types for the compiled build of rdb_streams.py (setup.py): the decoders read through a typed
# Reader, so its reads are C calls (a method call on an untyped reader costs ~1,100
# instructions; a loaded stream made ~13 of them), as are the container reads per field.
from minired.features.rdb_containers cimport element_text, listpack_items
from minired.features.rdb_format cimport Reader, encode_length, encode_string

cpdef object decode_stream(Reader reader, bint version_2)
cpdef object _decode_node(tuple master_id, bytes blob, bint deep=*)
