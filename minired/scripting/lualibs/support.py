"""What the four Lua library chunks share: lauxlib's argument-check texts, the private
environment every chunk runs in, and the guard that keeps Python exceptions out of Lua."""
from __future__ import annotations

import functools
import os
from typing import Any, Callable


def lua_source(name: str) -> str:
    """The text of ``name``, a Lua chunk kept beside this module (a plain open: importlib.resources
    would be one more module to load with the first script)."""
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()


# support.lua: the error-position and argument-checking helpers every library chunk shares.
# They reproduce lauxlib's luaL_argerror/luaL_typerror/luaL_check* texts.
#
# Convention: ``level`` is the stack level of the *public library function* as
# seen from the helper that receives the parameter (1 would be the helper
# itself).  Helpers never tail-call each other, because a tail call would drop
# a frame and shift every level.
_SUPPORT_LUA = lua_source("support.lua")


def lua_safe(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make a Python helper unable to raise into Lua.

    lupa turns a Python exception into a Lua error whose value is the wrapped
    exception object; a script's pcall would then hold a Python object.  The
    guarded helper returns None instead, and the Lua side reports an error.
    """

    @functools.wraps(fn)
    def guarded(*args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException:  # noqa: BLE001 - nothing may cross into Lua
            return None

    guarded.lua_callback = True  # type: ignore[attr-defined]
    return guarded


# A chunk's closures must never read the script-visible globals at call time
# (a script could replace them), so each chunk runs with a private environment
# holding shallow copies of just the standard functions the libraries use.
_PRIVATE_ENV_LUA = lua_source("private_env.lua")


def load_chunk(lua: Any, source: str, name: str, *args: Any, guard: Any = None) -> Any:
    """Compile ``source`` as chunk ``name`` and run it with ``args`` as ``...``. With a
    memcap.CapGuard, the ``lua_safe`` helpers among ``args`` reach Lua through it."""
    if guard is not None:
        args = tuple(guard.guard(a) if getattr(a, "lua_callback", False) else a for a in args)
    chunk = lua.compile(source.encode(), name=("=" + name).encode())
    setfenv = lua.globals()[b"setfenv"]
    if setfenv is not None:  # every chunk also captures what it uses as locals
        setfenv(chunk, lua.execute(_PRIVATE_ENV_LUA, lua.globals()))
    return chunk(*args)


def support_table(lua: Any) -> Any:
    """The shared argument-checking helpers (the Lua table S of support.lua), loaded into ``lua``."""
    g = lua.globals()
    debug = g[b"debug"]
    getinfo = debug[b"getinfo"] if debug is not None else None
    string, math = g[b"string"], g[b"math"]
    return load_chunk(
        lua, _SUPPORT_LUA, "lualibs.support",
        getinfo, g[b"error"], g[b"type"], g[b"tonumber"], g[b"tostring"],
        string[b"format"], math[b"floor"], math[b"ceil"],
    )
