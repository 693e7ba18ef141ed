"""Chained replicas (A -> B -> C) and the replication ID and offset kept in the RDB, against a
real redis-server 7.0 in both directions.

A replica B with a replica C of its own proxies its master's stream: C ends holding A's data
(DEBUG DIGEST agrees on the three servers), the stream C reads from B is A's byte for byte,
B's INFO shows both roles, and C continues from B's backlog under A's replication ID. What
happens to C when B's link changes is compared with an all-Redis chain: it stays attached
while B's link drops and B continues, it is disconnected and continues when B is promoted or
B's master changes its ID, and it syncs again in full when B does.

The RDB: SAVE writes the aux fields repl-stream-db, repl-id and repl-offset where Redis does
(a master with a backlog, a replica), and a replica restarted on its dump.rdb asks its master
to continue (`PSYNC <replid> <offset+1>`), which a redis-server and a minired master accept;
a master restarted on its dump.rdb keeps the ID as its previous one, so that its replicas
continue.
"""
from __future__ import annotations

import socket
import tempfile
import time

import pytest

from minired.embed import SubprocessServer
from minired.features.rdb_format import Reader
from tests.support.respclient import Err, RawClient, read_line
from tests.support.servers import NO_SYNC_DELAY, MiniredProcess, RedisServer, free_port
from tests.support.waiting import info_field, wait_caught_up, wait_link_up, wait_until
from tests.support.workload import (
    SCENARIOS,
    drawn_workloads,
    held_data,
    run_workload,
    workload_clients,
)

# A redis-server master sends its RDB at once (not after the default 5 s diskless delay).
REDIS_ARGS = (*NO_SYNC_DELAY, "--enable-debug-command", "yes")
MINIRED_ARGS = ("--enable-debug-command", "yes")


_SCRATCH = None  # (set by the _scratch fixture)


@pytest.fixture(autouse=True, scope="module")
def _scratch(tmp_path_factory):
    """Where minired servers started without a --dir keep their files (BGREWRITEAOF in the
    workloads writes an AOF base): not the checkout, the servers' working directory."""
    global _SCRATCH
    _SCRATCH = tmp_path_factory.mktemp("chain")
    yield


def _start(kind: str, *args: str):
    if kind == "redis":
        return RedisServer(*REDIS_ARGS, *args).start()
    if "--dir" not in args:
        args = ("--dir", tempfile.mkdtemp(dir=_SCRATCH), *args)
    return SubprocessServer(*MINIRED_ARGS, *args).start()


def _stat(port: int, field: str) -> int:
    client = RawClient(port)
    try:
        return int(info_field(client, "stats", field))
    finally:
        client.close()


def _repl(port: int, field: str) -> str:
    client = RawClient(port)
    try:
        return info_field(client, "replication", field)
    finally:
        client.close()


def _call(port: int, *argv):
    client = RawClient(port)
    try:
        return client.call(*argv)
    finally:
        client.close()


def _digest(port: int) -> bytes:
    return _call(port, "DEBUG", "DIGEST")


def _replicate(replica, master) -> None:
    assert _call(replica.port, "REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
    wait_link_up(replica.port)


def _wait_offsets_equal(*servers) -> None:
    """Until every server's master_repl_offset is the first's (a replica's is the stream it
    applied)."""
    first = servers[0]
    wait_until(lambda: all(_repl(s.port, "master_repl_offset")
                           == _repl(first.port, "master_repl_offset") for s in servers),
               "the chain at the same offset")


def _stop(*servers) -> None:
    for server in servers:
        if server is not None:
            server.stop()


# --- the chain and its data -----------------------------------------------------------------

CHAINS = {"redis-minired-minired": ("redis", "minired", "minired"),
          "minired-minired-redis": ("minired", "minired", "redis")}


@pytest.fixture(scope="module", params=sorted(CHAINS))
def chain(request):
    """A -> B -> C, of the kinds named; B and C attached before any workload runs."""
    kinds = CHAINS[request.param]
    a = b = c = None
    try:
        a = _start(kinds[0])
        b = _start(kinds[1])
        c = _start(kinds[2])
        _replicate(b, a)
        _replicate(c, b)
        yield a, b, c
    finally:
        _stop(c, b, a)


def _run_and_compare(chain, actions) -> None:
    a, b, c = chain
    clients = workload_clients(a.port)
    try:
        run_workload(clients, actions, a.port)
        # A's active expiry deletes the keys whose TTL passed whenever it runs, and the
        # deletions reach B and C after: the chain agrees once they all have (and C is at A's
        # offset: nothing is on its way).
        # (held_data reads each key: a deletion arriving between its reads of B and of C
        # is waited out too)
        def agreed() -> bool:
            offset = _repl(a.port, "master_repl_offset")
            digest = _digest(a.port)
            return (_digest(b.port) == digest and _digest(c.port) == digest
                    and _repl(c.port, "master_repl_offset") == offset
                    and _repl(b.port, "master_repl_offset") == offset
                    and held_data(c.port) == held_data(b.port)
                    and _repl(a.port, "master_repl_offset") == offset)

        wait_until(agreed, "A, B and C at the same offset with the same data (DEBUG DIGEST, "
                   "and every key read on B and C)")
    finally:
        for client in clients.values():
            client.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_reaches_the_end_of_the_chain(chain, name):
    _run_and_compare(chain, SCENARIOS[name])


@drawn_workloads(max_examples=8)
def test_drawn_workloads_reach_the_end_of_the_chain(chain, actions):
    _run_and_compare(chain, actions)


def test_the_middle_replica_shows_both_roles(chain):
    a, b, c = chain
    client = RawClient(b.port)
    try:
        assert info_field(client, "replication", "role") == "slave"
        assert info_field(client, "replication", "master_port") == str(a.port)
        assert info_field(client, "replication", "master_link_status") == "up"
        assert info_field(client, "replication", "connected_slaves") == "1"
        assert info_field(client, "replication", "slave0").startswith(
            f"ip=127.0.0.1,port={c.port},state=online,")
        assert client.call("ROLE")[:4] == [b"slave", b"127.0.0.1", a.port, b"connected"]
        # The whole chain shares A's history: its ID, and C is at A's offset.
        replid = _repl(a.port, "master_replid")
        assert info_field(client, "replication", "master_replid") == replid
        assert _repl(c.port, "master_replid") == replid
        # A replica's replicas follow its master's writes, not its own.
        assert client.call("WAIT", "1", "0") == Err(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis "
            "4.0 if a replica is configured to be writable (which is not the default) writes "
            "to replicas are just local and are not propagated.")
    finally:
        client.close()


# --- the stream, byte for byte --------------------------------------------------------------


def _raw_replica(port: int) -> tuple[socket.socket, bytearray, bytes, int]:
    """A replica of our own: `PSYNC ? -1`, the RDB read past. The socket, what followed the
    RDB, and the ID and offset of the FULLRESYNC."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    buffer = bytearray()
    sock.sendall(b"REPLCONF capa psync2\r\n")
    assert read_line(sock, buffer) == b"+OK"
    sock.sendall(b"PSYNC ? -1\r\n")
    reply = read_line(sock, buffer).split()
    assert reply[0] == b"+FULLRESYNC"
    size = int(read_line(sock, buffer)[1:])
    while len(buffer) < size:
        buffer += sock.recv(65536)
    del buffer[:size]
    return sock, buffer, reply[1], int(reply[2])


def _read_until(sock: socket.socket, buffer: bytearray, last: bytes) -> bytes:
    while not buffer.endswith(last):
        chunk = sock.recv(65536)
        assert chunk, "the master closed the link"
        buffer += chunk
    return bytes(buffer)


@pytest.mark.parametrize("kinds", [("redis", "minired"), ("minired", "minired")])
def test_the_middle_replica_passes_the_stream_on_byte_for_byte(kinds):
    """What a replica of B reads is what a replica of A reads, from the offset it synced at:
    the same bytes, under A's replication ID."""
    a = b = None
    direct = proxied = None
    try:
        a = _start(kinds[0], "--repl-ping-replica-period", "3600")
        b = _start(kinds[1])
        _call(a.port, "SET", "before", "1")
        _replicate(b, a)
        direct, direct_buffer, direct_id, direct_offset = _raw_replica(a.port)
        clients = workload_clients(a.port)
        try:
            clients["db1"].execute_command("SET", "in-db1", "x")
            wait_caught_up(a.port, b.port)
            proxied, proxied_buffer, proxied_id, proxied_offset = _raw_replica(b.port)
            assert proxied_id == direct_id == _repl(a.port, "master_replid").encode()
            assert proxied_offset >= direct_offset
            run_workload(clients, SCENARIOS["scripts-and-multi"] + SCENARIOS["stream-groups"],
                         a.port)
            clients["db1"].execute_command("SET", "the-end", "1")
        finally:
            for client in clients.values():
                client.close()
        last = b"*3\r\n$3\r\nSET\r\n$7\r\nthe-end\r\n$1\r\n1\r\n"
        from_a = _read_until(direct, direct_buffer, last)
        from_b = _read_until(proxied, proxied_buffer, last)
        assert from_b == from_a[proxied_offset - direct_offset:]
        assert len(from_b) > 1000
    finally:
        for sock in (direct, proxied):
            if sock is not None:
                sock.close()
        _stop(b, a)


def test_a_replica_refuses_sync_while_its_link_is_down():
    server = SubprocessServer().start()
    try:
        assert _call(server.port, "REPLICAOF", "127.0.0.1", "1") == b"OK"
        for argv in (("SYNC",), ("PSYNC", "?", "-1")):
            assert _call(server.port, *argv) == Err(
                "NOMASTERLINK Can't SYNC while not connected with my master")
    finally:
        server.stop()


# --- C as B's link changes, compared with an all-Redis chain ---------------------------------

def _link_events(kinds: tuple[str, str, str]) -> list:
    """A (itself a replica of Z) -> B -> C, of the kinds named. B's link drops, then A is
    promoted (a new ID: B continues under it and has C do the same), then B is promoted, then
    made a replica of an unrelated server D (a full sync, which C follows in full). What the
    servers report along the way, IDs as names."""
    z = a = b = c = d = None
    seen: list = []
    try:
        z = _start("redis")
        a, b, c = (_start(kind) for kind in kinds)
        d = _start("redis")
        _call(z.port, "SET", "z", "1")
        _call(d.port, "SET", "d", "1")
        _replicate(a, z)
        _replicate(b, a)
        _replicate(c, b)
        ids = {_repl(z.port, "master_replid"): "Z"}

        def name(replid: str) -> str:
            return ids.setdefault(replid, f"id{len(ids)}")

        def settle(what: str, top) -> None:
            # (the chain caught up: the last write on the top master reached C)
            for server in (b, c):
                if _repl(server.port, "role") == "slave":
                    wait_link_up(server.port)
            _call(top.port, "SET", "mark", what)
            wait_until(lambda: _call(c.port, "GET", "mark") == what.encode(),
                       f"C holding the mark after {what}")
            seen.append((what,
                         _stat(b.port, "sync_full"), _stat(b.port, "sync_partial_ok"),
                         _stat(b.port, "sync_partial_err"),
                         name(_repl(b.port, "master_replid")),
                         name(_repl(c.port, "master_replid")),
                         _repl(b.port, "connected_slaves")))

        settle("start", z)
        # B's link drops: C stays, B continues from A.
        assert _call(b.port, "CLIENT", "KILL", "TYPE", "master") == 1
        wait_until(lambda: _stat(a.port, "sync_partial_ok") == 1, "B continuing from A")
        settle("link dropped", z)
        # A promoted: a new ID, B continues under it, C is told and continues too.
        assert _call(a.port, "REPLICAOF", "NO", "ONE") == b"OK"
        wait_until(lambda: _stat(b.port, "sync_partial_ok") == 1, "C continuing from B")
        settle("A promoted", a)
        # B promoted: C continues from B's previous ID.
        assert _call(b.port, "REPLICAOF", "NO", "ONE") == b"OK"
        wait_until(lambda: _stat(b.port, "sync_partial_ok") == 2, "C continuing from B")
        settle("B promoted", b)
        # B a replica of D: a full sync with another history, which C follows in full.
        assert _call(b.port, "REPLICAOF", "127.0.0.1", str(d.port)) == b"OK"
        wait_until(lambda: _stat(b.port, "sync_full") == 2, "C syncing again in full")
        settle("B syncs with D", d)
        seen.append(("C holds D's data", _call(c.port, "GET", "d"), _call(c.port, "GET", "z")))
        digest = _digest(d.port)
        seen.append(("digests", _digest(b.port) == digest, _digest(c.port) == digest))
        return seen
    finally:
        _stop(d, c, b, a, z)


@pytest.mark.parametrize("kinds", [("redis", "minired", "minired"),
                                   ("minired", "minired", "redis"),
                                   ("minired", "minired", "minired")])
def test_the_sub_replica_follows_the_link_changes_as_in_redis(kinds):
    assert _link_events(kinds) == _link_events(("redis", "redis", "redis"))


def test_a_sub_replica_continues_from_the_middle_replica_s_backlog():
    a = _start("minired")
    b = _start("minired")
    c = _start("redis")
    writer = RawClient(a.port)
    try:
        _replicate(b, a)
        writer.call("SELECT", "5")
        writer.call("SET", "in-5", "1")
        wait_caught_up(a.port, b.port)
        # C syncs from B with A's stream in database 5: the RDB's repl-stream-db says so (the
        # stream goes on without a SELECT).
        _replicate(c, b)
        writer.call("SET", "still-in-5", "1")
        wait_caught_up(a.port, c.port)
        assert _digest(c.port) == _digest(a.port)
        _call(a.port, "SET", "a", "1")
        assert _call(b.port, "CLIENT", "KILL", "TYPE", "replica") == 1
        _call(a.port, "SET", "b", "2")  # (while C is away)
        wait_until(lambda: _stat(b.port, "sync_partial_ok") == 1, "C continuing from B")
        _call(a.port, "SET", "c", "3")
        wait_caught_up(a.port, c.port)
        assert _digest(c.port) == _digest(a.port)
        assert _stat(b.port, "sync_full") == 1
        assert _call(b.port, "CONFIG", "RESETSTAT") == b"OK"  # (resetServerStats)
        assert [_stat(b.port, field) for field in
                ("sync_full", "sync_partial_ok", "sync_partial_err")] == [0, 0, 0]
    finally:
        writer.close()
        _stop(c, b, a)


# --- the replication ID and offset in the RDB -----------------------------------------------

def _aux_fields(path) -> dict[bytes, bytes]:
    data = path.read_bytes()
    fields, pos = {}, 9
    while data[pos] == 0xFA:
        reader = Reader(data, pos + 1)
        name = reader.string()
        fields[name] = reader.string()
        pos = reader.pos
    return fields


def _save_aux(kind: str, tmp_path) -> list:
    """The aux fields of SAVE on a master without replicas, a master with one (its stream in
    database 3), and that replica: names in order, and the repl-* values against INFO."""
    seen = []
    master_dir, replica_dir = tmp_path / kind / "m", tmp_path / kind / "r"
    master_dir.mkdir(parents=True)
    replica_dir.mkdir(parents=True)
    master = _start(kind, "--dir", str(master_dir), "--repl-ping-replica-period", "3600")
    replica = _start(kind, "--dir", str(replica_dir))
    try:
        _call(master.port, "SET", "k", "v")
        _call(master.port, "SAVE")
        seen.append(list(_aux_fields(master_dir / "dump.rdb")))
        _replicate(replica, master)
        client = RawClient(master.port)
        client.call("SELECT", "3")
        client.call("SET", "k3", "v")
        client.close()
        wait_caught_up(master.port, replica.port)
        for server, directory in ((master, master_dir), (replica, replica_dir)):
            _call(server.port, "SAVE")
            fields = _aux_fields(directory / "dump.rdb")
            seen.append(list(fields))
            seen.append(fields[b"repl-stream-db"])
            assert fields[b"repl-id"].decode() == _repl(master.port, "master_replid")
            assert fields[b"repl-offset"].decode() == _repl(server.port, "master_repl_offset")
        return seen
    finally:
        _stop(replica, master)


def test_save_writes_the_replication_id_and_offset_as_redis(tmp_path):
    assert _save_aux("minired", tmp_path) == _save_aux("redis", tmp_path)


@pytest.mark.parametrize("master_kind", ["redis", "minired"])
def test_a_restarted_replica_continues_from_its_dump_rdb(master_kind, tmp_path):
    """minired, replica of a master, saves and stops; the master's stream goes on (in database
    3, with no SELECT after the restart); restarted with replicaof on its dump.rdb, minired asks
    to continue from there and gets it: no full sync, and the data in the right database."""
    master = _start(master_kind, "--repl-ping-replica-period", "3600")
    replica = None
    args = ("--dir", str(tmp_path), "--replicaof", "127.0.0.1", str(master.port))
    try:
        writer = RawClient(master.port)
        writer.call("SET", "before", "1")
        replica = _start("minired", *args)
        wait_link_up(replica.port)
        deadline = _expiring(master.port, 4, "short")
        writer.call("SELECT", "3")
        writer.call("SET", "in-3", "1")
        wait_caught_up(master.port, replica.port)
        offset = int(_repl(replica.port, "master_repl_offset"))
        _call(replica.port, "SAVE")
        replica.stop()
        replica = None
        _wait_past(deadline)  # (a replica loads it still: its master has not deleted it)
        wait_until(lambda: _repl(master.port, "connected_slaves") == "0", "the replica gone")
        writer.call("SET", "while-away", "2")  # (in database 3: no SELECT in the stream)
        full_before = _stat(master.port, "sync_full")
        replica = _start("minired", *args)
        wait_link_up(replica.port)
        writer.call("SET", "after", "3")
        wait_caught_up(master.port, replica.port)
        assert _stat(master.port, "sync_partial_ok") == 1
        assert _stat(master.port, "sync_full") == full_before
        assert _repl(replica.port, "master_replid") == _repl(master.port, "master_replid")
        assert _digest(replica.port) == _digest(master.port)
        client = RawClient(replica.port)
        client.call("SELECT", "3")
        assert client.call("MGET", "in-3", "while-away", "after") == [b"1", b"2", b"3"]
        client.close()
        assert int(_repl(replica.port, "master_repl_offset")) > offset
        # A lookup on the master deletes the expired key, on the replica too.
        writer.call("SELECT", "4")
        assert writer.call("GET", "short") is None
        wait_caught_up(master.port, replica.port)
        assert _digest(replica.port) == _digest(master.port)
        writer.close()
    finally:
        _stop(replica, master)


def _expiring(port: int, db: int, key: str) -> int:
    """A key that expires in 300 ms, never deleted by active expiry (turned off): only a
    lookup or a restart removes it. Its deadline, in Unix ms."""
    client = RawClient(port)
    try:
        client.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        client.call("SELECT", str(db))
        deadline = int(time.time() * 1000) + 300
        client.call("SET", key, "v", "PXAT", str(deadline))
        return deadline
    finally:
        client.close()


def _wait_past(deadline_ms: int) -> None:
    wait_until(lambda: time.time() * 1000 > deadline_ms + 20, "the key's deadline passed")


def _master_restart(master_kind: str, replica_kind: str, tmp_path) -> list:
    """psync2-master-restart: a master with a replica (and that replica's replica) and a key
    that expires while it is down, restarted on the dump.rdb SHUTDOWN saved. What it reports:
    the old ID as replid2 up to offset+1, the offset past the deletion of the expired key, the
    backlog holding that deletion; and the replicas continuing, ending with its data."""
    directory = tmp_path / master_kind
    directory.mkdir()
    args = ("--dir", str(directory), "--repl-ping-replica-period", "3600")
    port = free_port()

    def start_master():
        if master_kind == "redis":
            return RedisServer(*REDIS_ARGS, *args, port=port).start()
        return MiniredProcess(*MINIRED_ARGS, *args, port=port).start()

    master = start_master()
    replica = _start(replica_kind)
    sub = _start("redis")
    seen: list = []
    try:
        _replicate(replica, master)
        _replicate(sub, replica)
        client = RawClient(port)
        client.call("SELECT", "2")
        client.call("SET", "k", "v")
        client.close()
        deadline = _expiring(port, 5, "short")
        _wait_offsets_equal(master, replica, sub)
        replid = _repl(port, "master_replid")
        offset = int(_repl(port, "master_repl_offset"))
        try:
            _call(port, "SHUTDOWN", "NOW", "SAVE")  # (NOW: no GETACK to lagging replicas)
        except (ConnectionError, OSError):
            pass
        master.proc.wait(30)
        _wait_past(deadline)
        master = start_master()
        client = RawClient(port)
        try:
            seen.append(info_field(client, "replication", "master_replid") != replid)
            seen.append(info_field(client, "replication", "master_replid2") == replid)
            for field in ("second_repl_offset", "master_repl_offset",
                          "repl_backlog_first_byte_offset"):
                seen.append((field, int(info_field(client, "replication", field)) - offset))
            for field in ("repl_backlog_active", "repl_backlog_histlen"):
                seen.append((field, info_field(client, "replication", field)))
            seen.append(info_field(client, "persistence", "rdb_last_load_keys_expired"))
            wait_until(lambda: info_field(client, "replication", "connected_slaves") == "1",
                       "the replica back")
            seen.append(info_field(client, "stats", "sync_partial_ok"))
            seen.append(info_field(client, "stats", "sync_full"))
            client.call("SET", "after", "1")  # (database 0: the stream SELECTs it)
        finally:
            client.close()
        _wait_offsets_equal(master, replica, sub)
        seen.append(_digest(sub.port) == _digest(replica.port) == _digest(port))
        seen.append(_call(sub.port, "GET", "after"))
        seen.append(_call(sub.port, "DBSIZE"))
        return seen
    finally:
        _stop(sub, replica, master)


@pytest.mark.parametrize("replica_kind", ["redis", "minired"])
def test_a_restarted_master_keeps_its_id_as_the_previous_one(replica_kind, tmp_path):
    assert (_master_restart("minired", replica_kind, tmp_path)
            == _master_restart("redis", replica_kind, tmp_path))


def _restart_without_history(kind: str, tmp_path) -> list:
    """A master that never had replicas (its dump.rdb holds no repl-id) restarted after a key
    in it expired: the key's deletion counts in master_repl_offset, and no backlog is kept."""
    directory = tmp_path / kind
    directory.mkdir()
    args = ("--dir", str(directory))
    port = free_port()

    def start():
        if kind == "redis":
            return RedisServer(*REDIS_ARGS, *args, port=port).start()
        return MiniredProcess(*MINIRED_ARGS, *args, port=port).start()

    server = start()
    try:
        _call(port, "SET", "kept", "v")
        deadline = _expiring(port, 5, "short")
        assert _call(port, "SAVE") == b"OK"
        server.stop()
        _wait_past(deadline)
        server = start()
        return [(field, _repl(port, field)) for field in
                ("master_replid2", "master_repl_offset", "second_repl_offset",
                 "repl_backlog_active", "repl_backlog_histlen")]
    finally:
        server.stop()


def test_a_restart_without_history_counts_the_expired_keys_deletion(tmp_path):
    assert (_restart_without_history("minired", tmp_path)
            == _restart_without_history("redis", tmp_path))
