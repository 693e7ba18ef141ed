"""The Lua debugger (SCRIPT DEBUG YES|SYNC), session for session against redis-server: every
reply of every debugger command, byte for byte in its parsed form.

Each session runs on servers of its own (a SYNC session holds the whole server), both started
fresh for this module.
"""
from __future__ import annotations

import re

import pytest

from tests.support.respclient import Err, RawClient
from tests.support.servers import MiniredProcess, RedisServer


@pytest.fixture(scope="module")
def servers():
    with RedisServer() as redis, MiniredProcess() as mini:
        yield redis.port, mini.port


def _session(port: int, script: str, commands: list, mode: str = "sync", keys=(), args=(),
             before=()) -> list:
    """SCRIPT DEBUG, then EVAL, then each debugger command: every reply, and what is left
    (the end of the session: <endsession>, the EVAL's reply, then the connection closes)."""
    setup = RawClient(port)
    setup.call("FLUSHALL")
    for command in before:
        setup.call(*command)
    setup.close()
    client = RawClient(port)
    try:
        replies = [client.call("SCRIPT", "DEBUG", mode),
                   client.call("EVAL", script, len(keys), *keys, *args)]
        for command in commands:
            replies.append(client.call(*command))
            if replies[-1] == [b"<endsession>"]:
                replies.append(client.read())  # the EVAL's reply
                break
        return replies
    finally:
        client.close()


def _same(servers, *args, **kwargs) -> list:
    redis_port, mini_port = servers
    expected = _session(redis_port, *args, **kwargs)
    assert _session(mini_port, *args, **kwargs) == expected
    return expected


SCRIPT = """local a = 1
local t = {1,'x',{k=2}}
redis.call('set','k','v')
redis.debug('hi', a, t)
local ok = redis.pcall('incr','k')
redis.call('lpush','l','a')
return redis.call('get','k')
"""


def test_stepping_printing_and_breakpoints(servers):
    replies = _same(servers, SCRIPT, [
        ("s",), ("s",), ("p",), ("p", "t"), ("p", "KEYS"), ("p", "ARGV"), ("p", "zz"),
        ("s",), ("s",), ("s",), ("b", "7"), ("b",), ("b", "99"), ("b", "-3"), ("b", "x"),
        ("l",), ("l", "2", "1"), ("w",), ("t",), ("h",), ("x",), ("c",), ("c",)],
        keys=["k1"], args=["a1"])
    assert replies[1] == [b"* Stopped at 1, stop reason = step over", b"-> 1   local a = 1"]
    assert replies[-2:] == [[b"<endsession>"], b"v"]


def test_eval_redis_and_maxlen(servers):
    _same(servers, SCRIPT, [
        ("e", "1+1"), ("e", "a+1"), ("e", "foo("), ("e", "redis.call('ping')"),
        ("r", "get", "k"), ("r", "set", "big", "x" * 300), ("r", "get", "big"),
        ("r", "hgetall", "big"), ("r", "nosuch"), ("r", "get"), ("m",), ("m", "10"),
        ("r", "get", "big"), ("m", "0"), ("r", "get", "big"), ("r", "lrange", "l", "0", "-1"),
        ("r", "mget", "nokey", "big"), ("c",)])


def test_stepping_over_the_first_use_of_a_library():
    """The first script to reach cjson or cmsgpack builds it (Lua code in minired, C in
    Redis): stepping over that line must stop at the script's next line, not in the build."""
    script = "local x = cjson.encode({1})\nlocal y = cmsgpack.pack(2)\nreturn x"
    commands = [("s",), ("s",), ("s",), ("s",), ("c",)]
    with RedisServer() as redis, MiniredProcess() as mini:  # (a runtime no script has used)
        assert _session(mini.port, script, commands) == _session(redis.port, script, commands)


def _masked(replies: list) -> list:
    """The replies with every function's address (function@0x...) made one placeholder."""
    def mask(value):
        if isinstance(value, list):
            return [mask(item) for item in value]
        return re.sub(rb"@0x[0-9a-f]+", b"@ADDR", value) if isinstance(value, bytes) else value
    return mask(replies)


def test_read_only_tables_show_what_they_hold(servers):
    """redis.debug and print of _G's tables (minired's are proxies) list their fields as
    Redis's do; functions show their addresses, which differ between the servers."""
    script = "local b = bit\nredis.debug(bit, math.pi)\nreturn 1"
    commands = [("s",), ("p", "b"), ("s",), ("c",)]
    redis_port, mini_port = servers
    expected = _masked(_session(redis_port, script, commands))
    assert _masked(_session(mini_port, script, commands)) == expected
    assert b'["band"]="function@ADDR"' in b" ".join(expected[3])


def test_stepping_logs_each_call_and_error(servers):
    _same(servers, SCRIPT, [("s",)] * 8, before=[("set", "k", "v")])


def test_breakpoint_from_the_script_and_abort(servers):
    script = "local x = 1\nredis.breakpoint()\nx = x + 1\nreturn x"
    replies = _same(servers, script, [("c",), ("p", "x"), ("a",)])
    assert isinstance(replies[-1], Err)


def test_the_script_ends_with_its_reply_and_the_connection_closes(servers):
    for port in servers:
        client = RawClient(port)
        client.call("SCRIPT", "DEBUG", "sync")
        client.call("EVAL", "return 7", 0)
        assert client.call("c") == [b"<endsession>"]
        assert client.read() == 7
        with pytest.raises(ConnectionError):
            client.read()
        client.close()


def test_forked_session_leaves_the_data_as_it_was(servers):
    replies = _same(servers, "redis.call('incr','n')\nreturn redis.call('get','n')", [("n",), ("c",)],
                    mode="yes", before=[("set", "n", "10")])
    assert replies[-1] == b"11"
    for port in servers:
        client = RawClient(port)
        assert client.call("GET", "n") == b"10"  # the child's write went with it
        client.close()


def test_debugger_protocol_errors(servers):
    # Redis's own suite: garbage as a command name is an unknown debugger command, an inline
    # command a protocol error ending the session.
    _same(servers, "return 'hello'", [("'hello\0world'",), ("\0hello",), ("redis", *["test"] * 100)])
    redis_port, mini_port = servers
    outcomes = []
    for port in servers:
        client = RawClient(port)
        client.call("SCRIPT", "DEBUG", "sync")
        client.call("EVAL", "return 1", 0)
        client.send_raw(b"step\r\n")
        outcomes.append((client.read(), client.read()))
        client.close()
    assert outcomes[0] == outcomes[1]


def test_script_debug_arguments(servers):
    for port in servers:
        client = RawClient(port)
        assert client.call("SCRIPT", "DEBUG", "maybe") == Err("ERR Use SCRIPT DEBUG YES/SYNC/NO")
        client.call("SCRIPT", "DEBUG", "yes")
        assert client.call("EVALSHA", "a" * 40, 0) == \
            Err("ERR Please use EVAL instead of EVALSHA for debugging")
        assert client.call("SCRIPT", "DEBUG", "no") == b"OK"
        assert client.call("EVAL", "return 2", 0) == 2  # no session once turned off
        client.call("MULTI")
        client.call("SCRIPT", "DEBUG", "sync")
        assert client.call("EXEC") == [Err("ERR SCRIPT DEBUG must be called outside a pipeline")]
        client.close()


def test_in_process_server_runs_a_session(mini):
    """The in-process server runs in a thread of its own, where signal handlers cannot be set."""
    client = RawClient(mini.port)
    try:
        client.call("SCRIPT", "DEBUG", "sync")
        assert client.call("EVAL", "return 3", 0)[0] == b"* Stopped at 1, stop reason = step over"
        assert client.call("c") == [b"<endsession>"]
        assert client.read() == 3
    finally:
        client.close()
