"""Every queue test runs against four backends: minired (embedded, with clock control),
a real redis-server, a local 3-master Redis Cluster, and minired's own 3-master cluster
(`minired --cluster 3`, embedded, with clock control)."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from minired._sources import pure_python_asked
from minired_queue.connection import connect, connect_async
from minired_queue.queue import Queue
from tests.queue.cluster import RedisClusterServers
from tests.support.servers import RedisServer

BACKENDS = ["minired", "redis", "cluster", "minired_cluster"]
if pure_python_asked():
    # The uncompiled build's run (scripts/test.sh runs the suite once per build): the real
    # Redis and Redis Cluster backends run no minired code, and the compiled run tested them.
    BACKENDS = ["minired", "minired_cluster"]
# The backends of one server, for tests that drive one server (the dashboard's browser tests).
SINGLE_SERVER_BACKENDS = [kind for kind in BACKENDS if kind in ("minired", "redis")]


@pytest.fixture(scope="session")
def minired_server():
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def cluster_server():
    with RedisClusterServers(masters=3) as servers:
        yield servers


@pytest.fixture(scope="session")
def minired_cluster_server():
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True, cluster=3, cluster_control=True).start()
    yield server
    server.stop()


@dataclass
class Backend:
    kind: str
    url: str

    @property
    def cluster(self) -> bool:
        return self.kind in ("cluster", "minired_cluster")

    @property
    def has_clock_control(self) -> bool:
        return self.kind in ("minired", "minired_cluster")

    def client(self, **options: Any):
        return connect(self.url, cluster=self.cluster, **options)

    def async_client(self, **options: Any):
        return connect_async(self.url, cluster=self.cluster, **options)


class Clock:
    """Moves the server's clock: instantly on minired (MINIRED ADVANCE); on real Redis by
    waiting, so tests there use TTLs of tens of milliseconds.

    ``span(ms)`` scales a test's durations: ``ms`` on real Redis, a thousand times that on
    minired. There a 40 s lock can only lapse because the test moved the server clock,
    which proves every expiry and due time is decided by the server's clock."""

    MINIRED_SCALE = 1000

    def __init__(self, backend: Backend, client: Any) -> None:
        self.backend = backend
        self.client = client

    def span(self, ms: int) -> int:
        return ms * self.MINIRED_SCALE if self.backend.has_clock_control else ms

    def advance(self, ms: int) -> None:
        if self.backend.has_clock_control:
            self._minired("ADVANCE", ms)
        else:
            time.sleep(ms / 1000)

    def start_period(self, period_ms: int) -> None:
        """On minired, move the clock to 1 ms past a multiple of ``period_ms``: the real time
        a test takes (milliseconds, seconds on a loaded machine) then never carries the clock
        past the next multiple, which it could from anywhere in the period."""
        if self.backend.has_clock_control:
            now = int(self._minired("CLOCK"))
            self.advance(period_ms - now % period_ms + 1)

    def _minired(self, *args: Any) -> Any:
        # (the nodes of minired's cluster share one clock: any node reads and moves it)
        options = {"target_nodes": self.client.get_random_node()} if self.backend.cluster else {}
        return self.client.execute_command("MINIRED", *args, **options)


@pytest.fixture(params=BACKENDS)
def backend(request) -> Backend:
    server = request.getfixturevalue(f"{request.param}_server")
    return Backend(request.param, server.url)


@pytest.fixture(params=SINGLE_SERVER_BACKENDS)
def server_backend(request) -> Backend:
    """One server per run of the test: minired, then (in the compiled run) the real Redis. The
    database starts empty, so the servers, shared by the session, carry nothing between tests."""
    server = request.getfixturevalue(f"{request.param}_server")
    backend = Backend(request.param, server.url)
    with backend.client() as redis_client:
        redis_client.flushdb()
    return backend


@pytest.fixture
def client(backend):
    redis_client = backend.client()
    yield redis_client
    redis_client.close()


@pytest.fixture
def clock(backend, client) -> Clock:
    return Clock(backend, client)


@pytest.fixture
def queue_name() -> str:
    """A fresh queue per test: tests share servers but never keys."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def queue(client, queue_name) -> Queue:
    return Queue(queue_name, client)
