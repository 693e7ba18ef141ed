"""Wiring done once per server before it listens: subsystems attach their per-server state."""
from __future__ import annotations

import importlib
import logging

from .server import Server

log = logging.getLogger("minired")

# Modules exposing `attach(server)`, in order. Each owns one subsystem's per-server state
# (pub/sub registry, script engine, persistence, ...).
SUBSYSTEMS = ("minired.pubsub", "minired.scripting", "minired.persistence", "minired.security")


def prepare_server(server: Server) -> Server:
    for name in SUBSYSTEMS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        attach = getattr(module, "attach", None)
        if attach is not None:
            attach(server)
    return server
