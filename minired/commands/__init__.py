"""Command groups. Importing this package fills the command table (see table.py)."""
from __future__ import annotations

import importlib

from .table import COMMANDS, CommandSpec, command, container_command, lookup  # noqa: F401

# Every module that declares commands, each once and only here (no module registers another by
# importing it). The order is the command table's, which COMMAND and COMMAND DOCS list.
GROUPS = (
    "connection", "keys_dump", "keys_object", "keys", "strings_bits", "strings", "lists", "hashes",
    "sets", "zsets", "zsets_algebra", "streams", "stream_groups", "pubsub", "transactions",
    "scripting", "server", "introspection", "info", "diagnostics", "clock",
    "sort", "bitfield", "geo", "hyperloglog", "client_tracking", "acl",
    "faults",
    "replication", "modules",
    "cluster",
)


def load_all() -> dict:
    """Import every group module, registering its commands once."""
    for group in GROUPS:
        importlib.import_module(f"{__name__}.{group}")
    return COMMANDS


load_all()
