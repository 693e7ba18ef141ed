-- Builds the libraries written in Lua (cjson, cmsgpack, bit, struct) from their sources, in Lua
-- and on whatever thread asks (a script may first reach cjson inside a coroutine, where calling
-- back into Lua from Python is not safe). Made once per runtime by lualibs/__init__.py while the
-- runtime's globals are still the unrestricted ones: it keeps them as `g`, so a library built
-- later, when the thread's globals are the scripts' read-only proxy, still gets the real
-- standard functions.
--
-- source(name): the Lua text of library `name`, of 'support' (the helpers they share) or of
-- 'private_env' (kept in Python until needed: the heap holds only what runs). helpers: name ->
-- {n = <count>, <the Python helpers the library receives>..., <the compiled build's C
-- functions for it (lualibs/native_json.pyx, native_msgpack.pyx), or nil>}. note(bytes), if
-- given, hears how much each build grew the heap.
local g, source, helpers, note = ...
local loadstring, setfenv, unpack, error = g.loadstring, g.setfenv, g.unpack, g.error
local collectgarbage = g.collectgarbage

local function compile(name)
  local chunk, message = loadstring(source(name), '=lualibs.' .. name)
  if chunk == nil then error(message, 0) end
  return chunk
end

-- Compiled now: a chunk's environment is the thread's globals when it is compiled.
local private_env = compile('private_env')

-- Every chunk runs in a private environment of copies of the standard functions it uses, so
-- its closures never read the script-visible globals at call time (a script could replace them).
-- access: functions that stand in for some of them (the sandbox's next, rawget and shown, which
-- read a read-only table's proxy as the table it shows).
local function run(name, access, ...)
  local chunk = compile(name)
  local env = private_env(g)
  if access then
    for key, value in g.next, access do env[key] = value end
  end
  setfenv(chunk, env)
  return chunk(...)
end

local debug, string, math = g.debug, g.string, g.math
local support_arguments = {
  debug and debug.getinfo, g.error, g.type, g.tonumber, g.tostring,
  string.format, math.floor, math.ceil,
}
local support

return function(name, access)
  local before = collectgarbage('count')
  if support == nil then support = run('support', nil, unpack(support_arguments, 1, 8)) end
  local given = helpers[name]
  local lib = run(name, access, support, unpack(given, 1, given.n))
  if note then note(1024 * (collectgarbage('count') - before)) end
  return lib
end
