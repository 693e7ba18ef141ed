"""What a script returns, as the client receives it: random Lua results against real Redis.

minired encodes most array results in one pass (in C in the native bridge, luabridge.pyx;
else sandbox.lua's encode_array) and converts the rest from Python; every route must give
Redis's exact reply, frame types included, to RESP2 and RESP3 clients and for RESP2 and RESP3
scripts. The EVAL tests run once per bridge (conftest.py).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_STRINGS = st.sampled_from(["''", "'a'", "'hello world'", "'x\\r\\ny'", "'\\0bin'", "'-1'", "'3.5'"])
_NUMBERS = st.sampled_from(["0", "1", "-7", "3.99", "-3.99", "2^53", "-2^63", "2^63", "1e300",
                            "-1e300", "0/0", "1/0", "-1/0", "0.5", "123456789012"])
_SPECIAL = st.sampled_from([
    "true", "false", "{ok='fine'}", "{ok='a\\r\\nb'}", "{ok=5}", "{err='MY boom'}", "{err='boom'}",
    "{err=5}", "{double=1.5}", "{double=1/0}", "{double='x'}", "{map={a=1}}", "{set={a=true}}",
    "{big_number='123'}", "{verbatim_string={format='txt', string='v'}}", "{}", "redis.status_reply('s')",
    "redis.error_reply('E x')", "{err='a', ok='b'}", "{ok='b', double=2}", "function() end",
])
_LEAVES = st.one_of(_STRINGS, _NUMBERS, _SPECIAL)


def _arrays(children):
    # A nil inside an array ends it, as Redis reads arrays up to the first nil.
    return st.lists(st.one_of(children, st.just("nil")), max_size=5).map(lambda items: "{" + ", ".join(items) + "}")


_VALUES = st.recursive(_LEAVES, _arrays, max_leaves=12)


@settings(max_examples=120)
@given(value=_VALUES, client_resp=st.sampled_from([2, 3]), script_resp=st.sampled_from([2, 3]))
def test_random_results(diff, bridge, value, client_resp, script_resp):
    diff.hello(client_resp)
    prefix = "redis.setresp(3) " if script_resp == 3 else ""
    diff.check("EVAL", f"{prefix}return {value}", 0)


@settings(max_examples=40)
@given(value=_VALUES, client_resp=st.sampled_from([2, 3]))
def test_random_function_results(diff, value, client_resp):
    diff.hello(client_resp)
    diff.check("FUNCTION", "LOAD", "REPLACE",
               f"#!lua name=results\nredis.register_function('f', function() return {value} end)")
    diff.check("FCALL", "f", 0)


def test_results_inside_transactions(diff, bridge):
    for client_resp in (2, 3):
        diff.hello(client_resp)
        diff.check("MULTI")
        diff.check("EVAL", "return {1, 'a', {true, false}, {ok='x'}}", 0)
        diff.check("EVAL", "return {err='E nested'}", 0)
        diff.check("EXEC")


def test_large_and_deep_results(diff, bridge):
    diff.check("EVAL", "local t = {} for i = 1, 5000 do t[i] = i % 7 == 0 and 'x' or i end return t", 0)
    diff.check("EVAL", "local t = {1} for i = 1, 60 do t = {t, 'v'} end return t", 0)
    diff.check("EVAL", "local t = {} for i = 1, 20 do t = {t} end return t", 0)


def test_results_that_are_not_data(diff, bridge):
    """A function, a coroutine or a library function is no reply Redis knows: nil at the top,
    and an array ends where one stands (hypothesis first found `return function() end`
    failing where a script is entered from C)."""
    for client_resp in (2, 3):
        diff.hello(client_resp)
        for value in ("function() end", "coroutine.create(function() end)", "string.len",
                      "{1, function() end, 2}", "{coroutine.running()}", "{ok='s', f=print}"):
            diff.check("EVAL", f"return {value}", 0)
            diff.check("EVAL", f"return {value}, 'second value ignored'", 0)


# A table built by assignments, not by a constructor, can hold its integer keys in its hash
# part, where a shortcut over next() would miss its fields (an {ok=...} read as an array).
_TABLE_KEYS = st.sampled_from(["ok", "err", "double", "map", "set", "a", "b", "c", 1, 2, 3])
_TABLE_VALUES = st.sampled_from(["'x'", "7", "nil", "{}", "{1}"])


@settings(max_examples=120)
@given(steps=st.lists(st.tuples(_TABLE_KEYS, _TABLE_VALUES), min_size=1, max_size=8),
       client_resp=st.sampled_from([2, 3]))
def test_results_built_by_assignments(diff, bridge, steps, client_resp):
    diff.hello(client_resp)
    body = " ".join(f"t[{key if isinstance(key, int) else repr(key)}] = {value}" for key, value in steps)
    for shape in ("t", "{t}", "{1, t, 'after'}"):
        diff.check("EVAL", f"local t = {{}} {body} return {shape}", 0)


def test_a_status_among_array_keys_in_the_hash_part(diff, bridge):
    """Found by a search over assignment orders: t[1] ends up in the hash part after 'ok'."""
    script = "local t = {} t.ok = 'x' t.c = 1 t[2] = 'v' t[2] = nil t[1] = 'v' return {t}"
    for client_resp in (2, 3):
        diff.hello(client_resp)
        diff.check("EVAL", script, 0)


@pytest.mark.parametrize("value", [
    "{true, false}", "{{true}, {false, 'x'}}", "{{ok='a\\r\\nb'}}", "{{ok='\\r\\n'}, {ok=''}}",
    "{0, -1, 1023, 1024, -1024, 2^62, -2^63, 0.5, -0.5, -0.0}", "{'', '\\r\\n', 'x'}",
    "{{}, {{}}, {1, {2, {3}}}}", "{{err='E x'}}", "{{double=0.5}}", "{1, {map={a=1}}}",
])
def test_frames_inside_arrays(diff, bridge, value):
    """Each kind of element an encoder writes, for every pairing of client and script protocol
    (a random mix reaches some pairings only rarely)."""
    for client_resp in (2, 3):
        diff.hello(client_resp)
        for prefix in ("", "redis.setresp(3) "):
            diff.check("EVAL", f"{prefix}return {value}", 0)
