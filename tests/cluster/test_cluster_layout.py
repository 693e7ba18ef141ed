"""The layout kept on disk as Redis keeps nodes.conf: a cluster started with --dir writes each
node's file (nodes-0.conf, ...) at start-up and at every change, and starts again with the slots
where their keys were moved, the node ids and the epochs."""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

from minired.embed import SubprocessServer
from tests.support.respclient import Err, RawClient, call_once

SLOT = 12182  # "foo"'s slot, node 2's at first


def _cluster(directory, *args: str) -> SubprocessServer:
    return SubprocessServer("--dir", str(directory), *args, cluster=3,
                            cluster_control=True).start()


@contextmanager
def _source_and_target(directory, *args: str):
    """A cluster started on `directory`: its ports, and clients of node 2 (SLOT's owner at
    first, the source of the moves) and node 0 (their target); all stopped after."""
    server = _cluster(directory, *args)
    try:
        ports = [port for _, port in server.addresses]
        source, target = RawClient(ports[2]), RawClient(ports[0])
        try:
            yield ports, source, target
        finally:
            source.close()
            target.close()
    finally:
        server.stop()


def _layout(port: int) -> tuple:
    client = RawClient(port)
    try:
        nodes = sorted(line.split()[0:1] + line.split()[2:3] + line.split()[6:7] +
                       line.split()[8:]
                       for line in client.call("CLUSTER", "NODES").decode().splitlines())
        return nodes, client.call("CLUSTER", "MYID")
    finally:
        client.close()


def test_a_restart_keeps_the_slots_where_the_keys_went(tmp_path):
    with _source_and_target(tmp_path) as (ports, source, target):
        for key in ("{foo}1", "{foo}2"):
            assert source.call("SET", key, "v") == b"OK"
        assert target.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "FINISH") == 2
        assert target.call("SET", "{foo}3", "w") == b"OK"
        for client in (source, target):
            assert client.call("SAVE") == b"OK"
        before = [_layout(port) for port in ports]
    assert sorted(path.name for path in tmp_path.glob("nodes-*.conf")) == [
        "nodes-0.conf", "nodes-1.conf", "nodes-2.conf"]
    with _source_and_target(tmp_path) as (ports, source, target):
        assert target.call("MGET", "{foo}1", "{foo}2", "{foo}3") == [b"v", b"v", b"w"]
        assert source.call("GET", "{foo}1") == Err(f"MOVED {SLOT} 127.0.0.1:{ports[0]}")
        assert [_layout(port) for port in ports] == before  # ids, epochs and slots


def test_an_open_move_is_kept_too(tmp_path):
    with _source_and_target(tmp_path) as (ports, source, target):
        for key in ("{foo}1", "{foo}2"):
            source.call("SET", key, "v")
        source.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "COUNT", 1)
        for client in (source, target):
            client.call("SAVE")
        before = [_layout(port) for port in ports]
    with _source_and_target(tmp_path) as (ports, source, _):
        assert [_layout(port) for port in ports] == before  # [slot->-id] and [slot-<-id]
        assert source.call("MGET", "{foo}1", "{foo}2") == Err(
            "TRYAGAIN Multiple keys request during rehashing of slot")


def _start_fails(directory, masters: int) -> str:
    """What a cluster start that must fail logs."""
    result = subprocess.run(
        [sys.executable, "-m", "minired", "--port", "0", "--dir", str(directory),
         "--cluster", str(masters)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    return result.stdout + result.stderr  # (the log goes to stdout, as redis-server's does)


def test_files_of_a_different_cluster_stop_the_start(tmp_path):
    _cluster(tmp_path).stop()
    assert "describes 3 nodes, this cluster has 2" in _start_fails(tmp_path, 2)
    (tmp_path / "nodes-1.conf").unlink()
    assert "nodes-1.conf missing" in _start_fails(tmp_path, 3)


def test_an_aof_replays_keys_where_they_were_moved(tmp_path):
    """The move is logged as Redis's AOFs log MIGRATE (RESTORE on the target, DEL on the
    source): replayed, each key is on the node the kept layout gives its slot to."""
    with _source_and_target(tmp_path, "--appendonly", "yes", "--appendfsync", "always") as (
            ports, source, target):
        assert source.call("SET", "{foo}1", "v") == b"OK"
        assert source.call("PEXPIREAT", "{foo}1", 4102444800000) == 1  # (year 2100)
        assert source.call("SET", "{foo}2", "w") == b"OK"
        assert target.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "FINISH") == 2
    with _source_and_target(tmp_path, "--appendonly", "yes") as (ports, source, target):
        assert target.call("MGET", "{foo}1", "{foo}2") == [b"v", b"w"]
        assert target.call("PEXPIRETIME", "{foo}1") == 4102444800000
        assert source.call("CLUSTER", "COUNTKEYSINSLOT", SLOT) == 0


def test_a_master_replaced_while_down_comes_back_as_a_replica(tmp_path):
    """The killed master's file keeps the layout it died with (its slots, epoch 1); at the next
    start the promoted replica's newer epoch wins the slots and the old master follows it, as
    Redis's clusterUpdateSlotsConfigWith makes a master that lost all its slots a replica."""
    def start() -> SubprocessServer:
        return SubprocessServer("--dir", str(tmp_path), cluster=2, cluster_replicas=1,
                                cluster_control=True, time_control=True).start()

    server = start()
    try:
        ports = [port for _, port in server.addresses]
        assert call_once(ports[0], "SET", "b", "1") == b"OK"  # slot 3300: node 0's
        assert call_once(ports[1], "MINIRED", "CLUSTER", "FAILOVER", ports[0]) == b"OK"
        call_once(ports[1], "MINIRED", "ADVANCE", 15500)  # the node timeout, then the election
        assert call_once(ports[2], "SAVE") == b"OK"
        promoted_id = call_once(ports[2], "CLUSTER", "MYID").decode()
    finally:
        server.stop()
    server = start()
    try:
        ports = [port for _, port in server.addresses]
        old, promoted = RawClient(ports[0]), RawClient(ports[2])
        own = [line.split() for line in old.call("CLUSTER", "NODES").decode().splitlines()
               if "myself" in line][0]
        assert promoted.call("CLUSTER", "MYID").decode() == promoted_id
        assert own[2:4] == ["myself,slave", promoted_id]
        assert promoted.call("GET", "b") == b"1"
        assert old.call("GET", "b") == Err(f"MOVED 3300 127.0.0.1:{ports[2]}")
        old.close()
        promoted.close()
    finally:
        server.stop()
