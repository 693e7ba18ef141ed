"""Lua scripting: EVAL scripts and Redis 7 functions in a sandboxed Lua 5.1 runtime (lupa).

    sandbox.lua / sandbox.py   the environment scripts see, and Lua <-> reply conversion
    engine.py                  running a script: redis.call bridge, EVAL cache, errors, kill
    functions.py               FUNCTION LOAD/LIST/DUMP/RESTORE ... and FCALL
    busy.py                    serving other clients (BUSY, SCRIPT KILL) while a script runs long
    feature.py                 attach / engine_of: a server's script engine, made at the first script
"""
