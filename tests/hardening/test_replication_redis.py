"""A real redis-server replicating from minired ends holding minired's data.

`redis-server --replicaof 127.0.0.1 <minired>` attaches (PSYNC, the RDB, then the stream of
writes as minired propagates them to its AOF); after each workload (tests/support/workload.py:
every type, TTLs, streams with groups, scripts, MULTI, a second database), once the replica's
offset reached minired's, every key of databases 0 and 1 and the function libraries must be the
same on both. The stream a SYNC reads (Redis's test suite's attach_to_replication_stream) is
compared byte for byte with the one a real Redis sends for the same commands.
"""
from __future__ import annotations

import socket

import pytest
import redis

from minired.embed import SubprocessServer
from tests.support.differential import Differential
from tests.support.respclient import Err, RawClient
from tests.support.servers import NO_SYNC_DELAY, RedisServer
from tests.support.waiting import info_field, wait_caught_up, wait_link_up
from tests.support.workload import (
    SCENARIOS,
    SETUP,
    dataset,
    drawn_workloads,
    held_data,
    run_workload,
    unparsed,
    workload_clients,
)


@pytest.fixture(scope="module", params=["aof", "memory"])
def master_and_replica(request, tmp_path_factory):
    """minired (with its AOF on, or memory only: the stream is the same either way) and a real
    redis-server replicating it."""
    # (a directory either way: the workloads' BGREWRITEAOF writes an AOF base even with the
    # AOF off, which would otherwise land in the checkout)
    args = ["--enable-debug-command", "yes", "--dir", str(tmp_path_factory.mktemp("minired"))]
    if request.param == "aof":
        args += ["--appendonly", "yes"]
    master = SubprocessServer(*args).start()
    replica = RedisServer("--replicaof", "127.0.0.1", str(master.port)).start()
    try:
        wait_link_up(replica.port)
        yield master, replica
    finally:
        replica.stop()
        master.stop()


def _run_and_compare(master, replica, actions) -> None:
    clients = workload_clients(master.port)
    try:
        run_workload(clients, actions, master.port)
        expected = held_data(master.port)
        wait_caught_up(master.port, replica.port)
        assert held_data(replica.port) == expected
    finally:
        for client in clients.values():
            client.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_rewrite_reaches_a_redis_replica(master_and_replica, name):
    _run_and_compare(*master_and_replica, SCENARIOS[name])


@drawn_workloads(max_examples=15)
def test_a_redis_replica_holds_minired_s_data(master_and_replica, actions):
    _run_and_compare(*master_and_replica, actions)


def test_a_replica_attached_to_data_already_there(master_and_replica):
    """The RDB a replica loads holds every type, TTLs and groups (a second replica attaches
    after the data was written), and the stream goes on from its offset."""
    master, _ = master_and_replica
    main = unparsed(master.port)
    try:
        main.flushall()
        for command in SETUP:
            main.execute_command(*command)
        main.execute_command("XREADGROUP", "GROUP", "g1", "c1", "COUNT", "2", "STREAMS", "x", ">")
        main.execute_command("SET", "s", "v", "EX", "100000")
        main.execute_command("ZADD", "z", "1", "a", "2.5", "b")
        main.execute_command("HSET", "h", "f", "v")
        main.execute_command("SADD", "set", "m", "n")
        main.execute_command("RPUSH", "l", "1", "2")
        with RedisServer("--replicaof", "127.0.0.1", str(master.port)) as late:
            wait_link_up(late.port)
            main.execute_command("INCR", "counter")
            wait_caught_up(master.port, late.port)
            assert dataset(redis.Redis(port=late.port)) == dataset(redis.Redis(port=master.port))
    finally:
        main.close()


# --- the stream a SYNC reads, byte for byte as Redis sends it ---------------------------------------

def _attach(port: int) -> socket.socket:
    """Redis's attach_to_replication_stream: SYNC, skip keep-alive newlines, read the RDB."""
    RawClient(port).call("CONFIG", "SET", "repl-ping-replica-period", "3600")
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"SYNC\r\n")
    buffer = b""
    while True:
        buffer += sock.recv(65536)
        stripped = buffer.lstrip(b"\n")
        if b"\r\n" in stripped:
            break
    header, _, rest = stripped.partition(b"\r\n")
    assert header.startswith(b"$"), header
    size = int(header[1:])
    while len(rest) < size:
        rest += sock.recv(65536)
    assert rest[:5] == b"REDIS"
    assert rest[size:] == b"", "no CRLF after the RDB payload"
    return sock


STREAM_WORKLOAD = [
    (0, ("SET", "a", "1")), (0, ("INCRBYFLOAT", "a", "1.5")), (0, ("GET", "a")),
    (2, ("RPUSH", "l", "x", "y")), (2, ("LPOP", "l")), (0, ("SADD", "s", "m")),
    (0, ("SPOP", "s")), (2, ("HINCRBYFLOAT", "h", "f", "2")), (0, ("DEL", "nothing")),
    (0, ("EVAL", "redis.call('SET', KEYS[1], 'v') redis.call('INCR', KEYS[2])", "2", "k", "n")),
    (0, ("XADD", "x", "1-1", "f", "v")), (0, ("SET", "p", "v", "pxat", "99999999999999")),
    (0, ("SET", "p", "w", "PXAT", "99999999999998", "GET")),
    (0, ("SET", "p", "w", "EXAT", "99999999999", "XX")), (0, ("GETDEL", "p")),
    (0, ("GETDEL", "p")), (2, ("PUBLISH", "channel", "message")), (0, ("SET", "end", "1")),
]
LAST_RECORD = b"*3\r\n$3\r\nSET\r\n$3\r\nend\r\n$1\r\n1\r\n"


def _stream_of(port: int) -> bytes:
    RawClient(port).call("FLUSHALL")
    sock = _attach(port)
    clients = {0: RawClient(port), 2: RawClient(port)}
    clients[2].call("SELECT", "2")
    try:
        for db, command in STREAM_WORKLOAD:
            clients[db].call(*command)
        clients[0].call("MULTI")
        clients[0].call("SET", "t", "1")
        clients[0].call("PUBLISH", "channel", "in a transaction")
        clients[0].call("INCR", "t")
        clients[0].call("EXEC")
        clients[0].call("SET", "end", "1")
        stream = b""
        while stream.count(LAST_RECORD) < 2:
            chunk = sock.recv(65536)
            assert chunk, "the stream ended"
            stream += chunk
        return stream
    finally:
        sock.close()
        for client in clients.values():
            client.close()


@pytest.fixture
def fresh():
    """A redis-server and a minired of their own: a replica attaching leaves traces (offsets, a
    backlog) that the session's shared servers must not carry."""
    with RedisServer(*NO_SYNC_DELAY) as real:
        mini = SubprocessServer().start()
        try:
            yield real, mini
        finally:
            mini.stop()


@pytest.fixture
def diff(fresh):
    pair = Differential(fresh[0].port, fresh[1].port)
    yield pair
    pair.close()


def test_the_sync_stream_is_redis_s(fresh):
    real, mini = fresh
    assert _stream_of(mini.port) == _stream_of(real.port)


def test_replconf_answers_as_redis(diff):
    diff.check("REPLCONF", "listening-port", "6380")
    diff.check("REPLCONF", "capa", "eof", "capa", "psync2")
    diff.check("REPLCONF", "listening-port")
    diff.check("REPLCONF", "nonsense", "1")
    diff.check("REPLCONF", "listening-port", "x")


def test_wait_counts_the_replicas_that_acknowledged(master_and_replica):
    master, replica = master_and_replica
    client = RawClient(master.port)
    try:
        client.call("SET", "waited", "1")
        assert client.call("WAIT", "1", "0") == 1  # the replica is asked for its offset at once
        assert client.call("WAIT", "2", "50") == 1  # one replica only: the timeout answers it
        role = client.call("ROLE")
        assert role[0] == b"master" and len(role[2]) == 1
        assert role[2][0][1] == str(replica.port).encode()
        assert int(info_field(client, "replication", "connected_slaves")) == 1
        assert info_field(client, "replication", "slave0").startswith(
            f"ip=127.0.0.1,port={replica.port},state=online,offset=")
        assert not isinstance(client.call("PING"), Err)
    finally:
        client.close()


def test_replicas_get_a_ping_every_repl_ping_replica_period(fresh):
    _, mini = fresh
    RawClient(mini.port).call("CONFIG", "SET", "repl-ping-replica-period", "1")
    sock = socket.create_connection(("127.0.0.1", mini.port), timeout=30)
    try:
        sock.sendall(b"SYNC\r\n")
        received = b""
        while b"*1\r\n$4\r\nPING\r\n" not in received:  # (the socket's timeout bounds the wait)
            chunk = sock.recv(65536)
            assert chunk, "the stream ended"
            received += chunk
        client = RawClient(mini.port)
        stream_bytes = len(received.partition(b"\r\n")[2]) - int(received[1:received.index(b"\r\n")])
        assert int(info_field(client, "replication", "master_repl_offset")) >= stream_bytes > 0
        client.close()
    finally:
        sock.close()


def test_set_repl_chooses_where_a_script_s_writes_go(tmp_path):
    """redis.set_repl: REPL_NONE writes reach neither the replica nor the AOF, REPL_AOF only the
    AOF, REPL_REPLICA only the replica (unit/scripting "Test selective replication ..."). On a
    pair of its own: DEBUG LOADAOF leaves the master's data as its AOF has it."""
    master = SubprocessServer("--enable-debug-command", "yes", "--dir", str(tmp_path),
                              "--appendonly", "yes").start()
    replica = RedisServer("--replicaof", "127.0.0.1", str(master.port)).start()
    wait_link_up(replica.port)
    client = RawClient(master.port)
    try:
        client.call("EVAL", "redis.call('set','sr:a','1') redis.set_repl(redis.REPL_NONE) "
                    "redis.call('set','sr:b','2') redis.set_repl(redis.REPL_AOF) "
                    "redis.call('set','sr:c','3') redis.set_repl(redis.REPL_REPLICA) "
                    "redis.call('set','sr:e','5') redis.set_repl(redis.REPL_ALL) "
                    "redis.call('set','sr:d','4')", 0)
        keys = ("sr:a", "sr:b", "sr:c", "sr:d", "sr:e")
        assert client.call("MGET", *keys) == [b"1", b"2", b"3", b"4", b"5"]
        wait_caught_up(master.port, replica.port)
        assert RawClient(replica.port).call("MGET", *keys) == [b"1", None, None, b"4", b"5"]
        if client.call("CONFIG", "GET", "appendonly")[1] == b"yes":
            client.call("DEBUG", "LOADAOF")
            assert client.call("MGET", *keys) == [b"1", None, b"3", b"4", None]
    finally:
        client.close()
        replica.stop()
        master.stop()
