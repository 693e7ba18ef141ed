"""The command table: every command declared once, next to its function, as Redis's command table.

Dispatch, arity errors, COMMAND replies, script flag checks and key extraction (cluster hashing,
script key checks) all read `COMMANDS`. A command is one decorated function in its group's file:

    @command("lpush", arity=-3, flags="write denyoom fast", keys=(1, 1, 1))
    def lpush(c, argv): ...

Handlers take the calling client and the full argv (argv[0] is the command name) and return a
reply value (see resp.py) or raise RedisError.
"""
from __future__ import annotations

from typing import Any, Callable

from minired.engine.latency import SLOTS
from minired.protocol.resp import Status

Handler = Callable[[Any, list], Any]

# Flags as Redis names them in COMMAND output.
KNOWN_FLAGS = frozenset({
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
    "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth",
    "may_replicate", "sentinel", "only_sentinel", "no_mandatory_keys", "protected",
    "no_async_loading", "no_multi", "movablekeys", "allow_busy", "allow_tracking",
})


# How many specs were made: each spec's number is where every server keeps its counters for
# it (CommandStats).
_spec_count = 0


def _number() -> int:
    global _spec_count
    _spec_count += 1
    return _spec_count - 1


class CommandSpec:
    """One command (or subcommand) as the table declares it.

    A plain class with __slots__ rather than a dataclass, so that the compiled build can make
    it an extension type (table.pxd) whose fields dispatch reads as struct members."""

    __slots__ = ("name", "handler", "arity", "flags", "first_key", "last_key", "step", "group",
                 "key_finder", "parent", "subcommands", "summary", "index", "denyoom", "write",
                 "protected", "min_args", "max_args")

    def __init__(self, name: str, handler: Handler | None, arity: int, flags: frozenset,
                 first_key: int = 0, last_key: int = 0, step: int = 0, group: str = "generic",
                 key_finder: Callable[[list], list[int]] | None = None,
                 parent: "CommandSpec | None" = None,
                 subcommands: "dict[bytes, CommandSpec] | None" = None, summary: str = "") -> None:
        self.name = name
        self.handler = handler
        self.arity = arity
        self.flags = flags
        self.first_key = first_key
        self.last_key = last_key
        self.step = step
        self.group = group
        # For commands whose keys depend on arguments (EVAL numkeys, XREAD STREAMS, ...):
        # argv -> list of argv indexes holding keys.
        self.key_finder = key_finder
        self.parent = parent
        self.subcommands: dict[bytes, CommandSpec] = {} if subcommands is None else subcommands
        self.summary = summary
        self.index = _number()  # (its counters: stats_of)
        self.denyoom = "denyoom" in flags
        self.write = "write" in flags
        self.protected = "protected" in flags  # DEBUG, MODULE LOAD...: enable-*-command
        # Argument-count bounds from the arity, so dispatch checks them with one comparison.
        self.min_args = arity if arity >= 0 else -arity
        self.max_args = arity if arity >= 0 else 1 << 62

    def __repr__(self) -> str:
        return f"CommandSpec({self.full_name!r}, arity={self.arity}, flags={sorted(self.flags)})"

    @property
    def full_name(self) -> str:
        return f"{self.parent.name}|{self.name}" if self.parent else self.name

    @property
    def root_name(self) -> str:
        """The top-level command's name (CLIENT for CLIENT ID)."""
        return self.parent.name if self.parent else self.name

    def key_indexes(self, argv: list) -> list[int]:
        """Positions of the keys in argv, for cluster hashing and script key checks."""
        if self.key_finder is not None:
            return self.key_finder(argv)
        if not self.first_key:
            return []
        last = self.last_key if self.last_key >= 0 else len(argv) + self.last_key
        return list(range(self.first_key, min(last, len(argv) - 1) + 1, self.step or 1))

    def keys(self, argv: list) -> list[bytes]:
        return [argv[i] for i in self.key_indexes(argv)]

    def arity_ok(self, argc: int) -> bool:
        arity = self.arity
        return argc == arity if arity >= 0 else argc >= -arity


COMMANDS: dict[bytes, CommandSpec] = {}


class CommandStats:
    """One server's counters for one command: INFO commandstats and, while latency-tracking
    is on, the latency histogram (minired/engine/latency.py). Each server has its own, as each
    redis-server has: servers in one process (EmbeddedServers, a one-process cluster's nodes)
    must not see or reset each other's."""

    __slots__ = ("calls", "nanoseconds", "failed_calls", "rejected_calls", "latency_histogram",
                 "kept_histogram")

    def __init__(self, tracking: bool) -> None:
        self.calls = 0
        self.nanoseconds = 0  # time is summed in nanoseconds: most commands take under 1 us
        self.failed_calls = 0
        self.rejected_calls = 0
        # Calls by duration (None while latency-tracking is off: dispatch skips it) and, while
        # it is off, what was recorded before (Redis still reports it).
        self.latency_histogram: list | None = [0] * SLOTS if tracking else None
        self.kept_histogram: list | None = None

    @property
    def usec(self) -> int:
        return self.nanoseconds // 1000


def stats_of(server, spec: CommandSpec) -> CommandStats:
    """`server`'s counters for `spec`, made on first use (for every spec made so far)."""
    table = server.command_stats
    if spec.index >= len(table):
        tracking = server.config.get("latency-tracking") == "yes"
        table.extend(CommandStats(tracking) for _ in range(len(table), _spec_count))
    return table[spec.index]


def calls_total(server) -> int:
    """INFO total_commands_processed: Redis counts each call() (server.stat_numcommands), so a
    script's and an EXEC's commands count, and a command refused before it runs (unknown, wrong
    arity, NOAUTH, queued by MULTI) does not; the commands' calls are exactly those."""
    return sum(stats.calls for stats in server.command_stats)


def uncounted_stats() -> list:
    """A table of counters no INFO reads, for a client whose commands Redis leaves out of the
    statistics: the AOF's replay (call() skips them while loading the AOF)."""
    return [CommandStats(False) for _ in range(_spec_count)]


def _parse_flags(flags: str) -> frozenset:
    parsed = frozenset(flags.split())
    unknown = parsed - KNOWN_FLAGS
    if unknown:
        raise ValueError(f"unknown command flags {sorted(unknown)}")
    return parsed


def _container(name: str, group: str) -> CommandSpec:
    key = name.lower().encode()
    spec = COMMANDS.get(key)
    if spec is None:
        spec = CommandSpec(name=name.lower(), handler=None, arity=-2, flags=frozenset(), group=group)
        COMMANDS[key] = spec
    return spec


def command(name: str, arity: int, flags: str = "", keys: tuple[int, int, int] = (0, 0, 0),
            group: str = "generic", key_finder: Callable[[list], list[int]] | None = None,
            parent: str | None = None, summary: str = "") -> Callable[[Handler], Handler]:
    """Declare a command (or, with `parent`, a subcommand such as CLIENT ID): the decorator of
    every handler. A hot handler also carries `@cython.locals(c=Client, argv=list)`, which the
    compiled build reads as C types (so `c.db` is a struct read) and the uncompiled one ignores;
    a cpdef declaration in the .pxd would do the same but make Cython drop this decorator."""

    def register(handler: Handler) -> Handler:
        parsed = _parse_flags(flags)
        if key_finder is not None:
            parsed = parsed | {"movablekeys"}
        spec = CommandSpec(name=name.lower(), handler=handler, arity=arity, flags=parsed,
                           first_key=keys[0], last_key=keys[1], step=keys[2], group=group,
                           key_finder=key_finder, summary=summary or (handler.__doc__ or "").strip())
        if parent is None:
            key = spec.name.encode()
            existing = COMMANDS.get(key)
            if existing is not None and existing.handler is not None:
                raise ValueError(f"command {name!r} declared twice")
            if existing is not None:
                spec.subcommands = existing.subcommands
                for sub in spec.subcommands.values():
                    sub.parent = spec
            COMMANDS[key] = spec
        else:
            container = _container(parent, group)
            key = spec.name.encode()
            if key in container.subcommands:
                raise ValueError(f"subcommand {parent!r} {name!r} declared twice")
            spec.parent = container
            container.subcommands[key] = spec
        handler.spec = spec  # type: ignore[attr-defined]
        return handler

    return register


def container_command(name: str, group: str, flags: str = "", summary: str = "") -> CommandSpec:
    """A command that only dispatches to subcommands (CLIENT, CONFIG, OBJECT, ...)."""
    spec = _container(name, group)
    spec.flags = _parse_flags(flags)
    spec.denyoom = "denyoom" in spec.flags
    spec.write = "write" in spec.flags
    spec.summary = summary
    return spec


def help_reply(name: str, *lines: str) -> list:
    """A container command's HELP reply as Redis's addReplyHelp builds it: the usage line, the
    subcommands' lines, and HELP itself last."""
    return [Status(line.encode()) for line in (
        f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *lines,
        "HELP", "    Prints this help.")]


def all_specs():
    """Every command and subcommand, containers first."""
    for spec in COMMANDS.values():
        yield spec
        yield from spec.subcommands.values()


def lookup(argv: list) -> CommandSpec | None:
    """The spec for argv (resolving subcommands), or None if the command is unknown."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is None or not spec.subcommands or len(argv) < 2:
        return spec
    return spec.subcommands.get(argv[1].lower(), spec)


# Key finders shared by several commands ---------------------------------------------------

def keys_after_numkeys(numkeys_index: int) -> Callable[[list], list[int]]:
    """Keys follow a numkeys argument (EVAL, FCALL, LMPOP, ZUNIONSTORE ...)."""

    def find(argv: list) -> list[int]:
        try:
            count = int(argv[numkeys_index])
        except (IndexError, ValueError):
            return []
        start = numkeys_index + 1
        return list(range(start, min(start + max(count, 0), len(argv))))

    return find
