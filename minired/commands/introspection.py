"""COMMAND and its subcommands: the server describing its commands (INFO is commands/info.py,
ACL commands/acl.py).

Everything here is derived from `table.COMMANDS`, so a command declared once is described
correctly everywhere. Redis 7 reply shapes: COMMAND INFO gives name, arity, flags, first key,
last key, step, ACL categories, tips, key specs and subcommands.

ACL categories are derived from the group and flags the way Redis's setImplicitACLCategories
does, plus the ones Redis declares by hand. Key specs and tips are Redis's own (keyspecs.py),
and COMMAND GETKEYS/GETKEYSANDFLAGS evaluate them as Redis does.
"""
from __future__ import annotations

from minired.data.glob import glob_match
from minired.engine.categories import acl_categories
from minired.engine.keyspecs import has_keys, keys_with_flags, specs_of, tips_of
from minired.engine.table import COMMANDS, CommandSpec, all_specs, command, help_reply
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import MapPairs, OrderedSet, Status

G = "server"

# Flags in the order Redis prints them; may_replicate, sentinel, only_sentinel and protected are
# hidden on purpose, as in Redis's addCommandFlags.
_FLAG_ORDER = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
               "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
               "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
               "allow_busy")

def ordered_flags(spec: CommandSpec) -> list[str]:
    return [flag for flag in _FLAG_ORDER if flag in spec.flags]


def _flag_set(flags) -> OrderedSet:
    return OrderedSet(Status(flag.encode()) for flag in flags)


def _begin_search(begin: tuple) -> dict:
    if begin[0] == "index":
        return {b"type": b"index", b"spec": {b"index": begin[1]}}
    if begin[0] == "keyword":
        return {b"type": b"keyword",
                b"spec": {b"keyword": begin[1].encode(), b"startfrom": begin[2]}}
    return {b"type": b"unknown", b"spec": {}}


def _find_keys(find: tuple) -> dict:
    if find[0] == "range":
        return {b"type": b"range",
                b"spec": {b"lastkey": find[1], b"keystep": find[2], b"limit": find[3]}}
    if find[0] == "keynum":
        return {b"type": b"keynum",
                b"spec": {b"keynumidx": find[1], b"firstkey": find[2], b"keystep": find[3]}}
    return {b"type": b"unknown", b"spec": {}}


def key_specs(spec: CommandSpec) -> OrderedSet:
    """Redis's key specs for the command (a set in RESP3, as Redis replies)."""
    specs = specs_of(spec)
    if specs is None:
        specs = _declared_specs(spec)
    rendered = OrderedSet()
    for notes, flags, begin, find in specs:
        entry: dict = {b"notes": notes.encode()} if notes is not None else {}
        entry[b"flags"] = _flag_set(flags)
        entry[b"begin_search"] = _begin_search(begin)
        entry[b"find_keys"] = _find_keys(find)
        rendered.append(entry)
    return rendered


def _declared_specs(spec: CommandSpec) -> list[tuple]:
    """Specs for a command of minired's own, from the key positions its @command declares."""
    access = ("RW",) if spec.write else ("RO",)
    specs = []
    if spec.first_key:
        last = spec.last_key
        specs.append((None, access, ("index", spec.first_key),
                      ("range", last - spec.first_key if last >= 0 else last, spec.step, 0)))
    if spec.key_finder is not None:
        specs.append((None, access + ("incomplete",), ("unknown",), ("unknown",)))
    return specs


def command_info(spec: CommandSpec) -> list:
    return [
        spec.full_name.encode(), spec.arity,
        _flag_set(ordered_flags(spec)),
        spec.first_key, spec.last_key, spec.step,
        _flag_set("@" + category for category in acl_categories(spec)),
        OrderedSet(tip.encode() for tip in tips_of(spec)), key_specs(spec),
        # An empty set for a command without subcommands, else an array, as Redis replies.
        [command_info(sub) for sub in spec.subcommands.values()] if spec.subcommands
        else OrderedSet(),
    ]


def command_docs(spec: CommandSpec) -> dict:
    """COMMAND DOCS for one command: Redis's own docs (docs_data.py, generated from Redis 7.0.15)
    or, for a command only minired has, the first line of its handler's docstring."""
    # Loaded here, on the first COMMAND DOCS: ~200 kB of text no other command needs.
    from minired.commands.docs_data import DOCS

    fields = DOCS.get(spec.full_name)
    if fields is not None:
        docs = _docs_reply(fields)
    else:
        docs = {}
        summary = spec.summary.split("\n", 1)[0].strip()
        if summary:
            docs[b"summary"] = summary.encode()
        docs[b"group"] = spec.group.encode()
    if spec.subcommands:
        docs[b"subcommands"] = {sub.full_name.encode(): command_docs(sub)
                                for sub in spec.subcommands.values()}
    return docs


def _docs_reply(fields: dict) -> dict:
    """A command's or an argument's docs as Redis sends them (see docs_data.py's header)."""
    return {name.encode(): _DOCS_FIELD_REPLY.get(name, _text_or_int)(value)
            for name, value in fields.items()}


def _text_or_int(value):
    return value if type(value) is int else value.encode()


_DOCS_FIELD_REPLY = {
    "doc_flags": _flag_set,
    "flags": _flag_set,
    # A set of arrays: Redis 7.0's addReplyCommandHistory sends a set length.
    "history": lambda history: OrderedSet([version.encode(), change.encode()]
                                          for version, change in history),
    "arguments": lambda arguments: [_docs_reply(argument) for argument in arguments],
}


def find_spec(name: bytes) -> CommandSpec | None:
    """A command or a 'container|sub' name, as COMMAND INFO/DOCS accept them."""
    container, _, sub = name.lower().partition(b"|")
    spec = COMMANDS.get(container)
    if spec is None or not sub:
        return spec
    return spec.subcommands.get(sub)


def _keys_and_flags(argv: list) -> list:
    """The keys of argv with their flags, with Redis's COMMAND GETKEYS errors."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is not None and spec.subcommands and len(argv) >= 2:
        spec = spec.subcommands.get(argv[1].lower())
    if spec is None:
        raise RedisError(errors.GETKEYS_INVALID_COMMAND)
    if not has_keys(spec):
        raise RedisError(errors.GETKEYS_NO_KEYS)
    if not spec.arity_ok(len(argv)):
        raise RedisError(errors.GETKEYS_BAD_ARITY)
    found = keys_with_flags(spec, argv)
    if not found and "no_mandatory_keys" not in spec.flags:
        raise RedisError(errors.GETKEYS_INVALID_ARGUMENTS)
    return found


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
    # A name asked for twice is described twice, as Redis does.
    return MapPairs((spec.full_name.encode(), command_docs(spec))
                    for spec in map(find_spec, argv[2:]) if spec is not None)


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
    return [target[i] for i, _ in _keys_and_flags(target)]


@command("getkeysandflags", arity=-4, flags="loading stale", parent="command", group=G)
def command_getkeysandflags(c, argv):
    """Extract keys and access flags given a full Redis command"""
    target = argv[2:]
    return [[target[i], _flag_set(flags)] for i, flags in _keys_and_flags(target)]


@command("help", arity=2, flags="loading stale", parent="command", group=G)
def command_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "COMMAND",
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
    )
