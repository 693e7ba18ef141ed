"""A script that allocates without bound fails with a Lua memory error; the server lives on."""
from __future__ import annotations

import minired.scripting.sandbox as sandbox
from minired.embed import EmbeddedServer
from tests.support.respclient import Err, RawClient


def test_runaway_allocation_is_a_script_error_not_a_dead_server(monkeypatch):
    # A small cap keeps the test light; the default (sandbox.LUA_MAX_MEMORY) is 2 GiB.
    monkeypatch.setattr(sandbox, "LUA_MAX_MEMORY", 64 << 20)
    with EmbeddedServer() as server:
        client = RawClient(server.port)
        try:
            assert client.call("EVAL", "return #string.rep('x', 2^27)", 0) == Err("ERR not enough memory")
            reply = client.call("EVAL", "local t = {} for i = 1, 1e8 do t[i] = i end return 1", 0)
            assert reply == Err("ERR not enough memory")
            assert client.call("PING") == b"PONG"
            assert client.call("EVAL", "return #string.rep('x', 2^20)", 0) == 1 << 20
            assert client.call("EVAL", "return cjson.encode({1, 2})", 0) == b"[1,2]"
        finally:
            client.close()


def test_running_out_while_redis_call_hands_back_replies(monkeypatch):
    """The reply strings of redis.call are what fills Lua's memory here, so the allocation
    that fails is one made while a reply is pushed (the native bridge's C frame is unwound)."""
    monkeypatch.setattr(sandbox, "LUA_MAX_MEMORY", 64 << 20)
    with EmbeddedServer() as server:
        client = RawClient(server.port)
        try:
            assert client.call("SET", "big", "x" * (1 << 20)) == b"OK"
            script = "local t = {} for i = 1, 1000 do t[i] = redis.call('getrange', 'big', 0, -i) end return #t"
            for _ in range(3):
                assert client.call("EVAL", script, 0) == Err("ERR not enough memory")
                assert client.call("EVAL", "return redis.call('strlen', 'big')", 0) == 1 << 20
            assert client.call("PING") == b"PONG"
        finally:
            client.close()
