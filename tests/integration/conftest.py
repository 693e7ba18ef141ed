"""Every job library runs twice: against minired and against a real redis-server (the control).

minired runs as a subprocess on its own port: several libraries fork worker processes or run
their own event loops and threads, and a separate process keeps the server off the GIL the
worker threads contend for. Each test starts on flushed data."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import redis

from tests.support.servers import MiniredProcess


@dataclass(frozen=True)
class Target:
    """The server a library test talks to."""

    name: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, **kwargs)


@pytest.fixture(scope="session")
def minired_process():
    server = MiniredProcess().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["minired", "redis"])
def target(request) -> Target:
    server = request.getfixturevalue("minired_process" if request.param == "minired" else "real_redis")
    chosen = Target(request.param, server.host, server.port)
    with chosen.client() as client:
        client.flushall()
        client.script_flush()
    return chosen
