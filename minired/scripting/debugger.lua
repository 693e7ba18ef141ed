-- The Lua debugger (SCRIPT DEBUG YES|SYNC, `redis-cli --ldb`): Redis's LDB, eval.c's ldb*
-- functions, as a line hook in the EVAL runtime. Compiled by sandbox.py at the first session
-- and called with the sandbox's internals (sandbox.lua's api.debugger_internals) and the
-- session's I/O, both kept as upvalues here; scripts never see any of it.
--
-- The protocol is Redis's: every stop sends the logs gathered so far as one array of status
-- replies; the client answers with debugger commands (step, continue, print, break, eval,
-- redis, ...), each answered with the logs it produced. Python (debugger.py) owns the
-- connection: read() blocks for the next command, write() sends bytes.

local internals, read, write, expired, take_refusal = ...

local redis, globals = internals.redis, internals.globals
local original = {call = redis.call, pcall = redis.pcall, debug = redis.debug,
                  breakpoint = redis.breakpoint}
local sethook, getinfo, getlocal = debug.sethook, debug.getinfo, debug.getlocal
local type, tostring, select, pcall, error = type, tostring, select, pcall, error
-- (the sandbox's next: a read-only table's proxy shows the table it stands for)
local next = internals.next
local floor, format, gsub, sub, byte, find = math.floor, string.format, string.gsub,
                                             string.sub, string.byte, string.find
local lower, concat, loadstring = string.lower, table.concat, loadstring

local USER_SCRIPT = '@user_script'
local MAX_LEN_DEFAULT = 256     -- LDB_MAX_LEN_DEFAULT
local BREAKPOINTS_MAX = 64      -- LDB_BREAKPOINTS_MAX
local MAX_VALUES_DEPTH = 10     -- LDB_MAX_VALUES_DEPTH (LUA_MINSTACK / 2)
-- Redis checks the time limit every 100,000 instructions (a count hook); here every so many
-- line events: a count hook firing inside this file's own hook function is lost, which would
-- leave a looping script unchecked.
local LINES_PER_CHECK = 10000

local ldb  -- the session: set by begin, cleared by finish

-- Logs ----------------------------------------------------------------------------------------

local function log(entry)
  local logs = ldb.logs
  logs[#logs + 1] = entry
end

-- ldbLogWithMaxLen: long values are cut, with a hint the first time.
local function log_max_len(entry)
  if ldb.maxlen > 0 and #entry > ldb.maxlen then
    log(sub(entry, 1, ldb.maxlen) .. ' ...')
    if not ldb.hint_sent then
      ldb.hint_sent = true
      log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
    end
  else
    log(entry)
  end
end

-- ldbSendLogs: one array of status replies, CR and LF made spaces.
local function send_logs()
  local logs = ldb.logs
  local out = {'*' .. #logs .. '\r\n'}
  for i = 1, #logs do
    out[i + 1] = '+' .. gsub(logs[i], '[\r\n]', ' ') .. '\r\n'
  end
  ldb.logs = {}
  write(concat(out))
end

-- Values as the debugger shows them -------------------------------------------------------------

local ESCAPES = {['\\'] = '\\\\', ['"'] = '\\"', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
                 ['\a'] = '\\a', ['\b'] = '\\b'}

-- sdscatrepr: quoted, with C escapes and \xHH for what isprint refuses.
local function repr(s)
  return '"' .. gsub(s, '[%z\1-\31\127-\255\\"]', function(c)
    return ESCAPES[c] or format('\\x%02x', byte(c))
  end) .. '"'
end

local function address(v)
  return (gsub(tostring(v), '^%a+: ', ''))
end

-- ldbCatStackValueRec: tables as {a; b} while they are arrays, {[k]=v; ...} otherwise.
local function value_repr(v, level)
  local t = type(v)
  if level == MAX_VALUES_DEPTH then return '<max recursion level reached! Nested table?>' end
  level = level + 1
  if t == 'string' then return repr(v) end
  if t == 'boolean' then return v and 'true' or 'false' end
  if t == 'number' then return format('%g', v) end
  if t == 'nil' then return 'nil' end
  if t == 'table' then
    local array, full, expected, is_array = {}, {}, 1, true
    for k, item in next, v do
      if is_array and (type(k) ~= 'number' or k ~= expected) then is_array = false end
      local shown = value_repr(item, level)
      array[#array + 1] = shown
      full[#full + 1] = '[' .. value_repr(k, level) .. ']=' .. shown
      expected = expected + 1
    end
    return '{' .. concat(is_array and array or full, '; ') .. '}'
  end
  local kind = t == 'userdata' and 'userdata' or t  -- function, thread
  return '"' .. kind .. '@' .. address(v) .. '"'
end

local function show(v) return value_repr(v, 0) end

-- ldbRedisProtocolToHuman, from the reply as redis.call gave it to the script.
local function reply_repr(v)
  local t = type(v)
  if t == 'number' then
    return v == floor(v) and format('%d', v) or format('%.17g', v)
  end
  if t == 'string' then return repr(v) end
  if v == false then return 'NULL' end
  if v == true then return '#true' end
  if v == nil then return '(null)' end
  if t ~= 'table' then return tostring(v) end
  if v.ok ~= nil then return repr('+' .. tostring(v.ok)) end
  if v.err ~= nil then return repr('-' .. tostring(v.err)) end
  if v.double ~= nil then return '(double) ' .. format('%.17g', v.double) end
  local parts = {}
  if v.map ~= nil then
    for k, item in next, v.map do parts[#parts + 1] = reply_repr(k) .. ' => ' .. reply_repr(item) end
    return '{' .. concat(parts, ',') .. '}'
  end
  if v.set ~= nil then
    for k in next, v.set do parts[#parts + 1] = reply_repr(k) end
    return '~(' .. concat(parts, ',') .. ')'
  end
  for i = 1, #v do parts[i] = reply_repr(v[i]) end
  return '[' .. concat(parts, ',') .. ']'
end

-- Source lines and breakpoints ------------------------------------------------------------------

local function source_line(n)
  return ldb.src[n] or '<out of range source code line>'
end

local function is_breakpoint(n)
  for i = 1, #ldb.bp do
    if ldb.bp[i] == n then return true end
  end
  return false
end

local function log_source_line(n)
  local current, bp = ldb.currentline == n, is_breakpoint(n)
  local prefix = (current and bp and '->#') or (current and '-> ') or (bp and '  #') or '   '
  log(format('%s%-3d %s', prefix, n, source_line(n)))
end

local function list(around, context)
  for n = 1, #ldb.src do
    if around == 0 or math.abs(around - n) <= context then log_source_line(n) end
  end
end

-- The script's frames, innermost first: their stack levels as seen from the caller.
local function script_levels()
  local levels, level = {}, 2
  local info = getinfo(level, 'S')
  while info do
    if info.source == USER_SCRIPT then levels[#levels + 1] = level - 1 end
    level = level + 1
    info = getinfo(level, 'S')
  end
  return levels
end

-- Debugger commands -----------------------------------------------------------------------------

local function print_var(name)
  local levels = script_levels()
  for i = 1, #levels do
    local level, index = levels[i], 1
    local var, value = getlocal(level, index)
    while var do
      if var == name then
        log_max_len('<value> ' .. show(value))
        return
      end
      index = index + 1
      var, value = getlocal(level, index)
    end
  end
  if name == 'ARGV' or name == 'KEYS' then
    log_max_len('<value> ' .. show(globals[name]))
  else
    log('No such variable.')
  end
end

local function print_all()
  local level, count = script_levels()[1], 0
  if level then
    local index = 1
    local var, value = getlocal(level, index)
    while var do
      if not find(var, '(*temporary)', 1, true) then
        log_max_len('<value> ' .. var .. ' = ' .. show(value))
        count = count + 1
      end
      index = index + 1
      var, value = getlocal(level, index)
    end
  end
  if count == 0 then log('No local variables in the current context.') end
end

-- string2l: an optional '-', digits, no leading zero, within a long.
local function to_long(text)
  if find(text, '^%-?[1-9]%d*$') or text == '0' then
    local n = tonumber(text)
    if n and n >= -2^63 and n < 2^63 then return n end
  end
  return nil
end

local function add_breakpoint(line)
  if line <= 0 or line > #ldb.src then return false end
  if not is_breakpoint(line) and #ldb.bp ~= BREAKPOINTS_MAX then
    ldb.bp[#ldb.bp + 1] = line
    return true
  end
  return false
end

local function del_breakpoint(line)
  for i = 1, #ldb.bp do
    if ldb.bp[i] == line then
      table.remove(ldb.bp, i)
      return true
    end
  end
  return false
end

local function breakpoints(argv)
  if #argv == 1 then
    if #ldb.bp == 0 then
      log("No breakpoints set. Use 'b <line>' to add one.")
    else
      log(#ldb.bp .. ' breakpoints set:')
      for i = 1, #ldb.bp do log_source_line(ldb.bp[i]) end
    end
    return
  end
  for i = 2, #argv do
    local line = to_long(argv[i])
    if line == nil then
      log("Invalid argument:'" .. argv[i] .. "'")
    elseif line == 0 then
      ldb.bp = {}
      log('All breakpoints removed.')
    elseif line > 0 then
      if #ldb.bp == BREAKPOINTS_MAX then
        log('Too many breakpoints set.')
      elseif add_breakpoint(line) then
        list(line, 1)
      else
        log('Wrong line number.')
      end
    elseif del_breakpoint(-line) then
      log('Breakpoint removed.')
    else
      log('No breakpoint in the specified line.')
    end
  end
end

local function eval(argv)
  local code = concat(argv, ' ', 2)
  local chunk = loadstring('return ' .. code, '@ldb_eval')
  if not chunk then
    local problem
    chunk, problem = loadstring(code, '@ldb_eval')
    if not chunk then
      log('<error> ' .. tostring(problem))
      return
    end
  end
  local ok, result = pcall(chunk)
  if not ok then
    log('<error> ' .. (type(result) == 'table' and tostring(result.err) or tostring(result)))
    return
  end
  log_max_len('<retval> ' .. show(result))
end

-- ldbRedis: redis.call with stepping on, so the call logs itself.
local function redis_command(argv)
  ldb.step = true
  pcall(redis.call, select(2, unpack(argv)))
  ldb.step = false
end

local function trace()
  local levels = script_levels()
  for i = 1, #levels do
    local info = getinfo(levels[i], 'nl')
    log((i == 1 and 'In ' or 'From ') .. (info.name or 'top level') .. ':')
    log_source_line(info.currentline)
  end
  if #levels == 0 then log("<error> Can't retrieve Lua stack.") end
end

local function maxlen(argv)
  if #argv == 2 then
    local n = tonumber(string.match(argv[2], '^%s*([+-]?%d+)')) or 0  -- atoi
    ldb.hint_sent = true
    if n ~= 0 and n <= 60 then n = 60 end
    ldb.maxlen = n
  end
  if ldb.maxlen > 0 then
    log(format('<value> replies are truncated at %d bytes.', ldb.maxlen))
  else
    log('<value> replies are unlimited.')
  end
end

local HELP = {
  'Redis Lua debugger help:',
  '[h]elp               Show this help.',
  '[s]tep               Run current line and stop again.',
  '[n]ext               Alias for step.',
  '[c]ontinue           Run till next breakpoint.',
  '[l]ist               List source code around current line.',
  '[l]ist [line]        List source code around [line].',
  '                     line = 0 means: current position.',
  '[l]ist [line] [ctx]  In this form [ctx] specifies how many lines',
  '                     to show before/after [line].',
  "[w]hole              List all source code. Alias for 'list 1 1000000'.",
  '[p]rint              Show all the local variables.',
  '[p]rint <var>        Show the value of the specified variable.',
  '                     Can also show global vars KEYS and ARGV.',
  '[b]reak              Show all breakpoints.',
  '[b]reak <line>       Add a breakpoint to the specified line.',
  '[b]reak -<line>      Remove breakpoint from the specified line.',
  '[b]reak 0            Remove all breakpoints.',
  '[t]race              Show a backtrace.',
  '[e]val <code>        Execute some Lua code (in a different callframe).',
  '[r]edis <cmd>        Execute a Redis command.',
  '[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.',
  '                     Specifying zero as <len> means unlimited.',
  '[a]bort              Stop the execution of the script. In sync',
  '                     mode dataset changes will be retained.',
  '',
  'Debugger functions you can call from Lua scripts:',
  'redis.debug()        Produce logs in the debugger console.',
  'redis.breakpoint()   Stop execution like if there was a breakpoint in the',
  '                     next line of code.',
}

local function is(name, short, long) return name == short or name == long end

-- ldbRepl: commands until one resumes the script. False when the client went away.
local function repl()
  while true do
    local argv = read()
    if argv == nil then  -- gone: the script runs on without stopping
      ldb.step, ldb.bp = false, {}
      return false
    end
    if type(argv) == 'string' then error(argv, 0) end  -- 'protocol error', ...
    local name, argc = lower(argv[1]), #argv
    if is(name, 'h', 'help') then
      for i = 1, #HELP do log(HELP[i]) end
    elseif is(name, 's', 'step') or is(name, 'n', 'next') then
      ldb.step = true
      return true
    elseif is(name, 'c', 'continue') then
      return true
    elseif is(name, 't', 'trace') then
      trace()
    elseif is(name, 'm', 'maxlen') then
      maxlen(argv)
    elseif is(name, 'b', 'break') then
      breakpoints(argv)
    elseif is(name, 'e', 'eval') then
      eval(argv)
    elseif is(name, 'a', 'abort') then
      error('script aborted for user request', 0)
    elseif argc > 1 and is(name, 'r', 'redis') then
      redis_command(argv)
    elseif is(name, 'p', 'print') then
      if argc == 2 then print_var(argv[2]) else print_all() end
    elseif is(name, 'l', 'list') then
      local around, context = ldb.currentline, 5
      if argc > 1 then
        local n = tonumber(string.match(argv[2], '^%s*([+-]?%d+)')) or 0
        if n > 0 then around = n end
      end
      if argc > 2 then context = tonumber(string.match(argv[3], '^%s*([+-]?%d+)')) or 0 end
      list(around, context)
    elseif is(name, 'w', 'whole') then
      list(1, 1000000)
    else
      log('<error> Unknown Redis Lua debugger command or wrong number of arguments.')
    end
    send_logs()
  end
end

-- luaLdbLineHook: stop on a step, a breakpoint, redis.breakpoint() or a script running too long.
local function line_hook()
  local info = getinfo(2, 'Sl')
  if not info or info.source ~= USER_SCRIPT then return end
  ldb.currentline = info.currentline
  local bp = is_breakpoint(ldb.currentline) or ldb.luabp
  local timeout = false
  if not (ldb.step or bp) then
    ldb.lines = ldb.lines + 1
    if ldb.lines < LINES_PER_CHECK then return end
    ldb.lines = 0
    if not expired() then return end
    timeout, ldb.step = true, true
  end
  local reason = 'step over'
  if bp then
    reason = ldb.luabp and 'redis.breakpoint() called' or 'break point'
  elseif timeout then
    reason = 'timeout reached, infinite loop?'
  end
  ldb.step, ldb.luabp = false, false
  log(format('* Stopped at %d, stop reason = %s', ldb.currentline, reason))
  log_source_line(ldb.currentline)
  send_logs()
  if not repl() and timeout then
    error('timeout during Lua debugging with client closing connection', 0)
  end
end

-- redis.* while a session runs ------------------------------------------------------------------

-- luaPushErrorBuff's log: a refusal (scriptCall's error) as its text, a command's error reply
-- as the reply ("-CODE message") followed by the reply line.
local function log_call_error(err)
  local refusal = take_refusal()
  if refusal then
    log('<error> ' .. gsub(refusal, '^ERR ', ''))
    return false
  end
  log('<error> -' .. tostring(err))
  return true
end

local function log_command(...)
  local n = select('#', ...)
  local parts = {'<redis>'}
  for j = 1, n do
    if j == 11 then
      parts[#parts + 1] = format(' ... (%d more)', n - j)
      break
    end
    local arg = select(j, ...)
    parts[#parts + 1] = ' ' .. (type(arg) == 'number' and format('%.17g', arg) or tostring(arg))
  end
  log(concat(parts))
end

local function logged_call(call, raising)
  return function(...)
    if not ldb.step then return call(...) end
    log_command(...)
    local ok, result = pcall(call, ...)
    if not ok then
      if type(result) == 'table' and result.err ~= nil and log_call_error(result.err) then
        log_max_len('<reply> ' .. reply_repr(result))
      end
      error(result, 0)
    end
    if type(result) == 'table' and result.err ~= nil and not raising then
      if log_call_error(result.err) then log_max_len('<reply> ' .. reply_repr(result)) end
      return result
    end
    log_max_len('<reply> ' .. reply_repr(result))
    return result
  end
end

local function debug_log(...)
  local parts = {}
  for i = 1, select('#', ...) do parts[i] = show((select(i, ...))) end
  log(format('<debug> line %d: ', ldb.currentline or 0) .. concat(parts, ', '))
end

local function breakpoint()
  ldb.luabp = true
  return true
end

-- The session -----------------------------------------------------------------------------------

local session = {}

-- src: the script's lines. Arms the hook and the redis.* of a debugging session.
function session.begin(src)
  ldb = {logs = {}, src = src, bp = {}, step = true, luabp = false, currentline = 0,
         maxlen = MAX_LEN_DEFAULT, hint_sent = false, lines = 0}
  redis.call = logged_call(original.call, true)
  redis.pcall = logged_call(original.pcall, false)
  redis.debug = debug_log
  redis.breakpoint = breakpoint
  sethook(line_hook, 'l')
end

-- Ends the session: the logs still waiting, then <endsession>, are sent.
function session.finish()
  if ldb == nil then return end
  for name, fn in next, original do redis[name] = fn end
  internals.arm_hook()
  log('<endsession>')
  send_logs()
  ldb = nil
end

return session
