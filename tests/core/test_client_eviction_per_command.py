"""Client eviction before every command (processCommand's evictClients), whatever maxmemory:
a client whose replies wait unsent past maxmemory-clients is gone before the next command of
any client runs, and its own next command is not run. Driven in-process (no sockets): the
replies of a round wait in their client's outbox until the test ends the round, and a
transport that is never read keeps what it was given."""
from __future__ import annotations

from minired.engine.server import ClientProtocol
from tests.core.test_reply_batching import RecordingTransport, command, connect, server_on_a_loop


class UnreadTransport(RecordingTransport):
    """A peer that reads nothing until told: everything written stays queued."""

    def __init__(self) -> None:
        super().__init__()
        self.queued = 0

    def write(self, data: bytes) -> None:
        super().write(data)
        self.queued += len(data)

    def get_write_buffer_size(self) -> int:
        return self.queued


def _server(limit: bytes):
    server = server_on_a_loop()
    server.loop.call_later = lambda *args: None  # (client eviction's 100 ms cron)
    admin = connect(server)
    admin.data_received(command(b"CLIENT", b"SETNAME", b"admin"))
    admin.data_received(command(b"CLIENT", b"NO-EVICT", b"on"))
    # (built small: a 120 KB SET would leave admin a query buffer of that size)
    admin.data_received(command(b"SETRANGE", b"big", b"119999", b"v"))
    admin.data_received(command(b"CONFIG", b"SET", b"maxmemory-clients", limit))
    server.loop.end_round()
    return server, admin


def _unread(server) -> ClientProtocol:
    protocol = ClientProtocol(server)
    protocol.connection_made(UnreadTransport())
    return protocol


def _names(server, admin) -> list[bytes]:
    admin.transport.writes.clear()
    admin.data_received(command(b"CLIENT", b"LIST"))
    server.loop.end_round()
    listing = b"".join(admin.transport.writes)
    return [field[5:] for field in listing.split() if field.startswith(b"name=")]


def test_unsent_replies_over_the_limit_evict_their_client_before_another_command():
    server, admin = _server(b"200kb")
    reader = connect(server)
    reader.data_received(command(b"CLIENT", b"SETNAME", b"reader"))
    reader.data_received(command(b"GET", b"big") * 2)  # 240 KB of replies, not sent yet
    assert not reader.client.closing
    # The next command, another client's, finds the clients over the limit: the reader goes
    # before it runs (no maxmemory is set: nothing else looks before it).
    assert _names(server, admin) == [b"admin"]
    assert reader.client.closing
    assert server.hooks.client_eviction.evicted == 1


def test_a_client_evicted_before_its_own_command_does_not_run_it():
    server, admin = _server(b"200kb")
    reader = connect(server)
    reader.data_received(command(b"GET", b"big") * 2)  # (its replies wait in its outbox)
    reader.data_received(command(b"DEL", b"big"))
    assert reader.client.closing
    assert b"big" in server.keyspace.dbs[0].data  # its DEL never ran
    assert server.hooks.client_eviction.evicted == 1


def test_replies_the_peer_has_read_since_count_no_more():
    server, admin = _server(b"250kb")
    reader = _unread(server)
    reader.data_received(command(b"GET", b"big"))
    server.loop.end_round()  # written, and all of it queued: the peer reads nothing
    assert not reader.client.closing
    reader.transport.queued = 0  # the peer has read it all (the transport says nothing)
    other = connect(server)
    other.data_received(command(b"GET", b"big"))  # 120 KB more: over, had the reader's stayed
    server.loop.end_round()
    assert _names(server, admin) == [b"admin", b"", b""]
    assert server.hooks.client_eviction.evicted == 0


def test_a_client_whose_replies_stay_queued_is_evicted_once_written():
    server, admin = _server(b"200kb")
    reader = _unread(server)
    reader.data_received(command(b"GET", b"big") * 2)
    server.loop.end_round()  # the write leaves 240 KB queued: over the limit at once
    assert reader.client.closing
    assert server.hooks.client_eviction.evicted == 1


def test_nothing_is_measured_while_maxmemory_clients_is_0():
    server, admin = _server(b"0")
    reader = connect(server)
    reader.data_received(command(b"GET", b"big") * 5)
    assert _names(server, admin) == [b"admin", b""]
    eviction = server.hooks.client_eviction  # (made by CLIENT NO-EVICT)
    assert eviction.usage == {} and eviction.total == 0


def test_debug_client_eviction_shows_the_buckets_as_redis_does():
    server, admin = _server(b"200kb")
    server.config.set("enable-debug-command", "yes")
    admin.transport.writes.clear()
    admin.data_received(command(b"DEBUG", b"CLIENT-EVICTION"))
    server.loop.end_round()
    reply = b"".join(admin.transport.writes)
    header, text = reply.split(b"\r\n", 1)
    assert header == b"$%d" % (len(text) - 2)  # (a verbatim string, in RESP2 a bulk one)
    lines = text[:-2].decode().splitlines()
    assert len(lines) == 19
    # (the admin is NO-EVICT: counted, in no bucket)
    assert lines[0] == "bucket          0 -      32767: tot-mem:          0, clients: 0"
    assert lines[1] == "bucket      32768 -      65535: tot-mem:          0, clients: 0"
    assert lines[18] == "bucket 4294967296+            : tot-mem:          0, clients: 0"
    admin.data_received(command(b"CONFIG", b"SET", b"maxmemory-clients", b"0"))
    server.loop.end_round()
    admin.transport.writes.clear()
    admin.data_received(command(b"DEBUG", b"CLIENT-EVICTION"))
    server.loop.end_round()
    assert b"".join(admin.transport.writes) == b"-ERR maxmemory-clients is disabled.\r\n"


def test_no_evict_on_takes_a_client_out_of_the_buckets_whatever_its_figure():
    server, admin = _server(b"200kb")
    other = connect(server)
    other.data_received(command(b"PING"))
    other.data_received(command(b"CLIENT", b"NO-EVICT", b"on"))  # (its figure unchanged)
    eviction = server.hooks.client_eviction
    assert other.client in eviction.usage
    assert all(other.client not in bucket for bucket in eviction.buckets)
    other.data_received(command(b"CLIENT", b"NO-EVICT", b"off"))
    assert any(other.client in bucket for bucket in eviction.buckets)
