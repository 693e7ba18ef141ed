# C types for the compiled build of commands/lists.py (setup.py): the helpers every list
# command goes through take the client or database typed, so their keyspace calls are C calls
# (keyspace.pxd) rather than lookups by attribute name.
from minired.client cimport Client
from minired.commands.args cimport parse_int, parse_non_negative
from minired.keyspace cimport Database
cimport cython

cpdef object _list(Database db, object key)
cpdef object _pop_one(Database db, object key, object value, bint left)
cpdef object _move(Database db, object source_key, object source, object target_key,
                   bint from_left, bint to_left)
@cython.locals(db=Database)
cpdef object _push(Client c, object argv, bint left, bint only_existing)
@cython.locals(db=Database)
cpdef object _pop(Client c, object argv, bint left)

# Command handlers (cpdef, so registered without a decorator: see commands/table.py's command).
cpdef object lpush(Client c, list argv)
cpdef object rpush(Client c, list argv)
cpdef object rpop(Client c, list argv)
cpdef object lpop(Client c, list argv)
@cython.locals(db=Database)
cpdef object lmove(Client c, list argv)
@cython.locals(db=Database)
cpdef object rpoplpush(Client c, list argv)
cpdef object lrange(Client c, list argv)
@cython.locals(db=Database)
cpdef object lrem(Client c, list argv)
cpdef object llen(Client c, list argv)
cpdef object lindex(Client c, list argv)
