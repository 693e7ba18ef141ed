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
SUPPORT_SOURCE = lua_source("support.lua")


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

    return guarded


# A chunk's private environment: shallow copies of just the standard functions the libraries
# use (builder.lua runs every chunk in a fresh one).
PRIVATE_ENV_SOURCE = lua_source("private_env.lua")


def c_library(lua: Any, path: str, opener: bytes) -> Any:
    """What the C function `opener` of the extension module at `path` returns when called in
    the lupa runtime `lua` (through package.loadlib, which must still be reachable there), or
    None where it cannot be loaded (the compiled build's native_json and native_msgpack)."""
    from lupa import lua51

    loadlib = lua.eval("package and package.loadlib")
    if loadlib is None:
        return None
    function = loadlib(path.encode(), opener)
    if lua51.lua_type(function) != "function":
        return None
    return function()
