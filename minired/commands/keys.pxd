# C types for the compiled build of commands/keys.py (setup.py): the TTL and EXPIRE helpers
# take the client typed, so their keyspace calls are C calls (keyspace.pxd).
from minired.engine.client cimport Client
from minired.engine.args cimport parse_int
from minired.data.keyspace cimport Database
cimport cython

@cython.locals(db=Database)
cpdef object _expire_generic(Client c, object argv, bint relative, object unit_ms)
cpdef object set_deadline(Database db, object key, object when, bint passed)
@cython.locals(db=Database)
cpdef object _ttl_generic(Client c, object key, bint in_ms, bint absolute)

@cython.locals(db=Database, count=cython.Py_ssize_t)
cpdef object _count_existing(Client c, list argv, bint touch)

cpdef bint _lazy_user_del(Client c)

cdef dict _EXPIRE_OPTIONS

