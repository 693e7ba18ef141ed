"""Command groups. Importing this package fills the command table (see table.py)."""
from __future__ import annotations

import importlib

from .table import COMMANDS, CommandSpec, command, container_command, lookup  # noqa: F401

GROUPS = (
    "connection", "keys", "strings", "lists", "hashes", "sets", "zsets", "streams",
    "stream_groups", "pubsub", "transactions", "scripting", "server", "diagnostics", "clock",
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
