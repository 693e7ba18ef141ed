"""cjson, cmsgpack, bit and struct are written in Lua, and each is built the first time a script
reaches it (sandbox.lua's build_library): a runtime whose scripts use none of them keeps its
heap, and so every collection, about half the size. Each case here runs first in a new runtime
and must see what Redis's does, whichever way it reaches a library: by name, through _G,
enumerating the globals, from a coroutine, in a function."""
from __future__ import annotations

import pytest

from tests.support.respclient import RawClient

FIRST_TOUCHES = [
    "return type(cjson)",
    "return cjson.encode({1, 2})",
    "return _G.cmsgpack.pack(1)",
    "return type(_G['b' .. 'it'])",
    "return rawget(_G, 'struct') ~= nil",
    "local r = {} for k, v in pairs(_G) do r[#r + 1] = k .. ':' .. type(v) end "
    "table.sort(r) return r",
    "local n, k = 0, next(_G) while k do n = n + 1 k = next(_G, k) end return n",
    "return coroutine.wrap(function() return cmsgpack.unpack(cmsgpack.pack({1, 'a'})) end)()",
    "local co = coroutine.create(function() return {pcall(cjson.decode, '[')} end) "
    "local _, r = coroutine.resume(co) return r[2]",
    "local ok, e = pcall(function() return bit.tohex(255) end) return {tostring(ok), e}",
    "return getmetatable(cjson) == nil",
    "return struct.unpack('>I2', struct.pack('>I2', 258))",
    "cjson = 1",
    "return cjson.decode('[1,null]')[2] == cjson.null",
    "return cjson.null",
    "return bit.band(nil)",
    "return redis.sha1hex(cjson.encode({a = 1}))",
]


@pytest.fixture
def new_runtime(mini):
    """Call to give the shared minired new Lua runtimes (EVAL's and FUNCTION's), as a fresh
    server has."""
    from minired.scripting.feature import engine_of

    def renew(server) -> None:
        engine = engine_of(server)
        engine.scripts.clear()  # compiled functions belong to one Lua state
        engine._eval_sandbox = None
        engine.functions.flush()
        engine.functions._sandbox = None

    return lambda: mini.call(renew, mini.server)


@pytest.mark.parametrize("script", FIRST_TOUCHES)
def test_the_first_script_to_reach_a_library_sees_what_redis_shows(diff, new_runtime, script):
    new_runtime()
    diff.check("EVAL", script, 0)
    diff.check("EVAL", script, 0)  # and the next, which finds it built


def test_functions_reach_libraries_when_called_not_when_loaded(diff, new_runtime):
    new_runtime()
    # While a library loads, only its API is reachable (Redis: nonexistent global).
    diff.check("FUNCTION", "LOAD", "#!lua name=early\nlocal j = cjson\n"
               "redis.register_function('e', function() return 1 end)")
    diff.check("FUNCTION", "LOAD", "#!lua name=late\n"
               "redis.register_function('j', function(keys, args) return cjson.encode(args) end)\n"
               "redis.register_function('m', function(keys, args) "
               "return cmsgpack.unpack(cmsgpack.pack(args[1])) end)")
    diff.check("FCALL", "j", 0, "a", "b")
    diff.check("FCALL", "m", 0, "x")
    diff.check("FCALL", "j", 0)


def _used_memory_lua(client: RawClient) -> int:
    info = client.call("INFO", "memory").decode()
    return int(info.split("used_memory_lua:")[1].split()[0])


def test_a_library_built_counts_as_the_runtimes_code_not_as_used_memory(mini, new_runtime):
    """INFO's used_memory_lua is what scripts hold: Redis's libraries are C, outside the Lua
    heap, so building ours (~130 KB of code, all four) must not show there."""
    new_runtime()
    client = RawClient(mini.port)
    try:
        client.call("EVAL", "return 1", 0)
        before = _used_memory_lua(client)
        client.call("EVAL", "local n = 0 for _ in pairs(_G) do n = n + 1 end return n", 0)
        assert _used_memory_lua(client) - before < 16 * 1024
    finally:
        client.close()
