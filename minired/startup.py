"""Wiring done once per server before it listens: subsystems attach their per-server state."""
from __future__ import annotations

import importlib

from .server import Server

# Modules exposing `attach(server)`, in order. Each owns one subsystem's per-server state
# (pub/sub registry, script engine, persistence, ...).
SUBSYSTEMS = ("minired.pubsub", "minired.scripting", "minired.persistence", "minired.security")


def prepare_server(server: Server) -> Server:
    for name in SUBSYSTEMS:
        importlib.import_module(name).attach(server)
    return server
