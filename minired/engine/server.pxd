# C types for the compiled build of server.py (setup.py): the server, its counters and the
# connection are extension types whose fields, and the client's and parser's (client.pxd,
# resp.pxd), are read as struct members on every read and every reply. Keep each field list
# equal to the class's __slots__. With dispatch and resp cimported, each command's execute and
# reply encoding are C calls.
cimport cython
from minired.engine cimport dispatch
from minired.protocol cimport resp
from minired.engine.client cimport Client
from minired.engine.config cimport Config
from minired.protocol.resp cimport RequestParser

# The query-buffer sizes data_received compares every read with (querybuf.py's constants).
cdef long long _QB_IOBUF_LEN, _QB_BIG_ARG

cdef class Stats:
    cdef public object started, started_monotonic, error_replies
    # Counted on every read and reply: C integers, so counting allocates nothing.
    cdef public long long connections_received, rejected_connections
    cdef public long long expired_keys, evicted_keys, net_input_bytes, net_output_bytes
    cdef public long long reads_processed, writes_processed, dump_payload_sanitizations, lazyfreed_objects

cdef class Server:
    cdef public object keyspace, clock, blocking, clients, run_id, loop, listeners
    cdef public object port, host, stopped, _expire_task, hooks, features, last_save, slowlog
    cdef public object shutdown_requested, active_expire_enabled, propagate, sync_before_reply
    cdef public object output_buffer_guard, memory, memory_admission, outbox_queue
    cdef public object flush_scheduled, access, tracking, pause, cluster, faults
    cdef public object scan_snapshots, collection_scan_snapshots, debug, latency_events
    cdef public object shutdown_asap, unserved
    cdef public list command_stats
    cdef public Stats stats
    cdef public Config config

cdef class ClientProtocol:
    cdef public object transport, pending
    cdef public object _transport_closing, _transport_write, _transport_buffered, outbox, echo
    cdef public object disruption
    # Set on every read: C values (querybuf.py reads them on the rare reads that need it).
    cdef public long long qb_length, qb_alloc, qb_peak, qb_bulk, qb_tick
    cdef public double qb_next_tick
    cdef public long long rb_size, rb_peak, rb_tick, rb_reset_ms
    cdef public Server server
    cdef public Client client
    cdef public RequestParser parser
    # Every read keeps CLIENT LIST's query-buffer figures (querybuf.py): with the clock reading
    # and the read's size C values, the checks that rarely call into querybuf.py are C compares.
    @cython.locals(now=cython.double, total=cython.longlong)
    cpdef data_received(self, data)
    cpdef _run(self, list commands)
    cpdef _write(self, data)
    cpdef flush(self)
    @cython.locals(size=Py_ssize_t)
    cpdef _send(self, data)
