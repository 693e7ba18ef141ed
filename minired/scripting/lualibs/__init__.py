"""The Lua libraries Redis 7.0 gives scripts: cjson, cmsgpack, bit and struct.

Each library is a Lua chunk (bit.lua, cjson.lua, cmsgpack.lua, struct.lua, with
the helpers they share in support.lua) that builds a plain Lua table of plain Lua
functions.  builder.lua builds it, in Lua, when asked (the sandbox asks the first
time a script reaches the library), with the Python helpers its module (lua_bit.py
...) provides.  Where Lua 5.1 cannot do the work itself
(IEEE-754 bit patterns, 32-bit integer operations) the chunk receives small
Python functions as arguments and keeps them as upvalues of its closures, so a
script can call the library but can never reach a Python object: no Python
callable sits in a table a script can index, and every value handed back to
Lua is a Lua string, number, boolean, nil or a table built in Lua.

The behaviour, including error texts, follows Redis 7.0's C sources
(deps/lua/src/lua_cjson.c, lua_cmsgpack.c, lua_bit.c, lua_struct.c).

In the compiled build cjson's and cmsgpack's encoders and decoders (cjson.encode and decode,
cmsgpack.pack, unpack, unpack_one and unpack_limit: BullMQ's per-job calls) are C functions
instead (native_json.pyx, native_msgpack.pyx), the Lua ones step for step; both builds run the same differential tests
against Redis.

Call-site fidelity: the C libraries raise errors with luaL_error, which Redis
prefixes with the position of the calling Lua line ("user_script:3: ...") and
which names the function as the call site did ("bad argument #1 to 'tobit'").
Our Lua functions are Lua closures, so they raise with ``error(msg, 2)`` and read
the call-site name with ``debug.getinfo``.  One case cannot be reproduced: a
Lua closure reached by a *tail call* (``return cjson.decode(bad)``) has lost
its caller's frame, so such errors carry no "user_script:N:" prefix, whereas a
C function is never tail-called and Redis does print it.
"""
from __future__ import annotations

from typing import Any, Callable

from minired.scripting.lualibs import lua_bit, lua_cjson, lua_cmsgpack, lua_struct
from minired.scripting.lualibs.support import PRIVATE_ENV_SOURCE, SUPPORT_SOURCE, lua_safe, lua_source

_LIBRARIES = {b"cjson": lua_cjson, b"cmsgpack": lua_cmsgpack, b"bit": lua_bit, b"struct": lua_struct}
LIBRARY_NAMES = tuple(_LIBRARIES)
_BUILDER_SOURCE = lua_source("builder.lua").encode()


def library_builder(lua: Any, guard: Any = None, note: Callable[[float], None] | None = None) -> Any:
    """A Lua function build(name[, access]) that builds library ``name`` ("cjson", "cmsgpack",
    "bit" or "struct") in ``lua`` and returns its table (builder.lua); ``access``, a Lua table,
    replaces some of the standard functions the library's code uses (the sandbox's next and
    rawget, which see through its read-only proxies).

    ``lua`` must be a ``lupa.lua51.LuaRuntime`` created with ``encoding=None`` whose standard
    libraries are still reachable from its globals when this is called; ``build`` may be
    called any time later, from Lua (the chunks capture what they use now, so scripts replacing
    globals later cannot affect them). ``guard``: a memcap.CapGuard for the Python helpers and
    ``note``, which (already guarded) hears the bytes each build adds to the heap.
    """
    sources = {name: module.SOURCE.encode() for name, module in _LIBRARIES.items()}
    sources[b"support"], sources[b"private_env"] = SUPPORT_SOURCE.encode(), PRIVATE_ENV_SOURCE.encode()
    table = lua.table_from
    natives = _native_functions(lua)

    def given(name: bytes, module: Any) -> Any:
        funcs = [guard.guard(f) if guard is not None else f for f in module.HELPERS]
        helpers = table(funcs)
        # The last argument: the library's C functions, or nil.
        helpers[b"n"] = len(funcs) + 1
        if name in natives:
            helpers[len(funcs) + 1] = natives[name]
        return helpers

    def source(name: bytes) -> bytes:
        return sources[name]

    if guard is not None:
        source = guard.guard(lua_safe(source))
    make = lua.compile(_BUILDER_SOURCE, name=b"=lualibs.builder")
    return make(lua.globals(), source,
                table({name: given(name, module) for name, module in _LIBRARIES.items()}), note)


def _native_functions(lua: Any) -> dict:
    """The compiled build's C functions for the libraries (native_json.pyx, native_msgpack.pyx),
    as {library name: Lua table of them}; empty in the uncompiled build."""
    try:
        from minired.scripting.lualibs import native_json, native_msgpack
    except ImportError:
        return {}
    found = {b"cjson": native_json.library(lua), b"cmsgpack": native_msgpack.library(lua)}
    return {name: functions for name, functions in found.items() if functions is not None}


def install_libraries(lua: Any, target: Any, guard: Any = None) -> None:
    """Set target.cjson, target.cmsgpack, target.bit and target.struct (see library_builder)."""
    build = library_builder(lua, guard)
    for name in LIBRARY_NAMES:
        target[name] = build(name)


__all__ = ["LIBRARY_NAMES", "install_libraries", "library_builder"]
