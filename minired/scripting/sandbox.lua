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

local mode, redis_version, redis_version_num, make_library, py_call, py_acl_check, py_check,
      py_sha1hex, py_log, py_setresp, py_set_repl, py_random, py_randomseed, py_register,
      py_pcall, py_encode, py_gather, py_call_gathered = ...

-- The unrestricted globals, for the debugger's own code (api.load_debugger).
local raw_env = _G

local type, error, select, tostring, tonumber, unpack = type, error, select, tostring, tonumber, unpack
local rawget, rawset, next, pairs, ipairs = rawget, rawset, next, pairs, ipairs
local setmetatable, getmetatable, xpcall, pcall = setmetatable, getmetatable, xpcall, pcall
local loadstring, load, setfenv = loadstring, load, setfenv
local sethook, getinfo = debug.sethook, debug.getinfo
local floor, ceil, huge = math.floor, math.ceil, math.huge
local byte, sub, find, lower, dump = string.byte, string.sub, string.find, string.lower, string.dump
local format, gsub = string.format, string.gsub
local insert, remove, sort, concat = table.insert, table.remove, table.sort, table.concat
local foreach = table.foreach
local co_create, co_resume, co_status = coroutine.create, coroutine.resume, coroutine.status

local READONLY = 'Attempt to modify a readonly table'

-- A Lua string as Redis reads it where it uses lua_tostring as a C string (the texts of
-- errors and statuses): up to its first NUL byte.
local function c_string(text)
  local nul = find(text, '\0', 1, true)
  if nul then return sub(text, 1, nul - 1) end
  return text
end

-- A number as Redis reads it with (int)lua_tonumber: truncated toward zero, and on x86-64 NaN
-- and anything out of int's range become INT_MIN.
local INT_MIN = -2147483648
local function c_int(n)
  if n ~= n or n >= 2147483648 or n <= -2147483649 then return INT_MIN end
  if n >= 0 then return floor(n) end
  return ceil(n)
end
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

-- cjson.null, once cjson is built: a light userdata in Redis, which has no metatable (ours is a
-- userdata whose metatable prints it as Redis's prints).
local cjson_null

-- The table _G shows scripts (filled in below).
local globals

-- cjson, cmsgpack, bit and struct are written in Lua (lualibs/): ~130 KB of code, more than the
-- rest of the heap, which every collection walks; most scripts never touch them. So each is
-- built the first time a script reaches its global, and every one of them before a script reads
-- the globals raw (rawget, next or pairs on _G), so what it sees is what Redis's shows.
local unbuilt = {cjson = true, cmsgpack = true, bit = true, struct = true}
local any_unbuilt = true
local build_libraries

-- A protected table is an empty proxy (see readonly): what reads it raw must read the table
-- it shows, as Redis's C code reads a read-only table: next, pairs and rawget as scripts see
-- them, table.foreach, the libraries (cjson.encode(redis), cmsgpack.pack(_G): library_access),
-- the reply encoder's maps and sets, and the debugger's printer.
local function shown(t)
  local b = backing[t]
  if b == nil then return t end
  if b == globals and any_unbuilt then build_libraries() end
  return b
end

local library_access = {
  next = function(t, k) return next(shown(t), k) end,
  rawget = function(t, k) return rawget(shown(t), k) end,
  shown = shown,  -- for the compiled build's C functions (lualibs/native_*.pyx)
}

local function build_library(name)
  local lib = make_library(name, library_access)
  unbuilt[name] = nil
  any_unbuilt = next(unbuilt) ~= nil
  if name == 'cjson' then cjson_null = lib.null end
  local proxy = readonly(lib)
  rawset(globals, name, proxy)
  return proxy
end

build_libraries = function()
  for name in next, unbuilt do build_library(name) end
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
  -- Read as a C string; its reply line has every CR and LF made a space.
  return false, (gsub(c_string(tostring(message)), '[\r\n]', ' ')), result.source, result.line,
         result.ignore_error_stats_update == true
end

local function finish(ok, result)
  if tripped then arm_hook() end
  if raw_writes then wipe_raw_writes() end
  if ok then return true, result end
  return failure(result)
end

-- The protocol version the running script set with redis.setresp (2 unless it did).
local script_resp = 2

-- A script's table result as the RESP the client gets, written as Redis's luaReplyToRedisReply
-- writes it, in one pass: every shape (arrays up to the first nil, error, status, double,
-- big number, verbatim, map and set tables, booleans of either protocol, other types as null)
-- and every limit. The native bridge's C encoder (luabridge.pyx) takes the common shapes
-- first; whatever it leaves, and everything in the uncompiled build, is written here.
--
-- luaReplyToRedisReply recurses in C and starts with lua_checkstack(4): a value reached with
-- more than LUAI_MAXCSTACK - 4 = 7996 slots of the Lua stack in use is answered with the
-- error "reached lua stack limit" (counted in INFO), and the walk goes on with its siblings.
-- `slots` counts that stack as Redis fills it: 2 at the top (the error handler and the
-- result), one more for an array element, three more for a set member or a map value, four
-- for a map key (the table, its map or set, the key, the value and the key's copy). A cyclic
-- or very deep table thus ends the way Redis ends it, and the walk is Lua's own (a Lua call
-- takes no C stack), so nothing here can overflow.
--
-- C strings: the texts of statuses and errors are read with strlen (sdsnew(lua_tostring)),
-- so they end at a NUL byte; bulk strings and big numbers keep every byte.
local STACK_LIMIT = 8000 - 4
local CRLF = '\r\n'
-- Frame heads made once for the common small sizes. Few: they live in the heap every collector
-- cycle walks (1024 of each were 3,072 strings, ~190 KB, which doubled the EVAL runtime's heap
-- and the cost of each cycle); a larger size makes its head as it goes.
local bulk_heads, array_heads, integers = {}, {}, {}
for i = 0, 127 do
  bulk_heads[i] = '$' .. i .. CRLF
  array_heads[i] = '*' .. i .. CRLF
  integers[i] = ':' .. i .. CRLF
end

-- addReplyErrorFormatEx(c, flags, "-%s", text): CR and LF trimmed off the end, the others made
-- spaces. The frame's text without its '-' (what INFO counts by its first word).
local function error_line(text)
  return (gsub(gsub(c_string(text), '[\r\n]+$', ''), '[\r\n]', ' '))
end

local function status_line(text)
  return (gsub(c_string(text), '[\r\n]', ' '))
end

-- The encoder's state for one result (scripts run one at a time, and no script code runs
-- while a result is encoded). `parts` is kept between results and emptied after each.
local parts, n = {}, 0
local null, resp3_client, resp3_script = '$-1\r\n', false, false
-- Errors written inside the result: those a command gave (counted already, Redis's
-- ignore_error_stats_update) and the messages of the others, for INFO.
local counted_errors, fresh_errors, nfresh = 0, {}, 0

local function put_error(text, counted)
  n = n + 1
  parts[n] = '-' .. text .. CRLF
  if counted then
    counted_errors = counted_errors + 1
  else
    nfresh = nfresh + 1
    fresh_errors[nfresh] = text
  end
end

local function put_bulk(text)
  local size = #text
  parts[n + 1] = bulk_heads[size] or '$' .. size .. CRLF
  parts[n + 2] = text
  parts[n + 3] = CRLF
  n = n + 3
end

-- addReplyDouble: %.17g (so NaN is "nan" or "-nan"), infinities spelled out.
local function put_double(value)
  local text
  if value == huge then
    text = 'inf'
  elseif value == -huge then
    text = '-inf'
  else
    text = format('%.17g', value)
  end
  n = n + 1
  parts[n] = resp3_client and ',' .. text .. CRLF or '$' .. #text .. CRLF .. text .. CRLF
end

local encode_value

local function encode_table(t, slots)
  local v = rawget(t, 'err')
  if type(v) == 'string' then
    -- (Redis reads ignore_error_stats_update through the metatable; a raw read keeps a
    -- script's __index function from running here, and differs only in INFO's counts.)
    put_error(error_line(v), rawget(t, 'ignore_error_stats_update') == true)
    return
  end
  v = rawget(t, 'ok')
  if type(v) == 'string' then
    n = n + 1
    parts[n] = '+' .. status_line(v) .. CRLF
    return
  end
  v = rawget(t, 'double')
  if type(v) == 'number' then
    put_double(v)
    return
  end
  v = rawget(t, 'big_number')
  if type(v) == 'string' then
    v = gsub(v, '[\r\n]', ' ')
    if resp3_client then
      n = n + 1
      parts[n] = '(' .. v .. CRLF
    else
      put_bulk(v)
    end
    return
  end
  v = rawget(t, 'verbatim_string')
  if type(v) == 'table' then
    local kind, text = rawget(v, 'format'), rawget(v, 'string')
    if type(kind) == 'string' and type(text) == 'string' then
      if resp3_client then
        -- Three bytes of the format, read as a C string and padded with spaces.
        kind = sub(c_string(kind) .. '   ', 1, 3)
        n = n + 1
        parts[n] = '=' .. (#text + 4) .. CRLF .. kind .. ':' .. text .. CRLF
      else
        put_bulk(text)
      end
      return
    end
  end
  v = rawget(t, 'map')
  if type(v) == 'table' then
    n = n + 1
    local head, count = n, 0
    for key, value in next, shown(v) do
      encode_value(key, slots + 4)
      encode_value(value, slots + 3)
      count = count + 1
    end
    parts[head] = resp3_client and '%' .. count .. CRLF or '*' .. (count * 2) .. CRLF
    return
  end
  v = rawget(t, 'set')
  if type(v) == 'table' then
    n = n + 1
    local head, count = n, 0
    for member in next, shown(v) do
      encode_value(member, slots + 3)
      count = count + 1
    end
    parts[head] = (resp3_client and '~' or '*') .. count .. CRLF
    return
  end
  n = n + 1
  local head, count = n, 0
  slots = slots + 1
  while true do
    v = rawget(t, count + 1)
    if v == nil then break end
    count = count + 1
    local kind = type(v)
    -- Strings and numbers, most of any array, without a call (the same as encode_value).
    if kind == 'string' and slots <= STACK_LIMIT then
      put_bulk(v)
    elseif kind == 'number' and slots <= STACK_LIMIT then
      n = n + 1
      parts[n] = integers[v] or format(':%d\r\n', v)
    else
      encode_value(v, slots)
    end
  end
  parts[head] = array_heads[count] or '*' .. count .. CRLF
end

function encode_value(v, slots)
  if slots > STACK_LIMIT then
    put_error('ERR reached lua stack limit', false)
    return
  end
  local kind = type(v)
  if kind == 'string' then
    put_bulk(v)
  elseif kind == 'number' then
    -- (long long) of the double: Lua's %d casts the same way (NaN and out of range alike).
    n = n + 1
    parts[n] = integers[v] or format(':%d\r\n', v)
  elseif kind == 'table' then
    encode_table(v, slots)
  elseif kind == 'boolean' then
    n = n + 1
    if resp3_script then
      if resp3_client then parts[n] = v and '#t\r\n' or '#f\r\n'
      else parts[n] = v and ':1\r\n' or ':0\r\n' end
    else
      parts[n] = v and ':1\r\n' or null
    end
  else  -- a function, a coroutine, userdata: no reply Redis knows
    n = n + 1
    parts[n] = null
  end
end

-- A table result as RESP: the native bridge's C encoder where it is compiled and takes the
-- result, else encode_value. Answers the RESP, then, where the result holds errors, how many
-- a command gave, how many others there are and their messages joined by LF (no message
-- holds one).
local encode_native = py_encode

local function encode_reply(result, client_null)
  if encode_native then
    local resp = encode_native(result, client_null, script_resp)
    if resp then return resp end
  end
  null, resp3_client, resp3_script = client_null, client_null == '_\r\n', script_resp == 3
  counted_errors, nfresh = 0, 0
  n = 0
  encode_value(result, 2)
  local resp = concat(parts, '', 1, n)
  for i = 1, n do parts[i] = nil end
  if counted_errors == 0 and nfresh == 0 then return resp end
  local fresh = concat(fresh_errors, '\n', 1, nfresh)
  for i = 1, nfresh do fresh_errors[i] = nil end
  return resp, counted_errors, nfresh, fresh
end

-- finish() for EVAL and FCALL: a table result comes back already converted, so Python gets
-- (true, value) for a plain value, (true, nil, 'err', text, counted) for an error reply,
-- (true, nil, 'ok', text) for a status, or (true, nil, 'raw', resp[, counted, nfresh, fresh])
-- for any other table (null is the client's null frame; see encode_reply).
local function finish_reply(null, ok, result)
  if tripped then arm_hook() end
  if raw_writes then wipe_raw_writes() end
  if ok then
    if type(result) == 'table' then
      -- The reply at the top: an error or a status is the command's own reply line.
      local v = rawget(result, 'err')
      if type(v) == 'string' then
        return true, nil, 'err', error_line(v), rawget(result, 'ignore_error_stats_update') == true
      end
      v = rawget(result, 'ok')
      -- (+OK, the status a write gives, as status_line writes it: without its two calls)
      if v == 'OK' then return true, nil, 'ok', v end
      if type(v) == 'string' then return true, nil, 'ok', status_line(v) end
      return true, nil, 'raw', encode_reply(result, null)
    end
    return true, result
  end
  return failure(result)
end

-- Base library as Redis 7.0 exposes it ------------------------------------------------------

local string_mt = getmetatable('')


-- The wrappers below stand where Redis has Lua's C functions, and raise those functions'
-- argument errors as Lua reports them when a script calls the C function itself: named as
-- the call site names it ('?' when that is C code, such as pcall), at the call site's
-- position (none for C code). A wrapper calls (never tail-calls) arg_error, or c_error with
-- the arguments the C function f refuses: f's own message is had by calling it under pcall,
-- where it reads '?' and has no position.
local function call_site_error(message, name_level)
  local info = getinfo(name_level + 1, 'n')
  local name = info and info.name
  if name then message = gsub(message, "^(bad argument #%d+ to )'%?'", "%1'" .. name .. "'", 1) end
  error(message, name_level + 2)
end

local function arg_error(level, narg, extramsg)
  call_site_error(format("bad argument #%d to '?' (%s)", narg, extramsg), level + 1)
end

local function c_error(f, ...)
  local _, message = pcall(f, ...)
  if type(message) ~= 'string' then error(message, 0) end
  -- (a message luaG_runerror raised inside the C function, like rawset's "table index is
  -- nil", has no position)
  if sub(message, 1, 14) == 'table index is' then error(message, 0) end
  call_site_error(message, 2)
end

local function sandbox_getmetatable(...)
  local value = ...
  if type(value) == 'string' then return hidden_mt[string_mt] end
  if value == cjson_null and value ~= nil then return nil end
  if backing[value] then return hidden_mt[value] end
  if select('#', ...) == 0 then c_error(getmetatable) end
  return getmetatable(value)
end

local function sandbox_setmetatable(...)
  local t, mt = ...
  if backing[t] then error(READONLY, 0) end
  if type(t) ~= 'table' or (mt ~= nil and type(mt) ~= 'table') or select('#', ...) < 2 then
    c_error(setmetatable, ...)
  end
  if getmetatable(t) ~= nil then  -- (it may be protected: __metatable)
    if not pcall(setmetatable, t, mt) then c_error(setmetatable, ...) end
    return t
  end
  return setmetatable(t, mt)
end

local function sandbox_rawset(...)
  local t, k = ...
  raw_writes = true
  if backing[t] then error(READONLY, 0) end
  if type(t) ~= 'table' or select('#', ...) < 3 or k == nil or k ~= k then c_error(rawset, ...) end
  return rawset(...)
end

local function sandbox_rawget(...)
  local t, k = ...
  if backing[t] then return rawget(shown(t), k) end
  if type(t) ~= 'table' or select('#', ...) < 2 then c_error(rawget, ...) end
  return rawget(t, k)
end

local function sandbox_next(...)
  local t, k = ...
  if backing[t] then return next(shown(t), k) end
  if type(t) ~= 'table' then c_error(next, ...) end
  return next(t, k)
end

local function sandbox_pairs(...)
  local t = ...
  if backing[t] then
    local b = shown(t)
    return function(_, k) return next(b, k) end, t, nil
  end
  if type(t) ~= 'table' then c_error(pairs, ...) end
  return pairs(t)
end

local function sandbox_ipairs(...)
  local t = ...
  local b = backing[t]
  if b then
    return function(_, i)
      i = i + 1
      local v = b[i]
      if v ~= nil then return i, v end
    end, t, 0
  end
  if type(t) ~= 'table' then c_error(ipairs, ...) end
  return ipairs(t)
end

-- Redis's Lua refuses precompiled chunks (they can break the VM): it parses them as source, so
-- their first byte (ESC) is a syntax error. A leading space makes stock Lua do the same.
local function is_text(value)
  local kind = type(value)
  return kind == 'string' or kind == 'number'
end

local function sandbox_loadstring(...)
  local source, chunkname = ...
  if not is_text(source) or (chunkname ~= nil and not is_text(chunkname)) then
    c_error(loadstring, ...)
  end
  if type(source) == 'string' and byte(source, 1) == 27 then
    return loadstring(' ' .. source, chunkname or source)
  end
  return loadstring(source, chunkname)
end

local function sandbox_load(...)
  local reader, chunkname = ...
  if type(reader) ~= 'function' or (chunkname ~= nil and not is_text(chunkname)) then
    c_error(load, ...)
  end
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
local function new_coroutine(f)
  local co = co_create(f)
  sethook(co, hook, '', HOOK_COUNT)
  return co
end

local function lua_function(f)
  return type(f) == 'function' and getinfo(f, 'S').what ~= 'C'
end

local function sandbox_co_create(...)
  local f = ...
  if not lua_function(f) then c_error(co_create, ...) end
  return new_coroutine(f)
end

local function wrap_result(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == 'string' then error(e, 2) end
  error(e, 0)
end

local function sandbox_co_wrap(...)
  local f = ...
  if not lua_function(f) then c_error(coroutine.wrap, ...) end
  local co = new_coroutine(f)
  return function(...) return wrap_result(co_resume(co, ...)) end
end

-- table.insert, remove and sort write into the table they are given: they refuse proxies,
-- and a run that called one has its proxies checked (raw_writes). Their own argument checks
-- come first, as in the C functions.
local table_lib = copy(table)
table_lib.insert = function(...)
  local t, position = ...
  local n = select('#', ...)
  raw_writes = true
  if type(t) ~= 'table' or (n ~= 2 and n ~= 3) or (n == 3 and tonumber(position) == nil) then
    c_error(insert, ...)
  end
  if backing[t] then error(READONLY, 0) end
  return insert(...)
end
table_lib.remove = function(...)
  local t, position = ...
  raw_writes = true
  if type(t) ~= 'table' or (position ~= nil and tonumber(position) == nil) then
    c_error(remove, ...)
  end
  if backing[t] then error(READONLY, 0) end
  return remove(...)
end
table_lib.sort = function(...)
  local t, less = ...
  raw_writes = true
  if type(t) ~= 'table' or (less ~= nil and type(less) ~= 'function') then c_error(sort, ...) end
  if backing[t] then error(READONLY, 0) end
  -- sort's own luaL_error, raised in the middle of sorting, is placed at the call site too;
  -- what the order function raises passes as it is.
  local ok, problem = pcall(sort, ...)
  if ok then return end
  if problem == 'invalid order function for sorting' then call_site_error(problem, 1) end
  error(problem, 0)
end

-- table.foreach reads its table raw, as next does (a proxy shows its table).
table_lib.foreach = function(...)
  local t, f = ...
  if type(t) ~= 'table' or type(f) ~= 'function' then c_error(foreach, ...) end
  return (foreach(shown(t), f))
end

-- Redis's math.random: its own lrand48, so every platform gives the same sequence.
-- (luaL_checkint; `level` is the public function's, as arg_error takes it.)
local function checkint(value, narg, nargs)
  local n = tonumber(value)
  if type(value) ~= 'number' and (type(value) ~= 'string' or n == nil) then
    local got = narg > nargs and 'no value' or type(value)
    arg_error(2, narg, 'number expected, got ' .. got)
  end
  -- (int) of lua_Integer (a 64-bit (long) of the number: NaN and out of range are INT64_MIN):
  -- its low 32 bits.
  if n ~= n or n >= 2^63 or n < -2^63 then return 0 end
  n = (n >= 0 and floor(n) or ceil(n)) % 4294967296
  if n >= 2147483648 then return n - 4294967296 end
  return n
end

local math_lib = copy(math)
math_lib.random = function(...)
  local nargs = select('#', ...)
  local r = py_random()
  if nargs == 0 then return r end
  if nargs == 1 then
    local u = checkint((...), 1, nargs)
    if u < 1 then arg_error(1, 1, 'interval is empty') end
    return floor(r * u) + 1
  end
  if nargs == 2 then
    local l, u = ...
    l = checkint(l, 1, nargs)
    u = checkint(u, 2, nargs)
    if l > u then arg_error(1, 2, 'interval is empty') end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 2)
end
math_lib.randomseed = function(...)
  local seed = checkint((...), 1, select('#', ...))
  py_randomseed(seed)
end

-- Like C functions in Redis, minired's own closures cannot be dumped.
local string_lib = copy(string)
string_lib.dump = function(...)
  local f = ...
  if type(f) ~= 'function' then c_error(dump, ...) end
  do
    local info = getinfo(f, 'S')
    if info.what == 'C' or internal_source(info.source) then
      error('unable to dump given function', 2)
    end
  end
  return dump(...)
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
  -- instead, as Redis formats them. A script can pass redis.call as many arguments as Lua's
  -- stack takes (unpack gives up to 7999 values): past a few thousand neither unpack nor
  -- lupa's call has the stack room left, so those arguments cross to Python in slices.
  -- (Python cannot read them from the table: lupa's indexing runs Lua code of its own,
  -- which the running script's globals refuse.)
  local ARGUMENTS_SLICE = 2000
  local function call_python(...)
    local n = select('#', ...)
    local args = {...}
    for i = 1, n do
      if type(args[i]) == 'number' then args[i] = format('%.17g', args[i]) end
    end
    if n <= ARGUMENTS_SLICE then return lupa_call(unpack(args, 1, n)) end
    for first = 1, n, ARGUMENTS_SLICE do
      local last = first + ARGUMENTS_SLICE - 1
      py_gather(unpack(args, first, last < n and last or n))
    end
    return py_call_gathered()
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
  return {err = error_text(c_string(text))}  -- (read by Redis as a C string)
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
  level = c_int(level)
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
  local resp = c_int(tonumber((...)) or 0)
  if resp ~= 2 and resp ~= 3 then raise('RESP version must be 2 or 3.') end
  py_setresp(resp)
  script_resp = resp
end

local function set_repl(...)
  if select('#', ...) ~= 1 then raise('redis.set_repl() requires two arguments.') end
  local flags = c_int(tonumber((...)) or 0)
  if flags < 0 or flags > 3 then
    raise('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
  py_set_repl(flags)
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

local function missing_global(t, name)
  if t == globals and unbuilt[name] then return build_library(name) end
  if not running then return nil end
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end

globals = {
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

api.run_load = run_load

-- SCRIPT DEBUG: debugger.lua (compiled from Python at a session's start) runs with the
-- unrestricted globals and the internals it swaps for the session; see its header.
if mode == 'eval' then
  function api.load_debugger(code, ...)
    local chunk, problem = loadstring(code, '=minired.debugger')
    if not chunk then error(problem) end
    setfenv(chunk, raw_env)
    return chunk({redis = redis, globals = globals, arm_hook = arm_hook,
                  next = library_access.next}, ...)
  end
end
-- For Python only (compile time): see sandbox.py's _without_tail_calls.
api.dump = dump
api.load_binary = function(code, chunkname) return loadstring(code, chunkname) end
api.arm_hook = arm_hook

return api
