"""redis.call's arguments and replies against real Redis, through both of minired's ways from
Lua into Python: the native bridge (luabridge.pyx, a Lua C function, in the compiled build)
and lupa's (the fallback). Each test runs once per bridge (conftest.py) on the shared
minired."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_FILL = [("SET", "s", "v"), ("RPUSH", "l", "a", "b", "7"), ("HSET", "h", "f", "1"),
         ("ZADD", "z", "1.5", "m", "-2", "n"), ("XADD", "x", "1-1", "a", "b"), ("SADD", "st", "m"),
         ("SET", "n", "10")]

REPLIES = [
    "redis.call('get', 's')", "redis.call('get', 'nokey')", "redis.call('incr', 'n')",
    "redis.call('lrange', 'l', 0, -1)", "redis.call('hgetall', 'h')", "redis.call('hgetall', 'no')",
    "redis.call('zrange', 'z', 0, -1, 'withscores')", "redis.call('zscore', 'z', 'm')",
    "redis.call('xrange', 'x', '-', '+')", "redis.call('smembers', 'st')",
    "redis.call('set', 's', 'v')", "redis.call('type', 's')", "redis.call('ping')",
    "redis.call('exists', 's', 'l', 'no')", "redis.call('lpos', 'l', 'zz')",
    "redis.call('scan', 0, 'match', 's')", "redis.call('config', 'get', 'maxmemory')",
    "redis.call('hincrbyfloat', 'h', 'g', 1.5)", "redis.pcall('incr', 's')",
    "redis.pcall('nosuch')", "redis.pcall('lpush', 's', 1)", "redis.call('lmpop', 1, 'l', 'left')",
    "{redis.call('hgetall', 'h'), redis.call('get', 's'), redis.call('zrange', 'z', 0, 0)}",
    "type(redis.call('get', 'nokey'))", "redis.call('get', 'nokey') == false",
    "type(redis.call('zscore', 'z', 'm'))", "redis.call('echo', redis.call('incr', 'n'))",
    "(function() local r = redis.pcall('incr', 's') return r.err end)()",
    "(function() local ok, e = pcall(redis.call, 'incr', 's') return {tostring(ok), e} end)()",
    "({coroutine.resume(coroutine.create(function() return redis.call('hgetall', 'h') end))})[2]",
]


@pytest.mark.parametrize("expression", REPLIES)
def test_replies(diff, bridge, expression):
    for command in _FILL:
        diff.check(*command)
    for client_resp in (2, 3):
        diff.hello(client_resp)
        for prefix in ("", "redis.setresp(3) "):
            diff.check("EVAL", f"{prefix}return {expression}", 0)


@settings(max_examples=150)
@given(number=st.one_of(st.floats(), st.integers(-2**64, 2**64),
                        st.sampled_from(["1e17", "-1e17", "99999999999999999", "1e16", "0.1",
                                         "-0.0", "2^53+1", "0/0", "-(0/0)", "1/0", "-1/0"])))
def test_number_arguments_are_formatted_as_redis_does(diff, bridge, number):
    text = number if isinstance(number, str) else repr(number)
    expression = text if isinstance(number, str) else "tonumber(ARGV[1])"
    diff.check("EVAL", f"return redis.call('echo', {expression})", 0, text)


@pytest.mark.parametrize("argument", ["nil", "true", "false", "{}", "{1}", "print or 1",
                                      "function() end", "coroutine.create(function() end)"])
def test_arguments_that_are_neither_strings_nor_numbers(diff, bridge, argument):
    diff.check("EVAL", f"return redis.call('echo', {argument})", 0)
    diff.check("EVAL", f"return redis.pcall('set', 'k', 'v', {argument})", 0)
    diff.check("EVAL", f"return redis.call({argument}, 'x')", 0)


def test_many_arguments_and_long_replies(diff, bridge):
    build = "local t = {} for i = 1, 5000 do t[i] = i end "
    diff.check("EVAL", build + "return redis.call('rpush', 'big', unpack(t))", 0)
    for stop in (100, 255, 256, 300, -1):
        diff.check("EVAL", f"local r = redis.call('lrange', 'big', 0, {stop}) return {{#r, r[1], r[#r]}}", 0)
        diff.check("EVAL", f"return redis.call('lrange', 'big', 0, {stop})", 0)
    diff.check("HSET", "wide", *[str(i) for i in range(400)])
    diff.check("EVAL", "local r = redis.call('hgetall', 'wide') return #r", 0)
    diff.check("EVAL", "return redis.call('echo', string.rep('x', 100000)) == string.rep('x', 100000)", 0)


def test_a_script_the_native_entry_does_not_know_runs_through_lupa(diff, mini):
    """The native entry finds EVAL scripts by sha in the sandbox's own cache; one missing there
    (it cannot happen through the commands) still runs, through lupa's call."""
    from minired.scripting.feature import engine_of

    script = "return {redis.call('incr', KEYS[1]), ARGV[1], {map={a=1}}}"
    sha = diff.check("SCRIPT", "LOAD", script)
    diff.check("EVALSHA", sha, 1, "n", "x")

    def forget(server) -> None:  # (empties the native entry's cache, the Lua table `cached`)
        cached = engine_of(server).eval_sandbox.api[b"cached"]
        for known in list(cached):
            cached[known] = None

    mini.call(forget, mini.server)
    diff.check("EVALSHA", sha, 1, "n", "x")
    diff.hello(3)
    diff.check("EVALSHA", sha, 1, "n", "x")


def test_scripts_with_thousands_of_keys_and_arguments(diff, bridge):
    keys = [f"k{i}" for i in range(4500)]
    args = [f"a{i}" for i in range(5000)]
    script = "return {#KEYS, #ARGV, KEYS[1], KEYS[#KEYS], ARGV[1], ARGV[#ARGV]}"
    diff.check("EVAL", script, len(keys), *keys, *args)
    diff.check("EVAL", script, 0, *args)
    diff.check("EVAL", script, len(keys), *keys)


def test_arguments_stay_right_while_lua_reuses_string_memory(diff, bridge):
    """The native bridge keeps the bytes of the short arguments it read lately, found by where
    Lua keeps their text; once a string is collected, another one with other text can take
    its place. Collecting often, with keys of one length, makes that happen all the time."""
    script = """
    local matches = 0
    for i = 1, 3000 do
      local key = string.format('k%05d', i)
      redis.call('SET', key, string.format('v%05d', i))
      if redis.call('GET', key) == string.format('v%05d', i) then matches = matches + 1 end
      if i % 25 == 0 then collectgarbage('collect') end
    end
    return {matches, redis.call('DBSIZE'), redis.call('GET', 'k00005'), redis.call('GET', 'k03000')}
    """
    diff.check("EVAL", script, 0)
    diff.check("GET", "k01234")
