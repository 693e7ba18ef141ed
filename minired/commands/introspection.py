"""COMMAND and its subcommands: the server describing its commands (INFO is commands/info.py,
ACL commands/acl.py).

Everything here is derived from `table.COMMANDS`, so a command declared once is described
correctly everywhere. Redis 7 reply shapes: COMMAND INFO gives name, arity, flags, first key,
last key, step, ACL categories, tips, key specs and subcommands.

Derived rather than declared, and so approximate: ACL categories come from the group and flags
the way Redis's setImplicitACLCategories does (categories Redis adds by hand, such as
@dangerous on FLUSHALL, are absent); key specs carry RO/RW only, without Redis's finer access
flags; tips are empty. Name, arity, flags and key positions are exact.
"""
from __future__ import annotations

from .. import errors
from ..errors import RedisError
from ..glob import glob_match
from ..resp import Status
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


# INFO lives in info.py; importing it here registers it wherever the server's self-description
# is loaded (commands/server.py imports this module). _human is where tests have found it.
from .info import human_bytes as _human  # noqa: E402,F401
