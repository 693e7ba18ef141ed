"""ACL categories of commands, as Redis's command table gives them: derived from each command's
group and flags, plus the ones Redis declares by hand (COMMAND INFO, ACL CAT, ACL rules)."""
from __future__ import annotations

from minired.engine.table import CommandSpec

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


# Categories Redis's command table declares by hand for these commands, beyond those the
# group and flags imply (acl_categories derives those).
_DECLARED_CATEGORIES = {
    "restore": ("dangerous",), "migrate": ("keyspace", "dangerous"), "keys": ("keyspace", "dangerous"), "randomkey": ("keyspace",),
    "scan": ("keyspace",), "swapdb": ("keyspace", "dangerous"), "wait": ("connection",),
    "flushall": ("keyspace", "dangerous"), "flushdb": ("keyspace", "dangerous"),
    "dbsize": ("keyspace",), "lastsave": ("admin", "dangerous"), "role": ("admin", "dangerous"),
    "info": ("dangerous",), "sort": ("dangerous", "list", "set", "sortedset"),
    "sort_ro": ("dangerous", "list", "set", "sortedset"), "client|help": ("connection",),
    "object|help": ("keyspace",), "xinfo|help": ("stream",), "xgroup|help": ("stream",),
    "script|help": ("scripting",), "function|help": ("scripting",),
    **{name: ("connection",) for name in (
        "asking", "readonly", "readwrite", "command", "command|count", "command|info", "command|docs", "command|list",
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
