-- cmsgpack: lua-cmsgpack 0.4.0 as Redis 7.0 ships it (notes in lua_cmsgpack.py).
local support, pack_float, unpack_float, unpack_double, native = ...
local argerror, checkstring, checkinteger, optinteger, wrap32 =
      support.argerror, support.checkstring, support.checkinteger, support.optinteger, support.wrap32
local type, next, select, pcall, error, unpack = type, next, select, pcall, error, unpack
local byte, char, sub, format = string.byte, string.char, string.sub, string.format
local concat = table.concat
local floor = math.floor
local shown = shown  -- (from the sandbox's access functions, or nil: see native below)

local MAX_NESTING = 16
local MAXCSTACK = 8000
local TWO32, TWO63 = 4294967296, 2 ^ 63
local INT_MAX = 2147483647

local function throw(msg) error({msg}, 0) end

-- Re-raise an internal error at the position of the script line that called
-- the public function (level 3: raise <- public function <- caller).
local function raise(err)
  if type(err) == 'table' then
    if err.raw then error(err[1], 0) end   -- raised by the Lua VM itself in C
    error(err[1], 3)
  end
  error(err, 0)
end

-- ===== encoding =====

-- Big-endian bytes of a non-negative integral double below 2^64.
local function be(n, count)
  local out = {}
  for i = count, 1, -1 do
    local b = n % 256
    out[i] = b
    n = (n - b) / 256
  end
  return char(unpack(out, 1, count))
end

local function encode_int(n)
  if n >= 0 then
    if n <= 127 then return char(n) end
    if n <= 0xff then return '\204' .. char(n) end
    if n <= 0xffff then return '\205' .. be(n, 2) end
    if n <= 0xffffffff then return '\206' .. be(n, 4) end
    return '\207' .. be(n, 8)
  end
  if n >= -32 then return char(n + 256) end
  if n >= -128 then return '\208' .. char(n + 256) end
  if n >= -32768 then return '\209' .. be(n + 65536, 2) end
  if n >= -2147483648 then return '\210' .. be(n + TWO32, 4) end
  -- Two's complement of 64 bits, computed in halves so it stays exact.
  local hi = floor(n / TWO32)
  local lo = n - hi * TWO32
  return '\211' .. be(hi + TWO32, 4) .. be(lo, 4)
end

local function encode_number(n)
  -- IS_INT64_EQUIVALENT: finite and (int64_t)n == n.
  if n == floor(n) and n >= -TWO63 and n < TWO63 then return encode_int(n) end
  local packed = pack_float(n)
  if packed == nil then throw('cmsgpack: internal error') end
  return packed
end

local function encode_string(s)
  local len = #s
  if len < 32 then return char(0xa0 + len) .. s end
  if len <= 0xff then return '\217' .. char(len) .. s end
  if len <= 0xffff then return '\218' .. be(len, 2) .. s end
  return '\219' .. be(len, 4) .. s
end

-- table_is_an_array(): keys exactly 1..N (positive C ints, max == count).
local function is_array(t)
  local count, max = 0, 0
  for k in next, t do
    if type(k) ~= 'number' or k <= 0 or k ~= floor(k) or k > INT_MAX then return false end
    if k > max then max = k end
    count = count + 1
  end
  return max == count
end

local encode_value

local function encode_table(buf, t, level)
  if is_array(t) then
    local len = #t
    if len <= 15 then buf[#buf + 1] = char(0x90 + len)
    elseif len <= 0xffff then buf[#buf + 1] = '\220' .. be(len, 2)
    else buf[#buf + 1] = '\221' .. be(len, 4) end
    for i = 1, len do encode_value(buf, t[i], level + 1) end
  else
    local count = 0
    for _ in next, t do count = count + 1 end
    if count <= 15 then buf[#buf + 1] = char(0x80 + count)
    elseif count <= 0xffff then buf[#buf + 1] = '\222' .. be(count, 2)
    else buf[#buf + 1] = '\223' .. be(count, 4) end
    for k, v in next, t do
      encode_value(buf, k, level + 1)
      encode_value(buf, v, level + 1)
    end
  end
end

function encode_value(buf, v, level)
  local t = type(v)
  if t == 'table' and level == MAX_NESTING then t = 'nil' end
  if t == 'string' then buf[#buf + 1] = encode_string(v)
  elseif t == 'boolean' then buf[#buf + 1] = v and '\195' or '\194'
  elseif t == 'number' then buf[#buf + 1] = encode_number(v)
  elseif t == 'table' then encode_table(buf, v, level)
  else buf[#buf + 1] = '\192' end
end

local function pack_all(...)
  local buf = {}
  for i = 1, select('#', ...) do encode_value(buf, (select(i, ...)), 0) end
  return concat(buf)
end

-- ===== decoding =====

local EOF, BADFMT = {}, {}

-- The input being decoded, its next byte's position (1-based) and its length: upvalues
-- rather than a cursor table (each read is then one instruction, not a field lookup). Set by
-- unpack_full for each call; decoding runs no other code that could decode meanwhile.
local S, POS, LEN = '', 1, 0

local function uint(s, pos, count)
  local n = 0
  for i = pos, pos + count - 1 do n = n * 256 + byte(s, i) end
  return n
end

-- int64 (also uint64, which C pushes through a signed lua_Integer): one
-- rounding of the exact value, like the C conversion to double.
local function int64(s, pos)
  local hi, lo = uint(s, pos, 4), uint(s, pos + 4, 4)
  if hi >= 2147483648 then hi = hi - TWO32 end
  return hi * TWO32 + lo
end

local decode_value

local function decode_array(len, slots)
  local t = {}
  if slots + 2 > MAXCSTACK then
    throw('stack overflow (in function mp_decode_to_lua_array)')
  end
  for i = 1, len do
    t[i] = decode_value(slots + 2)
  end
  return t
end

local function decode_map(len, slots)
  local t = {}
  for _ = 1, len do
    local k = decode_value(slots + 1)
    local v = decode_value(slots + 2)
    if k == nil then error({'table index is nil', raw = true}, 0) end
    if k ~= k then error({'table index is NaN', raw = true}, 0) end
    t[k] = v
  end
  return t
end

-- The len bytes after a header of `offset` bytes at POS (EOF if the input ends first).
local function string_at(offset, len)
  local first = POS + offset
  if LEN - POS + 1 < offset + len then error(EOF, 0) end
  POS = first + len
  return sub(S, first, first + len - 1)
end

-- slots: stack slots in use before this value is pushed (luaL_checkstack).
function decode_value(slots)
  local p = POS
  if p > LEN then error(EOF, 0) end
  if slots + 1 > MAXCSTACK then
    throw('stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)')
  end
  local s = S
  local c = byte(s, p)
  if c < 0x80 then POS = p + 1; return c end
  if c >= 0xe0 then POS = p + 1; return c - 256 end
  if c >= 0xa0 and c <= 0xbf then  -- fixstr, the commonest: string_at(1, n) inline
    local n = c - 0xa0
    if LEN - p < n then error(EOF, 0) end
    POS = p + 1 + n
    return sub(s, p + 1, p + n)
  end
  if c >= 0x90 and c <= 0x9f then POS = p + 1; return decode_array(c - 0x90, slots) end
  if c >= 0x80 and c <= 0x8f then POS = p + 1; return decode_map(c - 0x80, slots) end
  if c == 0xc0 then POS = p + 1; return nil end
  if c == 0xc2 then POS = p + 1; return false end
  if c == 0xc3 then POS = p + 1; return true end
  local left = LEN - p + 1  -- bytes from this one to the end
  if c == 0xcc then if left < 2 then error(EOF, 0) end; POS = p + 2; return byte(s, p + 1) end
  if c == 0xcd then if left < 3 then error(EOF, 0) end; POS = p + 3; return uint(s, p + 1, 2) end
  if c == 0xce then if left < 5 then error(EOF, 0) end; POS = p + 5; return uint(s, p + 1, 4) end
  if c == 0xcf or c == 0xd3 then
    if left < 9 then error(EOF, 0) end
    POS = p + 9
    return int64(s, p + 1)
  end
  if c == 0xd0 then
    if left < 2 then error(EOF, 0) end
    POS = p + 2
    local n = byte(s, p + 1)
    return n >= 0x80 and n - 0x100 or n
  end
  if c == 0xd1 then
    if left < 3 then error(EOF, 0) end
    POS = p + 3
    local n = uint(s, p + 1, 2)
    return n >= 0x8000 and n - 0x10000 or n
  end
  if c == 0xd2 then
    if left < 5 then error(EOF, 0) end
    POS = p + 5
    local n = uint(s, p + 1, 4)
    return n >= 0x80000000 and n - TWO32 or n
  end
  if c == 0xca or c == 0xcb then
    local size = (c == 0xca) and 4 or 8
    if left < size + 1 then error(EOF, 0) end
    POS = p + size + 1
    local f = (c == 0xca and unpack_float or unpack_double)(sub(s, p + 1, p + size))
    if f == nil then throw('cmsgpack: internal error') end
    return f
  end
  if c == 0xd9 then if left < 2 then error(EOF, 0) end; return string_at(2, byte(s, p + 1)) end
  if c == 0xda then if left < 3 then error(EOF, 0) end; return string_at(3, uint(s, p + 1, 2)) end
  if c == 0xdb then if left < 5 then error(EOF, 0) end; return string_at(5, uint(s, p + 1, 4)) end
  if c == 0xdc or c == 0xde then
    if left < 3 then error(EOF, 0) end
    POS = p + 3
    local len = uint(s, p + 1, 2)
    if c == 0xdc then return decode_array(len, slots) end
    return decode_map(len, slots)
  end
  if c == 0xdd or c == 0xdf then
    if left < 5 then error(EOF, 0) end
    POS = p + 5
    local len = uint(s, p + 1, 4)
    if c == 0xdd then return decode_array(len, slots) end
    return decode_map(len, slots)
  end
  error(BADFMT, 0)   -- bin, ext and the never-used 0xc1
end

-- mp_unpack_full(): returns count, values...  (offset first unless decode_all)
local function unpack_full(s, limit, offset, base_slots)
  local len = #s
  if offset < 0 or limit < 0 then
    throw(format('Invalid request to unpack with offset of %d and limit of %d.',
                 wrap32(offset), len))
  elseif offset > len then
    throw(format('Start offset %d greater than input length %d.', wrap32(offset), len))
  end
  local decode_all = (limit == 0 and offset == 0)
  if decode_all then limit = INT_MAX end
  S, POS, LEN = s, offset + 1, len
  local results, count = {}, 0
  while POS <= len and count < limit do
    local ok, value = pcall(decode_value, base_slots + count)
    if not ok then
      S = ''  -- (not kept alive by the upvalue)
      if value == EOF then throw('Missing bytes in input.') end
      if value == BADFMT then throw('Bad data format in input.') end
      error(value, 0)
    end
    count = count + 1
    results[count] = value
  end
  local pos = POS
  S = ''
  if not decode_all then
    -- The next offset (or -1 when all input was consumed) comes first.
    if base_slots + count + 1 > MAXCSTACK then
      throw('stack overflow (in function mp_unpack_full)')
    end
    for i = count, 1, -1 do results[i + 1] = results[i] end
    results[1] = (pos > len) and -1 or (pos - 1)
    count = count + 1
  end
  return count, results
end

-- Return t[i..n] as multiple values; unpack() itself refuses very long lists
-- (it needs them all on one C frame), so long tails are spread recursively.
local function spread(t, i, n)
  if n - i < 4000 then return unpack(t, i, n) end
  local v = t[i]
  return v, spread(t, i + 1, n)
end

local M = {
  _NAME = 'cmsgpack',
  _VERSION = 'lua-cmsgpack 0.4.0',
  _COPYRIGHT = 'Copyright (C) 2012, Salvatore Sanfilippo',
  _DESCRIPTION = 'MessagePack C implementation for Lua',
}

function M.pack(...)
  local nargs = select('#', ...)
  if nargs == 0 then argerror(2, 0, 'MessagePack pack needs input.', 'pack') end
  if nargs * 2 > MAXCSTACK then argerror(2, 0, 'Too many arguments for MessagePack pack.', 'pack') end
  local ok, result = pcall(pack_all, ...)
  if not ok then raise(result) end
  return result
end

function M.unpack(...)
  local nargs = select('#', ...)
  local s = checkstring((...), 1, nargs, 'unpack')
  -- mp_unpack leaves any extra arguments on the C stack below the results.
  local ok, count, results = pcall(unpack_full, s, 0, 0, nargs)
  if not ok then raise(count) end
  return spread(results, 1, count)
end

function M.unpack_one(...)
  local nargs = select('#', ...)
  local s, offset = ...
  offset = optinteger(offset, 2, nargs, 0, 'unpack_one')
  s = checkstring(s, 1, nargs, 'unpack_one')
  local ok, count, results = pcall(unpack_full, s, 1, offset, 1)
  if not ok then raise(count) end
  return spread(results, 1, count)
end

function M.unpack_limit(...)
  local nargs = select('#', ...)
  local s, limit, offset = ...
  limit = checkinteger(limit, 2, nargs, 'unpack_limit')
  offset = optinteger(offset, 3, nargs, 0, 'unpack_limit')
  s = checkstring(s, 1, nargs, 'unpack_limit')
  local ok, count, results = pcall(unpack_full, s, limit, offset, 1)
  if not ok then raise(count) end
  return spread(results, 1, count)
end

-- The compiled build's C functions (lualibs/native_msgpack.pyx), the same functions step for
-- step; `shown`, where the sandbox gives it, reads a read-only proxy as the table it shows.
if native then
  M.pack = native.packer(shown)
  M.unpack, M.unpack_one, M.unpack_limit = native.unpack, native.unpack_one, native.unpack_limit
end

return M
