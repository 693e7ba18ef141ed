"""Where Redis's Lua bridge stops - the Lua stack, argument counts, nesting in cjson and
cmsgpack, texts read as C strings - minired stops the same way, with the same bytes, on both
of its bridges, and goes on answering. Replies are compared raw (a cyclic table's reply is
thousands of frames deep)."""
from __future__ import annotations

import pytest

from tests.support.lua_fuzz import RawConnection

CYCLE = "local a = {}; local b = {a}; a[1] = b; return a"


@pytest.fixture
def raw(diff, real_redis, mini):
    """eval(script, protocol=2): the raw replies of real Redis and minired (flushed by `diff`),
    minired checked alive after each."""
    connections: dict[int, tuple] = {}

    def run(*command: bytes | str, protocol: int = 2) -> tuple[bytes, bytes]:
        if protocol not in connections:
            connections[protocol] = (RawConnection(real_redis.port, protocol=protocol),
                                     RawConnection(mini.port, protocol=protocol))
        redis, minired = connections[protocol]
        argv = [part.encode() if isinstance(part, str) else part for part in command]
        expected, actual = redis.call(*argv), minired.call(*argv)
        assert minired.call(b"PING") == b"+PONG\r\n"
        return expected, actual

    def check(*command: bytes | str, protocol: int = 2) -> bytes:
        expected, actual = run(*command, protocol=protocol)
        assert actual == expected, f"{command!r}\n  redis:   {expected[-300:]!r}\n" \
                                   f"  minired: {actual[-300:]!r}"
        return expected

    check.run = run
    try:
        yield check
    finally:
        for redis, minired in connections.values():
            redis.close()
            minired.close()


def _calls(info: bytes, name: str) -> list:
    """The calls and failed_calls fields of a command in INFO commandstats."""
    line = f"cmdstat_{name}:".encode()
    return [part for entry in info.split(b"\r\n") if entry.startswith(line)
            for part in entry.split(b",") if part.startswith((b"cmdstat", b"failed"))]


def _errorstats(raw) -> None:
    raw("INFO", "errorstats")
    redis, minired = raw.run("INFO", "commandstats")
    for name in ("eval", "fcall"):
        assert _calls(minired, name) == _calls(redis, name)


def test_cyclic_table_ends_at_the_lua_stack_limit(raw, bridge):
    raw("CONFIG", "RESETSTAT")
    reply = raw("EVAL", CYCLE, "0")
    assert reply.count(b"*1\r\n") == 7995 and reply.endswith(b"-ERR reached lua stack limit\r\n")
    _errorstats(raw)  # the error within the reply is counted, and fails the call


# How a table is nested in the one above it, and the deepest chain of such levels whose reply
# still fits (found on Redis: each level takes one Lua stack slot as an array element, three as
# a map value or set member, four as a map key).
LINKS = {"c[1] = n": 7992, "c[1] = 'x' c[2] = n": 7992, "c.map = {k = n}": 2664,
         "c.set = {[n] = true}": 2664, "c.map = {[n] = 1}": 1998}


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("protocol", [2, 3])
def test_deep_tables_use_the_stack_as_redis_does(raw, bridge, link, protocol):
    """Each kind of level takes its own number of Lua stack slots in luaReplyToRedisReply:
    the limit falls at a different depth for arrays, map keys, map values and set members,
    and the walk goes on past it (with the next element, here 'after')."""
    fits = LINKS[link]
    for depth in (fits, fits + 1) if protocol == 3 else (fits, fits + 1, 9000):
        reply = raw("EVAL", f"local t = {{}} local c = t for i = 1, {depth} do local n = {{}} "
                            f"{link} c = n end c[1] = 'end' return {{t, 'after'}}", "0",
                    protocol=protocol)
        assert (b"-ERR reached lua stack limit\r\n" in reply) == (depth > fits)
    raw("EVAL", f"redis.setresp(3) local t = {{}} local c = t for i = 1, {fits} do "
                f"local n = {{}} {link} c = n end c[1] = true return {{t, true, false}}", "0",
        protocol=protocol)


def test_functions_results_too(raw, bridge):
    body = ("#!lua name=cyc\nredis.register_function('cyc', function() "
            + CYCLE.replace("return a", "return a end)"))
    raw("FUNCTION", "LOAD", body)
    raw("FCALL", "cyc", "0")


def test_redis_call_takes_every_argument_unpack_gives(raw, bridge):
    for count in (257, 4001, 7998, 7999, 8000):
        _unpacked_call(raw, count)


def _unpacked_call(raw, count: int) -> None:
    raw("EVAL", f"local a = {{}} for i = 1, {count} do a[i] = i end "
                f"return redis.call('lpush', 'l', unpack(a))", "0")
    raw("EVAL", f"local a = {{}} for i = 1, {count} do a[i] = 'x' .. i end "
                f"return {{redis.pcall('rpush', 'l', unpack(a))}}", "0")
    raw("LLEN", "l")
    raw("EVAL", f"local a = {{}} for i = 1, {count} do a[i] = i end "
                f"return redis.call('echo', unpack(a))", "0")


def test_redis_call_refuses_what_is_not_a_string_or_number(raw, bridge):
    for argument in ("{}", "nil", "true", "false", "function() end",
                     "coroutine.create(function() end)", "cjson.null",
                     "setmetatable({}, {__tostring = function() return 'x' end})"):
        raw("EVAL", f"return redis.call('echo', {argument})", "0")
        raw("EVAL", f"return redis.pcall('set', 'k', {argument})", "0")
        raw("EVAL", f"return redis.call({argument}, 'x')", "0")


TEXTS = [
    "return {ok = 'a\\0b'}", "return {err = 'a\\0b'}", "return {1, {ok = 'a\\0b'}}",
    "return {1, {err = 'a\\0b'}}", "return redis.error_reply('a\\0b c')",
    "return {1, redis.error_reply('a\\0b c')}", "return {redis.status_reply('a\\0b c')}",
    "error({err = 'a\\0b'})", "error('a\\0b')", "return {big_number = '12\\0x3'}",
    "return {1, {err = '\\r\\nx\\r\\n'}}", "return {err = '\\r\\nx\\r\\n'}",
    "error({err = 'x\\r\\n'})", "error({err = '\\r\\nx'})", "error('x\\r\\ny')",
    "return {err = '\\255\\254'}", "error({err = '\\255\\254'})",
    "return redis.error_reply('\\255 x')", "return {1, {double = 0/0}}",
    "return {1, {double = -(0/0)}, {double = 1/0}, {double = -0.0}}",
    "return {{verbatim_string = {format = 't\\0x', string = 'hi'}}}",
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_texts_are_read_as_redis_reads_them(raw, bridge, protocol):
    """Status and error texts end at a NUL byte (Redis reads them as C strings), keep any other
    byte, and have CR and LF made spaces the way Redis makes them."""
    for script in TEXTS:
        raw("EVAL", script, "0", protocol=protocol)


def test_error_codes_are_counted_as_redis_counts_them(raw, bridge):
    raw("CONFIG", "RESETSTAT")
    for script in ["return {err = 'nospace'}", "return {err = ''}",
                   "return {err = '" + "A" * 40 + " long code'}", "return {1, {err = 'FOO bar'}}",
                   "return {1, {err = 'x'}, {err = ''}}", "return {1, {err = '\\255 x'}}",
                   "return {1, redis.pcall('nosuch')}"]:
        raw("EVAL", script, "0")
    _errorstats(raw)


LIBRARY_LIMITS = [
    "local a = {} a[1] = a return cjson.encode(a)",
    "local a = {} a.x = a return {pcall(cjson.encode, a)}",
    "local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)",
    "local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return {pcall(cjson.encode, t)}",
    "return {pcall(cjson.decode, string.rep('[', 1000) .. string.rep(']', 1000))}",
    "return {pcall(cjson.decode, string.rep('[', 1001) .. string.rep(']', 1001))}",
    "return {pcall(cjson.decode, string.rep('{\"a\":', 1001) .. '1' .. string.rep('}', 1001))}",
    "local a = {} a[1] = a return cmsgpack.pack(a)",
    "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end "
    "return {cmsgpack.unpack(cmsgpack.pack(t))}",
    "return {pcall(cmsgpack.unpack, string.rep('\\145', 20000) .. '\\1')}",
    "return {pcall(cmsgpack.unpack, string.rep('\\1', 8001))}",
    "local a = {} for i = 1, 4001 do a[i] = i end return {pcall(cmsgpack.pack, unpack(a))}",
]


def test_cjson_null_is_what_redis_shows(raw, bridge):
    """Redis's cjson.null is a NULL light userdata: it prints as "userdata: (nil)" and has no
    metatable."""
    for script in ("return tostring(cjson.null)", "error(cjson.null)",
                   "return {getmetatable(cjson.null) == nil, type(cjson.null)}",
                   "return {pcall(error, cjson.null)}", "return cmsgpack.pack(cjson.null)",
                   "return tostring(cjson.decode('[null]')[1])"):
        raw("EVAL", script, "0")


# Lua's C functions minired wraps in its sandbox, given what they refuse: directly (the error
# is at the script's line, with the name the script used) and through pcall (called from C:
# named '?', no position).
BUILTIN_REFUSALS = [
    "setmetatable, 1, {}", "setmetatable, {}, 1", "setmetatable, setmetatable({}, "
    "{__metatable = 'x'}), {}", "rawset, 1, 1, 1", "rawset, {}, nil, 1", "rawset, {}, 0/0, 1",
    "rawset, {}, 1", "rawget, 1, 1", "rawget, {}", "next, 1", "next, {}, 'nokey'", "pairs, 1",
    "ipairs", "ipairs, nil", "loadstring", "loadstring, 'x', {}", "load, 1", "getmetatable",
    "string.dump, 1", "string.dump", "string.dump, print", "math.random, 'x'", "math.random, 0",
    "math.random, 5, 1", "math.random, 1, 2, 3", "math.randomseed", "coroutine.create, 1",
    "coroutine.wrap, print", "table.insert, 1, 1", "table.insert, {}, 1, 2, 3",
    "table.insert, {}, 'x', 1", "table.remove, 1", "table.remove, {}, 'x'", "table.sort, 1",
    "table.sort, {}, 1", "setmetatable, {}", "math.random, 0/0", "math.random, 1, 0/0",
    "redis.log, 0/0, 'x'", "redis.log, 2^40, 'x'", "redis.set_repl, 0/0", "redis.setresp, 2.5",
    "redis.setresp, 2^32 + 2", "struct.unpack, 'b', 'abc', 0", "struct.unpack, '', 'abc', -3.99",
    "struct.unpack, 'b', 'abc', -1", "struct.unpack, '', 'abc', 0/0",
    "table.sort, {3, 2, 1, 5, 4, 7, 6, 9, 8, 10, 12, 11}, function(a, b) return true end",
    "table.sort, {3, 'a', 1}", "table.sort, {3, 2, 1}, function(a, b) error('mine') end",
    "table.sort, {3, 2, 1}, function(a, b) return redis.call('nosuch') end",
]


def test_builtins_refuse_arguments_as_lua_does(raw, bridge):
    for call in BUILTIN_REFUSALS:
        function, _, arguments = call.partition(", ")
        raw("EVAL", f"return {{pcall({call})}}", "0")
        raw("EVAL", f"return {function}({arguments})", "0")
        raw("EVAL", f"local f = {function} return f({arguments})", "0")


def test_library_nesting_limits(raw, bridge):
    for script in LIBRARY_LIMITS:
        raw("EVAL", script, "0")
