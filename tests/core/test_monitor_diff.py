"""MONITOR compared with real Redis: the lines a monitoring client receives for the same
commands, with timestamps and client ports blanked out."""
from __future__ import annotations

import re

import pytest

from tests.support.respclient import Err, RawClient
from tests.support.waiting import blocked_in_client_list, wait_until

END = b"end-of-test"


def normalized(line) -> bytes:
    line = re.sub(rb"^\d+\.\d{6} ", b"<time> ", bytes(line))
    return re.sub(rb"127\.0\.0\.1:\d+", b"<addr>", line)


def lines_until_end(monitor: RawClient) -> list[bytes]:
    seen = []
    while not seen or END not in seen[-1]:
        seen.append(normalized(monitor.read()))
    return seen


def assert_same_lines(monitor_pair, diff) -> list[bytes]:
    diff.check("SET", END, "1")
    expected = lines_until_end(monitor_pair.redis)
    actual = lines_until_end(monitor_pair.minired)
    assert actual == expected
    return expected


def start_monitor(connect):
    monitor = connect()
    monitor.check("MONITOR")
    return monitor


def test_commands_scripts_and_transactions_are_shown_as_redis_shows_them(diff, connect):
    monitor = start_monitor(connect)
    diff.check("SET", "a", "1")
    diff.check("set", "bin", b"x\x00\x01\xff\"\\ \t\r\n\a\b")
    diff.check("EVAL", "redis.call('set', 'b', 'v') return redis.call('get', KEYS[1])", 1, "a")
    sha = diff.check("SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])")
    diff.check("EVALSHA", sha, 1, "n")
    diff.check("EVALSHA", "0" * 40, 0)  # NOSCRIPT: shown all the same, as it starts
    diff.check("FUNCTION", "LOAD", "#!lua name=mon\nredis.register_function('f', "
               "function(keys) return redis.call('incr', keys[1]) end)")
    diff.check("FCALL", "f", 1, "n")
    diff.check("MULTI")
    diff.check("SET", "m", "1")
    diff.check("INCR", "m")
    diff.check("EXEC")
    diff.check("MULTI")
    diff.check("GET", "m")
    diff.check("DISCARD")
    diff.check("SELECT", "3")
    diff.check("EVAL", "return redis.call('ping')", 0)
    diff.check("SELECT", "0")
    diff.check("SET", "s", "abc")
    diff.check("INCR", "s")  # an error from the command: shown
    diff.check("NOSUCHCOMMAND", "x")  # refused before running: not shown
    diff.check("GET")  # wrong arity: not shown
    diff.check("CONFIG", "GET", "maxmemory")  # admin: not shown
    diff.check("FUNCTION", "DELETE", "mon")
    lines = assert_same_lines(monitor, diff)
    assert any(b"[0 lua]" in line for line in lines) and any(b"[3 lua]" in line for line in lines)


def test_passwords_are_redacted(diff, connect):
    monitor = start_monitor(connect)
    diff.check("AUTH", "secret")
    diff.check("AUTH", "user", "secret")
    diff.both("HELLO", "2", "AUTH", "default", "secret")  # (the replies carry client ids)
    diff.both("HELLO", "2", "SETNAME", "x", "AUTH", "default", "secret")
    lines = assert_same_lines(monitor, diff)
    assert not any(b"secret" in line for line in lines)


def test_a_blocked_command_is_shown_once_when_it_blocks(diff, connect):
    monitor = start_monitor(connect)
    waiter = connect()
    waiter.redis.send("BLPOP", "q", 0)
    waiter.minired.send("BLPOP", "q", 0)
    for client in (diff.redis, diff.minired):  # the BLPOPs have arrived and blocked
        wait_until(lambda: blocked_in_client_list(client) == 1, "BLPOP blocked")
    diff.check("RPUSH", "q", "x")
    waiter.read_both()
    diff.check("RPUSH", "q", "y")
    waiter.check("BLPOP", "q", 0)  # served at once
    assert_same_lines(monitor, diff)


def test_a_monitor_s_own_commands_follow_their_replies(diff, connect):
    monitor = start_monitor(connect)
    monitor.check("PING")
    for side in (monitor.redis, monitor.minired):
        assert normalized(side.read()) == b'<time> [0 <addr>] "PING"'
    monitor.redis.send("MONITOR")  # a second MONITOR is ignored: no reply at all
    monitor.minired.send("MONITOR")
    monitor.check("ECHO", "after")
    for side in (monitor.redis, monitor.minired):
        assert normalized(side.read()) == b'<time> [0 <addr>] "ECHO" "after"'
    assert_same_lines(monitor, diff)


def test_reset_ends_monitoring(diff, connect):
    monitor = start_monitor(connect)
    other = start_monitor(connect)
    monitor.check("RESET")
    diff.check("SET", "k", "v")
    monitor.check("PING")  # a PONG, not a line about SET
    lines = assert_same_lines(other, diff)
    assert any(b'"RESET"' in line for line in lines)


def test_monitor_is_refused_inside_transactions_and_scripts(diff):
    diff.check("MULTI")
    diff.check("MONITOR")
    reply = diff.check("EXEC")
    assert isinstance(reply[0], Err)
    diff.check_error("EVAL", "return redis.call('monitor')", 0)


def test_a_monitor_is_flagged_in_client_list(mini_raw, mini):
    watcher = RawClient(mini.port)
    try:
        assert watcher.call("MONITOR") == b"OK"
        assert b" flags=O " in bytes(mini_raw.call("CLIENT", "LIST"))
    finally:
        watcher.close()


@pytest.mark.parametrize("command", [
    ("GET", "k"), ("SET", "k", "v"), ("DBSIZE",), ("SCAN", "0"), ("TYPE", "k"), ("FLUSHALL",),
    ("EVAL", "return 1", "0"), ("EVALSHA", "0" * 40, "0"), ("FCALL", "f", "0"),
    ("PUBLISH", "c", "x"), ("SPUBLISH", "c", "x"), ("XREAD", "STREAMS", "s", "0"),
    ("SCRIPT", "LOAD", "return 1"), ("FUNCTION", "STATS"), ("TIME",), ("SELECT", "1"),
    ("WAIT", "0", "0"), ("MULTI",), ("WATCH", "k"), ("SUBSCRIBE", "c"), ("PING",), ("ECHO", "x"),
])
def test_a_monitor_may_not_read_or_write_the_keyspace(diff, connect, command):
    """To Redis a monitor is a replica, which may not run a command that reads, writes or may
    replicate (EVAL, FCALL, PUBLISH)."""
    monitor = start_monitor(connect)
    redis_reply, mini_reply = monitor.both(*command)
    refused = Err("ERR Replica can't interact with the keyspace")
    assert (mini_reply == refused) == (redis_reply == refused), (redis_reply, mini_reply)
