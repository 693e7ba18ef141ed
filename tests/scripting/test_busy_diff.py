"""What other clients get while a script runs past busy-reply-threshold, against real Redis:
BUSY at the point of Redis's checks, a refused EXEC ending its transaction (EXECABORT, inside
MULTI or not), FUNCTION STATS showing the caller's whole command, SHUTDOWN's own checks first,
and how INFO counts all of it."""
from __future__ import annotations

import time

import pytest

from tests.support.respclient import Err, RawClient

LIBRARY = ("#!lua name=spin\n"
           "redis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)")
RUNNERS = {
    "eval": ("EVAL", "local a = 1 while true do a = a + 1 end", 0),
    "fcall": ("FCALL", "spin", 1, "somekey"),
}


def _wait_busy(client: RawClient) -> Err:
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while time.monotonic() < deadline:
        reply = client.call("PING")
        if isinstance(reply, Err):
            return reply
        time.sleep(0.01)
    raise AssertionError("the server never became busy")


@pytest.fixture
def busy_threshold(diff):
    diff.check("CONFIG", "SET", "busy-reply-threshold", 20)
    try:
        yield
    finally:
        diff.both("CONFIG", "SET", "busy-reply-threshold", 5000)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_commands_during_a_busy_script(diff, connect, busy_threshold, runner):
    diff.check("FUNCTION", "LOAD", LIBRARY)
    diff.check("SET", "xx", 1)
    diff.check("CONFIG", "RESETSTAT")
    queued = connect()
    queued.check("MULTI")
    queued.check("INCR", "xx")
    spinning = connect()
    for client in (spinning.redis, spinning.minired):
        client.send(*RUNNERS[runner])
    # (the PINGs before the script goes busy answer PONG: only the last one is an error)
    assert _wait_busy(diff.redis) == _wait_busy(diff.minired)
    queued.check("INCR", "xx")            # BUSY, and the transaction is failed
    queued.check("EXEC")                  # EXECABORT ... BUSY: the transaction is over
    queued.check("EXEC")                  # the same outside MULTI
    queued.check("MULTI")                 # allowed while busy
    queued.check("EXEC")
    queued.check("DISCARD")               # (no MULTI: its own error)
    diff.check("SHUTDOWN", "bogus")       # syntax checked before the busy state
    diff.check("SHUTDOWN")                # only NOSAVE may stop the server
    diff.check("NOSUCHCOMMAND")
    diff.check("GET")                     # arity before BUSY
    stats = diff.both("FUNCTION", "STATS")
    if runner == "eval":
        assert stats[0] == stats[1]       # BUSY: EVAL scripts are not functions
    else:                                 # the caller's whole command; the duration varies
        redis_running, mini_running = stats[0][1], stats[1][1]
        assert redis_running[:4] == mini_running[:4] == [b"name", b"spin", b"command",
                                                         [b"FCALL", b"spin", b"1", b"somekey"]]
        assert stats[0][2:] == stats[1][2:]
    kills = [("SCRIPT", "KILL"), ("FUNCTION", "KILL")]
    if runner == "eval":
        kills.reverse()
    diff.check(*kills[0])                 # the other kind's KILL: BUSY
    diff.check(*kills[1])
    spinning.read_both()                  # the killed script's error
    queued.check("PING", "asdf")          # no longer in MULTI
    diff.check("GET", "xx")               # nothing of the transaction ran
    diff.check("INFO", "errorstats")
    for command in ("exec", "incr", "ping", "shutdown", "get"):
        assert _commandstat(diff.redis, command) == _commandstat(diff.minired, command), command


def _commandstat(client: RawClient, command: str) -> dict | None:
    """The counters of one command in INFO commandstats, without its timings (nor PING's
    calls: how many answered PONG before the script went busy differs)."""
    for line in client.call("INFO", "commandstats").decode().splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            fields = dict(part.split("=") for part in line.split(":", 1)[1].split(","))
            names = ("rejected_calls", "failed_calls") if command == "ping" else (
                "calls", "rejected_calls", "failed_calls")
            return {name: fields[name] for name in names}
    return None
