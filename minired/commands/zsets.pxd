# C types for the compiled build of commands/zsets.py (setup.py): ZADD's helper and the
# after-removal bookkeeping take the client or database typed, so their keyspace calls are
# C calls (keyspace.pxd).
from minired.engine.client cimport Client
from minired.engine.args cimport parse_float, parse_int, parse_non_negative, parse_range_double
from minired.data.keyspace cimport Database
from minired.data.zset cimport ZSet
cimport cython

@cython.locals(db=Database, zset=ZSet)
cpdef object _zadd(Client c, object argv, bint incr)
@cython.locals(db=Database, zset=ZSet)
cpdef object _add_one(Client c, object key, double score, object member)
@cython.locals(zset=ZSet)
cpdef object _zrange(Client c, object argv, Py_ssize_t source_index, object by, object reverse,
                    object destination=*)

@cython.locals(limit=Py_ssize_t, scores=dict)
cdef object _shrinking(Client c, ZSet zset, object members=*, Py_ssize_t first=*,
                       Py_ssize_t stop=*)

cdef dict _ZADD_FLAGS
cdef frozenset _SCORE_STARTS

