"""A master killed in a cluster with replicas, as a real Redis 7.0 cluster lives through it:
its port refuses at once, the other nodes keep sending clients to it until
cluster-node-timeout, then (cluster-require-full-coverage yes) answer CLUSTERDOWN until its
replica is promoted, and clients are sent to the promoted replica, which has the data. redis-py's
RedisCluster, unchanged, against both: the same errors, then the same replies."""
from __future__ import annotations

import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from tests.queue.cluster import RedisClusterServers
from tests.support.respclient import RawClient, call_once

KEYS = [f"key:{i}" for i in range(200)]
VICTIM_KEY = "b"  # slot 3300: the first master's


def _client(port: int) -> RedisCluster:
    # Few quick retries, so that each call ends long before the real cluster's node timeout;
    # no real-time pause between topology refreshes, since minired's failover takes no real
    # time (the clock is moved): what the client sees then depends on the servers' answers only.
    return RedisCluster(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 2),
                        socket_connect_timeout=1, topology_refresh_min_interval=0)


def _outcome(call):
    try:
        return ("ok", call())
    except redis.exceptions.RedisError as exc:
        return ("error", type(exc).__name__)


def _replica_of(port: int, master_port: int) -> int:
    """The port of the replica of the master on `master_port`, from CLUSTER NODES."""
    lines = [line.split() for line in call_once(port, "CLUSTER", "NODES").decode().splitlines()]
    master_id = next(fields[0] for fields in lines if fields[1].startswith(f"127.0.0.1:{master_port}@"))
    replica = next(fields for fields in lines if fields[3] == master_id)
    return int(replica[1].split(":")[1].split("@")[0])


def _owner_of_slot_0(port: int) -> int:
    return next(entry[2][1] for entry in call_once(port, "CLUSTER", "SLOTS") if entry[0] == 0)


def _ride_out(entry_port: int, kill, wait_for_promotion) -> list:
    """What a RedisCluster client sees when the master of VICTIM_KEY dies: the outcomes of a
    read and a write right after, then once the replica took over, the data and a write."""
    rc = _client(entry_port)
    try:
        for key in KEYS + [VICTIM_KEY]:
            rc.set(key, key)
        seen = []
        kill()
        seen.append(_outcome(lambda: rc.get(VICTIM_KEY)))
        seen.append(_outcome(lambda: rc.set(VICTIM_KEY, "new")))
        wait_for_promotion()
        seen.append(_outcome(lambda: rc.get(VICTIM_KEY)))
        seen.append(_outcome(lambda: [rc.get(key) for key in KEYS] == [k.encode() for k in KEYS]))
        seen.append(_outcome(lambda: rc.set(VICTIM_KEY, "after")))
        seen.append(_outcome(lambda: rc.get(VICTIM_KEY)))
        return seen
    finally:
        rc.close()


@pytest.fixture(scope="module")
def real_with_replicas():
    with RedisClusterServers(masters=3, replicas=1, node_timeout=3000) as servers:
        yield servers


class Side:
    """One cluster of 3 masters and 3 replicas, its replies with node ids and addresses named
    by node index (node i + 3 replicates node i on both)."""

    def __init__(self, ports: list[int]) -> None:
        masters = ports[:3]  # (redis-cli --cluster create pairs the replicas as it likes)
        self.ports = masters + [_replica_of(masters[0], port) for port in masters]
        self.ids = [call_once(port, "CLUSTER", "MYID").decode() for port in self.ports]

    def call(self, node: int, *args):
        return self.normalize(call_once(self.ports[node], *args))

    def normalize(self, value):
        if isinstance(value, list):
            return [self.normalize(item) for item in value]
        if isinstance(value, dict):
            return {key: self.normalize(item) for key, item in value.items()}
        if isinstance(value, int) and value in self.ports:
            return f"<port{self.ports.index(value)}>"
        if isinstance(value, bytes | str):
            text = value.decode() if isinstance(value, bytes) else value
            for i, (port, node_id) in enumerate(zip(self.ports, self.ids)):
                text = text.replace(f"127.0.0.1:{port}@{port + 10000}", f"<node{i}>")
                text = text.replace(f"127.0.0.1:{port}", f"<node{i}>")
                text = text.replace(node_id, f"<id{i}>")
            return text
        if hasattr(value, "message"):
            return ("error", self.normalize(value.message))
        return value

    def nodes(self, node: int, *args) -> list:
        """CLUSTER NODES (or REPLICAS) lines without the ping and pong times."""
        reply = self.call(node, "CLUSTER", *args)
        lines = reply if isinstance(reply, list) else reply.splitlines()
        return sorted(line.split()[:4] + line.split()[6:] for line in lines)


def _layout(side: Side) -> dict:
    shards = side.call(0, "CLUSTER", "SHARDS")
    return {
        "nodes": [side.nodes(node, "NODES") for node in (0, 3)],
        "slots": sorted(side.call(node, "CLUSTER", "SLOTS") for node in (0, 3)),
        "info": [line for line in side.call(3, "CLUSTER", "INFO").splitlines()
                 if "messages" not in line],
        "shards": sorted(str(_shard_fields(shard)) for shard in shards),
        "replicas": side.nodes(1, "REPLICAS", side.ids[0]),
        "slaves": side.nodes(1, "SLAVES", side.ids[1]),
    }


def _shard_fields(shard) -> list:
    """A CLUSTER SHARDS entry (a RESP2 flat list) with the replication offsets left out."""
    fields = dict(zip(shard[::2], shard[1::2]))
    nodes = []
    for node in fields["nodes"]:
        node = dict(zip(node[::2], node[1::2]))
        node.pop("replication-offset")
        nodes.append(sorted(node.items()))
    return [fields["slots"], sorted(nodes)]


SEQUENCE = [  # (node, command): a replica's answers, with and without READONLY
    (3, ("GET", "b")), (3, ("SET", "b", "replica")), (3, ("READONLY",)), (3, ("GET", "b")),
    (3, ("MGET", "b", "{b}2")), (3, ("SET", "b", "replica")), (3, ("GET", "foo")),
    (3, ("MULTI",)), (3, ("GET", "b")), (3, ("EXEC",)),
    (3, ("MULTI",)), (3, ("GET", "b")), (3, ("SET", "b", "x")), (3, ("EXEC",)),
    (3, ("READWRITE",)), (3, ("GET", "b")), (3, ("CLUSTER", "COUNTKEYSINSLOT", 3300)),
    (3, ("CLUSTER", "SETSLOT", 3300, "STABLE")), (1, ("CLUSTER", "REPLICAS", "nosuch")),
    (3, ("FLUSHALL",)), (3, ("FLUSHDB",)), (3, ("MULTI",)), (3, ("FLUSHALL",)), (3, ("EXEC",)),
    (3, ("READONLY",)), (3, ("GET", "b")),  # (still there)
]


def test_replicas_in_the_layout_and_their_answers_as_on_redis(real_with_replicas):
    from minired.embed import EmbeddedServer

    real = Side([node.port for node in real_with_replicas.nodes])
    call_once(real.ports[0], "SET", "b", "1")
    assert call_once(real.ports[0], "WAIT", 1, 5000) == 1
    with EmbeddedServer(cluster=3, cluster_replicas=1, cluster_control=True) as mini_server:
        mini = Side([port for _, port in mini_server.nodes])
        call_once(mini.ports[0], "SET", "b", "1")
        assert _layout(mini) == _layout(real)
        for node, command in SEQUENCE:
            assert mini.call(node, *command) == real.call(node, *command), command
        errors = (mini.call(1, "CLUSTER", "REPLICAS", mini.ids[3]),
                  real.call(1, "CLUSTER", "REPLICAS", real.ids[3]))
        assert errors[0] == errors[1]
        assert call_once(mini.ports[0], "MINIRED", "CLUSTER", "MIGRATE", 1, mini.ports[3]).message == (
            "ERR Target node is not a master")
        # A replica's notify-keyspace-events leaves its master's events where they were.
        watcher = RawClient(mini.ports[0])
        try:
            assert call_once(mini.ports[0], "CONFIG", "SET", "notify-keyspace-events", "KA") == b"OK"
            watcher.call("SUBSCRIBE", "__keyspace@0__:b")
            assert call_once(mini.ports[3], "CONFIG", "SET", "notify-keyspace-events", "") == b"OK"
            assert call_once(mini.ports[0], "SET", "b", "2") == b"OK"
            assert watcher.read() == [b"message", b"__keyspace@0__:b", b"set"]
        finally:
            watcher.close()
        assert call_once(mini.ports[3], "CLIENT", "TRACKING", "ON").message == (
            "ERR CLIENT TRACKING on a cluster replica node is not supported by minired")
    call_once(real.ports[0], "DEL", "b")


def test_redis_py_rides_out_a_failover_as_on_a_real_cluster(real_with_replicas):
    from minired.embed import EmbeddedServer

    real_ports = [node.port for node in real_with_replicas.nodes]
    victim = real_ports[0]
    replica = _replica_of(real_ports[1], victim)

    def kill_real() -> None:
        for port in real_ports[:3]:  # every write has reached the replicas
            assert call_once(port, "WAIT", 1, 5000) == 1
        with pytest.raises(ConnectionError):
            call_once(victim, "SHUTDOWN", "NOSAVE")

    def promoted_real() -> None:
        """Wait until every live node knows the replica as the master of the slots (the
        promotion, then the gossip that spreads it)."""
        deadline = time.monotonic() + 60
        while not all(_owner_of_slot_0(port) == replica for port in real_ports if port != victim):
            assert time.monotonic() < deadline, "the replica was not promoted"
            time.sleep(0.05)

    expected = _ride_out(real_ports[1], kill_real, promoted_real)

    # minired's clock is driven: the node timeout passes only when the test moves it.
    with EmbeddedServer(cluster=3, cluster_replicas=1, cluster_control=True, time_control=True,
                        cluster_node_timeout=60000) as mini:
        ports = [port for _, port in mini.nodes]
        assert _replica_of(ports[1], ports[0]) == ports[3]
        states = []

        def kill_mini() -> None:
            assert call_once(ports[1], "MINIRED", "CLUSTER", "FAILOVER", ports[0]) == b"OK"

        def promoted_mini() -> None:
            call_once(ports[1], "MINIRED", "ADVANCE", 60000)  # the node timeout: FAIL
            states.append(call_once(ports[1], "CLUSTER", "INFO").decode().split("\r\n")[0])
            states.append(call_once(ports[1], "GET", VICTIM_KEY).message)
            call_once(ports[1], "MINIRED", "ADVANCE", 500)  # the election: the replica is master
            states.append(call_once(ports[1], "CLUSTER", "INFO").decode().split("\r\n")[0])

        actual = _ride_out(ports[1], kill_mini, promoted_mini)
        assert actual == expected, (actual, expected)
        # Between FAIL and the promotion (too short to catch on the real cluster), CLUSTERDOWN.
        assert states == ["cluster_state:fail", "CLUSTERDOWN The cluster is down",
                          "cluster_state:ok"]
        nodes = call_once(ports[1], "CLUSTER", "NODES").decode()
        assert f"127.0.0.1:{ports[3]}@{ports[3] + 10000} master - 0 " in nodes
        assert f"127.0.0.1:{ports[0]}@{ports[0] + 10000} master,fail - 0 0 1 disconnected\n" in nodes
        # The old master comes back as the promoted node's replica.
        assert call_once(ports[1], "MINIRED", "CLUSTER", "RECOVER", ports[0]) == b"OK"
        own = [line for line in call_once(ports[0], "CLUSTER", "NODES").decode().splitlines()
               if "myself" in line][0].split()
        assert own[2:4] == ["myself,slave", call_once(ports[3], "CLUSTER", "MYID").decode()]
        back = RawClient(ports[0])
        try:
            assert back.call("GET", VICTIM_KEY).message == f"MOVED 3300 127.0.0.1:{ports[3]}"
            assert back.call("READONLY") == b"OK"
            assert back.call("GET", VICTIM_KEY) == b"after"  # the new master's data
        finally:
            back.close()
