"""Client output buffer limits compared with real Redis, as unit/obuf-limits tests them: a reply
that takes its client past the hard limit is never sent (the client is closed first), a command
building a huge reply stops, a client over its soft limit is closed once soft-seconds pass even
with no more traffic, and CLIENT LIST's omem shows what waits to be written."""
from __future__ import annotations

import re
import socket

import pytest

from tests.support.respclient import RawClient, encode_command, named_socket
from tests.support.waiting import wait_until

SERVERS = ("real_redis", "mini")


@pytest.fixture(params=SERVERS)
def port(request):
    server = request.getfixturevalue(request.param)
    admin = RawClient(server.port)
    admin.call("FLUSHALL")
    before = admin.call("CONFIG", "GET", "client-output-buffer-limit")[1]
    yield server.port
    admin.call("CONFIG", "SET", "client-output-buffer-limit", before)
    admin.call("FLUSHALL")
    admin.close()


def _closed_without_reply(sock: socket.socket) -> bool:
    """The server closed the connection and sent nothing before it."""
    sock.settimeout(30)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def _client_line(admin: RawClient, name: str) -> str | None:
    for line in admin.call("CLIENT", "LIST").decode().splitlines():
        if f" name={name} " in line:
            return line
    return None


@pytest.mark.parametrize("commands", [
    [["LRANGE", "list", "0", "-1"]],  # one reply past the limit
    [["GET", "big"]] * 15,  # a pipeline whose replies together pass it
    [["MULTI"], ["LRANGE", "list", "0", "-1"], ["SET", "after", "1"], ["EXEC"]],
], ids=["single", "pipeline", "transaction"])
def test_no_reply_past_the_hard_limit(port, commands):
    admin = RawClient(port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 100000 0 0")
    admin.call("RPUSH", "list", *[b"x" * 1000] * 150)
    admin.call("SET", "big", b"v" * 10000)
    sock = named_socket(port, "over")
    sock.sendall(b"".join(encode_command(argv) for argv in commands))
    assert _closed_without_reply(sock)
    sock.close()
    assert _client_line(admin, "over") is None
    # A transaction runs whole though its reply is dropped.
    assert admin.call("GET", "after") == (b"1" if commands[0] == ["MULTI"] else None)
    admin.close()


@pytest.mark.parametrize("argv", [
    ["HRANDFIELD", "h", "-999999999"], ["HRANDFIELD", "h", "-999999999", "WITHVALUES"],
    ["SRANDMEMBER", "s", "-999999999"], ["ZRANDMEMBER", "z", "-999999999", "WITHSCORES"],
])
def test_huge_random_reply_stops_at_the_limit(port, argv):
    admin = RawClient(port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1000000 0 0")
    admin.call("HSET", "h", "a", "b")
    admin.call("SADD", "s", "a")
    admin.call("ZADD", "z", "1", "a")
    sock = named_socket(port, "random")
    sock.sendall(encode_command(argv))
    sock.settimeout(30)
    received = b""
    try:
        while chunk := sock.recv(1 << 20):
            received += chunk
    except ConnectionResetError:
        pass
    sock.close()
    assert len(received) < 1000000  # no whole reply: the client was closed mid-run
    assert admin.call("PING") == b"PONG"
    admin.close()


def _fill_until(admin: RawClient, name: str, omem: int) -> int:
    """Publish until the subscriber `name`, which reads nothing, has at least omem bytes
    waiting; its omem then."""
    payload = b"x" * 65536  # (the kernel takes megabytes before anything waits)

    def filled() -> int:
        admin.call("PUBLISH", "ch", payload)
        line = _client_line(admin, name)
        assert line is not None, "closed before its soft limit's time"
        found = int(re.search(r" omem=(\d+)", line).group(1))
        return found if found >= omem else 0
    return wait_until(filled, f"omem of {name} past {omem}")


def test_soft_limit_closes_a_client_with_no_more_traffic(port):
    admin = RawClient(port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 100000 1")
    sock = named_socket(port, "slow")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(encode_command(["SUBSCRIBE", "ch"]))
    wait_until(lambda: "flags=P" in (_client_line(admin, "slow") or ""), "subscribed")
    assert _fill_until(admin, "slow", 100000) >= 100000
    # No more messages: the server must close it by itself once the second has passed.
    wait_until(lambda: _client_line(admin, "slow") is None, "the slow subscriber closed")
    sock.close()
    admin.close()


def test_omem_shows_unwritten_replies(port):
    admin = RawClient(port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
    sock = named_socket(port, "reader")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(encode_command(["SUBSCRIBE", "ch"]))
    wait_until(lambda: "flags=P" in (_client_line(admin, "reader") or ""), "subscribed")
    assert _fill_until(admin, "reader", 20000) >= 20000
    sock.close()
    admin.close()
