-- The environment scripts run in, built once per Lua runtime by sandbox.py.
--
-- This chunk runs with the unrestricted globals of a fresh lupa state. Everything it needs is
-- captured as a local (upvalue) first; scripts only ever see what it returns: read-only proxy
-- tables over the allowed libraries, and Lua closures. Python callables arrive as arguments
-- and stay upvalues of those closures, so no script can index, call or leak them directly.
--
-- Redis 7 makes the globals and every library table read-only inside its patched Lua VM. A stock
-- Lua 5.1 cannot flag a table read-only, so each protected table is an empty proxy whose
-- metatable reads through to the real table and refuses writes; the functions that bypass
-- metatables (rawset, rawget, next, pairs, setmetatable, table.insert ...) are wrapped to see
-- through or refuse proxies, and after every run any raw write that slipped into a proxy is
-- wiped, so no script can change what the next one sees.

local mode, redis_version, redis_version_num, install_libraries, py_call, py_acl_check, py_check,
      py_sha1hex, py_log, py_setresp, py_random, py_randomseed, py_register, py_pcall,
      py_encode = ...

local type, error, select, tostring, tonumber, unpack = type, error, select, tostring, tonumber, unpack
local rawget, rawset, next, pairs, ipairs = rawget, rawset, next, pairs, ipairs
local setmetatable, getmetatable, xpcall, pcall = setmetatable, getmetatable, xpcall, pcall
local loadstring, load, setfenv = loadstring, load, setfenv
local sethook, getinfo = debug.sethook, debug.getinfo
local floor, ceil = math.floor, math.ceil
local byte, sub, find, lower, dump = string.byte, string.sub, string.find, string.lower, string.dump
local format, gsub = string.format, string.gsub
local insert, remove, sort, concat = table.insert, table.remove, table.sort, table.concat
local co_create, co_resume, co_status = coroutine.create, coroutine.resume, coroutine.status

local READONLY = 'Attempt to modify a readonly table'
local HOOK_COUNT = 100000

-- Read-only proxies -------------------------------------------------------------------------

local backing = {}        -- proxy -> the table it shows
local hidden_mt = {}      -- proxy -> what getmetatable(proxy) answers (Redis's view)
local proxies, nproxies = {}, 0  -- every proxy, as an array: checked after each run

local function refuse_write()
  error(READONLY, 2)
end

local function readonly(t, visible_mt)
  local proxy = {}
  local mt = {__index = t, __newindex = refuse_write, __metatable = false}
  backing[proxy] = t
  hidden_mt[proxy] = visible_mt
  nproxies = nproxies + 1
  proxies[nproxies] = proxy
  setmetatable(proxy, mt)
  return proxy, mt
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Raw writes (rawset from C code, table.insert ...) cannot be intercepted on a proxy; they are
-- undone after a run so they never outlive the script that made them. Of the C functions a
-- script can reach, the ones that write into a table they are given are rawset and
-- table.insert/remove/sort (table.setn only raises in 5.1): their wrappers below refuse proxies
-- and also set `raw_writes`, and any run that called one has every proxy checked afterwards.
-- Checking every proxy after every run would cost a C call per proxy per run.
local raw_writes = false

local function wipe_raw_writes()
  raw_writes = false
  for i = 1, nproxies do
    local proxy = proxies[i]
    if next(proxy) ~= nil then
      -- Plain assignment: the keys exist, so the proxy's __newindex is not consulted.
      for k in next, proxy do proxy[k] = nil end
    end
  end
end

-- Error reporting ---------------------------------------------------------------------------

local function internal_source(source)
  return source ~= nil and (sub(source, 1, 8) == '=minired' or sub(source, 1, 9) == '=lualibs.')
end

-- The frame an error belongs to, as Redis reports it: skip the C function that raised and
-- any of minired's own wrapper frames, which stand where Redis has C functions.
local function error_frame()
  local level = 3
  local info = getinfo(level, 'nSl')
  if info and info.what == 'C' then
    level = level + 1
    info = getinfo(level, 'nSl')
  end
  while info and (internal_source(info.source) or info.what == 'C' or info.what == 'tail') do
    level = level + 1
    info = getinfo(level, 'nSl')
  end
  return info
end

-- A C library function called from one of our wrappers reports the wrapper's position; Redis
-- calls it straight from the script, so the position is the script's.
local function relocate(message, info)
  if type(message) ~= 'string' or info == nil then return message end
  local s, e = find(message, '^=?[%w%.]+:%d+: ')
  if s and (sub(message, 1, 8) == 'minired.' or sub(message, 1, 8) == 'lualibs.') then
    return info.short_src .. ':' .. tostring(info.currentline) .. ': ' .. sub(message, e + 1)
  end
  return message
end

-- Redis's __redis__err__handler: every error becomes {err=..., source=..., line=...}, and a
-- command's error (redis.call's, or pcall's re-raised) keeps ignore_error_stats_update: it was
-- counted in INFO when the command failed.
local function error_handler(err)
  local info = error_frame()
  local result = {}
  if type(err) == 'table' then
    result.err = err.err
    result.ignore_error_stats_update = err.ignore_error_stats_update
  else
    result.err = 'ERR ' .. tostring(relocate(err, info))
  end
  if info then
    result.source = info.source
    result.line = info.currentline
  end
  return result
end

-- Runs and their interruption ---------------------------------------------------------------

-- The count hook calls back into Python every HOOK_COUNT instructions; once the run must stop
-- (SCRIPT KILL, SHUTDOWN NOSAVE, FUNCTION LOAD timeout) it raises on every instruction, so a
-- pcall in the script cannot swallow the error and carry on.
-- The main thread's hook is armed once; it only needs re-arming after it tripped (its count
-- runs on across runs, which just moves where the next cheap check falls).
local hook, tripped
hook = function()
  -- Only ever stop a run inside script code: raising in minired's own frames (the runner's
  -- bookkeeping after xpcall returns, a wrapper mid-update) would escape the error handler.
  local info = getinfo(2, 'S')
  if info and internal_source(info.source) then return end
  local message = py_check()
  if message then
    tripped = true
    sethook(hook, '', 1)
    error({err = message})
  end
end

local function arm_hook()
  tripped = false
  sethook(hook, '', HOOK_COUNT)
end

-- A failed run's outcome: false, message[, source, line, counted] (counted: the error was
-- counted in INFO already, as Redis's luaExtractErrorInformation reads it).
local function failure(result)
  if type(result) ~= 'table' then
    return false, 'ERR ' .. tostring(result)
  end
  local message = result.err
  if type(message) ~= 'string' and type(message) ~= 'number' then
    message = 'ERR unknown error'
  end
  return false, tostring(message), result.source, result.line,
         result.ignore_error_stats_update == true
end

local function finish(ok, result)
  if tripped then arm_hook() end
  if raw_writes then wipe_raw_writes() end
  if ok then return true, result end
  return failure(result)
end

-- Reply shapes for the Python side: one call per table instead of one per field. An error
-- comes with whether INFO counted it already (a command's error the script passed on).
local function reply_shape(t)
  local v = rawget(t, 'err')
  if type(v) == 'string' then return 'err', v, rawget(t, 'ignore_error_stats_update') == true end
  v = rawget(t, 'ok')
  if type(v) == 'string' then return 'ok', v end
  v = rawget(t, 'double')
  if type(v) == 'number' then return 'double', v end
  v = rawget(t, 'big_number')
  if type(v) == 'string' then return 'big_number', v end
  v = rawget(t, 'verbatim_string')
  if type(v) == 'table' then
    local format, text = rawget(v, 'format'), rawget(v, 'string')
    if type(format) == 'string' and type(text) == 'string' then
      return 'verbatim', format, text
    end
  end
  v = rawget(t, 'map')
  if type(v) == 'table' then
    local flat, n = {}, 0
    for key, value in next, v do
      flat[n + 1] = key
      flat[n + 2] = value
      n = n + 2
    end
    return 'map', flat, n
  end
  v = rawget(t, 'set')
  if type(v) == 'table' then
    local members, n = {}, 0
    for key in next, v do
      n = n + 1
      members[n] = key
    end
    return 'set', members, n
  end
  local n = 0
  while rawget(t, n + 1) ~= nil do n = n + 1 end
  return 'array', t, n
end

local function items(t, first, last)
  return unpack(t, first, last)
end

-- The protocol version the running script set with redis.setresp (2 unless it did).
local script_resp = 2

-- A script's array result as the RESP the client gets, built here in one pass instead of
-- walked element by element from Python. Only what luaReplyToRedisReply turns into plain
-- RESP2/RESP3-common frames is encoded: strings, numbers (cast to long long, as Redis and
-- Lua's %d both do), booleans of a RESP2 script, status tables and nested arrays. Anything
-- else (error tables, doubles, maps, sets, big numbers, verbatim strings, RESP3 booleans,
-- very deep nesting) answers nil, and sandbox.py converts the whole result the general way.
-- Frames go into `parts` piece by piece and are joined once: Lua interns every string it
-- makes, so building each frame as its own string would hash it for nothing.
local MAX_ENCODED_DEPTH = 32
local CRLF = '\r\n'
local bulk_heads, array_heads, integers = {}, {}, {}
for i = 0, 1023 do
  bulk_heads[i] = '$' .. i .. CRLF
  array_heads[i] = '*' .. i .. CRLF
  integers[i] = ':' .. i .. CRLF
end

local function encode_array(t, parts, n, null, depth)
  local count = 0
  while rawget(t, count + 1) ~= nil do count = count + 1 end
  if rawget(t, 'err') ~= nil or rawget(t, 'ok') ~= nil or rawget(t, 'double') ~= nil
      or rawget(t, 'big_number') ~= nil or rawget(t, 'verbatim_string') ~= nil
      or rawget(t, 'map') ~= nil or rawget(t, 'set') ~= nil then
    if depth == 0 or type(rawget(t, 'err')) == 'string' then return nil end
    local ok = rawget(t, 'ok')
    if type(ok) ~= 'string' then return nil end
    parts[n + 1] = '+'
    parts[n + 2] = gsub(ok, '[\r\n]', ' ')
    parts[n + 3] = CRLF
    return n + 3
  end
  n = n + 1
  parts[n] = array_heads[count] or '*' .. count .. CRLF
  for i = 1, count do
    local v = rawget(t, i)
    local kind = type(v)
    if kind == 'string' then
      local size = #v
      parts[n + 1] = bulk_heads[size] or '$' .. size .. CRLF
      parts[n + 2] = v
      parts[n + 3] = CRLF
      n = n + 3
    elseif kind == 'number' then
      n = n + 1
      parts[n] = integers[v] or format(':%d\r\n', v)
    elseif kind == 'table' then
      if depth >= MAX_ENCODED_DEPTH then return nil end
      n = encode_array(v, parts, n, null, depth + 1)
      if n == nil then return nil end
    elseif kind == 'boolean' then
      if script_resp ~= 2 then return nil end
      n = n + 1
      parts[n] = v and ':1\r\n' or null
    else
      n = n + 1
      parts[n] = null
    end
  end
  return n
end

-- One buffer for every encoding (scripts run one at a time, and no script code runs while a
-- result is encoded): a new table per result would be regrown several times on the way.
-- It is emptied after each use so it never keeps a result's strings alive.
local encode_parts = {}

local function clear_parts(n)
  for i = 1, n do encode_parts[i] = nil end
end

-- A table result as RESP, or nil for the general path: the native bridge's encoder where it
-- is compiled (luabridge.pyx, the same rule in C), else encode_array.
local encode_reply = py_encode or function(result, null)
  local encoded, n = pcall(encode_array, result, encode_parts, 0, null, 0)
  if encoded and n then
    local resp = concat(encode_parts, '', 1, n)
    clear_parts(n)
    return resp
  end
  clear_parts(#encode_parts)
  return nil
end

-- finish() for EVAL and FCALL: a table result comes back already shaped, so Python gets
-- (true, value) for a plain value, (true, nil, 'raw', resp) for an array encode_array could
-- encode (null is the client's null frame), or (true, nil, <reply_shape(value)>).
local function finish_reply(null, ok, result)
  if tripped then arm_hook() end
  if raw_writes then wipe_raw_writes() end
  if ok then
    if type(result) == 'table' then
      -- A status reply (redis.call('SET', ...) returned as it is) is what reply_shape would
      -- make of it, without trying to encode it as an array first.
      local status = rawget(result, 'ok')
      if type(status) == 'string' and type(rawget(result, 'err')) ~= 'string' then
        return true, nil, 'ok', status
      end
      local resp = encode_reply(result, null, script_resp)
      if resp then return true, nil, 'raw', resp end
      return true, nil, reply_shape(result)
    end
    return true, result
  end
  return failure(result)
end

-- Base library as Redis 7.0 exposes it ------------------------------------------------------

local string_mt = getmetatable('')

local function sandbox_getmetatable(value)
  if type(value) == 'string' then return hidden_mt[string_mt] end
  if backing[value] then return hidden_mt[value] end
  return getmetatable(value)
end

local function sandbox_setmetatable(t, mt)
  if backing[t] then error(READONLY, 0) end
  return setmetatable(t, mt)
end

local function sandbox_rawset(t, k, v)
  raw_writes = true
  if backing[t] then error(READONLY, 0) end
  return rawset(t, k, v)
end

local function sandbox_rawget(t, k)
  local b = backing[t]
  if b then return rawget(b, k) end
  return rawget(t, k)
end

local function sandbox_next(t, k)
  local b = backing[t]
  if b then return next(b, k) end
  return next(t, k)
end

local function sandbox_pairs(t)
  local b = backing[t]
  if b then
    return function(_, k) return next(b, k) end, t, nil
  end
  return pairs(t)
end

local function sandbox_ipairs(t)
  local b = backing[t]
  if b then
    return function(_, i)
      i = i + 1
      local v = b[i]
      if v ~= nil then return i, v end
    end, t, 0
  end
  return ipairs(t)
end

-- Redis's Lua refuses precompiled chunks (they can break the VM): it parses them as source, so
-- their first byte (ESC) is a syntax error. A leading space makes stock Lua do the same.
local function sandbox_loadstring(source, chunkname)
  if type(source) == 'string' and byte(source, 1) == 27 then
    return loadstring(' ' .. source, chunkname or source)
  end
  return loadstring(source, chunkname)
end

local function sandbox_load(reader, chunkname)
  if type(reader) ~= 'function' then return load(reader, chunkname) end
  local first = true
  return load(function()
    local piece = reader()
    if first and type(piece) == 'string' and piece ~= '' then
      first = false
      if byte(piece, 1) == 27 then return ' ' .. piece end
    end
    return piece
  end, chunkname)
end

-- Redis 7's pcall hands back the message of a {err=...} error object rather than the table.
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == 'table' then
    local message = e.err
    if type(message) == 'string' or type(message) == 'number' then return false, message end
  end
  return false, e
end

local function redis_pcall_compat(f, ...)
  return pcall_result(pcall(f, ...))
end

-- Hooks are per coroutine in Lua 5.1: a coroutine gets the count hook too, or a busy loop
-- inside one could never be interrupted.
local function sandbox_co_create(f)
  local co = co_create(f)
  sethook(co, hook, '', HOOK_COUNT)
  return co
end

local function wrap_result(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == 'string' then error(e, 2) end
  error(e, 0)
end

local function sandbox_co_wrap(f)
  local co = sandbox_co_create(f)
  return function(...) return wrap_result(co_resume(co, ...)) end
end

local function check_table_arg(t, name, nargs)
  raw_writes = true
  if type(t) ~= 'table' then
    local got = nargs == 0 and 'no value' or type(t)
    error("bad argument #1 to '" .. name .. "' (table expected, got " .. got .. ")", 3)
  end
  if backing[t] then error(READONLY, 0) end
end

local table_lib = copy(table)
table_lib.insert = function(t, ...)
  check_table_arg(t, 'insert', select('#', ...) + 1)
  return insert(t, ...)
end
table_lib.remove = function(t, ...)
  check_table_arg(t, 'remove', select('#', ...) + 1)
  return remove(t, ...)
end
table_lib.sort = function(t, ...)
  check_table_arg(t, 'sort', select('#', ...) + 1)
  return sort(t, ...)
end

-- Redis's math.random: its own lrand48, so every platform gives the same sequence.
local function checkint(value, narg, fname, nargs)
  local n = tonumber(value)
  if type(value) ~= 'number' and (type(value) ~= 'string' or n == nil) then
    local got = narg > nargs and 'no value' or type(value)
    error("bad argument #" .. narg .. " to '" .. fname .. "' (number expected, got " .. got .. ")", 3)
  end
  if n >= 0 then return floor(n) end
  return ceil(n)
end

local math_lib = copy(math)
math_lib.random = function(...)
  local nargs = select('#', ...)
  local r = py_random()
  if nargs == 0 then return r end
  if nargs == 1 then
    local u = checkint((...), 1, 'random', nargs)
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
    return floor(r * u) + 1
  end
  if nargs == 2 then
    local l, u = ...
    l = checkint(l, 1, 'random', nargs)
    u = checkint(u, 2, 'random', nargs)
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 2) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 2)
end
math_lib.randomseed = function(...)
  py_randomseed(checkint((...), 1, 'randomseed', select('#', ...)))
end

-- Like C functions in Redis, minired's own closures cannot be dumped.
local string_lib = copy(string)
string_lib.dump = function(f, ...)
  if type(f) == 'function' then
    local info = getinfo(f, 'S')
    if info.what == 'C' or internal_source(info.source) then
      error('unable to dump given function', 2)
    end
  end
  return dump(f, ...)
end

local coroutine_lib = copy(coroutine)
coroutine_lib.create = sandbox_co_create
coroutine_lib.wrap = sandbox_co_wrap

-- The redis API -----------------------------------------------------------------------------

local function raise(message)
  error({err = 'ERR ' .. message})
end

-- With the native bridge (luabridge.pyx) py_call and py_pcall are redis.call and redis.pcall
-- themselves, C functions as in Redis. Otherwise py_call is lupa's bridge to engine.call and
-- the two are built here.
local redis_call, redis_pcall = py_call, py_pcall
if py_pcall == nil then
  local lupa_call = py_call

  -- lupa would hand integral numbers to Python as ints, losing -0: they are formatted here
  -- instead, as Redis formats them.
  local function call_python(...)
    local n = select('#', ...)
    local args = {...}
    for i = 1, n do
      if type(args[i]) == 'number' then args[i] = format('%.17g', args[i]) end
    end
    return lupa_call(unpack(args, 1, n))
  end

  -- The engine answers a reply as a Lua value, a status or error text with its kind, or for
  -- a flat array (true, count, elements...): building the table here is cheaper than from
  -- Python. A 'counted_err' is a command's error (or its refusal) that INFO counted already,
  -- and its table says so, as Redis's does.
  local function call_reply(value, kind, ...)
    if kind == nil then return value end
    if value == true then return {...} end
    if kind == 'ok' then return {ok = value} end
    if kind == 'counted_err' then error({err = value, ignore_error_stats_update = true}) end
    error({err = value})  -- kind == 'err'
  end

  local function pcall_reply(value, kind, ...)
    if kind == nil then return value end
    if value == true then return {...} end
    if kind == 'ok' then return {ok = value} end
    if kind == 'counted_err' then return {err = value, ignore_error_stats_update = true} end
    return {err = value}
  end

  redis_call = function(...) return call_reply(call_python(...)) end
  redis_pcall = function(...) return pcall_reply(call_python(...)) end
end

-- luaPushErrorBuff: "-CODE message" keeps its code, anything else gets ERR.
local function error_text(text)
  if sub(text, 1, 1) ~= '-' then text = '-' .. text end
  local space = find(text, ' ', 1, true)
  local code, message
  if space then
    code, message = sub(text, 2, space - 1), sub(text, space + 1)
  else
    code, message = 'ERR', sub(text, 2)
  end
  message = message:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')
  return code .. ' ' .. message
end

local function error_reply(...)
  local text = ...
  if select('#', ...) ~= 1 or type(text) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {err = error_text(text)}
end

local function status_reply(...)
  local text = ...
  if select('#', ...) ~= 1 or type(text) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = text}
end

local function sha1hex(...)
  if select('#', ...) ~= 1 then raise('wrong number of arguments') end
  local text = ...
  if type(text) == 'number' then
    text = tostring(text)
  elseif type(text) ~= 'string' then
    text = ''
  end
  return py_sha1hex(text)
end

local function log(...)
  local nargs = select('#', ...)
  if nargs < 2 then raise('redis.log() requires two arguments or more.') end
  local level = tonumber((...))
  if level == nil then raise('First argument must be a number (log level).') end
  level = level >= 0 and floor(level) or ceil(level)
  if level < 0 or level > 3 then raise('Invalid debug level.') end
  local parts = {}
  for i = 2, nargs do
    local v = select(i, ...)
    local t = type(v)
    if t == 'string' or t == 'number' then
      parts[#parts + 1] = (i == 2 and '' or ' ') .. tostring(v)
    elseif i ~= 2 then
      parts[#parts + 1] = ' '
    end
  end
  py_log(level, concat(parts))
end

local function setresp(...)
  if select('#', ...) ~= 1 then raise('redis.setresp() requires one argument.') end
  local resp = tonumber((...)) or 0
  if resp ~= 2 and resp ~= 3 then raise('RESP version must be 2 or 3.') end
  py_setresp(resp)
  script_resp = resp
end

local function set_repl(...)
  if select('#', ...) ~= 1 then raise('redis.set_repl() requires two arguments.') end
  local flags = tonumber((...)) or 0
  flags = flags >= 0 and floor(flags) or ceil(flags)
  if flags < 0 or flags > 3 then
    raise('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
end

local function acl_check_cmd(...)
  local value, kind = py_acl_check(...)
  if kind == 'err' then error({err = value}) end
  return value
end

-- redis.register_function, with Redis's argument checks; Python records the function.
local function read_flags(t)
  local flags, i = {}, 1
  while true do
    local flag = t[i]
    if flag == nil then return flags end
    if type(flag) ~= 'string' and type(flag) ~= 'number' then return nil end
    flags[i] = lower(tostring(flag))
    i = i + 1
  end
end

local function register_named(t)
  if type(t) ~= 'table' then
    raise('calling redis.register_function with a single argument is only applicable to '
          .. 'Lua table (representing named arguments).')
  end
  local name, callback, flags, description
  for key, value in pairs(t) do
    if type(key) ~= 'string' and type(key) ~= 'number' then
      raise('named argument key given to redis.register_function is not a string')
    end
    key = lower(tostring(key))
    if key == 'function_name' then
      if type(value) ~= 'string' and type(value) ~= 'number' then
        raise('function_name argument given to redis.register_function must be a string')
      end
      name = tostring(value)
    elseif key == 'description' then
      if type(value) ~= 'string' and type(value) ~= 'number' then
        raise('description argument given to redis.register_function must be a string')
      end
      description = tostring(value)
    elseif key == 'callback' then
      if type(value) ~= 'function' then
        raise('callback argument given to redis.register_function must be a function')
      end
      callback = value
    elseif key == 'flags' then
      if type(value) ~= 'table' then
        raise('flags argument to redis.register_function must be a table representing function flags')
      end
      flags = read_flags(value)
      if flags == nil then raise('unknown flag given') end
    else
      raise('unknown argument given to redis.register_function')
    end
  end
  if name == nil then raise('redis.register_function must get a function name argument') end
  if callback == nil then raise('redis.register_function must get a callback argument') end
  return name, callback, flags or {}, description
end

local function register_function(...)
  local nargs = select('#', ...)
  if nargs < 1 or nargs > 2 then raise('wrong number of arguments to redis.register_function') end
  local name, callback, flags, description
  if nargs == 1 then
    name, callback, flags, description = register_named((...))
  else
    name, callback = ...
    if type(name) ~= 'string' and type(name) ~= 'number' then
      raise('first argument to redis.register_function must be a string')
    end
    if type(callback) ~= 'function' then
      raise('second argument to redis.register_function must be a function')
    end
    name, flags = tostring(name), {}
  end
  local problem = py_register(name, callback, description, unpack(flags))
  if problem then error({err = problem}) end
end

local function redis_constants(t)
  t.LOG_DEBUG, t.LOG_VERBOSE, t.LOG_NOTICE, t.LOG_WARNING = 0, 1, 2, 3
  t.REDIS_VERSION, t.REDIS_VERSION_NUM = redis_version, redis_version_num
  return t
end

local redis = redis_constants({
  call = redis_call, pcall = redis_pcall, error_reply = error_reply, status_reply = status_reply,
  sha1hex = sha1hex, log = log, setresp = setresp, set_repl = set_repl,
  acl_check_cmd = acl_check_cmd,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
})
if mode == 'eval' then
  redis.replicate_commands = function() return true end
  redis.breakpoint = function() return false end
  redis.debug = function() end
end

-- The globals -------------------------------------------------------------------------------

-- True while a script, a function or a library's load runs. lupa itself looks up globals
-- (debug.traceback, to describe errors) from C before every call into Lua, when nothing runs;
-- those lookups just find nothing, without the cost of asking debug.getinfo who is asking.
local running = false

local function stop_running(...)
  running = false
  return ...
end

local function missing_global(_, name)
  if not running then return nil end
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end

local libraries = {}
install_libraries(libraries)

local globals = {
  _VERSION = _VERSION, assert = assert, collectgarbage = collectgarbage, error = error,
  gcinfo = gcinfo, getmetatable = sandbox_getmetatable, ipairs = sandbox_ipairs,
  load = sandbox_load, loadstring = sandbox_loadstring, next = sandbox_next,
  pairs = sandbox_pairs, pcall = redis_pcall_compat, rawequal = rawequal,
  rawget = sandbox_rawget, rawset = sandbox_rawset, select = select,
  setmetatable = sandbox_setmetatable, tonumber = tonumber, tostring = tostring, type = type,
  unpack = unpack, xpcall = xpcall,
  string = readonly(string_lib), table = readonly(table_lib), math = readonly(math_lib),
  coroutine = readonly(coroutine_lib), redis = readonly(redis),
}
for name, lib in next, libraries do globals[name] = readonly(lib) end
if mode == 'eval' then globals.__redis__err__handler = error_handler end

local globals_mt = {__index = missing_global}
setmetatable(globals, globals_mt)
local G, proxy_mt = readonly(globals, readonly(copy(globals_mt)))
globals._G = G

-- Strings index the read-only string table; getmetatable('') shows a read-only view.
string_mt.__index = globals.string
hidden_mt[string_mt] = readonly(string_mt)

-- FUNCTION LOAD runs library code against a much smaller API (just registration and logging);
-- the proxy's metatable reads through to it only while a library loads.
local load_globals
if mode == 'function' then
  local load_redis = redis_constants({register_function = register_function, log = log})
  load_globals = setmetatable({redis = readonly(setmetatable(load_redis, globals_mt))}, globals_mt)
end

local function run_load(chunk)
  proxy_mt.__index = load_globals
  running = true
  local ok, message, source, line = finish(stop_running(xpcall(chunk, error_handler)))
  proxy_mt.__index = globals
  return ok, message, source, line
end

-- From here on every chunk compiled in this state, and every coroutine, sees only G.
setfenv(0, G)
arm_hook()

local api = {}

-- KEYS and ARGV arrive as varargs: building the tables here is cheaper than from Python.
-- nkeys = -1: too many to pass on the stack, so they came as two tables already.
-- Both tables are built by table constructors, which size them once (growing a table key by
-- key rehashes it at every power of two); KEYS then drops the arguments past its last key.
local function split_arguments(nkeys, ...)
  if nkeys < 0 then return ... end
  if nkeys == 0 then return {}, {...} end
  local keys, argv = {...}, {select(nkeys + 1, ...)}
  for i = select('#', ...), nkeys + 1, -1 do keys[i] = nil end
  return keys, argv
end

-- KEYS and ARGV as tables, as the native bridge (luabridge.pyx, _run_protected) builds them;
-- a plain value comes back without another call (each Lua call here is a frame, and this runs
-- for every EVALSHA). null: the caller's null frame ('$-1\r\n' under RESP2, '_\r\n' under
-- RESP3), for results finish_reply encodes.
local function run_native(fn, null, keys, argv)
  script_resp = 2
  globals.KEYS, globals.ARGV = keys, argv
  running = true
  local ok, result = xpcall(fn, error_handler)
  running = false
  if ok and not tripped and not raw_writes and type(result) ~= 'table' then
    return true, result
  end
  return finish_reply(null, ok, result)
end
api.run_native = run_native

-- lupa's entry (sandbox.py's start): the same, with KEYS and ARGV as varargs.
function api.run_eval(fn, null, nkeys, ...)
  return run_native(fn, null, split_arguments(nkeys, ...))
end

function api.run_function(fn, null, nkeys, ...)
  script_resp = 2
  local keys, argv = split_arguments(nkeys, ...)
  running = true
  local function call() return fn(keys, argv) end
  return finish_reply(null, stop_running(xpcall(call, error_handler)))
end

-- The native bridge's script entry (luabridge.pyx, NativeCall.run) calls run_native with a
-- script from `cached` (EVAL scripts by sha); an outcome holding a table is handed to `hold`
-- and fetched from Python through lupa (take_pending): only lupa turns Lua tables into
-- Python objects.
local cached, pending = {}, nil
api.cached = cached

function api.hold(...)
  pending = {n = select('#', ...), ...}
end

function api.take_pending()
  local outcome = pending
  pending = nil
  return unpack(outcome, 1, outcome.n)
end

function api.cache(sha, fn) cached[sha] = fn end
function api.clear_cache() for sha in next, cached do cached[sha] = nil end end

api.run_load = run_load
-- For Python only (compile time): see sandbox.py's _without_tail_calls.
api.dump = dump
api.load_binary = function(code, chunkname) return loadstring(code, chunkname) end
api.reply_shape = reply_shape
api.items = items
api.arm_hook = arm_hook

return api
