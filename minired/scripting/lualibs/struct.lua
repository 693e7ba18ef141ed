-- struct: struct.c as Redis 7.0 ships it (notes in lua_struct.py).
local support, pack_float, pack_double, unpack_float, unpack_double = ...
local argerror, typeerror, checkstring, optinteger =
      support.argerror, support.typeerror, support.checkstring, support.optinteger
local type, tonumber, tostring, select, pcall, error, unpack =
      type, tonumber, tostring, select, pcall, error, unpack
local byte, char, sub, find, format, rep, reverse =
      string.byte, string.char, string.sub, string.find, string.format, string.rep, string.reverse
local concat = table.concat
local floor, ceil = math.floor, math.ceil

local TWO32, TWO63, TWO64 = 4294967296, 2 ^ 63, 2 ^ 64
local MAXINTSIZE = 32
local MAXALIGN = 8            -- offsetof(struct {char c; double d;}, d) on x86-64
local MAXCSTACK = 8000
local INT_MAX = 2147483647

local function throw(msg) error({msg}, 0) end
-- An argument error raised deep inside: re-raised by the public function.
local function throw_arg(narg, msg) error({msg, narg = narg}, 0) end

local SIZES = { b = 1, B = 1, h = 2, H = 2, l = 8, L = 8, T = 8, f = 4, d = 8, x = 1 }

-- getnum(): the digits at fmt[i..], with Redis's overflow check.
local function getnum(fmt, i, default)
  local digits = fmt:match('^%d+', i)
  if not digits then return default, i end
  local a = 0
  for k = 1, #digits do
    local d = byte(digits, k) - 48
    if a > floor(INT_MAX / 10) or a * 10 > INT_MAX - d then throw('integral size overflow') end
    a = a * 10 + d
  end
  return a, i + #digits
end

-- optsize(): (size, next index)
local function optsize(opt, fmt, i)
  local size = SIZES[opt]
  if size then return size, i end
  if opt == 'c' then return getnum(fmt, i, 1) end
  if opt == 'i' or opt == 'I' then
    local sz
    sz, i = getnum(fmt, i, 4)
    if sz > MAXINTSIZE then
      throw(format('integral size %d is larger than limit of %d', sz, MAXINTSIZE))
    end
    return sz, i
  end
  return 0, i
end

-- a & b for small non-negative integers (alignment arithmetic only).
local function band(a, b)
  local r, bit = 0, 1
  while a > 0 and b > 0 do
    if a % 2 == 1 and b % 2 == 1 then r = r + bit end
    a, b, bit = floor(a / 2), floor(b / 2), bit * 2
  end
  return r
end

local function gettoalign(len, h, opt, size)
  if size == 0 or opt == 'c' then return 0 end
  if size > h.align then size = h.align end
  if size <= 1 then return 0 end
  return band(size - band(len, size - 1), size - 1)
end

local function controloptions(opt, fmt, i, h)
  if opt == ' ' then return i end
  if opt == '>' then h.little = false; return i end
  if opt == '<' then h.little = true; return i end
  if opt == '!' then
    local a
    a, i = getnum(fmt, i, MAXALIGN)
    if a <= 0 or band(a, a - 1) ~= 0 then throw(format('alignment %d is not a power of 2', a)) end
    h.align = a
    return i
  end
  throw_arg(1, format("invalid format option '%s'", opt))
end

-- putinteger(): the 64-bit unsigned value C would compute, as (hi, lo).
local function to_uint64(n)
  local t
  if n < 0 then
    if n < -TWO63 then return 2147483648, 0 end          -- (long) overflow
    t = ceil(n)
    if t == 0 then return 0, 0 end
    local hi = floor(t / TWO32)
    return hi + TWO32, t - hi * TWO32
  end
  if n ~= n then return 2147483648, 0 end                 -- NaN
  if n >= TWO64 then return 0, 0 end
  t = floor(n)
  local hi = floor(t / TWO32)
  return hi, t - hi * TWO32
end

local function le_bytes(n, count, out)
  for _ = 1, count do
    local b = n % 256
    out[#out + 1] = b
    n = (n - b) / 256
  end
end

local function put_integer(n, little, size)
  local hi, lo = to_uint64(n)
  local b = {}
  le_bytes(lo, 4, b)
  le_bytes(hi, 4, b)
  for i = 9, size do b[i] = 0 end
  local s = char(unpack(b, 1, size))
  if little then return s end
  return reverse(s)
end

-- getinteger(): the low 64 bits of the value, sign-extended like the C code.
local function get_integer(data, little, signed, size)
  local low8   -- the 8 least significant bytes, little endian
  if little then low8 = sub(data, 1, 8) else low8 = reverse(sub(data, -8)) end
  local lo, hi = 0, 0
  for k = 4, 1, -1 do lo = lo * 256 + (byte(low8, k) or 0) end
  for k = 8, 5, -1 do hi = hi * 256 + (byte(low8, k) or 0) end
  if not signed then return hi * TWO32 + lo end
  local shift = (size * 8 - 1) % 64      -- x86 masks 64-bit shift counts
  local negative
  if shift >= 32 then
    negative = floor(hi / 2 ^ (shift - 32)) ~= 0
    if negative then hi = hi % 2 ^ (shift - 32) + (TWO32 - 2 ^ (shift - 32)) end
  else
    negative = hi ~= 0 or floor(lo / 2 ^ shift) ~= 0
    if negative then hi, lo = TWO32 - 1, lo % 2 ^ shift + (TWO32 - 2 ^ shift) end
  end
  if hi >= 2147483648 then hi = hi - TWO32 end
  return hi * TWO32 + lo
end

local function float_bytes(n, size, little)
  local s
  if n == 0 and 1 / n < 0 then
    s = rep('\0', size - 1) .. '\128'    -- -0.0 (a Python call would lose the sign)
  else
    s = (size == 4 and pack_float or pack_double)(n)
    if s == nil then throw('struct: internal error') end
  end
  if little then return s end
  return reverse(s)
end

-- b_pack pushes a nil marker right after its arguments, so the first missing
-- argument is reported as "nil" and later ones as "no value".
local function got(v, narg, nargs)
  if narg == nargs + 1 then return 'nil' end
  return narg > nargs and 'no value' or type(v)
end

local function check_number(args, narg, nargs)
  local v = args[narg]
  if type(v) == 'number' then return v end
  local n = type(v) == 'string' and tonumber(v)
  if not n then throw_arg(narg, 'number expected, got ' .. got(v, narg, nargs)) end
  return n
end

local function check_string(args, narg, nargs)
  local v = args[narg]
  if type(v) == 'string' then return v end
  if type(v) == 'number' then return tostring(v) end
  throw_arg(narg, 'string expected, got ' .. got(v, narg, nargs))
end

local INTEGER = { b = true, B = true, h = true, H = true, l = true, L = true, T = true, i = true, I = true }

local function pack(fmt, args, nargs)
  local h = { little = true, align = 1 }
  local out, total, arg = {}, 0, 2
  local i, n = 1, #fmt
  while i <= n do
    local opt = sub(fmt, i, i)
    if opt == '\0' then break end
    local size
    size, i = optsize(opt, fmt, i + 1)
    local toalign = gettoalign(total, h, opt, size)
    total = total + toalign
    if toalign > 0 then out[#out + 1] = rep('\0', toalign) end
    if INTEGER[opt] then
      out[#out + 1] = put_integer(check_number(args, arg, nargs), h.little, size)
      arg = arg + 1
    elseif opt == 'x' then
      out[#out + 1] = '\0'
    elseif opt == 'f' or opt == 'd' then
      out[#out + 1] = float_bytes(check_number(args, arg, nargs), size, h.little)
      arg = arg + 1
    elseif opt == 'c' or opt == 's' then
      local s = check_string(args, arg, nargs)
      arg = arg + 1
      if size == 0 then size = #s end
      -- The C code has already advanced `arg`, so it names the next argument.
      if #s < size then throw_arg(arg, 'string too short') end
      out[#out + 1] = sub(s, 1, size)
      if opt == 's' then out[#out + 1] = '\0'; size = size + 1 end
    else
      i = controloptions(opt, fmt, i, h)
    end
    total = total + size
  end
  return concat(out)
end

-- Whether `size` bytes at `pos` lie within `ld` bytes of data. pos is a C size_t: negative
-- values stand for 2^64 + pos, past any data (Redis's check: size <= ld && pos <= ld - size).
local function within(pos, size, ld)
  return size <= ld and pos >= 0 and pos <= ld - size
end

-- Returns count, results table.
local function unpack_data(fmt, data, pos)
  local h = { little = true, align = 1 }
  local ld = #data
  local results, count, dropped = {}, 0, 0
  local i, n = 1, #fmt
  while i <= n do
    local opt = sub(fmt, i, i)
    if opt == '\0' then break end
    local size
    size, i = optsize(opt, fmt, i + 1)
    pos = pos + gettoalign(pos, h, opt, size)
    if not within(pos, size, ld) then throw_arg(2, 'data string too short') end
    if 2 + count + 1 > MAXCSTACK then throw('stack overflow (too many results)') end
    if INTEGER[opt] then
      count = count + 1
      results[count] = get_integer(sub(data, pos + 1, pos + size), h.little, opt:lower() == opt, size)
    elseif opt == 'x' then
      -- padding: nothing pushed
    elseif opt == 'f' or opt == 'd' then
      local bytes = sub(data, pos + 1, pos + size)
      if not h.little then bytes = reverse(bytes) end
      local v = (opt == 'f' and unpack_float or unpack_double)(bytes)
      if v == nil then throw('struct: internal error') end
      count = count + 1
      results[count] = v
    elseif opt == 'c' then
      if size == 0 then
        -- The length is whatever the C stack top holds: the previous result,
        -- or (nothing unpacked yet) the data argument, which is then popped
        -- and so hides the first result from the returned values.
        local len = tonumber(count > 0 and results[count] or data)
        if not len then throw("format 'c0' needs a previous size") end
        size = (len >= 0) and floor(len) or TWO64
        if count > 0 then results[count] = nil; count = count - 1 else dropped = dropped + 1 end
        if not within(pos, size, ld) then throw_arg(2, 'data string too short') end
      end
      count = count + 1
      results[count] = sub(data, pos + 1, pos + size)
    elseif opt == 's' then
      local e = find(data, '\0', pos + 1, true)
      if not e then throw('unfinished string in data') end
      size = e - pos
      count = count + 1
      results[count] = sub(data, pos + 1, e - 1)
    else
      i = controloptions(opt, fmt, i, h)
    end
    pos = pos + size
  end
  count = count + 1
  results[count] = pos + 1
  return count, results, dropped
end

local function size_of(fmt)
  local h = { little = true, align = 1 }
  local pos = 0
  local i, n = 1, #fmt
  while i <= n do
    local opt = sub(fmt, i, i)
    if opt == '\0' then break end
    local size
    size, i = optsize(opt, fmt, i + 1)
    pos = pos + gettoalign(pos, h, opt, size)
    if opt == 's' then
      throw_arg(1, "option 's' has no fixed size")
    elseif opt == 'c' and size == 0 then
      throw_arg(1, "option 'c0' has no fixed size")
    end
    if not opt:find('^%w') then i = controloptions(opt, fmt, i, h) end
    pos = pos + size
  end
  return pos
end

-- Re-raise an internal error from the public function (argerror levels: the
-- public function is level 3 from here's callee; plain errors go to level 3).
local function raise(err, fname)
  if type(err) ~= 'table' then error(err, 0) end
  if err.narg then argerror(3, err.narg, err[1], fname) end
  error(err[1], 3)
end

local M = {}

function M.pack(...)
  local nargs = select('#', ...)
  local fmt = checkstring((...), 1, nargs, 'pack')
  local ok, result = pcall(pack, fmt, {...}, nargs)
  if not ok then raise(result, 'pack') end
  return result
end

function M.unpack(...)
  local nargs = select('#', ...)
  local fmt, data, init = ...
  fmt = checkstring(fmt, 1, nargs, 'unpack')
  data = checkstring(data, 2, nargs, 'unpack')
  -- A size_t in C: only 0 is refused; a negative offset wraps past any data (see within),
  -- and an empty format answers it back as the signed integer it was.
  local init = optinteger(init, 3, nargs, 1, 'unpack')
  if init == 0 then argerror(2, 3, 'offset must be 1 or greater', 'unpack') end
  local pos = init - 1
  local ok, count, results, dropped = pcall(unpack_data, fmt, data, pos)
  if not ok then raise(count, 'unpack') end
  return unpack(results, 1 + dropped, count)
end

function M.size(...)
  local nargs = select('#', ...)
  local fmt = checkstring((...), 1, nargs, 'size')
  local ok, result = pcall(size_of, fmt)
  if not ok then raise(result, 'size') end
  return result
end

return M
