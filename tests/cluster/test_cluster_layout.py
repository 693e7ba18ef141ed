"""The layout kept on disk as Redis keeps nodes.conf: a cluster started with --dir writes each
node's file (nodes-0.conf, ...) at start-up and at every change, and starts again with the slots
where their keys were moved, the node ids and the epochs."""
from __future__ import annotations

import subprocess
import sys

from minired.embed import SubprocessServer
from tests.support.respclient import Err, RawClient

SLOT = 12182  # "foo"'s slot, node 2's at first


def _cluster(directory) -> SubprocessServer:
    return SubprocessServer("--dir", str(directory), cluster=3, cluster_control=True).start()


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
    server = _cluster(tmp_path)
    try:
        ports = [port for _, port in server.addresses]
        source, target = RawClient(ports[2]), RawClient(ports[0])
        for key in ("{foo}1", "{foo}2"):
            assert source.call("SET", key, "v") == b"OK"
        assert target.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "FINISH") == 2
        assert target.call("SET", "{foo}3", "w") == b"OK"
        for client in (source, target):
            assert client.call("SAVE") == b"OK"
        before = [_layout(port) for port in ports]
        source.close()
        target.close()
    finally:
        server.stop()
    assert sorted(path.name for path in tmp_path.glob("nodes-*.conf")) == [
        "nodes-0.conf", "nodes-1.conf", "nodes-2.conf"]
    server = _cluster(tmp_path)
    try:
        ports = [port for _, port in server.addresses]
        target, source = RawClient(ports[0]), RawClient(ports[2])
        assert target.call("MGET", "{foo}1", "{foo}2", "{foo}3") == [b"v", b"v", b"w"]
        assert source.call("GET", "{foo}1") == Err(f"MOVED {SLOT} 127.0.0.1:{ports[0]}")
        assert [_layout(port) for port in ports] == before  # ids, epochs and slots
        target.close()
        source.close()
    finally:
        server.stop()


def test_an_open_move_is_kept_too(tmp_path):
    server = _cluster(tmp_path)
    try:
        ports = [port for _, port in server.addresses]
        source, target = RawClient(ports[2]), RawClient(ports[0])
        for key in ("{foo}1", "{foo}2"):
            source.call("SET", key, "v")
        source.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "COUNT", 1)
        for client in (source, target):
            client.call("SAVE")
            client.close()
        before = [_layout(port) for port in ports]
    finally:
        server.stop()
    server = _cluster(tmp_path)
    try:
        ports = [port for _, port in server.addresses]
        assert [_layout(port) for port in ports] == before  # [slot->-id] and [slot-<-id]
        source = RawClient(ports[2])
        assert source.call("MGET", "{foo}1", "{foo}2") == Err(
            "TRYAGAIN Multiple keys request during rehashing of slot")
        source.close()
    finally:
        server.stop()


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
    server = SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync",
                              "always", cluster=3, cluster_control=True).start()
    try:
        ports = [port for _, port in server.addresses]
        source, target = RawClient(ports[2]), RawClient(ports[0])
        assert source.call("SET", "{foo}1", "v") == b"OK"
        assert source.call("PEXPIREAT", "{foo}1", 4102444800000) == 1  # (year 2100)
        assert source.call("SET", "{foo}2", "w") == b"OK"
        assert target.call("MINIRED", "CLUSTER", "MIGRATE", SLOT, ports[0], "FINISH") == 2
        source.close()
        target.close()
    finally:
        server.stop()
    server = SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes",
                              cluster=3, cluster_control=True).start()
    try:
        ports = [port for _, port in server.addresses]
        source, target = RawClient(ports[2]), RawClient(ports[0])
        assert target.call("MGET", "{foo}1", "{foo}2") == [b"v", b"w"]
        assert target.call("PEXPIRETIME", "{foo}1") == 4102444800000
        assert source.call("CLUSTER", "COUNTKEYSINSLOT", SLOT) == 0
        source.close()
        target.close()
    finally:
        server.stop()


def _call(port: int, *args):
    client = RawClient(port)
    try:
        return client.call(*args)
    finally:
        client.close()


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
        assert _call(ports[0], "SET", "b", "1") == b"OK"  # slot 3300: node 0's
        assert _call(ports[1], "MINIRED", "CLUSTER", "FAILOVER", ports[0]) == b"OK"
        _call(ports[1], "MINIRED", "ADVANCE", 15500)  # the node timeout, then the election
        assert _call(ports[2], "SAVE") == b"OK"
        promoted_id = _call(ports[2], "CLUSTER", "MYID").decode()
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
