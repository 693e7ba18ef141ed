"""MINIRED ADVANCE / MINIRED CLOCK: move the server clock forward so tests need not sleep.

Off unless the server was started with --time-control (or the embedding API's time_control):
a production-like server must not let a client rewrite time for everyone.
"""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command, container_command
from minired.protocol.errors import TIME_CONTROL_DISABLED, RedisError

container_command("minired", "server", summary="minired's own test-support commands.")


def _require_time_control(c) -> None:
    if not c.server.config.time_control:
        raise RedisError(TIME_CONTROL_DISABLED)


@command("advance", arity=3, flags="admin noscript fast", parent="minired", group="server")
def minired_advance(c, argv):
    """Move the clock forward by N milliseconds; returns the new clock in ms."""
    _require_time_control(c)
    ms = parse_int(argv[2])
    if ms < 0:
        raise RedisError("ERR the clock only moves forward")
    # The expiry cycle runs between commands: inside a transaction the time moves as DEBUG
    # SLEEP moves it, and the rest of the transaction still sees the instant EXEC began at.
    return c.server.advance_clock(ms, expire=not c.in_exec)


@command("clock", arity=2, flags="fast", parent="minired", group="server")
def minired_clock(c, argv):
    """The server clock in ms (Unix time plus any advance). Refused without time control,
    as documented: it exists for tests that move the clock (others read TIME)."""
    _require_time_control(c)
    return c.server.clock.ms()
