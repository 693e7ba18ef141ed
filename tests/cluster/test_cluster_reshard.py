"""Resharding with the commands a real cluster's tools send: CLUSTER SETSLOT, GETKEYSINSLOT,
COUNTKEYSINSLOT and MIGRATE ... KEYS, compared with a real Redis 7.0 cluster step by step, and
`redis-cli --cluster reshard` / `rebalance` / `fix` run against minired under a workload."""
from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest
from redis.cluster import RedisCluster

from tests.cluster.test_cluster_diff import ClusterDiff, _canonical, cluster_diff
from tests.support.respclient import RawClient, call_once

SLOT = 12182  # "foo"'s slot, node 2's at first


@pytest.fixture
def cdiff(real_cluster, fresh_mini):
    with cluster_diff(real_cluster, fresh_mini) as pair:
        try:
            yield pair
        finally:  # the real cluster as it was, for the next tests
            pair.give_real_slot_back(SLOT)


def check(cdiff: ClusterDiff, node: int, make) -> None:
    """The same command on both clusters, built for each from its node ids and ports."""
    real = cdiff.real[node].call(*make(cdiff.real_ids, cdiff.real_ports))
    mini = cdiff.mini[node].call(*make(cdiff.mini_ids, cdiff.mini_ports))
    assert (_canonical(cdiff.normalize(mini, False), False)
            == _canonical(cdiff.normalize(real, True), False)), (
        f"node {node}\n  redis:   {real!r}\n  minired: {mini!r}")


def _own_line(cdiff: ClusterDiff, node: int) -> tuple:
    lines = []
    for reply, real in zip(cdiff.both(node, "CLUSTER", "NODES"), (True, False)):
        text = cdiff.normalize(reply, real).decode()
        lines.append([line for line in text.splitlines() if "myself" in line][0].split()[8:])
    return tuple(lines)


def test_setslot_and_migrate_move_a_slot_as_on_redis(cdiff):
    keys = ["{foo}1", "{foo}2", "{foo}3", "{foo}4"]
    for key in keys:
        cdiff.check(2, "SET", key, key)
    cdiff.check(2, "PEXPIRE", keys[0], 100000)
    # The refusals, each with Redis's text.
    for args in (("SETSLOT", 16384, "STABLE"), ("SETSLOT", "x", "STABLE"),
                 ("SETSLOT", SLOT, "BOGUS"), ("SETSLOT", SLOT, "STABLE", "extra"),
                 ("SETSLOT", SLOT, "NODE"), ("SETSLOT", SLOT, "IMPORTING", "nosuch"),
                 ("SETSLOT", SLOT, "NODE", "nosuch")):
        cdiff.check(0, "CLUSTER", *args)
    check(cdiff, 0, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "MIGRATING", ids[1]))
    check(cdiff, 2, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "IMPORTING", ids[0]))
    check(cdiff, 2, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "MIGRATING", "nosuch"))
    check(cdiff, 2, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "NODE", ids[0]))
    # Open the move as redis-cli does: IMPORTING on the target, then MIGRATING on the source.
    check(cdiff, 0, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "IMPORTING", ids[2]))
    check(cdiff, 2, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "MIGRATING", ids[0]))
    for node in (0, 2):
        theirs, ours = _own_line(cdiff, node)
        assert ours == theirs
    cdiff.check(2, "CLUSTER", "COUNTKEYSINSLOT", SLOT)
    cdiff.check(2, "CLUSTER", "GETKEYSINSLOT", SLOT, 2)
    # MIGRATE's own refusals, then the target's (as "Target instance replied with error").
    for make in (
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], keys[0], 0, 5000, "KEYS", keys[1]),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "BOGUS"),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "AUTH"),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "AUTH2", "u"),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", "x", 5000, "KEYS", keys[1]),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "KEYS", "{foo}0"),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[1], "", 0, 5000, "KEYS", keys[1]),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 1, 5000, "KEYS", keys[1]),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "AUTH", "pw",
                                "KEYS", keys[1]),
            lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000, "AUTH2", "u",
                                "pw", "KEYS", keys[1])):
        check(cdiff, 2, make)
    # A key already on the target: BUSYKEY without REPLACE, replaced with it.
    cdiff.check(0, "ASKING")
    cdiff.check(0, "SET", keys[3], "theirs")
    check(cdiff, 2, lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000,
                                        "KEYS", keys[2], keys[3]))
    cdiff.check(2, "MGET", keys[2], keys[3])  # the one moved is gone: ASK
    check(cdiff, 2, lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000,
                                        "REPLACE", "KEYS", keys[3]))
    # COPY leaves the source's key; then the batch as redis-cli sends it.
    check(cdiff, 2, lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], keys[1], 0, 5000,
                                        "COPY"))
    cdiff.check(2, "GET", keys[1])
    check(cdiff, 2, lambda ids, ports: ("MIGRATE", "127.0.0.1", ports[0], "", 0, 5000,
                                        "REPLACE", "KEYS", keys[0], keys[1]))
    cdiff.check(2, "CLUSTER", "COUNTKEYSINSLOT", SLOT)
    cdiff.check(0, "ASKING")
    assert all(0 < ttl <= 100000 for ttl in cdiff.both(0, "PTTL", keys[0]))  # the TTL went too
    # Close it: the new owner first, then every node (redis-cli's order).
    for node in (0, 1, 2):
        check(cdiff, node, lambda ids, ports: ("CLUSTER", "SETSLOT", SLOT, "NODE", ids[0]))
    for node in (0, 2):
        theirs, ours = _own_line(cdiff, node)
        assert ours == theirs
    cdiff.check(0, "MGET", *keys)
    cdiff.check(2, "GET", keys[0])  # MOVED
    cdiff.check_all("CLUSTER", "SLOTS")


def test_setslot_needs_cluster_control():
    from minired.embed import EmbeddedServer

    with EmbeddedServer(cluster=2) as plain:
        client = RawClient(plain.port)
        try:
            assert client.call("CLUSTER", "SETSLOT", 1, "STABLE").message == (
                "ERR cluster control is disabled; start minired with --cluster-control to use "
                "CLUSTER SETSLOT")
            assert client.call("CLUSTER", "FORGET", "x").message == (
                "ERR CLUSTER FORGET is not supported by minired")
        finally:
            client.close()


def _cli(*args: str) -> str:
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli is needed"
    done = subprocess.run([cli, "--cluster", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Workload(threading.Thread):
    """A client writing and reading keys through RedisCluster until told to stop; every key
    it wrote, with the value it read back, and any error it met."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.client = RedisCluster.from_url(url)
        self.stop = threading.Event()
        self.written: dict[str, str] = {}
        self.errors: list[BaseException] = []

    def run(self) -> None:
        i = 0
        try:
            while not self.stop.is_set():
                key, value = f"load:{i}", f"v{i}"
                self._call(self.client.set, key, value)
                self.written[key] = value
                assert (self._call(self.client.get, f"load:{i // 2}")
                        == self.written[f"load:{i // 2}"].encode())
                i += 1
        except BaseException as exc:  # (reported by the test)
            self.errors.append(exc)

    def _call(self, method, *args):
        """redis-py (8.2) follows an -ASK only to a node already in its cache: for one that
        `redis-cli --cluster add-node` joined since, NodesManager.get_node gives None and the
        client fails with AttributeError ('NoneType' ... 'host'). A master that owns no slot
        yet is in no CLUSTER SLOTS reply, so the first key moved to it during a rebalance can
        meet this, on Redis as on minired, whenever the client's next topology refresh comes
        late (a loaded machine). The client learns the topology again and the command is
        retried until the slot's move is over (10 s at most), as an application would; every
        other error still fails the test."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return method(*args)
            except AttributeError as exc:
                if "'NoneType'" not in str(exc) or time.monotonic() > deadline:
                    raise
                self.client.nodes_manager.initialize()
                time.sleep(0.02)


def test_redis_cli_reshard_rebalance_and_fix_lose_nothing_under_load(fresh_mini):
    ports = [port for _, port in fresh_mini.nodes]
    seed = RedisCluster.from_url(fresh_mini.url)
    for i in range(300):
        seed.set(f"seed:{i}", i)
    ids = [call_once(port, "CLUSTER", "MYID").decode() for port in ports]
    entry = f"127.0.0.1:{ports[0]}"
    load = Workload(fresh_mini.url)
    load.start()
    try:
        out = _cli("reshard", entry, "--cluster-from", ids[0], "--cluster-to", ids[1],
                   "--cluster-slots", "600", "--cluster-yes", "--cluster-pipeline", "7")
        assert "Moving slot 599 from" in out
        out = _cli("rebalance", entry, "--cluster-weight", f"{ids[2]}=2", "--cluster-yes")
        assert "Rebalancing across 3 nodes" in out
    finally:
        load.stop.set()
        load.join()
    assert not load.errors, load.errors
    # An open move left half done, as an interrupted reshard leaves it: fix finishes it.
    slot = seed.keyslot("seed:1")
    owner = ports.index(seed.nodes_manager.get_node_from_slot(slot).port)
    other = (owner + 1) % 3
    assert call_once(ports[other], "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[owner]) == b"OK"
    assert call_once(ports[owner], "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[other]) == b"OK"
    out = _cli("fix", entry, "--cluster-yes")
    assert f"Fixing open slot {slot}" in out
    out = _cli("check", entry)
    assert "[OK] All nodes agree about slots configuration." in out
    assert "[OK] All 16384 slots covered." in out and "[WARNING]" not in out
    assert "slots:[0-599]" not in out  # (the layout did change)
    check = RedisCluster.from_url(fresh_mini.url)
    assert [check.get(key) for key in load.written] == [
        value.encode() for value in load.written.values()]
    assert [check.get(f"seed:{i}") for i in range(300)] == [b"%d" % i for i in range(300)]
    assert sum(call_once(port, "DBSIZE") for port in ports) == 300 + len(load.written)


def test_redis_cli_add_node_joins_spare_nodes_that_take_slots_under_load():
    from minired.embed import EmbeddedServer

    with EmbeddedServer(cluster=3, cluster_spares=2, cluster_control=True) as mini:
        ports = [port for _, port in mini.nodes]
        seed = RedisCluster.from_url(mini.url)
        for i in range(200):
            seed.set(f"seed:{i}", i)
        load = Workload(mini.url)
        load.start()
        try:
            _cli("add-node", f"127.0.0.1:{ports[3]}", f"127.0.0.1:{ports[0]}")
            new_id = call_once(ports[3], "CLUSTER", "MYID").decode()
            _cli("add-node", f"127.0.0.1:{ports[4]}", f"127.0.0.1:{ports[0]}", "--cluster-slave",
                 "--cluster-master-id", new_id)
            out = _cli("rebalance", f"127.0.0.1:{ports[0]}", "--cluster-use-empty-masters",
                       "--cluster-yes")
            assert f"to 127.0.0.1:{ports[3]}" in out
        finally:
            load.stop.set()
            load.join()
        assert not load.errors, load.errors
        out = _cli("check", f"127.0.0.1:{ports[0]}")
        assert "[OK] All 16384 slots covered." in out and "[WARNING]" not in out
        assert f"replicates {new_id}" in out
        check = RedisCluster.from_url(mini.url)
        assert [check.get(key) for key in load.written] == [
            value.encode() for value in load.written.values()]
        assert [check.get(f"seed:{i}") for i in range(200)] == [b"%d" % i for i in range(200)]
        assert call_once(ports[3], "DBSIZE") > 0  # the new master holds keys now, its replica too
        replica = RawClient(ports[4])
        try:
            assert replica.call("READONLY") == b"OK"
            assert replica.call("DBSIZE") == call_once(ports[3], "DBSIZE")
        finally:
            replica.close()


SPARE_SEQUENCE = [
    ("CLUSTER", "ADDSLOTS", 16384), ("CLUSTER", "ADDSLOTS", 1, 1),
    ("CLUSTER", "ADDSLOTSRANGE", 5, 1), ("CLUSTER", "ADDSLOTSRANGE", 1, 2, 3),
    ("CLUSTER", "REPLICATE", "nosuch"), ("CLUSTER", "MEET", "127.0.0.1", "x"),
    ("SET", "a", "1"), ("CLUSTER", "ADDSLOTS", 1, 2), ("CLUSTER", "ADDSLOTS", 2),
    ("CLUSTER", "ADDSLOTSRANGE", 10, 20, 30, 40), ("CLUSTER", "COUNTKEYSINSLOT", 15495),
    ("CLUSTER", "ADDSLOTS", 15495), ("SET", "a", "1"), ("GET", "a"),
]


def test_a_node_in_no_cluster_answers_as_a_new_redis_node():
    from minired.embed import EmbeddedServer
    from tests.support.servers import RedisServer

    with RedisServer("--cluster-enabled", "yes") as real, \
            EmbeddedServer(cluster=1, cluster_spares=1, cluster_control=True) as mini:
        spare = mini.nodes[1][1]
        for command in SPARE_SEQUENCE:
            assert call_once(spare, *command) == call_once(real.port, *command), command
        for port in (spare, real.port):
            own = call_once(port, "CLUSTER", "MYID")
            assert call_once(port, "CLUSTER", "REPLICATE", own).message == "ERR Can't replicate myself"
        info = [call_once(port, "CLUSTER", "INFO").decode().split("\r\n")[:7]
                for port in (spare, real.port)]
        assert info[0] == info[1]
        # minired's own limits: MEET reaches the process's nodes, and merges no two layouts.
        assert call_once(spare, "CLUSTER", "MEET", "127.0.0.1", real.port).message == (
            "ERR CLUSTER MEET reaches only the cluster nodes of this minired process")
        assert call_once(spare, "CLUSTER", "MEET", "127.0.0.1", mini.port).message == (
            "ERR CLUSTER MEET of two clusters that both serve slots is not supported by minired")
