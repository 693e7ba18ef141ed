-- bit: the Lua side of LuaBitOp (lua_bit.py has the arithmetic and the notes).
local support, tobit, bnot, band, bor, bxor, lshift, rshift, arshift, rol, ror, bswap, tohex = ...
local typeerror = support.typeerror
local type, tonumber, select, error, unpack = type, tonumber, select, error, unpack

local function failed()
  error('bit: internal error', 3)
end

-- barg() argument check: numbers and numeric strings; anything else is an
-- error naming the argument (luaL_typerror).
local function num(v, narg, nargs, fname)
  if type(v) == 'number' then return v end
  local n = type(v) == 'string' and tonumber(v)
  if not n then typeerror(3, narg, 'number', v, nargs, fname) end
  return n
end

local function unary(op, fname)
  return function(...)
    local nargs = select('#', ...)
    local r = op(num((...), 1, nargs, fname))
    if r == nil then failed() end
    return r
  end
end

local function shift(op, fname)
  return function(...)
    local nargs = select('#', ...)
    local x, n = ...
    x = num(x, 1, nargs, fname)
    n = num(n, 2, nargs, fname)
    local r = op(x, n)
    if r == nil then failed() end
    return r
  end
end

-- band/bor/bxor check argument 1, then the others from the last one down.
local function variadic(op, fname)
  return function(...)
    local nargs = select('#', ...)
    local args = {...}
    args[1] = num(args[1], 1, nargs, fname)
    for i = nargs, 2, -1 do args[i] = num(args[i], i, nargs, fname) end
    local r = op(unpack(args, 1, nargs > 0 and nargs or 1))
    if r == nil then failed() end
    return r
  end
end

local M = {
  tobit = unary(tobit, 'tobit'),
  bnot = unary(bnot, 'bnot'),
  bswap = unary(bswap, 'bswap'),
  band = variadic(band, 'band'),
  bor = variadic(bor, 'bor'),
  bxor = variadic(bxor, 'bxor'),
  lshift = shift(lshift, 'lshift'),
  rshift = shift(rshift, 'rshift'),
  arshift = shift(arshift, 'arshift'),
  rol = shift(rol, 'rol'),
  ror = shift(ror, 'ror'),
}

function M.tohex(...)
  local nargs = select('#', ...)
  local x, n = ...
  x = num(x, 1, nargs, 'tohex')
  -- lua_isnone: an explicit nil width is an error, a missing one means 8.
  if nargs >= 2 then n = num(n, 2, nargs, 'tohex') end
  local r = tohex(x, n)
  if r == nil then failed() end
  return r
end

return M
