# C types for the compiled build of keyspace.py (setup.py): the clock and the databases are
# extension types, so every lookup's bookkeeping (the data and expiry dicts, the clock) is a
# struct read. Keep each field list equal to the class's __slots__.
cdef class Clock:
    cdef public object offset_ms, listeners

cdef class Database:
    cdef public object index, data, expires, watchers, blocking_keys, ready_keys, _expiry_heap
    cdef public object avg_ttl_hint
    cdef public Clock clock
