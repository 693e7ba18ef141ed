"""Lua scripting: EVAL scripts and Redis 7 functions in a sandboxed Lua 5.1 runtime (lupa).

    sandbox.lua / sandbox.py   the environment scripts see, and Lua <-> reply conversion
    engine.py                  running a script: redis.call bridge, EVAL cache, errors, kill
    functions.py               FUNCTION LOAD/LIST/DUMP/RESTORE ... and FCALL
    busy.py                    serving other clients (BUSY, SCRIPT KILL) while a script runs long
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.scripting.engine import ScriptEngine


def attach(server: "Server") -> "ScriptEngine":
    """Give a server its script engine (idempotent)."""
    engine = server.scripting
    if engine is None:
        from minired.scripting.busy import BusyService
        from minired.scripting.engine import ScriptEngine
        from minired.scripting.functions import FunctionLibraries

        engine = ScriptEngine(server)
        engine.functions = FunctionLibraries(engine)
        engine.busy = BusyService(server, engine)
        server.scripting = engine
        persistence = server.persistence
        if persistence is not None:  # libraries are saved in snapshots from now on
            persistence.use_functions(engine.functions)
    return engine


def engine_of(server: "Server") -> "ScriptEngine":
    engine = server.scripting
    return engine if engine is not None else attach(server)
