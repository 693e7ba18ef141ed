"""Clients that vanish at the worst moment leave nothing behind: no blocked waiters, watched
keys, subscriptions or client records, and no memory growth over thousands of connections."""
from __future__ import annotations

import socket
import time

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import RawClient, encode_command
from tests.support.waiting import wait_until

from .helpers import server_state, wait_for_state

CLEAN = {"clients": 0, "waiters": 0, "blocking_keys": 0, "watchers": 0, "channels": 0,
         "patterns": 0, "shard_channels": 0}

# Each entry: what a client sends before it disconnects without warning.
ABANDONED = {
    "mid-command": b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc",
    "mid-multi": encode_command(["WATCH", "w"]) + encode_command(["MULTI"])
                 + encode_command(["SET", "w", "1"]),
    "blocked-blpop": encode_command(["BLPOP", "q1", "q2", "0"]),
    "blocked-bzpopmin": encode_command(["BZPOPMIN", "z", "0"]),
    "blocked-xread": encode_command(["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]),
    "blocked-then-more": encode_command(["BLMOVE", "a", "b", "LEFT", "LEFT", "0"])
                         + encode_command(["SET", "x", "1"]) * 100,
    "subscribed": encode_command(["SUBSCRIBE", "c1", "c2"]) + encode_command(["PSUBSCRIBE", "p*"])
                  + encode_command(["SSUBSCRIBE", "s1"]),
    "resp3-subscribed": encode_command(["HELLO", "3"]) + encode_command(["SUBSCRIBE", "c"]),
}


@pytest.fixture
def server():
    with EmbeddedServer(time_control=True) as srv:
        yield srv


@pytest.mark.parametrize("name", sorted(ABANDONED))
def test_disconnect_leaves_no_state(server, name):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(ABANDONED[name])
    wait_until(lambda: server.call(server_state, server.server)["clients"] == 1, "connected")
    sock.close()
    assert wait_for_state(server, CLEAN) == CLEAN
    # The keys they waited on or watched still work for everyone else.
    client = RawClient(server.port)
    assert client.call("RPUSH", "q1", "v") == 1
    assert client.call("LPOP", "q1") == b"v"
    assert client.call("EXISTS", "k", "x", "b") == 0  # nothing half-applied or run late
    client.close()


def test_disconnect_with_an_abortive_reset(server):
    """RST instead of FIN (SO_LINGER 0) while blocked and subscribed."""
    for payload in (ABANDONED["blocked-blpop"], ABANDONED["subscribed"]):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.sendall(payload)
        wait_until(lambda: _blocked_or_subscribed(server), "blocked or subscribed")
        sock.close()
        assert wait_for_state(server, CLEAN) == CLEAN


def _blocked_or_subscribed(server) -> bool:
    state = server.call(server_state, server.server)
    return state["waiters"] + state["channels"] > 0


def test_disconnect_during_a_long_script(server):
    client = RawClient(server.port)
    if client.call("COMMAND", "INFO", "EVAL")[0] is None:
        pytest.fail("EVAL is not available")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(encode_command(["EVAL", "local i = 0 while i < 3000000 do i = i + 1 end "
                                 "redis.call('SET', KEYS[1], i) return i", "1", "done"]))
    time.sleep(0.05)
    sock.close()  # gone while the script runs
    assert client.call("GET", "done") == b"3000000"  # the script finished and wrote
    client.close()
    assert wait_for_state(server, CLEAN) == CLEAN


def test_push_to_a_key_whose_waiter_left(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(encode_command(["BLPOP", "jobs", "0"]))
    wait_until(lambda: _blocked_or_subscribed(server), "BLPOP blocked")
    sock.close()
    wait_for_state(server, CLEAN)
    client = RawClient(server.port)
    assert client.call("RPUSH", "jobs", "j1") == 1
    assert client.call("LRANGE", "jobs", "0", "-1") == [b"j1"]  # not handed to the dead client
    client.close()


def test_thousands_of_connections_opened_and_dropped(server):
    def churn(rounds: int) -> None:
        for i in range(rounds):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(list(ABANDONED.values())[i % len(ABANDONED)])
            sock.close()

    churn(300)  # warm up allocator pools and caches before measuring
    assert wait_for_state(server, CLEAN, timeout=10) == CLEAN
    before = server.call(server.server.memory.used)
    churn(2000)
    assert wait_for_state(server, CLEAN, timeout=10) == CLEAN
    time.sleep(0.2)  # let the RSS sample refresh
    after = server.call(server.server.memory.used)
    assert after - before < 8 * 1024 * 1024, (before, after)
    client = RawClient(server.port)
    assert client.call("PING") == b"PONG"
    client.close()
