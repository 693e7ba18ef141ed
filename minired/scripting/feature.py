"""The script engine as a per-server feature: created at the first script, not at start-up.

Kept out of the package's __init__ so that the package imports none of its own modules: this
module imports engine, functions and busy (which load lupa) only when a server first needs them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.scripting.engine import ScriptEngine


def attach(server: "Server") -> "ScriptEngine":
    """Give a server its script engine (idempotent)."""
    engine = server.features.scripting
    if engine is None:
        from minired.scripting.busy import BusyService
        from minired.scripting.engine import ScriptEngine
        from minired.scripting.functions import FunctionLibraries

        engine = ScriptEngine(server)
        engine.functions = FunctionLibraries(engine)
        engine.busy = BusyService(server, engine)
        server.features.scripting = engine
        server.hooks.script_flags = engine.script_flags
        persistence = server.features.persistence
        if persistence is not None:  # libraries are saved in snapshots from now on
            persistence.use_functions(engine.functions)
    return engine


def engine_of(server: "Server") -> "ScriptEngine":
    """The server's script engine, attached on first use."""
    engine = server.features.scripting
    return engine if engine is not None else attach(server)
