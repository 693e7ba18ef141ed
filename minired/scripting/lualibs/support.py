"""What the four Lua library chunks share: lauxlib's argument-check texts, the private
environment every chunk runs in, and the guard that keeps Python exceptions out of Lua."""
from __future__ import annotations

import functools
from typing import Any, Callable

# The error-position and argument-checking helpers every library chunk shares.
# They reproduce lauxlib's luaL_argerror/luaL_typerror/luaL_check* texts.
#
# Convention: ``level`` is the stack level of the *public library function* as
# seen from the helper that receives the parameter (1 would be the helper
# itself).  Helpers never tail-call each other, because a tail call would drop
# a frame and shift every level.
_SUPPORT_LUA = r"""
local getinfo, error, type, tonumber, tostring, format, floor, ceil = ...

local S = {}

-- luaL_argerror: "bad argument #N to 'name' (msg)", name as the call site saw it.
function S.argerror(level, narg, extramsg, fname)
  local name, namewhat = fname, nil
  if getinfo then
    local info = getinfo(level, 'n')
    name, namewhat = info and info.name, info and info.namewhat
    if name == nil then
      -- The C original is never tail-called, so Redis knows its field name
      -- whenever Lua code called it; only a call from C (pcall) yields '?'.
      local caller = getinfo(level + 1, 'S')
      if caller and caller.what == 'tail' then name = fname else name = '?' end
    end
  end
  if namewhat == 'method' then
    narg = narg - 1
    if narg == 0 then
      error(format("calling '%s' on bad self (%s)", name, extramsg), level + 1)
    end
  end
  error(format("bad argument #%d to '%s' (%s)", narg, name, extramsg), level + 1)
end

-- luaL_typerror: arguments past the last one are "no value", not "nil".
function S.typeerror(level, narg, expected, value, nargs, fname)
  local got = (narg > nargs) and 'no value' or type(value)
  S.argerror(level + 1, narg, expected .. ' expected, got ' .. got, fname)
end

-- luaL_checknumber: numbers, and strings Lua can convert to numbers.
function S.checknumber(value, narg, nargs, fname)
  if type(value) == 'number' then return value end
  local n = type(value) == 'string' and tonumber(value)
  if not n then S.typeerror(3, narg, 'number', value, nargs, fname) end
  return n
end

-- lua_tointeger on x86-64: truncation toward zero; out-of-range doubles (and
-- NaN) become the "integer indefinite" value INT64_MIN.
local TWO63 = 2 ^ 63
function S.truncate(n)
  if n ~= n or n >= TWO63 or n < -TWO63 then return -TWO63 end
  if n >= 0 then return floor(n) end
  return ceil(n)
end

function S.checkinteger(value, narg, nargs, fname)
  local n = type(value) == 'number' and value or (type(value) == 'string' and tonumber(value))
  if not n then S.typeerror(3, narg, 'number', value, nargs, fname) end
  return S.truncate(n)
end

function S.optinteger(value, narg, nargs, default, fname)
  if value == nil then return default end
  local n = type(value) == 'number' and value or (type(value) == 'string' and tonumber(value))
  if not n then S.typeerror(3, narg, 'number', value, nargs, fname) end
  return S.truncate(n)
end

-- luaL_checklstring: numbers are accepted and formatted like tostring does.
function S.checkstring(value, narg, nargs, fname)
  local t = type(value)
  if t == 'string' then return value end
  if t == 'number' then return tostring(value) end
  S.typeerror(3, narg, 'string', value, nargs, fname)
end

-- C's (int) conversion of an integral value: keep the low 32 bits, signed.
function S.wrap32(n)
  n = n % 4294967296
  if n >= 2147483648 then n = n - 4294967296 end
  return n
end

return S
"""


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
_PRIVATE_ENV_LUA = r"""
local g = ...
local env = {}
for _, name in ipairs({'type', 'next', 'pairs', 'ipairs', 'rawget', 'rawset',
                       'select', 'unpack', 'pcall', 'error', 'tostring',
                       'tonumber', 'setmetatable', 'getmetatable', 'newproxy'}) do
  env[name] = g[name]
end
for _, lib in ipairs({'string', 'math', 'table'}) do
  local copy = {}
  for k, v in pairs(g[lib]) do copy[k] = v end
  env[lib] = copy
end
return env
"""


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
    """The shared argument-checking helpers (the Lua table S above), loaded into ``lua``."""
    g = lua.globals()
    debug = g[b"debug"]
    getinfo = debug[b"getinfo"] if debug is not None else None
    string, math = g[b"string"], g[b"math"]
    return load_chunk(
        lua, _SUPPORT_LUA, "lualibs.support",
        getinfo, g[b"error"], g[b"type"], g[b"tonumber"], g[b"tostring"],
        string[b"format"], math[b"floor"], math[b"ceil"],
    )
