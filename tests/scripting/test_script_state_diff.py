"""What the server's state does to scripts, against real Redis: min-replicas-to-write (minired
has no replicas, so writes are refused as on a Redis without enough of them), may-replicate
commands in read-only scripts, redis.acl_check_cmd for the caller's ACL user, and the Lua
memory INFO reports after many scripts."""
from __future__ import annotations

import pytest

LIBRARY = ("#!lua name=lib\n"
           "redis.register_function('w', function() return redis.call('get','x') end)\n"
           "redis.register_function{function_name='r', callback=function() "
           "return redis.call('get','x') end, flags={'no-writes'}}")


@pytest.fixture
def no_good_replicas(diff):
    diff.check("CONFIG", "SET", "min-replicas-to-write", 1)
    try:
        yield
    finally:
        diff.both("CONFIG", "SET", "min-replicas-to-write", 0)
        diff.both("CONFIG", "SET", "min-replicas-max-lag", 10)


def test_writes_refused_without_enough_replicas(diff, no_good_replicas):
    diff.check("CONFIG", "SET", "min-replicas-to-write", 0)
    diff.check("SET", "x", "some value")
    diff.check("FUNCTION", "LOAD", LIBRARY)
    diff.check("CONFIG", "RESETSTAT")
    diff.check("CONFIG", "SET", "min-replicas-to-write", 1)
    diff.check("SET", "x", "other")                          # NOREPLICAS
    diff.check("GET", "x")
    diff.check("FUNCTION", "LOAD", "REPLACE", LIBRARY)        # a write command too
    for script in ("#!lua flags=no-writes\nreturn redis.call('get','x')",
                   "return redis.call('get','x')",
                   "#!lua\nreturn redis.call('get','x')",     # may write: refused at once
                   "return redis.call('set','x', 1)",         # refused at its first write
                   "return redis.pcall('set','x', 1)",
                   "return redis.pcall('publish','ch', 1)"):
        diff.check("EVAL", script, 1, "x")
    for name in ("w", "r"):
        diff.check("FCALL", name, 0)
        diff.check("FCALL_RO", name, 0)
    diff.check("MULTI")
    diff.check("GET", "x")
    diff.check("EXEC")                                         # reads only: runs
    diff.check("MULTI")
    diff.check("SET", "x", 2)                                  # refused while queuing
    diff.check("EXEC")
    diff.check("MULTI")
    diff.check("EVAL", "return redis.call('set','x', 1)", 1, "x")
    diff.check("EXEC")
    diff.check("CONFIG", "SET", "min-replicas-max-lag", 0)   # no lag limit: no check at all
    diff.check("SET", "y", 1)
    diff.check("CONFIG", "SET", "min-replicas-max-lag", 10)
    diff.check("SET", "y", 2)
    diff.check("CONFIG", "SET", "min-replicas-to-write", 0)
    diff.check("SET", "y", 3)
    diff.check("INFO", "errorstats")


@pytest.mark.parametrize("runner", ["EVAL_RO", "EVAL"])
@pytest.mark.parametrize("script", [
    "return redis.pcall('publish', 'ch', 1)", "return redis.pcall('pfcount', 'x')",
    "return redis.pcall('spublish', 'ch', 1)", "return redis.pcall('set', 'x', 1)",
    "return redis.pcall('get', 'x')",
    "#!lua flags=no-writes\nreturn redis.pcall('publish', 'ch', 1)",
])
def test_may_replicate_commands_count_as_writes_in_read_only_scripts(diff, runner, script):
    diff.check(runner, script, 1, "x")


def test_acl_check_cmd_asks_for_the_callers_user(diff, connect):
    admin = connect()
    admin.check("ACL", "LOG", "RESET")
    admin.check("ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "+client", "~x*")
    try:
        diff.check("AUTH", "bob", "123")
        for call, keys in [
            ("redis.acl_check_cmd('set','xx',1)", (1, "xx")),
            ("redis.acl_check_cmd('set','xx',1.5)", (1, "xx")),
            ("redis.acl_check_cmd('hset','xx','f',1)", (1, "xx")),
            ("redis.acl_check_cmd('set','yy',1)", (0,)),
            ("redis.acl_check_cmd('invalid-cmd','arg')", (0,)),
            ("redis.acl_check_cmd('client','nosuch')", (0,)),
            ("redis.acl_check_cmd('client','id')", (0,)),
            ("redis.acl_check_cmd('config','get','x')", (0,)),
            ("redis.acl_check_cmd(1.5)", (0,)),
            ("redis.acl_check_cmd()", (0,)),
            ("redis.acl_check_cmd('set', {})", (0,)),
        ]:
            diff.check("EVAL", f"return {call}", *keys)
        diff.check("AUTH", "default", "x")
        diff.check("EVAL", "return redis.acl_check_cmd('hset','xx','f',1)", 0)
        assert admin.check("ACL", "LOG") == []                 # asking logs nothing
    finally:
        admin.both("ACL", "DELUSER", "bob")


def test_lua_memory_stays_small_after_many_scripts(diff, mini):
    """INFO's used_memory_lua after 10,000 EVALs is what the scripts hold, garbage included,
    under Redis's own test bound (unit/scripting: < 100 KB), and the runtime does not grow."""
    from tests.support.respclient import RawClient

    client = RawClient(mini.port)
    try:
        client.call("SET", "x", 0)
        for _ in range(2):
            replies = client.pipeline([("EVAL", "return redis.call('incr',KEYS[1])", 1, "x")
                                       for _ in range(10000)])
            assert replies[-1] in (10000, 20000)
            info = client.call("INFO", "memory").decode()
            used = int(info.split("used_memory_lua:")[1].split()[0])
            assert used < 100 * 1024, used
    finally:
        client.close()
