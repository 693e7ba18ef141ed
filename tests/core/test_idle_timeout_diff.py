"""The `timeout` parameter, side by side with Redis: a client silent for longer is closed
(clientsCronHandleTimeout), with no reply, except a subscriber, a blocked client and a MONITOR;
set at start or with CONFIG SET, and 0 closes nobody. Three servers of a kind wait together
for their silent clients to be closed (2 to 3 s of real silence), then the others, silent as
long, are looked at."""
from __future__ import annotations

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
