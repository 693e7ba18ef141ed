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
from tests.support.respclient import RawClient

KEYS = [f"key:{i}" for i in range(200)]
VICTIM_KEY = "b"  # slot 3300: the first master's


def _call(port: int, *args):
    client = RawClient(port)
    try:
        return client.call(*args)
    finally:
        client.close()


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
    lines = [line.split() for line in _call(port, "CLUSTER", "NODES").decode().splitlines()]
    master_id = next(fields[0] for fields in lines if fields[1].startswith(f"127.0.0.1:{master_port}@"))
    replica = next(fields for fields in lines if fields[3] == master_id)
    return int(replica[1].split(":")[1].split("@")[0])


def _owner_of_slot_0(port: int) -> int:
    return next(entry[2][1] for entry in _call(port, "CLUSTER", "SLOTS") if entry[0] == 0)


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


def test_redis_py_rides_out_a_failover_as_on_a_real_cluster(real_with_replicas):
    from minired.embed import EmbeddedServer

    real_ports = [node.port for node in real_with_replicas.nodes]
    victim = real_ports[0]
    replica = _replica_of(real_ports[1], victim)

    def kill_real() -> None:
        for port in real_ports[:3]:  # every write has reached the replicas
            assert _call(port, "WAIT", 1, 5000) == 1
        with pytest.raises(ConnectionError):
            _call(victim, "SHUTDOWN", "NOSAVE")

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
            assert _call(ports[1], "MINIRED", "CLUSTER", "FAILOVER", ports[0]) == b"OK"

        def promoted_mini() -> None:
            _call(ports[1], "MINIRED", "ADVANCE", 60000)  # the node timeout: FAIL
            states.append(_call(ports[1], "CLUSTER", "INFO").decode().split("\r\n")[0])
            states.append(_call(ports[1], "GET", VICTIM_KEY).message)
            _call(ports[1], "MINIRED", "ADVANCE", 500)  # the election: the replica is master
            states.append(_call(ports[1], "CLUSTER", "INFO").decode().split("\r\n")[0])

        actual = _ride_out(ports[1], kill_mini, promoted_mini)
        assert actual == expected, (actual, expected)
        # Between FAIL and the promotion (too short to catch on the real cluster), CLUSTERDOWN.
        assert states == ["cluster_state:fail", "CLUSTERDOWN The cluster is down",
                          "cluster_state:ok"]
        nodes = _call(ports[1], "CLUSTER", "NODES").decode()
        assert f"127.0.0.1:{ports[3]}@{ports[3] + 10000} master - 0 " in nodes
        assert f"127.0.0.1:{ports[0]}@{ports[0] + 10000} master,fail - 0 0 1 disconnected\n" in nodes
        # The old master comes back as the promoted node's replica.
        assert _call(ports[1], "MINIRED", "CLUSTER", "RECOVER", ports[0]) == b"OK"
        own = [line for line in _call(ports[0], "CLUSTER", "NODES").decode().splitlines()
               if "myself" in line][0].split()
        assert own[2:4] == ["myself,slave", _call(ports[3], "CLUSTER", "MYID").decode()]
        back = RawClient(ports[0])
        try:
            assert back.call("GET", VICTIM_KEY).message == f"MOVED 3300 127.0.0.1:{ports[3]}"
            assert back.call("READONLY") == b"OK"
            assert back.call("GET", VICTIM_KEY) == b"after"  # the new master's data
        finally:
            back.close()
