"""The Lua libraries Redis 7.0 gives scripts: cjson, cmsgpack, bit and struct.

Each library is a Lua chunk (bit.lua, cjson.lua, cmsgpack.lua, struct.lua, with
the helpers they share in support.lua), loaded by its Python module (lua_bit.py
...), that builds a plain Lua table of plain Lua functions.  Where Lua 5.1 cannot do the work itself
(IEEE-754 bit patterns, 32-bit integer operations) the chunk receives small
Python functions as arguments and keeps them as upvalues of its closures, so a
script can call the library but can never reach a Python object: no Python
callable sits in a table a script can index, and every value handed back to
Lua is a Lua string, number, boolean, nil or a table built in Lua.

The behaviour, including error texts, follows Redis 7.0's C sources
(deps/lua/src/lua_cjson.c, lua_cmsgpack.c, lua_bit.c, lua_struct.c).

Call-site fidelity: the C libraries raise errors with luaL_error, which Redis
prefixes with the position of the calling Lua line ("user_script:3: ...") and
which names the function as the call site did ("bad argument #1 to 'tobit'").
Our functions are Lua closures, so they raise with ``error(msg, 2)`` and read
the call-site name with ``debug.getinfo``.  One case cannot be reproduced: a
Lua closure reached by a *tail call* (``return cjson.decode(bad)``) has lost
its caller's frame, so such errors carry no "user_script:N:" prefix, whereas a
C function is never tail-called and Redis does print it.
"""
from __future__ import annotations

from typing import Any

from minired.scripting.lualibs import lua_bit, lua_cjson, lua_cmsgpack, lua_struct
from minired.scripting.lualibs.support import support_table


def install_libraries(lua: Any, target: Any, guard: Any = None) -> None:
    """Set target.cjson, target.cmsgpack, target.bit and target.struct.

    ``lua`` must be a ``lupa.lua51.LuaRuntime`` created with ``encoding=None``
    whose standard libraries are still reachable from its globals (the chunks
    capture what they use now, so scripts replacing globals later cannot
    affect them).
    """
    support = support_table(lua)
    target[b"cjson"] = lua_cjson.create(lua, support)
    target[b"cmsgpack"] = lua_cmsgpack.create(lua, support, guard)
    target[b"bit"] = lua_bit.create(lua, support, guard)
    target[b"struct"] = lua_struct.create(lua, support, guard)


__all__ = ["install_libraries"]
