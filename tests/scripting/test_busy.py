"""Runaway scripts: BUSY for other clients past busy-reply-threshold, SCRIPT KILL, UNKILLABLE
and SHUTDOWN NOSAVE, with the server never wedged. Each test uses a server of its own."""
from __future__ import annotations

import threading
import time

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import Err, RawClient

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."


@pytest.fixture
def server():
    srv = EmbeddedServer(port=0).start()
    try:
        yield srv
    finally:
        srv.stop()


def _run_in_background(port: int, *command) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def run() -> None:
        client = RawClient(port)
        try:
            result["reply"] = client.call(*command)
        except ConnectionError as exc:
            result["reply"] = exc
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def _wait_busy(client: RawClient, deadline: float = 30.0):
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        reply = client.call("PING")
        if isinstance(reply, Err):
            return reply, time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError("the server never reported BUSY")


def test_script_kill_stops_a_runaway_script(server):
    admin = RawClient(server.port)
    admin.call("CONFIG", "SET", "busy-reply-threshold", "100")
    admin.call("SET", "k", "v")
    thread, result = _run_in_background(server.port, "EVAL", "while true do end", 0)
    reply, waited = _wait_busy(admin)
    # Busy after the 100 ms threshold set above, not the default 5 s (with room for a loaded
    # machine).
    assert reply == Err(BUSY) and waited < 4.0
    # A connection opened during the busy period is served too, allow-busy commands included.
    late = RawClient(server.port)
    assert late.call("GET", "k") == Err(BUSY)
    assert isinstance(late.call("HELLO", "3"), list)
    assert late.call("SCRIPT", "KILL") == b"OK"
    thread.join(5)
    assert result["reply"] == Err("ERR Script killed by user with SCRIPT KILL... script: "
                                  "694a5fe1ddb97a4c6a1bf299d9537c7d3d0f84e7, on @user_script:1.")
    assert admin.call("PING") == b"PONG"
    assert late.call("GET", "k") == b"v"
    assert admin.call("SCRIPT", "KILL") == Err("NOTBUSY No scripts in execution right now.")


def test_pcall_cannot_swallow_the_kill(server):
    admin = RawClient(server.port)
    admin.call("CONFIG", "SET", "busy-reply-threshold", "100")
    script = "while true do pcall(function() while true do end end) end"
    thread, result = _run_in_background(server.port, "EVAL", script, 0)
    _wait_busy(admin)
    assert admin.call("SCRIPT", "KILL") == b"OK"
    thread.join(5)
    assert isinstance(result["reply"], Err) and "Script killed by user" in result["reply"].message
    assert admin.call("PING") == b"PONG"


def test_function_kill(server):
    admin = RawClient(server.port)
    admin.call("CONFIG", "SET", "busy-reply-threshold", "100")
    admin.call("FUNCTION", "LOAD", "#!lua name=spin\n"
               "redis.register_function('spin', function() while true do end end)")
    thread, result = _run_in_background(server.port, "FCALL", "spin", 0)
    reply, _ = _wait_busy(admin)
    assert reply == Err("BUSY Redis is busy running a script. You can only call FUNCTION KILL "
                        "or SHUTDOWN NOSAVE.")
    assert admin.call("SCRIPT", "KILL") == reply
    stats = admin.call("FUNCTION", "STATS")
    assert stats[1][:2] == [b"name", b"spin"]
    assert admin.call("FUNCTION", "KILL") == b"OK"
    thread.join(5)
    assert isinstance(result["reply"], Err)
    assert admin.call("PING") == b"PONG"


def test_a_script_that_wrote_is_unkillable_but_shutdown_nosave_stops_the_server(server):
    admin = RawClient(server.port)
    admin.call("CONFIG", "SET", "busy-reply-threshold", "100")
    thread, result = _run_in_background(
        server.port, "EVAL", "redis.call('set', 'x', 1) while true do end", 0)
    _wait_busy(admin)
    reply = admin.call("SCRIPT", "KILL")
    assert isinstance(reply, Err) and reply.message.startswith("UNKILLABLE")
    assert admin.call("SHUTDOWN") == Err(BUSY)
    admin.send("SHUTDOWN", "NOSAVE")
    with pytest.raises((ConnectionError, OSError)):
        admin.read()
    thread.join(5)
    assert not thread.is_alive()
    with pytest.raises(OSError):
        RawClient(server.port, timeout=1.0).call("PING")
