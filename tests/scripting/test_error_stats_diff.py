"""Errors of commands run by scripts, counted in INFO as Redis 7.0 counts them, against real
Redis: a command's error (or its call refused) is counted once, when it happens, and a script
ending with it (raised, returned, re-raised with error(e), or inside an array) is not counted
again; redis.pcall's error table says so (ignore_error_stats_update). Errors the script makes
itself are counted when the script answers them. The script's call still counts as failed.

Each test runs on both of minired's ways from Lua into Python (conftest.py's `bridge`) and
compares errorstats, total_error_replies and every command's calls, rejected_calls and
failed_calls (not their times) after CONFIG RESETSTAT on both servers.
"""
from __future__ import annotations

import pytest

from tests.support.respclient import Err

# Commands whose own stats the comparison leaves out: the test's bookkeeping.
_BOOKKEEPING = frozenset({"cmdstat_config", "cmdstat_info"})
_COUNTS = ("calls", "rejected_calls", "failed_calls")


def _error_stats(client) -> dict:
    stats: dict = {}
    for line in client.call("INFO", "everything").decode().split("\r\n"):
        name, _, value = line.partition(":")
        if name.startswith("errorstat_") or name == "total_error_replies":
            stats[name] = value
        elif name.startswith("cmdstat_") and name not in _BOOKKEEPING:
            fields = dict(part.split("=", 1) for part in value.split(","))
            stats[name] = {count: fields[count] for count in _COUNTS}
    return stats


def _assert_same_stats(diff) -> dict:
    theirs, ours = _error_stats(diff.redis), _error_stats(diff.minired)
    assert ours == theirs, f"history: {diff.log[-12:]!r}"
    return theirs


def _reset(diff) -> None:
    diff.check("SET", "str", "x")
    diff.check("CONFIG", "RESETSTAT")


_FAILING = "redis.call('incr', KEYS[1])"
_KEYS_OF = "local k = {} for n in pairs(t) do k[#k + 1] = n end table.sort(k) return k"

# Scripts run with KEYS[1] = "str" (a string that is no integer).
SCENARIOS = {
    "call_pcall_error_reply_and_reraise": [
        f"return {_FAILING}",
        "return redis.pcall('incr', KEYS[1])",
        "local e = redis.pcall('incr', KEYS[1]) return redis.error_reply(e.err)",
        "local e = redis.pcall('incr', KEYS[1]) error(e)",
    ],
    "pcall_of_a_failing_command_then_a_normal_return": [
        "redis.pcall('incr', KEYS[1]) return 'fine'",
        "local ok = pcall(redis.call, 'incr', KEYS[1]) return tostring(ok)",
    ],
    "errors_the_script_makes": [
        "return redis.error_reply('MY own error')",
        "return redis.error_reply('noprefix')",
        "error('x')",
        "error({err='X y'})",
        "return {err='X y'}",
        "error({err='X y', ignore_error_stats_update=true})",
        "return {err='X y', ignore_error_stats_update=true}",
        "error({err='X y', ignore_error_stats_update='yes'})",
        "return {err='X y', ignore_error_stats_update=1}",
    ],
    "refused_calls": [
        "return redis.pcall('get')",
        "return redis.call('get', 'a', 'b')",
        "return redis.pcall('nosuchcommand')",
        "return redis.call('nosuchcommand')",
        "return redis.pcall('multi')",
        "return redis.call('eval', 'return 1', 0)",
        "redis.pcall('get') return 1",
        "local e = redis.pcall('config', 'nosuchsub') return e",
    ],
    "errors_of_the_redis_api_itself": [
        "return redis.call()",
        "return redis.pcall()",
        "return redis.call({})",
        "return redis.pcall('get', {})",
        "local e = redis.pcall() error(e)",
    ],
    "errors_within_an_array_result": [
        "return {redis.pcall('incr', KEYS[1]), redis.pcall('incr', KEYS[1])}",
        "return {redis.error_reply('X y'), redis.error_reply('Z y'), 1}",
        "return {1, {redis.pcall('incr', KEYS[1]), redis.error_reply('X y')}}",
        "return {redis.pcall('get'), 'a'}",
    ],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_eval_errors_counted_once(diff, bridge, scenario):
    _reset(diff)
    for script in SCENARIOS[scenario]:
        diff.check("EVAL", script, 1, "str")
    stats = _assert_same_stats(diff)
    assert stats.get("total_error_replies", "0") != "0"


def test_the_counts_redis_gives_for_a_failing_incr(diff, bridge):
    """The sequence of the issue, with Redis's numbers spelt out."""
    _reset(diff)
    for script in SCENARIOS["call_pcall_error_reply_and_reraise"]:
        diff.check_error("EVAL", script, 1, "str")
    stats = _assert_same_stats(diff)
    assert stats["total_error_replies"] == "5"
    assert stats["errorstat_ERR"] == "count=5"
    assert stats["cmdstat_eval"] == {"calls": "4", "rejected_calls": "0", "failed_calls": "4"}
    assert stats["cmdstat_incr"] == {"calls": "4", "rejected_calls": "0", "failed_calls": "4"}


def test_a_pcall_then_a_normal_return_counts_the_command_error_only(diff, bridge):
    _reset(diff)
    assert diff.check("EVAL", "redis.pcall('incr', KEYS[1]) return 'fine'", 1, "str") == b"fine"
    stats = _assert_same_stats(diff)
    assert stats["total_error_replies"] == "1"
    assert stats["cmdstat_eval"]["failed_calls"] == "0"


def test_read_only_scripts_refusing_writes(diff, bridge):
    _reset(diff)
    for command in ("EVAL_RO", "EVAL"):
        diff.check(command, "return redis.pcall('set', KEYS[1], 'y')", 1, "str")
        diff.check(command, "return redis.call('set', KEYS[1], 'y')", 1, "str")
        diff.check(command, "#!lua flags=no-writes\nreturn redis.pcall('del', KEYS[1])", 1, "str")
    _assert_same_stats(diff)


def test_evalsha_counts_as_eval_does(diff, bridge):
    script = "local e = redis.pcall('incr', KEYS[1]) error(e)"
    sha = diff.check("SCRIPT", "LOAD", script)
    _reset(diff)
    for _ in range(3):
        diff.check_error("EVALSHA", sha, 1, "str")
    diff.check_error("EVALSHA_RO", sha, 1, "str")
    _assert_same_stats(diff)


@pytest.mark.parametrize("call", [
    "redis.pcall('incr', KEYS[1])", "redis.pcall('get', 'a', 'b')", "redis.pcall('nosuch')",
    "redis.pcall('multi')", "redis.pcall()", "redis.pcall('get', {})",
    "redis.error_reply('X y')", "redis.pcall('config', 'set', 'maxmemory', 'x')",
])
def test_the_keys_of_a_pcall_error_table(diff, bridge, call):
    _reset(diff)
    diff.check("EVAL", f"local t = {call} {_KEYS_OF}", 1, "str")
    _assert_same_stats(diff)


def test_the_table_a_redis_call_error_raises(diff, bridge):
    """pcall (Lua's, as Redis 7 changes it) hands back the message; a script reaching the
    raised table through xpcall sees the flag."""
    _reset(diff)
    diff.check("EVAL", "local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), e}",
               1, "str")
    diff.check("EVAL", "local ok, t = xpcall(function() return redis.call('incr', KEYS[1]) end, "
               f"function(e) return e end) {_KEYS_OF}", 1, "str")
    diff.check("EVAL", "local ok, t = xpcall(function() return redis.call('get') end, "
               f"function(e) return e end) {_KEYS_OF}", 1, "str")
    _assert_same_stats(diff)


def test_transaction_running_failing_scripts(diff, bridge):
    _reset(diff)
    diff.check("MULTI")
    diff.check("EVAL", f"return {_FAILING}", 1, "str")
    diff.check("EVAL", "return redis.pcall('incr', KEYS[1])", 1, "str")
    diff.check("EVAL", "return {redis.pcall('incr', KEYS[1])}", 1, "str")
    diff.check("EVAL", "return redis.error_reply('MY own')", 0)
    diff.check("EVAL", "return redis.pcall('get')", 0)
    diff.check("EVAL", "redis.pcall('incr', KEYS[1]) return 1", 1, "str")
    reply = diff.check("EXEC")
    assert isinstance(reply[0], Err)
    _assert_same_stats(diff)


FUNCTIONS = ("#!lua name=errlib\n"
             "redis.register_function('call', function(keys) "
             "return redis.call('incr', keys[1]) end)\n"
             "redis.register_function('pcall', function(keys) "
             "return redis.pcall('incr', keys[1]) end)\n"
             "redis.register_function('reraise', function(keys) "
             "local e = redis.pcall('incr', keys[1]) error(e) end)\n"
             "redis.register_function('own', function() return redis.error_reply('MY own') end)\n"
             "redis.register_function('nested', function(keys) "
             "return {redis.pcall('incr', keys[1]), redis.error_reply('MY own')} end)\n"
             "redis.register_function('arity', function() return redis.call('get') end)\n"
             "redis.register_function('swallow', function(keys) "
             "redis.pcall('incr', keys[1]) return 1 end)\n"
             "redis.register_function{function_name='ro', flags={'no-writes'}, "
             "callback=function(keys) return redis.pcall('set', keys[1], 'y') end}\n"
             "redis.register_function('keys', function(keys) "
             f"local t = redis.pcall('incr', keys[1]) {_KEYS_OF} end)")


def test_functions_count_as_scripts_do(diff, bridge):
    diff.check("FUNCTION", "LOAD", FUNCTIONS)
    _reset(diff)
    for name in ("call", "pcall", "reraise", "own", "nested", "arity", "swallow", "ro", "keys"):
        diff.check("FCALL", name, 1, "str")
    diff.check("FCALL_RO", "ro", 1, "str")
    diff.check("MULTI")
    diff.check("FCALL", "reraise", 1, "str")
    diff.check("FCALL", "own", 1, "str")
    diff.check("EXEC")
    _assert_same_stats(diff)


def test_acl_denials_inside_scripts_and_transactions(diff, connect, bridge):
    diff.check("ACL", "SETUSER", "scripted", "on", "nopass", "+eval", "+get", "+multi", "+exec",
               "+set", "~*")
    user = connect()
    try:
        user.check("AUTH", "scripted", "any")
        _reset(diff)
        user.check("EVAL", "return redis.pcall('del', KEYS[1])", 1, "str")
        user.check("EVAL", "return redis.call('del', KEYS[1])", 1, "str")
        user.check("EVAL", "redis.pcall('del', KEYS[1]) return 1", 1, "str")
        user.check("EVAL", f"local t = redis.pcall('del', KEYS[1]) {_KEYS_OF}", 1, "str")
        user.check("MULTI")
        user.check("SET", "a", "b")
        user.check("GET", "a")
        diff.check("ACL", "SETUSER", "scripted", "-set")
        user.check("EXEC")
        _assert_same_stats(diff)
    finally:
        diff.check("ACL", "DELUSER", "scripted")
