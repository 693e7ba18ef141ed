"""A script that allocates without bound fails with a Lua memory error; the server lives on.

Every case runs on both bridges: the native one (luabridge.pyx, the compiled build's) and
lupa's, which the uncompiled build has alone. lupa pushes a Python function's result while it
holds the GIL, so a push that ran into the cap used to leave the GIL taken for good and hang
the whole server (memcap.py); each case here ends with the server still answering.
"""
from __future__ import annotations

import pytest

import minired.scripting.sandbox as sandbox
from minired.embed import EmbeddedServer
from minired.scripting.feature import engine_of
from minired.scripting.sandbox import Sandbox
from tests.support.respclient import Err, RawClient

CAP = 64 << 20  # small, to keep the tests light; the default (sandbox.LUA_MAX_MEMORY) is 2 GiB
OUT_OF_MEMORY = Err("ERR not enough memory")


@pytest.fixture(params=["native", "lupa"])
def capped(request, monkeypatch):
    """A RawClient on a fresh server whose EVAL sandbox is on the requested bridge."""
    monkeypatch.setattr(sandbox, "LUA_MAX_MEMORY", CAP)
    with EmbeddedServer() as server:
        def install(srv, native):
            engine = engine_of(srv)
            engine.scripts.clear()
            engine._eval_sandbox = Sandbox("eval", engine, native=native)
            return engine._eval_sandbox.native

        native = server.call(install, server.server, request.param == "native")
        if request.param == "native" and not native:
            pytest.skip("the uncompiled build has only lupa's bridge")
        client = RawClient(server.port, timeout=60)
        try:
            yield client
        finally:
            client.close()


def memory_error(reply) -> bool:
    """The cap as a script error: bare, or with where the script was when it hit it."""
    return isinstance(reply, Err) and reply.message.startswith("ERR not enough memory")


def test_runaway_allocation_is_a_script_error_not_a_dead_server(capped):
    client = capped
    assert client.call("EVAL", "return #string.rep('x', 2^27)", 0) == OUT_OF_MEMORY
    reply = client.call("EVAL", "local t = {} for i = 1, 1e8 do t[i] = i end return 1", 0)
    assert reply == OUT_OF_MEMORY
    assert client.call("PING") == b"PONG"
    assert client.call("EVAL", "return #string.rep('x', 2^20)", 0) == 1 << 20
    assert client.call("EVAL", "return cjson.encode({1, 2})", 0) == b"[1,2]"


def test_running_out_while_redis_call_hands_back_replies(capped):
    """The reply strings of redis.call are what fills Lua's memory here, so the allocation
    that fails is one made while a reply is pushed."""
    client = capped
    assert client.call("SET", "big", "x" * (1 << 20)) == b"OK"
    script = "local t = {} for i = 1, 1000 do t[i] = redis.call('getrange', 'big', 0, -i) end return #t"
    for _ in range(3):
        assert client.call("EVAL", script, 0) == OUT_OF_MEMORY
        assert client.call("EVAL", "return redis.call('strlen', 'big')", 0) == 1 << 20
    assert client.call("PING") == b"PONG"


def test_running_out_while_nested_replies_become_tables(capped):
    """Nested replies are built as Lua tables from Python, under the GIL on both bridges."""
    client = capped
    for i in range(200):
        client.call("XADD", "s", "*", "f", str(i))
    script = ("local t = {} for i = 1, 1e6 do t[i] = redis.call('xrange', 's', '-', '+') end "
              "return #t")
    for _ in range(3):
        assert memory_error(client.call("EVAL", script, 0))
        assert client.call("EVAL", "return #redis.call('xrange', 's', '-', '+')", 0) == 200
    assert client.call("PING") == b"PONG"


def test_running_out_in_the_libraries_python_helpers(capped):
    """struct.pack of a double and redis.sha1hex are Python functions behind Lua; memory is
    filled first, so the next small string they hand back is over the cap."""
    client = capped
    for call in ("struct.pack('>d', i + 0.5)", "redis.sha1hex(tostring(i))"):
        script = (f"local t = {{}} local i = 0 "
                  f"while true do i = i + 1 t[i] = string.rep('y', 4096) .. i t[-i] = {call} end")
        assert memory_error(client.call("EVAL", script, 0))
        assert client.call("EVAL", f"local i = 1 return #{call}", 0) in (8, 40)
    assert client.call("PING") == b"PONG"


def test_the_cap_holds_again_once_a_reply_is_pushed(capped):
    """The cap is lifted while a Python function's result is pushed: it must be back before
    the script allocates on its own."""
    client = capped
    script = ("redis.call('set', 'k', 'v') redis.call('get', 'k') redis.sha1hex('x') "
              "return #string.rep('x', 2^27)")
    assert client.call("EVAL", script, 0) == OUT_OF_MEMORY
    assert client.call("EVAL", "return redis.call('get', 'k')", 0) == b"v"


def test_functions_hold_to_the_cap_too(monkeypatch):
    """FCALL enters Lua through lupa (the GIL let go) on either build."""
    monkeypatch.setattr(sandbox, "LUA_MAX_MEMORY", CAP)
    with EmbeddedServer() as server:
        client = RawClient(server.port, timeout=60)
        try:
            assert client.call("SET", "big", "x" * (1 << 20)) == b"OK"
            library = """#!lua name=fill
redis.register_function('replies', function(keys, args)
  local t = {}
  for i = 1, 1000 do t[i] = redis.call('getrange', 'big', 0, -i) end
  return #t
end)
redis.register_function('tables', function(keys, args)
  local t = {}
  local j = '[' .. string.rep('"abcdefghijklmnop",', 1000) .. '1]'
  for i = 1, 1e6 do t[i] = cjson.decode(j) end
  return #t
end)
redis.register_function('floats', function(keys, args)
  local t = {}
  for i = 1, 1e8 do t[i] = struct.pack('>d', i + 0.5) .. string.rep('z', 64) end
  return #t
end)"""
            assert client.call("FUNCTION", "LOAD", library) == b"fill"
            for name in ("replies", "tables", "floats"):
                for _ in range(2):
                    assert memory_error(client.call("FCALL", name, 0)), name
            assert client.call("EVAL", "return redis.call('strlen', 'big')", 0) == 1 << 20
            assert client.call("PING") == b"PONG"
        finally:
            client.close()
