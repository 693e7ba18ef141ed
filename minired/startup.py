"""Wiring done once per server before it listens: subsystems attach their per-server state."""
from __future__ import annotations

import importlib

from .server import Server

# Modules exposing `attach(server)`, in order. Each owns one subsystem's per-server state
# (pub/sub registry, persistence, ...). The script engine is not among them: it attaches on
# first use (scripting.engine_of), so lupa and the Lua runtime load with the first script
# instead of delaying every start-up; the commands that reach it are registered regardless.
SUBSYSTEMS = ("minired.pubsub", "minired.persistence", "minired.security", "minired.metrics")


def prepare_server(server: Server) -> Server:
    for name in SUBSYSTEMS:
        importlib.import_module(name).attach(server)
    return server
