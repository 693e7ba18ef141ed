-- cjson: Lua CJSON 2.1.0 as Redis 7.0 ships it (notes in lua_cjson.py).
local support, native = ...
local argerror, typeerror, checkstring = support.argerror, support.typeerror, support.checkstring
local truncate, wrap32 = support.truncate, support.wrap32
local type, next, rawget, select, pcall, error, tonumber, tostring, newproxy, getmetatable =
      type, next, rawget, select, pcall, error, tonumber, tostring, newproxy, getmetatable
local format, byte, char, sub, find, match, gsub, lower =
      string.format, string.byte, string.char, string.sub, string.find,
      string.match, string.gsub, string.lower
local concat = table.concat
local shown = shown  -- (from the sandbox's access functions, or nil: see native below)
local floor, huge = math.floor, math.huge

local MAXCSTACK = 8000           -- LUAI_MAXCSTACK: lua_checkstack's limit
local INT_MAX = 2147483647
local null = newproxy(true)      -- cjson.null, shared by every cjson.new()
-- tostring() of Redis's NULL light userdata: "%p" of NULL, as glibc prints it.
getmetatable(null).__tostring = function() return 'userdata: (nil)' end

-- Internal errors are thrown as {message} and re-raised by the public
-- function at its caller's position (see raise()).
local function throw(msg) error({msg}, 0) end

local function raise(err)
  if type(err) == 'table' then
    -- Level 3: raise <- public function <- the script line that called it.
    error(err[1], 3)
  end
  error(err, 0)   -- a Lua runtime error (e.g. out of memory): pass it on
end

-- ===== encoding =====

local ESCAPE = {}
for i = 0, 31 do ESCAPE[char(i)] = format('\\u%04x', i) end
ESCAPE['\b'], ESCAPE['\t'], ESCAPE['\n'] = '\\b', '\\t', '\\n'
ESCAPE['\f'], ESCAPE['\r'] = '\\f', '\\r'
ESCAPE['"'], ESCAPE['\\'], ESCAPE['/'], ESCAPE['\127'] = '\\"', '\\\\', '\\/', '\\u007f'

local function encode_string(s)
  -- %c is iscntrl(): bytes 0-31 and 127.
  return '"' .. (gsub(s, '[%c"\\/]', ESCAPE)) .. '"'
end

local function encode_number(cfg, num)
  if num ~= num or num == huge or num == -huge then
    local mode = cfg.encode_invalid_numbers
    if mode == 0 then
      throw('Cannot serialise number: must not be NaN or Inf')
    elseif mode == 1 then
      if num ~= num then return 'nan' end     -- never "-nan"
    else
      return 'null'
    end
  end
  return format(cfg.number_fmt, num)
end

-- lua_array_length(): the array size, or -1 for "encode as an object".
local function array_length(cfg, t)
  local max, items = 0, 0
  for k in next, t do
    if type(k) == 'number' and k ~= 0 and floor(k) == k and k >= 1 then
      -- C stores the index in an int: past INT_MAX it becomes INT_MIN.
      if k > max then max = (k > INT_MAX) and -2147483648 or k end
      items = items + 1
    else
      return -1
    end
  end
  local ratio = cfg.encode_sparse_ratio
  if ratio > 0 and max > wrap32(items * ratio) and max > cfg.encode_sparse_safe then
    if cfg.encode_sparse_convert == 0 then
      throw('Cannot serialise table: excessively sparse array')
    end
    return -1
  end
  return max
end

-- slots: Lua stack slots the C encoder would be using (for lua_checkstack).
local function encode_value(cfg, buf, value, depth, slots)
  local t = type(value)
  if t == 'string' then
    buf[#buf + 1] = encode_string(value)
  elseif t == 'number' then
    buf[#buf + 1] = encode_number(cfg, value)
  elseif t == 'boolean' then
    buf[#buf + 1] = value and 'true' or 'false'
  elseif t == 'table' then
    depth = depth + 1
    if depth > cfg.encode_max_depth or slots + 3 > MAXCSTACK then
      throw(format('Cannot serialise, excessive nesting (%d)', depth))
    end
    local len = array_length(cfg, value)
    if len > 0 then
      buf[#buf + 1] = '['
      for i = 1, len do
        if i > 1 then buf[#buf + 1] = ',' end
        encode_value(cfg, buf, rawget(value, i), depth, slots + 1)
      end
      buf[#buf + 1] = ']'
    else
      buf[#buf + 1] = '{'
      local comma = false
      for k, v in next, value do
        if comma then buf[#buf + 1] = ',' else comma = true end
        local kt = type(k)
        if kt == 'number' then
          buf[#buf + 1] = '"' .. encode_number(cfg, k) .. '":'
        elseif kt == 'string' then
          buf[#buf + 1] = encode_string(k) .. ':'
        else
          throw('Cannot serialise ' .. kt .. ': table key must be a number or string')
        end
        encode_value(cfg, buf, v, depth, slots + 2)
      end
      buf[#buf + 1] = '}'
    end
  elseif value == nil or value == null then
    buf[#buf + 1] = 'null'
  else
    throw('Cannot serialise ' .. t .. ': type not supported')
  end
end

local function encode(cfg, value)
  local buf = {}
  encode_value(cfg, buf, value, 0, 1)
  return concat(buf)
end

-- ===== decoding =====

local SINGLE = {
  [123] = 'T_OBJ_BEGIN', [125] = 'T_OBJ_END', [91] = 'T_ARR_BEGIN',
  [93] = 'T_ARR_END', [44] = 'T_COMMA', [58] = 'T_COLON',
}
local UNESCAPE = {
  [34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [116] = '\t',
  [110] = '\n', [102] = '\f', [114] = '\r',
}
-- Characters after which json_next_token may still try strtod (T_UNKNOWN).
local MAYBE_BADNUM = { [105] = true, [73] = true, [110] = true, [78] = true, [43] = true }

-- json_is_invalid_number(): not strict JSON, though strtod may accept it.
local function is_invalid_number(s, pos)
  local c = byte(s, pos)
  if c == 43 then return true end                 -- '+'
  if c == 45 then pos = pos + 1; c = byte(s, pos) end
  if c == 48 then                                  -- '0'
    local c2 = byte(s, pos + 1)
    return c2 == 120 or c2 == 88 or (c2 ~= nil and c2 >= 48 and c2 <= 57)
  end
  if c == nil or c <= 57 then return false end
  local word = lower(sub(s, pos, pos + 2))
  return word == 'inf' or word == 'nan'
end

-- Index of the last character glibc's strtod would consume from pos, or nil.
local function strtod_end(s, pos)
  local p = pos
  local c = byte(s, p)
  if c == 43 or c == 45 then p = p + 1 end
  local word = lower(sub(s, p, p + 2))
  if word == 'inf' then
    if lower(sub(s, p, p + 7)) == 'infinity' then return p + 7 end
    return p + 2
  elseif word == 'nan' then
    local paren = match(s, '^%([%w_]*%)', p + 3)
    return p + 2 + (paren and #paren or 0)
  end
  if byte(s, p) == 48 and (byte(s, p + 1) == 120 or byte(s, p + 1) == 88) then
    local int = match(s, '^%x*', p + 2)
    local q = p + 2 + #int
    local frac = byte(s, q) == 46 and match(s, '^%x*', q + 1) or nil
    if #int > 0 or (frac and #frac > 0) then
      local e = frac and (q + #frac) or (q - 1)
      local exp = match(s, '^[pP][+-]?%d+', e + 1)
      return exp and (e + #exp) or e
    end
    return p                                       -- just the "0" of "0x"
  end
  local int = match(s, '^%d*', p)
  local q = p + #int
  local frac = byte(s, q) == 46 and match(s, '^%d*', q + 1) or nil
  if #int == 0 and not (frac and #frac > 0) then return nil end
  local e = frac and (q + #frac) or (q - 1)
  local exp = match(s, '^[eE][+-]?%d+', e + 1)
  return exp and (e + #exp) or e
end

local function hex4(s, pos)
  local h = match(s, '^%x%x%x%x', pos)
  return h and tonumber(h, 16)
end

local function utf8(cp)
  if cp <= 0x7F then return char(cp) end
  if cp <= 0x7FF then
    return char(0xC0 + floor(cp / 64), 0x80 + cp % 64)
  end
  if cp <= 0xFFFF then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- json_append_unicode_escape(): (utf8 text, escape length) or nil.
local function unicode_escape(s, pos)   -- pos: the backslash
  local cp = hex4(s, pos + 2)
  if not cp then return nil end
  local len = 6
  if cp >= 0xD800 and cp <= 0xDFFF then
    if cp >= 0xDC00 then return nil end            -- a low surrogate first
    if sub(s, pos + 6, pos + 7) ~= '\\u' then return nil end
    local low = hex4(s, pos + 8)
    if not low or low < 0xDC00 or low > 0xDFFF then return nil end
    cp = (cp - 0xD800) * 1024 + (low - 0xDC00) + 0x10000
    len = 12
  end
  return utf8(cp), len
end

-- Tokens are (type, value, index); index is 0-based like the C parser's.
-- For T_ERROR, value is the error text and index where the scan stopped.
local function string_token(st, start)
  local s = st.s
  local pos = start + 1
  local parts, n = nil, 0
  while true do
    local e = find(s, '["\\]', pos)
    if not e then return 'T_ERROR', 'unexpected end of string', st.len end
    if byte(s, e) == 34 then
      st.pos = e + 1
      if not parts then return 'T_STRING', sub(s, pos, e - 1), start - 1 end
      parts[n + 1] = sub(s, pos, e - 1)
      return 'T_STRING', concat(parts), start - 1
    end
    parts = parts or {}
    n = n + 1
    parts[n] = sub(s, pos, e - 1)
    local esc = byte(s, e + 1)
    if esc == 117 then
      local text, len = unicode_escape(s, e)
      if not text then return 'T_ERROR', 'invalid unicode escape code', e - 1 end
      n = n + 1
      parts[n] = text
      pos = e + len
    else
      local ch = esc and UNESCAPE[esc]
      if not ch then return 'T_ERROR', 'invalid escape code', e - 1 end
      n = n + 1
      parts[n] = ch
      pos = e + 2
    end
  end
end

local function number_token(st, pos)
  local e = strtod_end(st.s, pos)
  if not e then return 'T_ERROR', 'invalid number', pos - 1 end
  st.pos = e + 1
  return 'T_NUMBER', tonumber(sub(st.s, pos, e)), pos - 1
end

local function next_token(st)
  local s = st.s
  local pos = find(s, '[^ \t\n\r]', st.pos) or (st.len + 1)
  st.pos = pos
  local c = byte(s, pos)
  if c == nil then return 'T_END', nil, pos - 1 end
  local single = SINGLE[c]
  if single then
    st.pos = pos + 1
    return single, nil, pos - 1
  end
  if c == 34 then return string_token(st, pos) end
  if c == 45 or (c >= 48 and c <= 57) then
    if st.cfg.decode_invalid_numbers == 0 and is_invalid_number(s, pos) then
      return 'T_ERROR', 'invalid number', pos - 1
    end
    return number_token(st, pos)
  end
  if sub(s, pos, pos + 3) == 'true' then
    st.pos = pos + 4
    return 'T_BOOLEAN', true, pos - 1
  elseif sub(s, pos, pos + 4) == 'false' then
    st.pos = pos + 5
    return 'T_BOOLEAN', false, pos - 1
  elseif sub(s, pos, pos + 3) == 'null' then
    st.pos = pos + 4
    return 'T_NULL', nil, pos - 1
  elseif MAYBE_BADNUM[c] and st.cfg.decode_invalid_numbers ~= 0 and is_invalid_number(s, pos) then
    return number_token(st, pos)
  end
  return 'T_ERROR', 'invalid token', pos - 1
end

local function parse_error(expected, ttype, tvalue, tindex)
  local found = (ttype == 'T_ERROR') and tvalue or ttype
  throw(format('Expected %s but found %s at character %d', expected, found, tindex + 1))
end

local parse_value

-- json_decode_descend(): depth limit, and the C stack check for `need` slots.
local function descend(st, slots, need)
  st.depth = st.depth + 1
  if st.depth > st.cfg.decode_max_depth or slots + need > MAXCSTACK then
    throw(format('Found too many nested data structures (%d) at character %d',
                 st.depth, st.pos - 1))
  end
end

local function parse_object(st, slots)
  descend(st, slots, 3)
  local obj = {}
  local ttype, tvalue, tindex = next_token(st)
  if ttype == 'T_OBJ_END' then st.depth = st.depth - 1; return obj end
  while true do
    if ttype ~= 'T_STRING' then parse_error('object key string', ttype, tvalue, tindex) end
    local key = tvalue
    ttype, tvalue, tindex = next_token(st)
    if ttype ~= 'T_COLON' then parse_error('colon', ttype, tvalue, tindex) end
    obj[key] = parse_value(st, slots + 2, next_token(st))
    ttype, tvalue, tindex = next_token(st)
    if ttype == 'T_OBJ_END' then st.depth = st.depth - 1; return obj end
    if ttype ~= 'T_COMMA' then parse_error('comma or object end', ttype, tvalue, tindex) end
    ttype, tvalue, tindex = next_token(st)
  end
end

local function parse_array(st, slots)
  descend(st, slots, 2)
  local arr = {}
  local ttype, tvalue, tindex = next_token(st)
  if ttype == 'T_ARR_END' then st.depth = st.depth - 1; return arr end
  local i = 1
  while true do
    arr[i] = parse_value(st, slots + 1, ttype, tvalue, tindex)
    ttype, tvalue, tindex = next_token(st)
    if ttype == 'T_ARR_END' then st.depth = st.depth - 1; return arr end
    if ttype ~= 'T_COMMA' then parse_error('comma or array end', ttype, tvalue, tindex) end
    ttype, tvalue, tindex = next_token(st)
    i = i + 1
  end
end

function parse_value(st, slots, ttype, tvalue, tindex)
  if ttype == 'T_STRING' or ttype == 'T_NUMBER' or ttype == 'T_BOOLEAN' then
    return tvalue
  elseif ttype == 'T_OBJ_BEGIN' then
    return parse_object(st, slots)
  elseif ttype == 'T_ARR_BEGIN' then
    return parse_array(st, slots)
  elseif ttype == 'T_NULL' then
    return null
  end
  parse_error('value', ttype, tvalue, tindex)
end

local function decode(cfg, text)
  if #text >= 2 and (byte(text, 1) == 0 or byte(text, 2) == 0) then
    throw('JSON parser does not support UTF-16 or UTF-32')
  end
  -- The C parser sees a C string: the first NUL is the end of the document.
  local nul = find(text, '\0', 1, true)
  if nul then text = sub(text, 1, nul - 1) end
  local st = { s = text, len = #text, pos = 1, depth = 0, cfg = cfg }
  local value = parse_value(st, 1, next_token(st))
  local ttype, tvalue, tindex = next_token(st)
  if ttype ~= 'T_END' then parse_error('the end', ttype, tvalue, tindex) end
  return value
end

-- ===== configuration (json_integer_option / json_enum_option) =====

local function integer_option(cfg, field, value, narg, nargs, min, max, fname)
  if value ~= nil then
    local n = type(value) == 'number' and value or (type(value) == 'string' and tonumber(value))
    if not n then typeerror(3, narg, 'number', value, nargs, fname) end
    n = wrap32(truncate(n))
    if n < min or n > max then
      -- The C code checks the range against argument 1 whatever narg is.
      argerror(3, 1, format('expected integer between %d and %d', min, max), fname)
    end
    cfg[field] = n
  end
  return cfg[field]
end

local BOOL_OPTIONS = { 'off', 'on' }
local INVALID_NUMBER_OPTIONS = { 'off', 'on', 'null' }

local function enum_option(cfg, field, value, narg, nargs, options, fname)
  if value ~= nil then
    if type(value) == 'boolean' then
      cfg[field] = value and 1 or 0
    else
      -- luaL_checkoption: a number is looked up as its string form.
      local name = type(value) == 'number' and tostring(value) or value
      if type(name) ~= 'string' then typeerror(3, narg, 'string', value, nargs, fname) end
      local found
      for i = 1, #options do
        if options[i] == name then found = i - 1 end
      end
      if not found then argerror(3, narg, format("invalid option '%s'", name), fname) end
      cfg[field] = found
    end
  end
  local setting = cfg[field]
  if setting == 0 or setting == 1 then return setting == 1 end
  return options[setting + 1]
end

local function too_many(nargs, allowed, fname)
  if nargs > allowed then argerror(3, allowed + 1, 'found too many arguments', fname) end
end

local new

function new()
  local cfg = {
    encode_sparse_convert = 0, encode_sparse_ratio = 2, encode_sparse_safe = 10,
    encode_max_depth = 1000, decode_max_depth = 1000,
    encode_invalid_numbers = 0, decode_invalid_numbers = 1,
    encode_keep_buffer = 1, encode_number_precision = 14,
  }
  local function number_fmt() return '%.' .. cfg.encode_number_precision .. 'g' end
  cfg.number_fmt = number_fmt()

  local M = { null = null, _NAME = 'cjson', _VERSION = '2.1.0', new = function() return new() end }

  function M.encode(...)
    if select('#', ...) ~= 1 then argerror(2, 1, 'expected 1 argument', 'encode') end
    local ok, result = pcall(encode, cfg, (...))
    if not ok then raise(result) end
    return result
  end

  function M.decode(...)
    local nargs = select('#', ...)
    if nargs ~= 1 then argerror(2, 1, 'expected 1 argument', 'decode') end
    local text = checkstring((...), 1, nargs, 'decode')
    local ok, result = pcall(decode, cfg, text)
    if not ok then raise(result) end
    return result
  end

  if native then
    -- The compiled build's C encoder and decoder (lualibs/native_json.pyx), the same functions
    -- step for step; `shown`, where the sandbox gives it, reads a read-only proxy as the
    -- table it shows.
    M.encode = native.encoder(cfg, null, shown)
    M.decode = native.decoder(cfg, null)
  end

  function M.encode_sparse_array(...)
    local nargs = select('#', ...)
    too_many(nargs, 3, 'encode_sparse_array')
    local convert, ratio, safe = ...
    return enum_option(cfg, 'encode_sparse_convert', convert, 1, nargs, BOOL_OPTIONS, 'encode_sparse_array'),
           integer_option(cfg, 'encode_sparse_ratio', ratio, 2, nargs, 0, INT_MAX, 'encode_sparse_array'),
           integer_option(cfg, 'encode_sparse_safe', safe, 3, nargs, 0, INT_MAX, 'encode_sparse_array')
  end

  local function integer_setter(field, min, max, fname)
    return function(...)
      local nargs = select('#', ...)
      too_many(nargs, 1, fname)
      local value = integer_option(cfg, field, (...), 1, nargs, min, max, fname)
      cfg.number_fmt = number_fmt()
      return value
    end
  end
  M.encode_max_depth = integer_setter('encode_max_depth', 1, INT_MAX, 'encode_max_depth')
  M.decode_max_depth = integer_setter('decode_max_depth', 1, INT_MAX, 'decode_max_depth')
  M.encode_number_precision = integer_setter('encode_number_precision', 1, 14, 'encode_number_precision')

  local function enum_setter(field, options, fname)
    return function(...)
      local nargs = select('#', ...)
      too_many(nargs, 1, fname)
      local value = enum_option(cfg, field, (...), 1, nargs, options, fname)
      return value
    end
  end
  -- The output buffer is an implementation detail here; the setting is kept
  -- so scripts read back what they set.
  M.encode_keep_buffer = enum_setter('encode_keep_buffer', BOOL_OPTIONS, 'encode_keep_buffer')
  M.encode_invalid_numbers = enum_setter('encode_invalid_numbers', INVALID_NUMBER_OPTIONS, 'encode_invalid_numbers')
  M.decode_invalid_numbers = enum_setter('decode_invalid_numbers', BOOL_OPTIONS, 'decode_invalid_numbers')
  return M
end

return new()
