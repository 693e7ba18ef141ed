"""Escape attempts: every one must fail. A script must never reach Python, the OS, the file
system or interpreter internals, nor change what another script sees."""
from __future__ import annotations

import pytest

from tests.support.respclient import Err

# Each script returns 'escaped' (or something non-error proving access) only if the attack works.
ATTEMPTS = {
    "python global": "return python.eval('1')",
    "python via _G": "return rawget(_G, 'python')",
    "python via package": "return package.loaded.python",
    "lupa builtins": "return python.builtins.open",
    "require": "return require('os')",
    "os.execute": "return os.execute('true')",
    "io.open": "return io.open('/etc/passwd'):read('*a')",
    "debug library": "return debug.getregistry()",
    "loadfile": "return loadfile('/etc/passwd')",
    "dofile": "return dofile('/etc/passwd')",
    "package.loadlib": "return package.loadlib('libc.so.6', 'system')",
    "module": "return module('x')",
    "setfenv": "return setfenv(1, {})",
    "getfenv": "return getfenv(0)",
    "newproxy": "return newproxy(true)",
    "print": "return print('x')",
    "bytecode via loadstring": "return loadstring(string.dump(function() return 'escaped' end))()",
    "bytecode via load": "local s = string.dump(function() return 'escaped' end) local done "
                         "return load(function() if not done then done = true return s end end)()",
    "_G write": "_G.x = 'escaped' return x",
    "global write": "x = 'escaped' return x",
    "rawset _G": "rawset(_G, 'x', 'escaped') return x",
    "setmetatable _G": "setmetatable(_G, {__index = function() return 'escaped' end}) return nope",
    "string metatable index": "getmetatable('').__index = {upper = function() return 'escaped' end} "
                              "return ('a'):upper()",
    "getmetatable of library function": "local mt = getmetatable(redis.call) return mt.__index",
    "library table write": "string.upper = function() return 'escaped' end return ('a'):upper()",
    "redis.call replaced": "redis.call = function() return 'escaped' end return redis.call('ping')",
    "upvalue of redis.call": "return debug.getupvalue(redis.call, 1)",
    "error object carries Python": "local ok, e = pcall(redis.call) return type(e) == 'userdata' "
                                   "and 'escaped' or error('no python object')",
    "pcall returns Python exception": "local ok, e = pcall(redis.sha1hex, nil, nil) "
                                      "return type(e) == 'userdata' and 'escaped' or error(tostring(e))",
    "redis.call with table arg": "local ok, e = pcall(redis.call, setmetatable({}, "
                                 "{__tostring = function() return 'ping' end})) "
                                 "return type(e) == 'string' and error(e) or 'escaped'",
    "coroutine busy-loop escapes hook": "return coroutine.wrap(function() return debug end)()",
    "table.insert into _G": "table.insert(_G, 'escaped') return _G[1]",
    "__index trick on proxy": "local mt = getmetatable(_G) mt.__index = function() return 'escaped' end "
                              "return anything",
    "collectgarbage gives no python": "return python",
    "string.dump of a C function": "return string.dump(redis.call)",
    "userdata from cjson.null": "return getmetatable(cjson.null).__index",
}

# Attacks that must not leave a trace for the next script, even when the attempt itself
# appears to succeed inside its own run.
PERSISTENCE = [
    ("table.insert(_G, 'junk') return 1", "return rawget(_G, 1) == nil and 'clean' or 'dirty'"),
    ("table.insert(string, 'junk') return 1", "return rawget(string, 1) == nil and 'clean' or 'dirty'"),
    ("pcall(function() string.rep = nil end) return 1", "return type(string.rep)"),
    ("pcall(setmetatable, _G, {}) return 1", "return type(getmetatable(_G).__index)"),
]


@pytest.mark.parametrize("script", list(ATTEMPTS.values()), ids=list(ATTEMPTS))
def test_escape_attempt_fails(mini_raw, script):
    reply = mini_raw.call("EVAL", script, 0)
    # Failing means an error, or finding nothing at all (nil).
    assert reply is None or isinstance(reply, Err), f"escape attempt did not fail: {reply!r}"
    assert reply is None or "internal error" not in reply.message
    assert mini_raw.call("PING") == b"PONG"


@pytest.mark.parametrize("attack, probe", PERSISTENCE, ids=[a for a, _ in PERSISTENCE])
def test_no_script_changes_what_the_next_sees(mini_raw, attack, probe):
    mini_raw.call("EVAL", attack, 0)
    reply = mini_raw.call("EVAL", probe, 0)
    assert reply in (b"clean", b"function"), reply


def test_functions_cannot_reach_python_either(mini_raw):
    reply = mini_raw.call("FUNCTION", "LOAD",
                          "#!lua name=esc\nlocal p = python\nredis.register_function('f', function() end)")
    assert isinstance(reply, Err)
    mini_raw.call("FUNCTION", "LOAD", "#!lua name=esc2\n"
                  "redis.register_function('g', function() return python end)")
    reply = mini_raw.call("FCALL", "g", 0)
    assert isinstance(reply, Err) and "nonexistent global variable 'python'" in reply.message
