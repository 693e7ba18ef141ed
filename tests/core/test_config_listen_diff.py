"""CONFIG SET port and bind move the listening sockets, as in Redis 7.0: a port or address that
cannot be bound fails with Redis's error and rolls back every parameter of the same CONFIG SET,
and the server keeps listening where it was. Each server here is a fresh one (the suite's
shared servers must stay where they are)."""
import socket
import time

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer, free_port


def _ping(port: int) -> bytes:
    for _ in range(100):  # the new socket is served from the loop's next pass
        try:
            client = RawClient(port)
        except OSError:
            time.sleep(0.02)
            continue
        try:
            return client.call("PING")
        finally:
            client.close()
    raise AssertionError(f"nothing answers on port {port}")


@pytest.fixture
def pair():
    redis = RedisServer().start()
    mini = EmbeddedServer(port=0).start()
    try:
        yield redis, mini
    finally:
        mini.stop()
        redis.stop()


def _both(pair, *args):
    redis, mini = pair
    replies = []
    for port in (redis.port, mini.port):
        client = RawClient(port)
        try:
            replies.append(client.call(*args))
        finally:
            client.close()
    assert replies[0] == replies[1], (args, replies)
    return replies[0]


def test_unusable_port_or_address_rolls_back(pair):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        used = busy.getsockname()[1]
        _both(pair, "CONFIG", "SET", "maxmemory", "10000001", "port", used,
              "client-query-buffer-limit", "10m")
        _both(pair, "CONFIG", "GET", "maxmemory")
        _both(pair, "CONFIG", "GET", "client-query-buffer-limit")
        _both(pair, "CONFIG", "SET", "bind", "192.0.2.1")
        _both(pair, "CONFIG", "GET", "bind")
        _both(pair, "CONFIG", "SET", "maxmemory", "5", "bind", "192.0.2.1 127.0.0.1")
        _both(pair, "CONFIG", "GET", "maxmemory")
    finally:
        busy.close()
    for server in pair:
        assert _ping(server.port) == b"PONG"


def test_same_values_and_a_new_port(pair):
    redis, mini = pair
    for server in pair:
        client = RawClient(server.port)
        assert client.call("CONFIG", "SET", "port", server.port) == b"OK"
        assert client.call("CONFIG", "SET", "bind", "127.0.0.1") == b"OK"
        moved = free_port()
        assert client.call("CONFIG", "SET", "port", moved) == b"OK"
        assert client.call("PING") == b"PONG"  # a connection made before stays open
        assert client.call("CONFIG", "GET", "port") == [b"port", str(moved).encode()]
        assert _ping(moved) == b"PONG"
        with pytest.raises(OSError):
            RawClient(server.port).call("PING")
        assert client.call("CONFIG", "SET", "bind", "-192.0.2.1 127.0.0.1") == b"OK"
        assert _ping(moved) == b"PONG"
        client.close()
        server.port = moved  # (so the fixture can stop it)


def test_bind_addresses_as_config_set_splits_them(pair):
    """At most 16 addresses; the value is split on each space (two spaces make an empty
    address, which cannot be bound), and a '-' address is left out only when it is not this
    host's (a name that does not resolve still fails)."""
    many = " ".join(f"127.0.0.{i}" for i in range(1, 18))
    for value in (many, "127.0.0.1  127.0.0.2", "127.0.0.1 -", "127.0.0.1 -nosuchhost.invalid",
                  "127.0.0.1 -192.0.2.1", "127.0.0.1"):
        _both(pair, "CONFIG", "SET", "bind", value)
        _both(pair, "CONFIG", "GET", "bind")
    for server in pair:
        assert _ping(server.port) == b"PONG"
