"""Servers shared by the whole suite: one real redis-server and one in-process minired per session
(per xdist worker). Tests that need other configurations start their own."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

import minired.startup  # noqa: F401 - fills the command table, which many tests read
from tests.support.differential import Differential
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer, redis_server_binary

# Hypothesis: the test command runs the same examples every time (derandomize: a seed from each
# test's own code, no example database), so a failure there is a change, not a draw. Searching
# for new failures is a separate long run, scripts/explore.sh: the `explore` profile, random,
# more examples, failures remembered in .hypothesis/ and printed with a blob to replay them.
# Both: no deadline and no too_slow health check (timings on a shared machine are not the
# code's), and function-scoped fixtures are fine (`diff` flushes the servers; each example
# leaves them as it found them). Tests set only their max_examples, which wins over a profile.
_UNHURRIED = dict(deadline=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("default", derandomize=True, database=None, **_UNHURRIED)
# (explore's database named: a profile inherits from "default" as registered above, database None)
settings.register_profile("explore", derandomize=False, max_examples=1000,
                          database=DirectoryBasedExampleDatabase(".hypothesis/examples"), **_UNHURRIED)
settings.load_profile(os.environ.get("MINIRED_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def real_redis():
    try:
        redis_server_binary()
    except RuntimeError as missing_or_other_release:
        # Every differential test would fail the same way: stop the run with the reason.
        pytest.exit(str(missing_or_other_release), returncode=pytest.ExitCode.USAGE_ERROR)
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


# What a server started in the checkout (a SubprocessServer or an EmbeddedServer without a
# dir: their dir is ".", as redis-server's) writes there on SAVE, BGREWRITEAOF or a cluster
# start. A test must give such a server a directory of its own: a file left behind would be
# loaded by the next server started there, and would end up in the user's checkout.
_LEFTOVERS = ("dump.rdb", "appendonlydir", "appendonly.aof", "nodes.conf")


def _leftovers(root) -> set[str]:
    return {name for name in _LEFTOVERS if os.path.lexists(os.path.join(root, name))}


def pytest_sessionstart(session):
    session.config._leftovers_before = _leftovers(session.config.rootpath)


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):  # (xdist: the controller checks once)
        return
    left = _leftovers(session.config.rootpath) - session.config._leftovers_before
    if left:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(
            f"tests left {', '.join(sorted(left))} in {session.config.rootpath}: a server "
            "started without a directory of its own wrote there", red=True)
        if session.exitstatus == 0:
            session.exitstatus = 1
