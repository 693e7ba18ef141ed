"""Access control: requirepass/AUTH/HELLO compared with Redis, protected mode from a
non-loopback address of this machine, the Unix socket."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from minired.embed import EmbeddedServer
from minired.protocol import errors
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer

from .helpers import non_loopback_ipv4

AUTH_SCRIPT = [
    ("PING",), ("GET", "k"), ("AUTH",), ("AUTH", "wrong"), ("AUTH", "a", "b", "c"),
    ("AUTH", "nobody", "secret"), ("HELLO", "3"), ("HELLO", "2", "AUTH", "default", "wrong"),
    ("HELLO", "2", "SETNAME", "x"), ("CLIENT", "ID"), ("MULTI",), ("AUTH", "secret"),
    ("AUTH", "wrong"), ("PING",), ("AUTH", "default", "secret"), ("SET", "k", "v"), ("GET", "k"),
    ("CONFIG", "SET", "requirepass", ""), ("AUTH", "secret"), ("AUTH", "x"),
    ("CONFIG", "SET", "requirepass", "other"), ("PING",), ("AUTH", "other"), ("RESET",), ("PING",),
    ("HELLO", "2", "AUTH", "default", "other"), ("PING",),
]


@pytest.fixture
def protected_pair():
    with RedisServer("--requirepass", "secret") as redis_server, \
            EmbeddedServer(requirepass="secret") as minired:
        yield redis_server.port, minired.port


def _replies(port: int, script) -> list:
    client = RawClient(port)
    try:
        out = []
        for command in script:
            reply = client.call(*command)
            if command[0] == "HELLO" and isinstance(reply, list):
                reply = "hello-ok"  # the map carries ids and versions that differ by design
            out.append(reply)
        return out
    finally:
        client.close()


def test_auth_conversation_matches_redis(protected_pair):
    redis_port, minired_port = protected_pair
    expected = _replies(redis_port, AUTH_SCRIPT)
    actual = _replies(minired_port, AUTH_SCRIPT)
    assert actual == expected


def test_clients_connected_before_a_password_change(protected_pair):
    """An authenticated client stays so; an unauthenticated one is let in once the password is
    removed and stopped again once one is set (Redis checks the password at each command)."""
    results = []
    for port in protected_pair:
        admin, idle = RawClient(port), RawClient(port)
        steps = [idle.call("PING"), admin.call("AUTH", "secret"),
                 admin.call("CONFIG", "SET", "requirepass", ""), idle.call("PING"),
                 admin.call("CONFIG", "SET", "requirepass", "next"), idle.call("PING"),
                 admin.call("PING"), admin.call("AUTH", "secret"), admin.call("PING")]
        results.append(steps)
        admin.call("CONFIG", "SET", "requirepass", "secret")
        admin.close()
        idle.close()
    assert results[1] == results[0]


def test_redis_py_with_password(protected_pair):
    _, port = protected_pair
    # (no retries: redis-py 8 retries a refused AUTH with backoff, ~4 s a client on either
    # server, which the test does not look at)
    once = {"retry": Retry(NoBackoff(), 0)}
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, **once).ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, password="wrong", **once).ping()
    client = redis.Redis(port=port, password="secret", protocol=3)
    assert client.ping() is True
    assert client.set("k", "v") and client.get("k") == b"v"
    client.close()


def test_default_bind_is_loopback():
    with EmbeddedServer() as minired:
        sockets = minired.call(lambda: [s.getsockname() for srv in minired.server.listeners
                                        for s in srv.sockets])
        assert sockets and all(addr[0] == "127.0.0.1" for addr in sockets)


LOCAL_ADDRESS = non_loopback_ipv4()
needs_address = pytest.mark.skipif(LOCAL_ADDRESS is None,
                                   reason="this machine has no non-loopback IPv4 address")


def _greeting(host: str, port: int) -> bytes:
    """What the server says to a client from host that has sent nothing yet."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(0.5)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return b"<nothing>"
        return data + (b"<closed>" if not sock.recv(65536) else b"")


class _RedisOnAllAddresses(RedisServer):
    """A real Redis listening on 0.0.0.0 with no password and protected mode on (the suite's
    RedisServer binds 127.0.0.1 only): the last --bind wins, as in a configuration file."""

    def __init__(self) -> None:
        super().__init__("--bind", "0.0.0.0")


@needs_address
def test_protected_mode_denies_non_loopback_clients_as_redis():
    with _RedisOnAllAddresses() as redis_server, EmbeddedServer(host="0.0.0.0") as minired:
        expected = _greeting(LOCAL_ADDRESS, redis_server.port)
        actual = _greeting(LOCAL_ADDRESS, minired.port)
        assert actual == expected == b"-" + errors.PROTECTED_MODE.encode() + b"\r\n<closed>"
        # Loopback clients are let in, and can lift protected mode or set a password.
        admin = RawClient(minired.port)
        assert admin.call("PING") == b"PONG"
        assert admin.call("CONFIG", "SET", "protected-mode", "no") == b"OK"
        assert _greeting(LOCAL_ADDRESS, minired.port) == b"<nothing>"
        assert admin.call("CONFIG", "SET", "protected-mode", "yes") == b"OK"
        assert admin.call("CONFIG", "SET", "requirepass", "pw") == b"OK"
        remote = RawClient(minired.port, host=LOCAL_ADDRESS)
        assert remote.call("PING").message == "NOAUTH Authentication required."
        assert remote.call("AUTH", "pw") == b"OK" and remote.call("PING") == b"PONG"
        remote.close()
        admin.close()


@needs_address
def test_protected_mode_off_from_the_command_line():
    with EmbeddedServer(host="0.0.0.0", protected_mode="no") as minired:
        remote = RawClient(minired.port, host=LOCAL_ADDRESS)
        assert remote.call("PING") == b"PONG"
        remote.close()


def test_unix_socket_without_a_port():
    directory = tempfile.mkdtemp(prefix="minired-sock-")
    path = os.path.join(directory, "minired.sock")
    # No bind address: the Unix socket is the only listener.
    with EmbeddedServer(host="", unixsocket=path, unixsocketperm="700") as minired:
        assert len(minired.server.listeners) == 1 and os.path.exists(path)
        assert oct(os.stat(path).st_mode & 0o777) == "0o700"
        client = redis.Redis(unix_socket_path=path)
        assert client.ping() is True
        assert client.set("k", "v") and client.get("k") == b"v"
        info = client.client_info()
        assert info["id"]
        # As Redis shows a unix socket's client: the socket's path for both ends, flag U.
        assert (info["addr"], info["laddr"], info["flags"]) == (f"{path}:0", f"{path}:0", "U")
        monitor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        monitor.connect(path)
        monitor.sendall(b"MONITOR\r\n")
        assert monitor.recv(100) == b"+OK\r\n"
        client.set("seen", "1")
        assert f'[0 unix:{path}] "SET" "seen" "1"'.encode() in monitor.recv(1000)
        monitor.close()
        client.close()
        # Unix-socket clients count as local for protected mode.
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(path)
        raw.sendall(b"PING\r\n")
        assert raw.recv(100) == b"+PONG\r\n"
        raw.close()
    shutil.rmtree(directory, ignore_errors=True)
