"""COMMAND and its subcommands, INFO: the server describing itself (ACL is commands/acl.py).

Everything here is derived from `table.COMMANDS`, so a command declared once is described
correctly everywhere. Redis 7 reply shapes: COMMAND INFO gives name, arity, flags, first key,
last key, step, ACL categories, tips, key specs and subcommands.

Derived rather than declared, and so approximate: ACL categories come from the group and flags
the way Redis's setImplicitACLCategories does (categories Redis adds by hand, such as
@dangerous on FLUSHALL, are absent); key specs carry RO/RW only, without Redis's finer access
flags; tips are empty. Name, arity, flags and key positions are exact.
"""
from __future__ import annotations

import itertools
import os
import sys
import time

from .. import REDIS_VERSION, __version__, errors
from ..errors import RedisError
from ..glob import glob_match
from ..resp import Status, Verbatim
from .table import COMMANDS, CommandSpec, command

G = "server"

# Flags in the order Redis prints them; may_replicate, sentinel, only_sentinel and protected are
# hidden on purpose, as in Redis's addCommandFlags.
_FLAG_ORDER = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
               "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
               "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
               "allow_busy")

# ACL categories in the order Redis lists them (ACL CAT, COMMAND INFO).
ACL_CATEGORIES = ("keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                  "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
                  "blocking", "dangerous", "connection", "transaction", "scripting")

# Redis's command groups and the category each implies (server and cluster imply none).
GROUP_CATEGORY = {
    "generic": "keyspace", "string": "string", "list": "list", "set": "set",
    "sorted-set": "sortedset", "hash": "hash", "pubsub": "pubsub", "transactions": "transaction",
    "connection": "connection", "server": None, "scripting": "scripting",
    "hyperloglog": "hyperloglog", "cluster": None, "sentinel": None, "geo": "geo",
    "stream": "stream", "bitmap": "bitmap",
}


def ordered_flags(spec: CommandSpec) -> list[str]:
    return [flag for flag in _FLAG_ORDER if flag in spec.flags]


# Categories Redis's command table declares by hand for these commands, beyond those the
# group and flags imply (acl_categories derives those).
_DECLARED_CATEGORIES = {
    "restore": ("dangerous",), "keys": ("keyspace", "dangerous"), "randomkey": ("keyspace",),
    "scan": ("keyspace",), "swapdb": ("keyspace", "dangerous"), "wait": ("connection",),
    "flushall": ("keyspace", "dangerous"), "flushdb": ("keyspace", "dangerous"),
    "dbsize": ("keyspace",), "lastsave": ("admin", "dangerous"), "role": ("admin", "dangerous"),
    "info": ("dangerous",), "sort": ("dangerous", "list", "set", "sortedset"),
    "sort_ro": ("dangerous", "list", "set", "sortedset"), "client|help": ("connection",),
    "object|help": ("keyspace",), "xinfo|help": ("stream",), "xgroup|help": ("stream",),
    "script|help": ("scripting",), "function|help": ("scripting",),
    **{name: ("connection",) for name in (
        "command", "command|count", "command|info", "command|docs", "command|list",
        "command|getkeys", "command|getkeysandflags", "command|help")},
}


def acl_categories(spec: CommandSpec) -> list[str]:
    """The categories Redis would give a command of this group with these flags."""
    flags = spec.flags
    found = set()
    # Redis declares a group's category per command; containers and HELP subcommands get none.
    implied = None
    if spec.handler is not None and spec.name != "help":
        implied = GROUP_CATEGORY.get(spec.group)
    # Generic commands are @keyspace when they name their keys plainly; WAIT (no keys) and
    # SORT (keys found by parsing) are declared otherwise in Redis.
    if implied == "keyspace" and (not spec.first_key or spec.key_finder is not None):
        implied = None
    if implied:
        found.add(implied)
    if "write" in flags:
        found.add("write")
    if "readonly" in flags and implied != "scripting":
        found.add("read")
    if "admin" in flags:
        found.update(("admin", "dangerous"))
    if "pubsub" in flags:
        found.add("pubsub")
    if "blocking" in flags:
        found.add("blocking")
    found.add("fast" if "fast" in flags else "slow")
    found.update(_DECLARED_CATEGORIES.get(spec.full_name, ()))
    return [category for category in ACL_CATEGORIES if category in found]


def _access_flag(spec: CommandSpec) -> str:
    return "RW" if "write" in spec.flags else "RO"


def key_specs(spec: CommandSpec) -> list[dict]:
    specs = []
    if spec.first_key:
        last = spec.last_key
        specs.append({
            b"flags": [Status(_access_flag(spec).encode())],
            b"begin_search": {b"type": b"index", b"spec": {b"index": spec.first_key}},
            b"find_keys": {b"type": b"range", b"spec": {
                b"lastkey": last - spec.first_key if last >= 0 else last,
                b"keystep": spec.step, b"limit": 0}},
        })
    if spec.key_finder is not None:
        # Keys found by code (numkeys, STREAMS ...): described as Redis describes a spec it
        # cannot express, with the INCOMPLETE flag.
        specs.append({
            b"flags": [Status(_access_flag(spec).encode()), Status(b"incomplete")],
            b"begin_search": {b"type": b"unknown", b"spec": {}},
            b"find_keys": {b"type": b"unknown", b"spec": {}},
        })
    return specs


def command_info(spec: CommandSpec) -> list:
    return [
        spec.full_name.encode(), spec.arity,
        [Status(flag.encode()) for flag in ordered_flags(spec)],
        spec.first_key, spec.last_key, spec.step,
        [Status(b"@" + category.encode()) for category in acl_categories(spec)],
        [], key_specs(spec),
        [command_info(sub) for sub in spec.subcommands.values()],
    ]


def command_docs(spec: CommandSpec) -> dict:
    docs: dict = {}
    summary = spec.summary.split("\n", 1)[0].strip()
    if summary:
        docs[b"summary"] = summary.encode()
    docs[b"group"] = spec.group.encode()
    if spec.subcommands:
        docs[b"subcommands"] = {sub.full_name.encode(): command_docs(sub)
                                for sub in spec.subcommands.values()}
    return docs


def find_spec(name: bytes) -> CommandSpec | None:
    """A command or a 'container|sub' name, as COMMAND INFO/DOCS accept them."""
    container, _, sub = name.lower().partition(b"|")
    spec = COMMANDS.get(container)
    if spec is None or not sub:
        return spec
    return spec.subcommands.get(sub)


def all_specs():
    """Every command and subcommand, containers first."""
    for spec in COMMANDS.values():
        yield spec
        yield from spec.subcommands.values()


def _key_positions(argv: list) -> tuple[CommandSpec, list[int]]:
    """The spec argv runs and its key positions, with Redis's COMMAND GETKEYS errors."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is not None and spec.subcommands and len(argv) >= 2:
        spec = spec.subcommands.get(argv[1].lower())
    if spec is None or spec.handler is None:
        raise RedisError("ERR Invalid command specified")
    # Shard channels sit at key positions (for cluster slots) but are not keys.
    if (not spec.first_key and spec.key_finder is None) or "pubsub" in spec.flags:
        raise RedisError("ERR The command has no key arguments")
    if not spec.arity_ok(len(argv)):
        raise RedisError("ERR Invalid number of arguments specified for command")
    positions = spec.key_indexes(argv)
    if not positions and "no_mandatory_keys" not in spec.flags:
        raise RedisError("ERR Invalid arguments specified for command")
    return spec, positions


# --- COMMAND -----------------------------------------------------------------------------------

@command("command", arity=-1, flags="loading stale", group=G)
def command_(c, argv):
    """Get array of Redis command details"""
    if len(argv) > 1:  # COMMAND has a handler of its own, so dispatch lets unknown subcommands in
        raise errors.unknown_subcommand("command", argv[1])
    return [command_info(spec) for spec in COMMANDS.values()]


@command("count", arity=2, flags="loading stale", parent="command", group=G)
def command_count(c, argv):
    """Get total number of Redis commands"""
    return len(COMMANDS)


@command("info", arity=-2, flags="loading stale", parent="command", group=G)
def command_info_(c, argv):
    """Get array of specific Redis command details, or all when no argument is given"""
    if len(argv) == 2:
        return [command_info(spec) for spec in COMMANDS.values()]
    found = []
    for name in argv[2:]:
        spec = find_spec(name)
        found.append(command_info(spec) if spec is not None else None)
    return found


@command("docs", arity=-2, flags="loading stale", parent="command", group=G)
def command_docs_(c, argv):
    """Get array of specific Redis command documentation"""
    if len(argv) == 2:
        return {spec.name.encode(): command_docs(spec) for spec in COMMANDS.values()}
    docs = {}
    for name in argv[2:]:
        spec = find_spec(name)
        if spec is not None:
            docs[spec.full_name.encode()] = command_docs(spec)
    return docs


@command("list", arity=-2, flags="loading stale", parent="command", group=G)
def command_list(c, argv):
    """Get an array of Redis command names"""
    if len(argv) == 2:
        return [spec.full_name.encode() for spec in all_specs()]
    if len(argv) != 5 or argv[2].lower() != b"filterby":
        raise RedisError(errors.SYNTAX)
    kind, value = argv[3].lower(), argv[4]
    if kind == b"module":
        return []  # minired loads no modules
    if kind == b"aclcat":
        category = value.lower().decode(errors="replace")
        return [spec.full_name.encode() for spec in all_specs()
                if category in acl_categories(spec)]
    if kind == b"pattern":
        return [spec.full_name.encode() for spec in all_specs()
                if glob_match(value, spec.full_name.encode(), nocase=True)]
    raise RedisError(errors.SYNTAX)


@command("getkeys", arity=-4, flags="loading stale", parent="command", group=G)
def command_getkeys(c, argv):
    """Extract keys given a full Redis command"""
    target = argv[2:]
    _, positions = _key_positions(target)
    return [target[i] for i in positions]


@command("getkeysandflags", arity=-4, flags="loading stale", parent="command", group=G)
def command_getkeysandflags(c, argv):
    """Extract keys and access flags given a full Redis command"""
    target = argv[2:]
    spec, positions = _key_positions(target)
    access = [Status(_access_flag(spec).encode())]
    return [[target[i], access] for i in positions]


@command("help", arity=2, flags="loading stale", parent="command", group=G)
def command_help(c, argv):
    """Show helpful text about the different subcommands"""
    return [Status(line.encode()) for line in (
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    )]


# --- INFO --------------------------------------------------------------------------------------

def _human(size: int) -> str:
    """Redis's bytesToHuman: 512B, 1.50K, 2.00M ..."""
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for unit in "KMGTPE":
        value /= 1024
        if value < 1024 or unit == "E":
            return f"{value:.2f}{unit}"
    raise AssertionError("unreachable")


def _total_system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _server_section(server) -> list[str]:
    # The INFO sections import what only they use (platform ~3 ms: it compiles regexes as it
    # loads; resource, a C extension to load), so start-up does not pay for them.
    import platform

    uptime = int(time.monotonic() - server.stats.started_monotonic)
    uname = platform.uname()
    return [
        f"redis_version:{REDIS_VERSION}",
        f"minired_version:{__version__}",
        "redis_git_sha1:00000000",
        "redis_git_dirty:0",
        "redis_mode:standalone",
        f"os:{uname.system} {uname.release} {uname.machine}",
        f"arch_bits:{64 if sys.maxsize > 2**32 else 32}",
        f"python_version:{platform.python_version()}",
        f"process_id:{os.getpid()}",
        "process_supervised:no",
        f"run_id:{server.run_id}",
        f"tcp_port:{server.port}",
        f"server_time_usec:{server.clock.us()}",
        f"uptime_in_seconds:{uptime}",
        f"uptime_in_days:{uptime // 86400}",
        f"hz:{server.config.get('hz')}",
        f"configured_hz:{server.config.get('hz')}",
        f"executable:{sys.executable}",
        "config_file:",
        "io_threads_active:0",
    ]


def _clients_section(server) -> list[str]:
    waiters = server.blocking.waiters.values()
    tracking = server.tracking
    return [
        f"connected_clients:{len(server.clients)}",
        "cluster_connections:0",
        f"maxclients:{server.config.maxclients}",
        f"blocked_clients:{server.blocking.blocked_clients}",
        f"tracking_clients:{len(tracking.clients) if tracking is not None else 0}",
        f"clients_in_timeout_table:{sum(1 for w in waiters if w.deadline_ms is not None)}",
    ]


def _memory_section(server) -> list[str]:
    import resource

    from ..server import used_memory  # minired.server imports the command table: import late

    rss = used_memory()
    peak = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    total = _total_system_memory()
    maxmemory = server.config.maxmemory
    return [
        f"used_memory:{rss}",
        f"used_memory_human:{_human(rss)}",
        f"used_memory_rss:{rss}",
        f"used_memory_rss_human:{_human(rss)}",
        f"used_memory_peak:{peak}",
        f"used_memory_peak_human:{_human(peak)}",
        f"total_system_memory:{total}",
        f"total_system_memory_human:{_human(total)}",
        f"maxmemory:{maxmemory}",
        f"maxmemory_human:{_human(maxmemory)}",
        f"maxmemory_policy:{server.config.get('maxmemory-policy')}",
        "mem_allocator:pymalloc",
    ]


def _persistence_section(server) -> list[str]:
    lines = [
        "loading:0",
        "async_loading:0",
        "rdb_bgsave_in_progress:0",
        f"rdb_last_save_time:{server.last_save}",
        f"aof_enabled:{1 if server.config.get('appendonly') == 'yes' else 0}",
        "aof_rewrite_in_progress:0",
    ]
    persistence = server.extensions.get("persistence")
    if persistence is not None and hasattr(persistence, "info_fields"):
        lines.extend(f"{name}:{value}" for name, value in persistence.info_fields().items())
    return lines


def _stats_section(server) -> list[str]:
    stats = server.stats
    channels: set = set()
    patterns: set = set()
    for client in server.clients.values():
        channels.update(client.channels)
        patterns.update(client.patterns)
    return [
        f"total_connections_received:{stats.connections_received}",
        f"total_commands_processed:{stats.commands_processed}",
        f"total_net_input_bytes:{stats.net_input_bytes}",
        f"total_net_output_bytes:{stats.net_output_bytes}",
        f"rejected_connections:{stats.rejected_connections}",
        f"expired_keys:{stats.expired_keys}",
        "evicted_keys:0",  # minired never evicts: maxmemory only refuses writes (noeviction)
        f"pubsub_channels:{len(channels)}",
        f"pubsub_patterns:{len(patterns)}",
        *_tracking_totals(server.tracking),
        f"total_error_replies:{sum(stats.error_replies.values())}",
    ]


def _tracking_totals(tracking) -> list[str]:
    keys, items, prefixes = (0, 0, 0) if tracking is None else (
        len(tracking.table), tracking.items, len(tracking.prefixes))
    return [f"tracking_total_keys:{keys}", f"tracking_total_items:{items}",
            f"tracking_total_prefixes:{prefixes}"]


def _replication_section(server) -> list[str]:
    return [
        "role:master",
        "connected_slaves:0",
        "master_failover_state:no-failover",
        f"master_replid:{server.run_id}",
        "master_replid2:0000000000000000000000000000000000000000",
        "master_repl_offset:0",
        "second_repl_offset:-1",
        "repl_backlog_active:0",
        "repl_backlog_size:1048576",
        "repl_backlog_first_byte_offset:0",
        "repl_backlog_histlen:0",
    ]


def _cpu_section(server) -> list[str]:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [
        f"used_cpu_sys:{own.ru_stime:.6f}",
        f"used_cpu_user:{own.ru_utime:.6f}",
        f"used_cpu_sys_children:{children.ru_stime:.6f}",
        f"used_cpu_user_children:{children.ru_utime:.6f}",
    ]
    if hasattr(resource, "RUSAGE_THREAD"):  # INFO runs on the server's own thread
        thread = resource.getrusage(resource.RUSAGE_THREAD)
        lines += [f"used_cpu_sys_main_thread:{thread.ru_stime:.6f}",
                  f"used_cpu_user_main_thread:{thread.ru_utime:.6f}"]
    return lines


def _commandstats_section(server) -> list[str]:
    lines = []
    for spec in all_specs():
        if spec.calls or spec.rejected_calls or spec.failed_calls:
            per_call = spec.nanoseconds / 1000 / spec.calls if spec.calls else 0.0
            lines.append(f"cmdstat_{spec.full_name}:calls={spec.calls},usec={spec.usec},"
                         f"usec_per_call={per_call:.2f},rejected_calls={spec.rejected_calls},"
                         f"failed_calls={spec.failed_calls}")
    return lines


def _errorstats_section(server) -> list[str]:
    return [f"errorstat_{code}:count={count}" for code, count in server.stats.error_replies.items()]


# Redis estimates avg_ttl from samples too; reading a bounded number of TTLs keeps INFO cheap.
_AVG_TTL_SAMPLE = 1000


def _keyspace_section(server) -> list[str]:
    lines = []
    now = server.clock.ms()
    for db in server.keyspace.dbs:
        if not db.data:
            continue
        ttls = [deadline - now for deadline in itertools.islice(db.expires.values(), _AVG_TTL_SAMPLE)]
        ttls = [ttl for ttl in ttls if ttl > 0]
        avg_ttl = sum(ttls) // len(ttls) if ttls else 0
        lines.append(f"db{db.index}:keys={len(db.data)},expires={len(db.expires)},avg_ttl={avg_ttl}")
    return lines


# (section name, title, builder, in the default set), in Redis's order.
_SECTIONS = (
    ("server", "Server", _server_section, True),
    ("clients", "Clients", _clients_section, True),
    ("memory", "Memory", _memory_section, True),
    ("persistence", "Persistence", _persistence_section, True),
    ("stats", "Stats", _stats_section, True),
    ("replication", "Replication", _replication_section, True),
    ("cpu", "CPU", _cpu_section, True),
    ("modules", "Modules", lambda server: [], True),
    ("commandstats", "Commandstats", _commandstats_section, False),
    ("errorstats", "Errorstats", _errorstats_section, True),
    ("cluster", "Cluster", lambda server: ["cluster_enabled:0"], True),
    ("keyspace", "Keyspace", _keyspace_section, True),
)
_DEFAULT = frozenset(name for name, _, _, default in _SECTIONS if default)
_ALL = frozenset(name for name, _, _, _ in _SECTIONS)


def info_text(server, requested: list[bytes]) -> str:
    """The INFO report for the requested section names (none: the default sections)."""
    wanted: set[str] = set()
    for raw in requested or [b"default"]:
        name = raw.decode(errors="replace").lower()
        if name == "default":
            wanted |= _DEFAULT
        elif name in ("all", "everything"):
            wanted |= _ALL
        else:
            wanted.add(name)
    blocks = []
    for name, title, build, _ in _SECTIONS:
        if name in wanted:
            blocks.append("".join(f"{line}\r\n" for line in [f"# {title}", *build(server)]))
    return "\r\n".join(blocks)


@command("info", arity=-1, flags="loading stale", group=G)
def info(c, argv):
    """Get information and statistics about the server"""
    return Verbatim(info_text(c.server, argv[1:]).encode())
