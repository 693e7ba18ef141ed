"""The latency monitor compared with Redis 7.0: commands slower than latency-monitor-threshold
are recorded as `command` (or `fast-command`) events, one sample per second, and LATENCY
LATEST, HISTORY and RESET report and delete them as Redis does. (The durations are the
machine's: the test checks they are at least what DEBUG SLEEP slept.)"""
from __future__ import annotations

import pytest

from tests.support.differential import Differential
from tests.support.servers import MiniredProcess, RedisServer


@pytest.fixture(scope="module")
def servers():
    """Servers of this module's own: DEBUG SLEEP (a command that takes a known time) needs
    enable-debug-command."""
    with RedisServer("--enable-debug-command", "yes") as redis, \
            MiniredProcess("--enable-debug-command", "yes") as mini:
        yield redis, mini


@pytest.fixture
def monitored(servers):
    redis, mini = servers
    diff = Differential(redis.port, mini.port)
    diff.check("LATENCY", "RESET")
    diff.check("CONFIG", "SET", "latency-monitor-threshold", "5")
    try:
        yield diff
    finally:
        diff.check("CONFIG", "SET", "latency-monitor-threshold", "0")
        diff.check("LATENCY", "RESET")
        diff.close()


def _shape(latest: list) -> list:
    return [(event[0], event[2] >= 10, event[3] >= event[2]) for event in latest]


def test_slow_command_is_an_event(monitored):
    monitored.check("LATENCY", "LATEST")
    monitored.check("DEBUG", "SLEEP", "0.01")
    theirs, ours = monitored.both("LATENCY", "LATEST")
    assert _shape(ours) == _shape(theirs) == [(b"command", True, True)]
    theirs, ours = monitored.both("LATENCY", "HISTORY", "command")
    assert len(ours) == len(theirs) == 1 and ours[0][1] >= 10
    monitored.check("LATENCY", "HISTORY", "fast-command")
    monitored.check("LATENCY", "RESET", "nosuch", "command", "command")
    monitored.check("LATENCY", "LATEST")
    monitored.check("DEBUG", "SLEEP", "0.01")
    monitored.check("LATENCY", "RESET")
    monitored.check("LATENCY", "RESET")


def test_below_the_threshold_nothing_is_recorded(monitored):
    monitored.check("CONFIG", "SET", "latency-monitor-threshold", "0")
    monitored.check("DEBUG", "SLEEP", "0.01")
    monitored.check("LATENCY", "LATEST")
    monitored.check("LATENCY", "HISTORY", "command")
