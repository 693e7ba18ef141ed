"""processCommand's order when memory is over maxmemory: clients over maxmemory-clients are
evicted first (evictClients), and a command whose own client that evicts is not run (keys
are evicted only after). Driven in-process (no sockets): the replies a client has not been sent yet
wait in its outbox until the test ends the loop's round."""
from __future__ import annotations

from tests.core.test_reply_batching import command, connect, server_on_a_loop


def test_a_client_evicted_by_the_admission_does_not_run_its_command():
    server = server_on_a_loop()
    server.loop.call_later = lambda *args: None  # (client eviction's 100 ms cron)
    admin = connect(server)
    admin.data_received(command(b"CLIENT", b"NO-EVICT", b"on"))
    # (built small: a 100 KB SET leaves the admin a query buffer of that size, which counts
    # toward maxmemory-clients though the admin is NO-EVICT, as in Redis)
    admin.data_received(command(b"SETRANGE", b"big", b"99999", b"v"))
    for j in range(20):
        admin.data_received(command(b"SET", b"k%d" % j, b"v"))
    # (no key may go: memory stays over maxmemory, and only clients can be evicted)
    admin.data_received(command(b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-random"))
    admin.data_received(command(b"CONFIG", b"SET", b"maxmemory-clients", b"128kb"))
    # Over maxmemory already: the next command's admission evicts.
    admin.data_received(command(b"CONFIG", b"SET", b"maxmemory", b"1"))
    server.loop.end_round()

    reader = connect(server)
    reader.data_received(command(b"GET", b"big") * 3)  # 300 KB of replies, not sent yet
    assert not reader.client.closing
    # DEL may run over maxmemory (it is not denyoom): only the eviction keeps it from running.
    reader.data_received(command(b"DEL", b"k1"))
    assert reader.client.closing  # evicted: the largest client, over maxmemory-clients
    assert b"k1" in server.keyspace.dbs[0].data  # and its DEL never ran
    info = server.hooks.client_eviction
    assert info is not None and info.evicted == 1
