# C types for the compiled build of commands/hashes.py (setup.py): HSET's and HINCRBY's
# helpers take the client or database typed, so their keyspace calls are C calls.
cimport cython
from minired.client cimport Client
from minired.commands.args cimport int_text, parse_int
from minired.keyspace cimport Database

@cython.locals(db=Database, fields=dict, index=cython.Py_ssize_t)
cpdef object _set_fields(Client c, list argv)
cpdef object _store_number(Database db, object key, object fields, object field, object text)

# Command handlers (cpdef, so registered without a decorator: see commands/table.py's command).
cpdef object hexists(Client c, list argv)
cpdef object hget(Client c, list argv)
cpdef object hset(Client c, list argv)
cpdef object hgetall(Client c, list argv)
@cython.locals(db=Database)
cpdef object hdel(Client c, list argv)
@cython.locals(db=Database)
cpdef object hincrby(Client c, list argv)
