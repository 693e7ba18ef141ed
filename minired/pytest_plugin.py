"""pytest plugin (registered by entry point): fixtures that give tests a minired server.

- `minired_server`: one in-process server per test session (per xdist worker: each worker is
  its own process, so each has its own server on its own free port).
- `minired_url`: its URL.
- `minired_client`: a redis-py client on a database flushed before each test.

Clock control (MINIRED ADVANCE) is on for the fixture server; `--minired-no-time-control` turns
it off.
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


@pytest.fixture(scope="session")
def minired_server(request: pytest.FixtureRequest) -> Iterator["EmbeddedServer"]:
    from minired.embed import EmbeddedServer

    time_control = not request.config.getoption("--minired-no-time-control")
    server = EmbeddedServer(port=0, time_control=time_control).start()
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
