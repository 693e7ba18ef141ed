# C types for the compiled build of commands/hashes.py (setup.py): HSET's and HINCRBY's
# helpers take the client or database typed, so their keyspace calls are C calls.
cimport cython
from minired.engine.client cimport Client
from minired.engine.args cimport int_text, parse_int
from minired.data.keyspace cimport Database

@cython.locals(db=Database, fields=dict, index=cython.Py_ssize_t)
cpdef object _set_fields(Client c, list argv)
cpdef object _store_number(Database db, object key, object fields, object field, object text)

