"""Cluster mode's servers, one of each per session: a real 3-master Redis Cluster built from
Debian's redis-server (tests/queue/cluster.py) and `minired --cluster 3` in this process, whose
node i serves the slots of the real cluster's node i."""
from __future__ import annotations

import pytest

from tests.conftest import _flush as flush
from tests.queue.cluster import RedisClusterServers


@pytest.fixture(scope="session")
def real_cluster():
    with RedisClusterServers(masters=3) as servers:
        yield servers


@pytest.fixture(scope="session")
def mini_cluster():
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True, cluster=3, cluster_control=True).start()
    try:
        yield server
    finally:
        server.stop()


def flush_nodes(ports: list[int]) -> None:
    for port in ports:
        flush(port)


def real_ports(real_cluster) -> list[int]:
    return [node.port for node in real_cluster.nodes]


def mini_ports(mini_cluster) -> list[int]:
    return [port for _, port in mini_cluster.nodes]


@pytest.fixture
def fresh_mini(mini_cluster):
    """The minired cluster with every node flushed and its slots as at start-up."""
    def restore(servers) -> None:
        cluster = servers[0].cluster.cluster
        for node in cluster.nodes:
            cluster.recover(node)  # (listening again if a test killed it)
        for epoch, node in enumerate(cluster.nodes, 1):
            node.migrating.clear()
            node.importing.clear()
            node.config_epoch = epoch
        cluster.current_epoch = len(cluster.nodes)
        cluster.assign_evenly()

    mini_cluster.call(restore, mini_cluster.servers)
    flush_nodes(mini_ports(mini_cluster))
    return mini_cluster
