-- The helpers the four libraries share (notes in support.py).
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
