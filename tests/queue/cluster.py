"""A throwaway 3-master Redis Cluster on free loopback ports, for the queue's tests."""
from __future__ import annotations

import shutil
import subprocess
import time

import redis

from tests.support.servers import RedisServer, free_cluster_port


class RedisClusterServers:
    """``redis-server --cluster-enabled yes`` x N joined by ``redis-cli --cluster create``."""

    def __init__(self, masters: int = 3, replicas: int = 0, node_timeout: int = 5000) -> None:
        ports: set[int] = set()
        for _ in range(masters * (1 + replicas)):
            ports.add(free_cluster_port(ports))
        # The first `masters` ports become the masters, the rest their replicas (node
        # masters + i replicates master i, as redis-cli --cluster create pairs them on one host).
        self.replicas = replicas
        self.nodes = [RedisServer("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                  "--cluster-node-timeout", str(node_timeout), port=port)
                      for port in sorted(ports)]
        for node in self.nodes:  # (a port taken before its node binds it: another is picked)
            node.fixed_port = False
        self.host = "127.0.0.1"

    @property
    def port(self) -> int:
        return self.nodes[0].port

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def start(self) -> "RedisClusterServers":
        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli")
        if not cli:
            raise RuntimeError("redis-cli is needed to create the test cluster")
        subprocess.run([cli, "--cluster", "create", *(f"{self.host}:{n.port}" for n in self.nodes),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        self._wait_until_ok()
        return self

    def _wait_until_ok(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = []
            for node in self.nodes:
                with redis.Redis(host=self.host, port=node.port) as r:
                    info = r.execute_command("CLUSTER", "INFO")
                    info = info.decode() if isinstance(info, bytes) else str(info)
                    # ... and, with replicas, knows every replica as one (gossip takes a while).
                    nodes = r.execute_command("CLUSTER", "NODES")
                    nodes = nodes.decode() if isinstance(nodes, bytes) else str(nodes)
                    replicas = sum(1 for line in nodes.splitlines() if "slave" in line.split()[2])
                    # CLUSTER SLOTS lists a replica once its sync has begun (a replication
                    # offset above 0).
                    slots = r.execute_command("CLUSTER", "SLOTS")
                    synced = all(len(entry) == 3 + self.replicas for entry in slots)
                    states.append("cluster_state:ok" in info and synced
                                  and replicas == len(self.nodes) - len(self.nodes) // (1 + self.replicas))
            if all(states):
                return
            time.sleep(0.1)
        raise RuntimeError("the test cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> "RedisClusterServers":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
