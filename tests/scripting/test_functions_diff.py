"""FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS and FCALL against real Redis."""
from __future__ import annotations

import pytest

LIB = ("#!lua name=mylib\n"
       "redis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\n"
       "redis.register_function{function_name='f2', callback=function(keys, args) "
       "return redis.call('set', keys[1], 'x') end, flags={'no-writes'}, description='desc'}")


def test_load_call_list_delete(diff):
    diff.check("FUNCTION", "LOAD", LIB)
    diff.check("FCALL", "f1", 1, "k", "a")
    diff.check("FCALL", "f2", 1, "k")
    diff.check("FCALL_RO", "f1", 1, "k")
    diff.check("FCALL", "nosuch", 0)
    diff.check("FCALL", "f1", -1)
    diff.check("FCALL", "f1", 5)
    # Redis lists a library's functions in hash order: compare them as a multiset.
    diff.check("FUNCTION", "LIST", "LIBRARYNAME", "my*", "WITHCODE", unordered=True)
    diff.check("FUNCTION", "LIST", "LIBRARYNAME", "my")
    diff.check("FUNCTION", "LIST", "LIBRARYNAME", "my", "LIBRARYNAME", "x")
    diff.check("FUNCTION", "LIST", "bogus")
    diff.check("FUNCTION", "LIST", "LIBRARYNAME")
    diff.check("FUNCTION", "LOAD", LIB)
    diff.check("FUNCTION", "LOAD", "REPLACE", LIB)
    diff.check("FUNCTION", "STATS")
    diff.check("FUNCTION", "DELETE", "nosuch")
    diff.check("FUNCTION", "DELETE", "mylib")
    diff.check("FCALL", "f1", 0)


@pytest.mark.parametrize("code", [
    "#!lua name=mylib2\nreturn 1",
    "#!lua name=mylib3\nredis.call('ping')",
    "#!lua name=mylib3\nlocal x = KEYS",
    "#!lua name=mylib3\nx = 1",
    "#!lua name=mylib3\nerror('boom')",
    "#!lua name=mylib3\n((",
    "#!lua name=mylib3\nredis.register_function('f3', 5)",
    "#!lua name=mylib3\nredis.register_function('f 3', function() end)",
    "#!lua name=mylib3\nredis.register_function{function_name='f3', callback=function() end, flags={'bogus'}}",
    "#!lua name=mylib3\nredis.register_function{function_name='f3', callback=function() end, foo=1}",
    "#!lua name=mylib3\nredis.register_function()",
    "#!lua name=mylib3\nredis.register_function('a','b','c')",
    "#!lua name=mylib3\nredis.register_function('f')",
    "#!lua name=mylib3\nredis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
    "#!lua name=mylib3\nredis.register_function{function_name='f', callback=function() end, description={}}",
    "#!lua name=mylib3\nredis.register_function{callback=function() return 1 end}",
    "#!lua name=mylib3\nredis.register_function{function_name='f'}",
    "#!lua name=t\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)",
    "#!lua name=my lib\nreturn 1",
    "#!lua name=my-lib\nreturn 1",
    "#!lua\nreturn 1",
    "#!lua name=x foo=bar\nreturn 1",
    "#!lux name=x\nreturn 1",
    "return 1",
    "#!lua name=a name=b\nreturn 1",
    "#!lua name=t\nlocal t = string.format('%d', 5)",
    "#!lua name=t\nredis.setresp(3)",
])
def test_load_errors(diff, code):
    diff.check("FUNCTION", "LOAD", code)


@pytest.mark.parametrize("body", [
    "return redis.register_function", "return error('x')", "return x", "return KEYS",
    "x = 5", "return redis.call('nosuch')", "local t = {} for k in pairs(_G) do t[#t+1] = k end "
    "table.sort(t) return t", "local t = {} for k in pairs(redis) do t[#t+1] = k end "
    "table.sort(t) return t",
])
def test_function_runtime(diff, body):
    diff.check("FUNCTION", "LOAD", "REPLACE",
               f"#!lua name=t\nredis.register_function('f', function(keys, args) {body} end)")
    diff.check("FCALL", "f", 0)


def test_upvalues_persist_between_calls(diff):
    diff.check("FUNCTION", "LOAD", "#!lua name=t\nlocal y = 1\n"
               "redis.register_function('f', function() y = y + 1 return y end)")
    diff.check("FCALL", "f", 0)
    diff.check("FCALL", "f", 0)


def test_dump_restore_round_trip(diff, real_redis, mini):
    diff.check("FUNCTION", "LOAD", LIB)
    payload, _ = diff.both("FUNCTION", "DUMP")
    diff.check("FUNCTION", "FLUSH")
    diff.check("FUNCTION", "RESTORE", payload)      # a payload real Redis made, on both
    diff.check("FCALL", "f1", 1, "k", "a")
    diff.check("FUNCTION", "RESTORE", payload)
    diff.check("FUNCTION", "RESTORE", payload, "REPLACE")
    diff.check("FUNCTION", "RESTORE", payload, "BOGUS")
    diff.check("FUNCTION", "RESTORE", "bogus")
    _, ours = diff.both("FUNCTION", "DUMP")
    diff.check("FUNCTION", "FLUSH", "bogus")
    diff.check("FUNCTION", "FLUSH", "SYNC")
    diff.check("FUNCTION", "RESTORE", ours)         # a payload minired made, on both
    diff.check("FUNCTION", "LIST", unordered=True)
    diff.check("FUNCTION", "KILL")
    diff.check("FUNCTION", "HELP")
