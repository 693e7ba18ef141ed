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


@pytest.mark.parametrize("first_line", [
    '#!lua name="foo"', "#!lua name='foo'", "#!lua NAME=foo", "#!LUA name=foo",
    '#!lua name="fo o"', '#!lua name="foo', "#!lua  name=foo  ", "#! lua name=foo", "#!  ",
    "#!", '#!lua name=foo"x"', '#!lua "name=foo"', "#!lua name=foo\t", '#!"lua" name=foo',
    "#!lua\tname=foo", "#!lua name=foo\r", "#!lux name=a-b", "#!lux", "#!lux name=",
    "#!lua name=a-b x=1",
])
def test_library_metadata_is_split_like_arguments(diff, first_line):
    """Redis reads the first line with sdssplitargs: quotes, any blank, NAME= in any case; its
    errors come in its order (metadata, then the name, then the engine)."""
    diff.check("FUNCTION", "LOAD", "REPLACE",
               first_line + "\nredis.register_function('f', function() return 1 end)")
    diff.check("FUNCTION", "LIST", unordered=True)


def test_argument_errors(diff):
    code = "#!lua name=test\nredis.register_function('test', function() return 'hello' end)"
    diff.check("FUNCTION", "LOAD", "foo", "bar", code)
    diff.check("FUNCTION", "LOAD", "REPLACE", "foo", code)
    diff.check("FUNCTION", "LOAD", "#!lua name=x")       # no line feed after the metadata
    diff.check("FUNCTION", "LOAD", code)
    diff.check("FCALL", "test", "bad_arg")
    diff.check("FCALL_RO", "test", "x")
    diff.check("FCALL", "test", "10", "key1")
    diff.check("FCALL", "test", "-1", "key1")
    diff.check("FUNCTION", "RESTORE", "arg1", "args2", "arg3")
    diff.check("function", "restore", "arg1", "args2", "arg3")
    diff.check("FUNCTION", "FLUSH", "SYNC", "extra")
    diff.check("FUNCTION", "FLUSH", "bad")
    diff.check("SCRIPT", "FLUSH", "SYNC", "extra")
    diff.check("FUNCTION", "LIST", "foo")


def test_function_names_ignore_case_library_names_do_not(diff):
    """FCALL finds a function whatever the case; library names are case-sensitive, and two
    spellings of one function name may share a library."""
    diff.check("FUNCTION", "LOAD", "#!lua name=a\nredis.register_function('Foo', function() "
               "return 1 end)\nredis.register_function('bar', function() return 2 end)")
    for name in ("foo", "FOO", "Foo", "BAR"):
        diff.check("FCALL", name, 0)
        diff.check("FCALL_RO", name, 0)
    diff.check("FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('fOO', function() "
               "return 3 end)")                                  # Function fOO already exists
    diff.check("FUNCTION", "LOAD", "#!lua name=A\nredis.register_function('baz', function() "
               "return 4 end)")                                  # another library
    diff.check("FUNCTION", "LIST", unordered=True)
    diff.check("FCALL", "baz", 0)
    diff.check("FUNCTION", "DELETE", "A")
    diff.check("FCALL", "baz", 0)
    diff.check("FUNCTION", "DELETE", "a")
    diff.check("FCALL", "foo", 0)
    diff.check("FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('FOO', function() "
               "return 7 end)")
    diff.check("FCALL", "foo", 0)
    payload, _ = diff.both("FUNCTION", "DUMP")
    diff.check("FUNCTION", "RESTORE", payload)                   # Library b already exists
    diff.check("FUNCTION", "DELETE", "b")
    diff.check("FUNCTION", "LOAD", "#!lua name=d\nredis.register_function('foo', function() "
               "return 8 end)")
    diff.check("FUNCTION", "RESTORE", payload)                   # Function FOO already exists


def test_one_library_may_spell_a_function_name_twice(diff):
    # (never deleted nor replaced here: Redis 7.0.15 crashes unlinking such a library)
    diff.check("FUNCTION", "LOAD", "#!lua name=c\nredis.register_function('x', function() "
               "return 5 end)\nredis.register_function('X', function() return 6 end)")
    diff.check("FUNCTION", "LIST", unordered=True)
    diff.check("FUNCTION", "STATS")      # both counted, though FCALL finds only one
    diff.check("FUNCTION", "LOAD", "#!lua name=d\nredis.register_function('x', function() "
               "return 7 end)")


def test_list_writes_maps_and_flags_in_redis_s_order(diff):
    """FUNCTION LIST's libraries and functions are maps (RESP3 `%`; minired wrote arrays),
    and a function's flags come in the flag table's order whatever order the library gave
    (minired wrote a Python set: an order that changed with the hash seed)."""
    diff.check("FUNCTION", "LOAD",
               "#!lua name=flagged\nredis.register_function{function_name='f', "
               "callback=function() return 1 end, description='d', flags={'allow-cross-slot-keys', "
               "'no-cluster', 'allow-stale', 'allow-oom', 'no-writes'}}")
    diff.check("FUNCTION", "LIST")  # RESP2: the flags' order is compared
    diff.hello(3)
    diff.check("FUNCTION", "LIST", "WITHCODE")
    diff.check("FUNCTION", "DELETE", "flagged")
