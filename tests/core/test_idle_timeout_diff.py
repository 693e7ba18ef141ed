"""The `timeout` parameter, side by side with Redis: a client silent for longer is closed
(clientsCronHandleTimeout), with no reply, except a subscriber, a blocked client and a MONITOR;
set at start or with CONFIG SET, and 0 closes nobody. Three servers of a kind wait together
for their silent clients to be closed (2 to 3 s of real silence), then the others, silent as
long, are looked at."""
from __future__ import annotations

import time

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import start_server
from tests.support.waiting import wait_until


def _closed(client: RawClient) -> bool:
    """Whether the server closed the connection; what it sent before is kept in client.seen."""
    client.sock.setblocking(False)
    seen = getattr(client, "seen", b"")
    try:
        while True:
            chunk = client.sock.recv(65536)
            if not chunk:
                return True
            seen += chunk
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        client.seen = seen
        client.sock.setblocking(True)


def _connected(port: int) -> RawClient:
    client = RawClient(port)
    assert client.call("PING") == b"PONG"
    return client


@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_silent_clients_are_closed_but_not_subscribers_blocked_clients_or_monitors(kind):
    at_start = start_server(kind, "--timeout", "1")
    set_later = start_server(kind)
    turned_off = start_server(kind, "--timeout", "1")
    clients = []

    def connected(port: int) -> RawClient:
        clients.append(_connected(port))
        return clients[-1]

    try:
        assert connected(set_later.port).call("CONFIG", "SET", "timeout", "1") == b"OK"
        assert connected(turned_off.port).call("CONFIG", "SET", "timeout", "0") == b"OK"
        silent = [connected(server.port) for server in (at_start, set_later)]
        kept = connected(turned_off.port)
        subscriber = connected(at_start.port)
        subscriber.call("SUBSCRIBE", "news")
        blocked = connected(at_start.port)
        blocked.send("BLPOP", "nothing", "0")
        monitor = connected(at_start.port)
        assert monitor.call("MONITOR") == b"OK"

        wait_until(lambda: all(_closed(client) for client in silent), "the silent clients closed")
        assert [client.seen for client in silent] == [b"", b""]  # (no reply: freeClient)
        for survivor in (kept, subscriber, blocked, monitor):
            assert not _closed(survivor)
        assert kept.call("PING") == b"PONG"
        asking = connected(at_start.port)
        assert asking.call("LPUSH", "nothing", "x") == 1
        assert blocked.read() == [b"nothing", b"x"]
        assert asking.call("PUBLISH", "news", "hi") == 1
        assert subscriber.read() == [b"message", b"news", b"hi"]
    finally:
        for client in clients:
            client.close()
        for server in (at_start, set_later, turned_off):
            server.stop()


def _idle_of(listing: bytes, name: str) -> int:
    for line in listing.decode().splitlines():
        fields = dict(field.split("=", 1) for field in line.split(" ") if "=" in field)
        if fields["name"] == name:
            return int(fields["idle"])
    raise AssertionError(f"no client named {name} in {listing!r}")


@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_a_client_written_to_is_not_idle(kind):
    """Redis's writeToClient sets lastinteraction: a client that sends nothing but is sent
    invalidations (tracking, BCAST) outlives `timeout`, and neither it nor a subscriber that
    is sent messages reads as idle in CLIENT LIST, after 3.5 s of silence of their own."""
    server = start_server(kind, "--timeout", "2")
    tracked, subscriber, writer = (_connected(server.port) for _ in range(3))
    try:
        tracked.call("CLIENT", "SETNAME", "tracked")
        assert tracked.call("HELLO", "3")
        assert tracked.call("CLIENT", "TRACKING", "ON", "BCAST") == b"OK"
        subscriber.call("CLIENT", "SETNAME", "subscriber")
        subscriber.call("SUBSCRIBE", "news")
        for _ in range(14):  # 3.5 s: past the timeout, and idle would read 3
            writer.call("SET", "k", "v")
            writer.call("PUBLISH", "news", "hi")
            time.sleep(0.25)
        listing = writer.call("CLIENT", "LIST")
        assert not _closed(tracked)
        assert b"invalidate" in tracked.seen
        # (0 or 1: Redis counts in whole seconds of its cached clock, and the last message was
        # written a moment before; 3 if the writes did not count)
        assert _idle_of(listing, "subscriber") <= 1
        assert _idle_of(listing, "tracked") <= 1
    finally:
        for client in (tracked, subscriber, writer):
            client.close()
        server.stop()
