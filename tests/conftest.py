"""Servers shared by the whole suite: one real redis-server and one in-process minired per session
(per xdist worker). Tests that need other configurations start their own."""
from __future__ import annotations

import pytest

import minired.startup  # noqa: F401 - fills the command table, which many tests read
from tests.support.differential import Differential
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer


@pytest.fixture(scope="session")
def real_redis():
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mini():
    """An in-process minired with clock control, shared by the session."""
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True).start()
    try:
        yield server
    finally:
        server.stop()


def _flush(port: int) -> None:
    client = RawClient(port)
    try:
        client.call("FLUSHALL")
        client.call("SCRIPT", "FLUSH")
        client.call("FUNCTION", "FLUSH")
    finally:
        client.close()


def _reset_minired(mini) -> None:
    """Flush the shared minired and undo any MINIRED ADVANCE an earlier test made: tests that
    compare TIME or TTLs with real Redis need the server clock back on wall time."""
    _flush(mini.port)

    def rewind(server) -> None:
        server.clock.offset_ms = 0

    mini.call(rewind, mini.server)


@pytest.fixture
def diff(real_redis, mini):
    """A Differential over a flushed real Redis and a flushed minired."""
    _flush(real_redis.port)
    _reset_minired(mini)
    pair = Differential(real_redis.port, mini.port)
    try:
        yield pair
    finally:
        pair.close()


@pytest.fixture
def mini_raw(mini):
    """A raw RESP connection to the shared minired, on flushed data."""
    _reset_minired(mini)
    client = RawClient(mini.port)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def connect(diff, real_redis, mini):
    """Open more connection pairs (one to each server) on the flushed servers of `diff`:
    subscribers, blocked readers, other transactions."""
    opened: list[Differential] = []

    def open_pair() -> Differential:
        pair = Differential(real_redis.port, mini.port)
        opened.append(pair)
        return pair

    try:
        yield open_pair
    finally:
        for pair in opened:
            pair.close()
