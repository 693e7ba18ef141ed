"""Client output buffer limits compared with real Redis, as unit/obuf-limits tests them: a reply
that takes its client past the hard limit is never sent (the client is closed first), a command
building a huge reply stops, a client over its soft limit is closed once soft-seconds pass even
with no more traffic, and CLIENT LIST's omem shows what waits to be written. A replica is held to
the replica class's limits, which count the stream it falls behind on, never the RDB of its full
resynchronization."""
from __future__ import annotations

import os
import re
import socket

import pytest

from tests.support.respclient import RawClient, encode_command, named_socket, read_full_resync
from tests.support.servers import MiniredProcess, RedisServer
from tests.support.waiting import info_field, wait_until

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


@pytest.fixture(params=(RedisServer, MiniredProcess), ids=("real_redis", "mini"))
def own_port(request):
    """A server of the test's own: a replica attached leaves a backlog the shared ones keep."""
    with request.param("--repl-diskless-sync", "no") as server:
        yield server.port


def _attach_replica(port: int) -> socket.socket:
    replica = socket.create_connection(("127.0.0.1", port))
    replica.sendall(encode_command(["REPLCONF", "listening-port", "1"]))
    assert replica.recv(100) == b"+OK\r\n"
    replica.sendall(encode_command(["PSYNC", "?", "-1"]))
    return replica


def test_a_replica_behind_on_the_stream_past_the_replica_hard_limit_is_dropped(own_port):
    # getClientType puts a replica in the replica class; the normal class's limits (none by
    # default) do not apply to it.
    admin = RawClient(own_port)
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit",
                      "normal 0 0 0 replica 1mb 0 0") == b"OK"
    replica = _attach_replica(own_port)  # and never reads again
    try:
        wait_until(lambda: info_field(admin, "replication", "connected_slaves") == "1",
                   "the replica attached")
        for j in range(100):
            admin.call("SET", f"k{j}", "v" * 100_000)
        wait_until(lambda: info_field(admin, "replication", "connected_slaves") == "0",
                   "the replica dropped for its output buffer")
    finally:
        replica.close()
        admin.close()


def test_a_snapshot_larger_than_the_replica_hard_limit_still_syncs(own_port):
    # Redis sends the RDB outside the output buffer: only the stream counts, so a dataset of
    # 4 MB (random bytes: LZF cannot shrink them) reaches a replica held to 1 MB.
    admin = RawClient(own_port)
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit",
                      "normal 0 0 0 replica 1mb 512kb 60") == b"OK"
    for j in range(64):
        admin.call("SET", f"big{j}", os.urandom(65_536))
    replica = _attach_replica(own_port)
    try:
        reader, rdb = read_full_resync(replica)
        assert len(rdb) > 4_000_000
        admin.call("SET", "after", "sync")
        stream = b""
        while b"after" not in stream:
            stream += reader.read1(65_536)
        assert info_field(admin, "replication", "connected_slaves") == "1"
    finally:
        replica.close()
        admin.close()
