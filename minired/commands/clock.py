"""MINIRED ADVANCE / MINIRED CLOCK: move the server clock forward so tests need not sleep.
Also MINIRED HELP, for the whole MINIRED container (declared here).

Off unless the server was started with --time-control (or the embedding API's time_control):
a production-like server must not let a client rewrite time for everyone.
"""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command, container_command, help_reply
from minired.protocol.errors import CLOCK_BACKWARDS, TIME_CONTROL_DISABLED, RedisError

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
        raise RedisError(CLOCK_BACKWARDS)
    # The expiry cycle runs between commands: inside a transaction the time moves as DEBUG
    # SLEEP moves it, and the rest of the transaction still sees the instant EXEC began at.
    return c.server.advance_clock(ms, expire=not c.in_exec)


@command("clock", arity=2, flags="fast", parent="minired", group="server")
def minired_clock(c, argv):
    """The server clock in ms (Unix time plus any advance). Refused without time control,
    as documented: it exists for tests that move the clock (others read TIME)."""
    _require_time_control(c)
    return c.server.clock.ms()


_HELP = (
    "ADVANCE <ms>",
    "    Move the server clock forward by <ms> milliseconds (--time-control).",
    "CLOCK",
    "    Return the server clock in milliseconds (--time-control).",
    "FAULT ADD <action> [<arg> ...] [<match> ...] [COUNT <n>] [AFTER <n>] [PROBABILITY <p>]",
    "    [SEED <s>] [FOR <ms>]",
    "    Add a fault injection rule, return its id (--fault-injection). Actions: ERROR <line>,",
    "    DELAY <ms> [JITTER <ms>], STALL <ms>, DROP, DROP-REPLY, HANG, PARTIAL,",
    "    BANDWIDTH <bytes-per-second>, SLICE <bytes> <pause-ms>, CUT <bytes>, TIMEOUT <ms>,",
    "    SLOW-CLOSE <ms>, RESET; on new connections REFUSE, STALL-ACCEPT. Matches:",
    "    COMMAND <names>, KEY <glob>, CLIENT-NAME <glob>, CLIENT-ID <id>,",
    "    SCRIPT <sha|function>, IN-SCRIPT yes|no.",
    "FAULT LIST|RESET|DEL <id>",
    "    List, remove every, or remove one fault injection rule.",
    "FAULT KILL-CLIENTS [TYPE normal|pubsub]",
    "    Close every connection (of that type) but the caller's.",
    "FAULT LOADING <ms>",
    "    Answer commands with the LOADING error for <ms> milliseconds (0 ends it).",
    "CLUSTER MIGRATE <slot> <target-port> [COUNT <n>|FINISH]",
    "    Move a slot's keys to another node of this process's cluster (--cluster-control);",
    "    FINISH to the node it is moving away from undoes the move.",
    "CLUSTER FAILOVER|RECOVER <port>",
    "    Kill a node of the cluster (its replica takes over after cluster-node-timeout),",
    "    or bring it back.",)


@command("help", arity=2, flags="loading stale", parent="minired", group="server")
def minired_help(c, argv):
    return help_reply("MINIRED", *_HELP)
