# C types for the compiled build of config.py (setup.py): the configuration is an extension
# type, so the values every read consults (proto-max-bulk-len, requirepass, the query buffer
# limit) are struct reads. Keep the field list equal to Config.__slots__.
cdef class Config:
    cdef public object values, _numbers, databases, requirepass, proto_max_bulk_len
    cdef public object client_query_buffer_limit, maxclients, maxmemory, busy_reply_threshold_ms
    cdef public object time_control, aof_write_error
    # Compared with every command's duration (dispatch.call): a C value (capped in Config).
    cdef public long long slowlog_threshold_ns, latency_threshold_ns
    cdef public bint writes_need_replicas, bgsave_failed, writes_refused_on_disk, writes_refused
    cdef public bint replicating, writes_refused_on_replica, master_link_up, stale_refused
    cdef public bint lazy_user_del
    # Whether dispatch runs its memory checks before a command (maxmemory or maxmemory-clients
    # set): one C test per command while neither is.
    cdef public bint memory_checks, clients_limited
    cdef public long long good_replicas
    # (read per XADD and per socket read: a C call from modules that type the Config)
    cpdef object number(self, str name)
