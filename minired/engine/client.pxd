# The compiled build (setup.py) makes Client an extension type, so modules that declare a
# variable as Client (dispatch.pxd) read its fields as C struct members instead of through
# attribute lookup. client.py stays plain Python with the same fields in __slots__; keep the
# two lists equal. Modules that cimport this one are loaded from source together with it when
# client.py was edited after the build (see minired/__init__.py).
from minired.data.keyspace cimport Database
from minired.engine.config cimport Config

cdef class Client:
    cdef public object id, server, addr, laddr, fd, _send, _close, db_index, protocol
    cdef public Database db
    cdef public object name, lib_name, lib_ver, authenticated, created, last_interaction
    cdef public object last_command, multi, multi_failed, in_exec, in_script, watched
    cdef public object channels, patterns, shard_channels, blocked, closing, close_after_reply
    cdef public object flags, output_soft_limit_since, connection, user
    # Checked on every command: C values, so the check is a struct read.
    cdef public bint user_restricted
    cdef public int reply_mode
    cdef public long long changes
    # The server's configuration: the settings dispatch checks per command
    # (slowlog-log-slower-than, min-replicas-to-write) are struct reads, not two attribute
    # lookups through the untyped `server`.
    cdef public Config config
    cdef public list command_stats
