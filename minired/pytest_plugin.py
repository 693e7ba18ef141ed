"""pytest plugin (registered by entry point): fixtures that give tests a minired server.

- `minired_server`: one in-process server per test session (per xdist worker: each worker is
  its own process, so each has its own server on its own free port).
- `minired_url`: its URL.
- `minired_client`: a redis-py client on a database flushed before each test.
- `minired_cluster`: a Redis Cluster of three masters in one in-process server (cluster mode,
  MINIRED CLUSTER allowed), one per session.
- `minired_faults`: the fixture server's fault injection (minired.embed.Faults); every rule is
  removed after the test.

Clock control (MINIRED ADVANCE) is on for the fixture server; `--minired-no-time-control` turns
it off; fault injection (MINIRED FAULT) is on too, and `--minired-no-fault-injection` turns it off.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from minired.embed import EmbeddedServer


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minired")
    group.addoption("--minired-no-time-control", action="store_true", default=False,
                    help="start the minired fixture server without MINIRED ADVANCE")
    group.addoption("--minired-no-fault-injection", action="store_true", default=False,
                    help="start the minired fixture server without MINIRED FAULT")


@pytest.fixture(scope="session")
def minired_server(request: pytest.FixtureRequest) -> Iterator["EmbeddedServer"]:
    from minired.embed import EmbeddedServer

    time_control = not request.config.getoption("--minired-no-time-control")
    fault_injection = not request.config.getoption("--minired-no-fault-injection")
    server = EmbeddedServer(port=0, time_control=time_control,
                            fault_injection=fault_injection).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def minired_url(minired_server) -> str:
    return minired_server.url


@pytest.fixture
def minired_client(minired_server):
    import redis

    client = redis.Redis(host=minired_server.host, port=minired_server.port)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def minired_faults(minired_server):
    """Fault injection on the fixture server: `minired_faults.add("DROP", command="get")`."""
    faults = minired_server.faults
    faults.reset()
    try:
        yield faults
    finally:
        faults.reset()


@pytest.fixture(scope="session")
def minired_cluster() -> Iterator["EmbeddedServer"]:
    """A Redis Cluster of three masters in this process (EmbeddedServer(cluster=3)), with
    clock and cluster control: `url` is a startup node for RedisCluster.from_url, `nodes`
    every (host, port). Its nodes' keys are flushed by `minired_cluster.flushall()`."""
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True, cluster=3, cluster_control=True).start()
    try:
        yield server
    finally:
        server.stop()
