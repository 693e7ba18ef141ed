"""MIGRATE between servers, compared with Redis moving the same keys between two redis-servers.

Each scenario runs on four fresh pairs (source → target): redis → redis (the reference), and
minired → redis, redis → minired, minired → minired; every reply, on the source and on the
target, must be the reference's. Then what the source propagates for a MIGRATE (its
replication stream, as the AOF gets it: DEL of the keys moved) and its keyspace events are
compared with a redis-server source's.
"""
from __future__ import annotations

import socket
import tempfile
import time

import pytest

from minired.embed import EmbeddedServer, SubprocessServer
from tests.support.respclient import RawClient, Simple
from tests.support.servers import RedisServer, free_port
from tests.support.waiting import info_field, wait_until

KINDS = [("minired", "redis"), ("redis", "minired"), ("minired", "minired")]


def _start(kind: str):
    if kind == "redis":
        return RedisServer().start()
    return _embedded()


# Each embedded server gets a directory of its own (no dump.rdb of the working directory's is
# loaded), inside one removed when the run ends.
_DIRS = tempfile.TemporaryDirectory(prefix="minired-migrate-")


def _embedded(**options) -> EmbeddedServer:
    return EmbeddedServer(port=0, dir=tempfile.mkdtemp(dir=_DIRS.name), **options).start()


# A deadline on a whole second plus 500 ms: the TTL MIGRATE sends is relative, so the target's
# deadline may be off by a millisecond or two, which EXPIRETIME (seconds) does not show.
DEADLINE_S = int(time.time()) + 100_000
BIG = "x" * 200_000  # more than one 64K write

# (role, command): role "src" or "dst"; "{host}" and "{port}" are the target's address.
SCENARIOS = {
    "move": [
        ("src", ("SET", "k", "v")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000")),
        ("src", ("EXISTS", "k")), ("dst", ("GET", "k")), ("dst", ("TTL", "k")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000")),  # NOKEY
        ("src-info", "migrate_cached_sockets"),
    ],
    "ttl": [
        ("src", ("SET", "k", "v")),
        ("src", ("PEXPIREAT", "k", str(DEADLINE_S * 1000 + 500))),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000")),
        ("dst", ("EXPIRETIME", "k")), ("src", ("EXISTS", "k")),
    ],
    "databases": [
        ("src", ("MSET", "a", "1", "b", "2", "c", "3")),
        ("src", ("MIGRATE", "{host}", "{port}", "a", "7", "5000")),
        ("src", ("MIGRATE", "{host}", "{port}", "b", "0", "5000")),
        ("src", ("MIGRATE", "{host}", "{port}", "c", "7", "5000")),
        ("dst", ("MGET", "a", "b", "c")), ("dst", ("SELECT", "7")),
        ("dst", ("MGET", "a", "b", "c")),
        ("src", ("SET", "d", "4")),
        ("src", ("MIGRATE", "{host}", "{port}", "d", "99", "5000")),
        ("src", ("GET", "d")),
        ("src", ("MIGRATE", "{host}", "{port}", "d", "7", "5000")),
        ("dst", ("GET", "d")),
    ],
    "copy_and_replace": [
        ("src", ("RPUSH", "l", "a", "b", "c")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "COPY")),
        ("src", ("LRANGE", "l", "0", "-1")), ("dst", ("LRANGE", "l", "0", "-1")),
        ("src", ("RPUSH", "l", "d")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "COPY")),  # BUSYKEY
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000")),  # BUSYKEY
        ("src", ("EXISTS", "l")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "COPY", "REPLACE")),
        ("src", ("EXISTS", "l")), ("dst", ("LRANGE", "l", "0", "-1")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "REPLACE")),
        ("src", ("EXISTS", "l")), ("dst", ("LRANGE", "l", "0", "-1")),
    ],
    "keys": [
        ("src", ("MSET", "a", "1", "b", "2", "c", "3")),
        ("src", ("MIGRATE", "{host}", "{port}", "", "0", "5000", "KEYS", "a", "no", "b")),
        ("src", ("MGET", "a", "b", "c")), ("dst", ("MGET", "a", "b", "c")),
        ("src", ("MIGRATE", "{host}", "{port}", "", "0", "5000", "KEYS", "x", "y")),
        ("src", ("MIGRATE", "{host}", "{port}", "c", "0", "5000", "KEYS", "c")),
        ("src", ("MIGRATE", "{host}", "{port}", "", "0", "5000", "COPY", "KEYS", "c", "COPY")),
        ("src", ("EXISTS", "c")), ("dst", ("GET", "c")),
    ],
    "busy_keys_are_kept": [
        ("src", ("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")),
        ("dst", ("MSET", "b", "_", "d", "_")),
        ("src", ("MIGRATE", "{host}", "{port}", "", "0", "5000", "KEYS", "a", "b", "c", "d",
                 "e")),
        ("src", ("MGET", "a", "b", "c", "d", "e")), ("dst", ("MGET", "a", "b", "c", "d", "e")),
    ],
    "auth": [
        ("dst", ("CONFIG", "SET", "requirepass", "secret")),
        ("src", ("RPUSH", "l", "a", "b")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000")),  # NOAUTH
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "AUTH", "wrong")),
        ("src", ("EXISTS", "l")),
        ("src", ("MIGRATE", "{host}", "{port}", "l", "0", "5000", "AUTH", "secret")),
        ("src", ("EXISTS", "l")), ("dst", ("LRANGE", "l", "0", "-1")),
    ],
    "auth_without_password": [
        ("src", ("SET", "k", "v")),
        # The target's AUTH fails but its RESTORE runs: the key is on both, and the reply is
        # AUTH's error.
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH", "pw")),
        ("src", ("EXISTS", "k")), ("dst", ("GET", "k")),
    ],
    "auth2": [
        ("dst", ("ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all")),
        ("dst", ("CONFIG", "SET", "requirepass", "other")),
        ("src", ("SET", "k", "v")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH2", "mover", "bad")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH2", "nobody", "pw")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH2", "mover", "pw")),
        ("src", ("EXISTS", "k")), ("dst", ("GET", "k")),
    ],
    "types": [
        ("src", ("HSET", "h", "f1", "v1", "f2", "v2")),
        ("src", ("SADD", "ints", "1", "2", "3")), ("src", ("SADD", "s", "a", "b")),
        ("src", ("ZADD", "z", "1", "a", "2.5", "b")),
        ("src", ("XADD", "x", "1-1", "f", "v")), ("src", ("XGROUP", "CREATE", "x", "g", "0")),
        ("src", ("SET", "big", BIG)), ("src", ("SET", "n", "12345")),
        ("src", ("MIGRATE", "{host}", "{port}", "", "3", "5000", "KEYS", "h", "ints", "s", "z",
                 "x", "big", "n")),
        ("src", ("DBSIZE",)), ("dst", ("SELECT", "3")),
        ("dst", ("HGETALL", "h")), ("dst", ("SMEMBERS", "ints")), ("dst", ("ZRANGE", "z", "0",
                                                                            "-1", "WITHSCORES")),
        ("dst", ("XINFO", "GROUPS", "x")), ("dst", ("STRLEN", "big")),
        ("dst", ("OBJECT", "ENCODING", "n")), ("dst", ("OBJECT", "ENCODING", "ints")),
        ("dst", ("OBJECT", "ENCODING", "h")),
    ],
    "argument_errors": [
        ("src", ("SET", "k", "v")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "FOO")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "5000", "AUTH2", "u")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "x", "5000")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0", "x")),
        ("src", ("MIGRATE", "{host}", "{port}", "k", "0")),
        ("src", ("EXISTS", "k")),
    ],
    "unreachable": [
        ("src", ("SET", "k", "v")),
        ("src", ("MIGRATE", "127.0.0.1", "{closed}", "k", "0", "1000")),
        ("src", ("MIGRATE", "127.0.0.1", "{closed}", "missing", "0", "1000")),
        ("src", ("EXISTS", "k")), ("src-info", "migrate_cached_sockets"),
    ],
    "in_a_transaction": [
        ("src", ("MSET", "a", "1", "b", "2")),
        ("src", ("MULTI",)),
        ("src", ("MIGRATE", "{host}", "{port}", "a", "0", "5000")),
        ("src", ("SET", "b", "3")),
        ("src", ("EXEC",)),
        ("src", ("EVAL", "return redis.call('MIGRATE', ARGV[1], ARGV[2], 'b', 0, 5000)", "0",
                 "{host}", "{port}")),
        ("src", ("MGET", "a", "b")), ("dst", ("MGET", "a", "b")),
    ],
}


def _run(kinds: tuple[str, str], steps: list) -> list:
    source, target = _start(kinds[0]), _start(kinds[1])
    src, dst = RawClient(source.port), RawClient(target.port)
    closed = free_port()
    replies = []
    try:
        for role, command in steps:
            if role == "src-info":
                replies.append(info_field(src, "stats", command))
                continue
            argv = [arg.format(host="127.0.0.1", port=target.port, closed=closed)
                    for arg in command]
            reply = (src if role == "src" else dst).call(*argv)
            if argv[:3] == ["CONFIG", "SET", "requirepass"]:
                dst.call("AUTH", argv[3])  # (Redis keeps the client authenticated anyway)
            if isinstance(reply, list) and argv[0] in ("HGETALL", "SMEMBERS"):
                reply = sorted(reply)
            replies.append(reply)
        return replies
    finally:
        src.close()
        dst.close()
        source.stop()
        target.stop()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("kinds", KINDS, ids="→".join)
def test_migrate_replies_as_redis(kinds, name):
    expected = _run(("redis", "redis"), SCENARIOS[name])
    assert _run(kinds, SCENARIOS[name]) == expected


def test_the_connection_is_cached_then_dropped_when_it_breaks():
    """A MIGRATE after the target closed the cached connection is retried once on a new one."""
    source, target = _embedded(), RedisServer().start()
    src, dst = RawClient(source.port), RawClient(target.port)
    try:
        src.call("MSET", "a", "1", "b", "2")
        assert src.call("MIGRATE", "127.0.0.1", str(target.port), "a", "0", "5000") == Simple(b"OK")
        assert info_field(src, "stats", "migrate_cached_sockets") == "1"
        dst.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        assert src.call("MIGRATE", "127.0.0.1", str(target.port), "b", "0", "5000") == Simple(b"OK")
        assert dst.call("MGET", "a", "b") == [b"1", b"2"]
        assert info_field(src, "stats", "migrate_cached_sockets") == "1"
    finally:
        src.close()
        dst.close()
        source.stop()
        target.stop()


# --- what the source propagates, and its keyspace events ------------------------------------------

LAST_RECORD = b"*3\r\n$3\r\nSET\r\n$3\r\nend\r\n$1\r\n1\r\n"


def _attach(port: int) -> socket.socket:
    """SYNC, then read past the RDB: what follows is the replication stream."""
    RawClient(port).call("CONFIG", "SET", "repl-ping-replica-period", "3600")
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"SYNC\r\n")
    buffer = b""
    while b"\r\n" not in buffer.lstrip(b"\n"):
        buffer += sock.recv(65536)
    header, _, rest = buffer.lstrip(b"\n").partition(b"\r\n")
    size = int(header[1:])
    while len(rest) < size:
        rest += sock.recv(65536)
    return sock


def _propagated(kind: str) -> tuple[bytes, list]:
    source, target = _start(kind), RedisServer().start()
    src, dst, events = RawClient(source.port), RawClient(target.port), RawClient(source.port)
    port = str(target.port)
    try:
        src.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        events.call("PSUBSCRIBE", "__keyevent@*__:*")
        sock = _attach(source.port)
        src.call("MSET", "a", "1", "b", "2", "c", "3", "d", "4")
        dst.call("SET", "c", "busy")
        src.call("MIGRATE", "127.0.0.1", port, "a", "0", "5000")
        src.call("MIGRATE", "127.0.0.1", port, "b", "0", "5000", "COPY")
        src.call("MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS", "b", "c", "d")
        src.call("MULTI")
        src.call("SET", "e", "5")
        src.call("MIGRATE", "127.0.0.1", port, "e", "0", "5000", "REPLACE")
        src.call("EXEC")
        src.call("SET", "end", "1")
        stream = b""
        while LAST_RECORD not in stream:
            chunk = sock.recv(65536)
            assert chunk, "the stream ended"
            stream += chunk
        sock.close()
        received = []
        while True:
            message = events.read()
            received.append(message)
            if message[-1] == b"end":
                break
        return stream, received
    finally:
        for client in (src, dst, events):
            client.close()
        source.stop()
        target.stop()


def test_migrate_is_propagated_as_the_del_of_the_keys_moved():
    assert _propagated("minired") == _propagated("redis")


# --- from a cluster node: RESTORE-ASKING ----------------------------------------------------------

def _cluster_source(kind: str):
    """A one-master cluster serving every slot: redis-server, or minired's (which serves the
    slots over two nodes: the key used is in the first one's)."""
    if kind == "redis":
        server = RedisServer("--cluster-enabled", "yes").start()
        client = RawClient(server.port)
        client.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        wait_until(lambda: b"cluster_state:ok" in client.call("CLUSTER", "INFO"),
                   "the cluster up")
        client.close()
        return server, server.port
    server = SubprocessServer(cluster=2).start()
    return server, server.addresses[0][1]


@pytest.mark.parametrize("kind", ["minired", "redis"])
def test_a_cluster_node_migrates_with_restore_asking(kind):
    source, port = _cluster_source(kind)
    target = RedisServer().start()
    src, dst, monitor = RawClient(port), RawClient(target.port), RawClient(target.port)
    try:
        monitor.call("MONITOR")
        assert src.call("SET", "b", "v") == Simple(b"OK")  # (slot 3300)
        assert src.call("MIGRATE", "127.0.0.1", str(target.port), "b", "0", "5000") == Simple(
            b"OK")
        assert dst.call("GET", "b") == b"v"
        commands = []
        while True:
            line = monitor.read()
            words = line.split(b'"')
            if len(words) > 1 and words[1].lower() == b"get":
                break
            commands.append(words[1])
        assert commands == [b"SELECT", b"RESTORE-ASKING"]
    finally:
        for client in (src, dst, monitor):
            client.close()
        source.stop()
        target.stop()


def test_an_idle_cached_connection_is_closed_after_10_seconds():
    """migrateCloseTimedoutSockets: kept while used within 10 s, closed once idle longer (the
    server's clock, moved by MINIRED ADVANCE, is what counts)."""
    source = _embedded(time_control=True)
    target = RedisServer().start()
    src = RawClient(source.port)
    try:
        src.call("MSET", "a", "1", "b", "2")
        assert src.call("MIGRATE", "127.0.0.1", str(target.port), "a", "0", "5000") == Simple(b"OK")
        source.advance_clock(9_000)
        assert src.call("MIGRATE", "127.0.0.1", str(target.port), "b", "0", "5000") == Simple(b"OK")
        source.advance_clock(9_000)  # 9 s idle: kept
        assert info_field(src, "stats", "migrate_cached_sockets") == "1"
        source.advance_clock(2_000)
        wait_until(lambda: info_field(src, "stats", "migrate_cached_sockets") == "0",
                   "the idle connection closed")
        assert RawClient(target.port).call("MGET", "a", "b") == [b"1", b"2"]
    finally:
        src.close()
        source.stop()
        target.stop()
