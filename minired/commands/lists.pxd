# C types for the compiled build of commands/lists.py (setup.py): the helpers every list
# command goes through take the client or database typed, so their keyspace calls are C calls
# (keyspace.pxd) rather than lookups by attribute name.
from minired.engine.client cimport Client
from minired.engine.args cimport parse_int, parse_non_negative
from minired.data.keyspace cimport Database
cimport cython

cpdef object _list(Database db, object key)
cpdef object _pop_one(Database db, object key, object value, bint left)
cpdef object _move(Database db, object source_key, object source, object target_key,
                   bint from_left, bint to_left)
@cython.locals(db=Database)
cpdef object _push(Client c, object argv, bint left, bint only_existing)
@cython.locals(db=Database)
cpdef object _pop(Client c, object argv, bint left)

