"""The slow log (SLOWLOG GET/LEN/RESET), as Redis 7.0 keeps it.

dispatch.call already measures every command; it hands a command here only when the
slowlog-log-slower-than threshold is met (Config.slowlog_threshold_ns: one comparison per
command otherwise), or when the command blocked: a blocked command is logged when it is
answered, as Redis logs it on unblocking (blocking.py). Commands run by scripts and inside
EXEC are logged one by one, EXEC itself and commands flagged skip_slowlog are not.

An entry keeps at most 32 arguments (the last then says how many more there were) and at most
128 bytes of each, with the arguments Redis redacts shown as "(redacted)" (AUTH's passwords,
HELLO's AUTH pair, ACL SETUSER's rules, CONFIG SET's sensitive values).
"""
from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.table import CommandSpec

MAX_ARGC = 32      # SLOWLOG_ENTRY_MAX_ARGC
MAX_STRING = 128   # SLOWLOG_ENTRY_MAX_STRING
REDACTED = b"(redacted)"
# Parameters Redis flags SENSITIVE_CONFIG: CONFIG SET shows their values redacted.
_SENSITIVE_CONFIG = frozenset((b"masterauth", b"masteruser", b"requirepass"))


def redacted(argv: list) -> list:
    """argv as Redis's redactClientCommandArgument leaves it for the slow log and MONITOR."""
    if not argv:  # (a command CLIENT UNBLOCK ended: Redis logs it with no arguments)
        return argv
    name = argv[0].lower()
    argc = len(argv)
    if name == b"auth":
        if argc > 3:  # refused as a syntax error before anything is hidden
            return argv
        return [argv[0]] + [REDACTED] * (argc - 1)
    if name == b"hello":
        if argc < 2 or argv[1] not in (b"2", b"3"):  # NOPROTO or an error before the options
            return argv
        shown = list(argv)
        i = 2
        while i < argc:
            option = argv[i].lower()
            if option == b"auth" and argc - i - 1 >= 2:
                shown[i + 1] = shown[i + 2] = REDACTED
                i += 2
            elif option == b"setname" and argc - i - 1 >= 1:
                i += 1
            else:
                break  # a syntax error ends HELLO's reading
            i += 1
        return shown
    if name == b"migrate":
        return _migrate_redacted(argv)
    if name == b"acl" and argc > 2 and argv[1].lower() == b"setuser":
        return argv[:2] + [REDACTED] * (argc - 2)
    if name == b"config" and argc >= 4 and argc % 2 == 0 and argv[1].lower() == b"set":
        shown = list(argv)
        for i in range(2, argc - 1, 2):
            if argv[i].lower() in _SENSITIVE_CONFIG:
                shown[i + 1] = REDACTED
        return shown
    return argv


def _migrate_redacted(argv: list) -> list:
    """MIGRATE's AUTH password and AUTH2 pair, hidden as its option parsing meets them (what
    it read before a syntax error or KEYS stays hidden)."""
    shown = list(argv)
    argc = len(argv)
    j = 6
    while j < argc:
        option = argv[j].lower()
        more = argc - 1 - j
        if option == b"auth" and more >= 1:
            shown[j + 1] = REDACTED
            j += 1
        elif option == b"auth2" and more >= 2:
            shown[j + 1] = shown[j + 2] = REDACTED
            j += 2
        elif option not in (b"copy", b"replace"):
            break  # KEYS, or a syntax error
        j += 1
    return shown


def _trimmed(argv: list) -> list[bytes]:
    argc = len(argv)
    kept = min(argc, MAX_ARGC)
    entry = []
    for j in range(kept):
        if kept != argc and j == kept - 1:
            entry.append(b"... (%d more arguments)" % (argc - kept + 1))
            break
        arg = argv[j]
        if type(arg) is not bytes:  # (an internal caller's int or bytearray: shown as text)
            arg = str(arg).encode() if isinstance(arg, (int, float)) else bytes(arg)
        if len(arg) > MAX_STRING:
            arg = arg[:MAX_STRING] + b"... (%d more bytes)" % (len(arg) - MAX_STRING)
        entry.append(arg)
    return entry


class SlowLog:
    """One server's slow log, newest entry first."""

    __slots__ = ("entries", "next_id")

    def __init__(self) -> None:
        self.entries: deque = deque()
        self.next_id = 0

    def push(self, c: "Client", spec: "CommandSpec", argv: list, nanoseconds: int) -> None:
        """slowlogPushCurrentCommand, once the threshold is known to be met."""
        if "skip_slowlog" in spec.flags:
            return
        config = c.server.config
        self.entries.appendleft([
            self.next_id, int(time.time()), nanoseconds // 1000,
            _trimmed(redacted(argv)), (c.addr or "?:0").encode(), c.name])
        self.next_id += 1
        limit = config.number("slowlog-max-len")
        while len(self.entries) > limit:
            self.entries.pop()

    def push_if_slow(self, c: "Client", spec: "CommandSpec", argv: list,
                     nanoseconds: int) -> None:
        threshold = c.server.config.slowlog_threshold_ns
        if 0 <= threshold <= nanoseconds:
            self.push(c, spec, argv, nanoseconds)

    def get(self, count: int) -> list:
        return [list(entry) for entry in list(self.entries)[:count]]

    def reset(self) -> None:
        self.entries.clear()
