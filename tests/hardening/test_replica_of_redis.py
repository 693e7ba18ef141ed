"""minired, made a replica of a real redis-server by REPLICAOF, ends holding its data.

The workload of tests/support/workload.py (every type, TTLs, streams with groups, scripts,
MULTI, a second database) runs on redis-server; once minired's slave_repl_offset reached the
master's master_repl_offset, every key of databases 0 and 1 and the function libraries must be
the same as on a real redis-server replicating the same master (the control: a Redis replica's
data differs from its master's where Redis 7.0 propagates less than it keeps, such as a
consumer group's entries-read). While a replica minired refuses its own clients' writes as Redis does
(READONLY), and REPLICAOF NO ONE makes it a master that keeps the data.
"""
from __future__ import annotations

import pytest

from minired.embed import SubprocessServer
from tests.support.differential import Differential
from tests.support.respclient import Err, RawClient
from tests.support.servers import NO_SYNC_DELAY, RedisServer
from tests.support.waiting import info_field, wait_caught_up, wait_link_up, wait_until
from tests.support.workload import (
    SCENARIOS,
    dataset,
    drawn_workloads,
    held_data,
    run_workload,
    workload_clients,
)


@pytest.fixture(scope="module")
def servers():
    """A redis-server master, minired replicating it, and a redis-server replicating it."""
    master = RedisServer("--enable-debug-command", "yes", *NO_SYNC_DELAY).start()
    control = RedisServer("--replicaof", "127.0.0.1", str(master.port)).start()
    replica = SubprocessServer().start()
    client, control_client = RawClient(replica.port), RawClient(control.port)
    try:
        assert client.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        wait_link_up(replica.port)
        wait_link_up(control.port)
        yield master, replica, control
    finally:
        client.close()
        control_client.close()
        replica.stop()
        control.stop()
        master.stop()


@pytest.fixture
def master_and_replica(servers):
    return servers[:2]


def _run_and_compare(master, replica, control, actions) -> None:
    clients = workload_clients(master.port)
    try:
        run_workload(clients, actions, master.port)
        dataset(clients["reader"])  # (reads delete the expired keys, which the replicas follow)
        dataset(clients["reader1"])
        wait_caught_up(master.port, replica.port)
        wait_caught_up(master.port, control.port)
        assert held_data(replica.port) == held_data(control.port)
    finally:
        for client in clients.values():
            client.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_reaches_minired(servers, name):
    _run_and_compare(*servers, SCENARIOS[name])


@drawn_workloads(max_examples=15)
def test_minired_holds_the_redis_master_s_data(servers, actions):
    _run_and_compare(*servers, actions)


def test_a_replica_refuses_writes_and_reports_its_link(master_and_replica):
    master, replica = master_and_replica
    client = RawClient(replica.port)
    try:
        reply = client.call("SET", "mine", "1")
        assert reply == Err(
            "READONLY You can't write against a read only replica.")
        assert client.call("REPLICAOF", "127.0.0.1", str(master.port)) == (
            b"OK Already connected to specified master")
        role = client.call("ROLE")
        assert role[:4] == [b"slave", b"127.0.0.1", master.port, b"connected"]
        assert info_field(client, "replication", "role") == "slave"
        assert info_field(client, "replication", "master_port") == str(master.port)
        assert info_field(client, "replication", "master_sync_in_progress") == "0"
        # The master counts minired among its replicas, at the offset minired acknowledged.
        master_client = RawClient(master.port)
        try:
            master_client.call("SET", "acked", "1")
            assert master_client.call("WAIT", "2", "0") == 2
            assert info_field(master_client, "replication", "connected_slaves") == "2"
        finally:
            master_client.close()
    finally:
        client.close()


def test_replicaof_no_one_keeps_the_data():
    with RedisServer() as master:
        replica = SubprocessServer().start()
        client = RawClient(replica.port)
        try:
            RawClient(master.port).call("SET", "kept", "v")
            client.call("REPLICAOF", "127.0.0.1", str(master.port))
            wait_link_up(replica.port)
            wait_caught_up(master.port, replica.port)
            client.call("CONFIG", "SET", "replica-read-only", "no")
            assert client.call("SET", "local", "1") == b"OK"  # a writable replica
            client.call("CONFIG", "SET", "replica-read-only", "yes")
            assert client.call("REPLICAOF", "NO", "ONE") == b"OK"
            assert client.call("GET", "kept") == b"v"
            assert client.call("SET", "mine", "1") == b"OK"
            assert client.call("ROLE")[0] == b"master"
            assert info_field(client, "replication", "role") == "master"
        finally:
            client.close()
            replica.stop()


@pytest.fixture
def diff():
    """A Differential over servers of its own: being a replica leaves traces (replication ID,
    offsets) that the session's shared servers must not carry."""
    with RedisServer() as real:
        mini = SubprocessServer().start()
        pair = Differential(real.port, mini.port)
        try:
            yield pair
        finally:
            pair.close()
            mini.stop()


def test_a_replica_whose_link_is_down_answers_as_redis(diff):
    """READONLY, and MASTERDOWN with replica-serve-stale-data no, on both servers made replicas
    of a port where nothing listens (the link never comes up)."""
    diff.check("SET", "k", "v")
    diff.check("CONFIG", "SET", "replica-serve-stale-data", "no")
    try:
        diff.check("REPLICAOF", "127.0.0.1", "1")
        diff.check("GET", "k")
        diff.check("PING")
        diff.check("INFO", "nosuchsection")
        diff.check("MULTI")
        diff.check("ECHO", "x")
        diff.check("EXEC")
        diff.check("CONFIG", "SET", "replica-serve-stale-data", "yes")
        diff.check("GET", "k")
        diff.check("SET", "k", "w")
        diff.check("MULTI")
        diff.check("SET", "k", "w")
        diff.check("EXEC")
    finally:
        diff.both("REPLICAOF", "NO", "ONE")
    diff.check("SET", "k", "w")


def test_masterauth_authenticates_the_link():
    with RedisServer("--requirepass", "secret") as master:
        replica = SubprocessServer().start()
        client = RawClient(replica.port)
        try:
            master_client = RawClient(master.port)
            master_client.call("AUTH", "secret")
            master_client.call("SET", "guarded", "v")
            client.call("CONFIG", "SET", "masterauth", "secret")
            client.call("REPLICAOF", "127.0.0.1", str(master.port))
            wait_link_up(replica.port)
            master_client.call("SET", "after", "w")
            assert master_client.call("WAIT", "1", "0") == 1
            assert client.call("MGET", "guarded", "after") == [b"v", b"w"]
            master_client.close()
        finally:
            client.close()
            replica.stop()


def test_a_replica_s_aof_holds_its_master_s_data(tmp_path):
    """After the full sync the AOF is rewritten from the master's data: restarted on its files,
    minired holds what it replicated, not what it had before."""
    with RedisServer() as master:
        master_client = RawClient(master.port)
        master_client.call("SET", "from-master", "v")
        args = ("--dir", str(tmp_path), "--appendonly", "yes")
        replica = SubprocessServer(*args).start()
        client = RawClient(replica.port)
        try:
            client.call("SET", "replaced", "old")
            client.call("REPLICAOF", "127.0.0.1", str(master.port))
            wait_link_up(replica.port)
            master_client.call("RPUSH", "after-sync", "x")
            assert master_client.call("WAIT", "1", "0") == 1
            wait_until(lambda: info_field(client, "persistence", "aof_rewrite_in_progress") == "0"
                       and info_field(client, "persistence", "aof_rewrites") == "1",
                       "the AOF rewritten after the sync")
        finally:
            client.close()
            replica.stop()
        restarted = SubprocessServer(*args).start()
        client = RawClient(restarted.port)
        try:
            assert sorted(client.call("KEYS", "*")) == [b"after-sync", b"from-master"]
        finally:
            client.close()
            restarted.stop()
        master_client.close()


def test_the_master_link_leaves_from_bind_source_addr():
    """bind-source-addr: the replica connects to its master from that address, as the master's
    INFO replication shows (unit/networking "CONFIG SET bind-source-addr")."""
    from minired.embed import SubprocessServer
    from tests.support.respclient import RawClient
    from tests.support.servers import RedisServer
    from tests.support.waiting import wait_link_up

    with RedisServer("--protected-mode", "no") as master, \
            SubprocessServer("--bind-source-addr", "127.0.0.2") as replica:
        RawClient(replica.port).call("REPLICAOF", "127.0.0.1", str(master.port))
        wait_link_up(replica.port)
        info = RawClient(master.port).call("INFO", "replication")
        assert b"slave0:ip=127.0.0.2," in info


def test_a_paused_replica_reads_the_stream_but_applies_it_after_the_pause():
    """CLIENT PAUSE WRITE on a replica holds its master's writes: slave_read_repl_offset moves,
    slave_repl_offset and the data do not until the pause ends (unit/pause)."""
    import time

    from minired.embed import SubprocessServer
    from tests.support.respclient import RawClient
    from tests.support.servers import RedisServer
    from tests.support.waiting import info_field, wait_link_up

    def until(predicate):
        deadline = time.monotonic() + 10
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert predicate()

    with RedisServer() as master, SubprocessServer() as replica:
        r, m = RawClient(replica.port), RawClient(master.port)
        r.call("REPLICAOF", "127.0.0.1", str(master.port))
        wait_link_up(replica.port)
        m.call("SET", "foo", "bar")
        def offset(client, name):
            return int(info_field(client, "replication", name))

        until(lambda: offset(r, "slave_repl_offset") == offset(m, "master_repl_offset"))
        applied = offset(r, "slave_repl_offset")
        r.call("CLIENT", "PAUSE", "100000", "WRITE")
        m.call("SET", "foo2", "bar2")
        until(lambda: offset(r, "slave_read_repl_offset") == offset(m, "master_repl_offset"))
        assert offset(r, "slave_repl_offset") == applied
        assert r.call("GET", "foo2") is None
        r.call("CLIENT", "UNPAUSE")
        until(lambda: offset(r, "slave_repl_offset") == offset(m, "master_repl_offset"))
        assert r.call("GET", "foo2") == b"bar2"
