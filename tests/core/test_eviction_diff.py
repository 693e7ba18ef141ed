"""Key eviction (maxmemory, maxmemory-policy) and key access tracking (OBJECT IDLETIME/FREQ),
compared with real Redis where the outcome does not depend on how much memory each server
counts: with maxmemory 1 every server is over its limit whatever its figure, so each policy's
choice of keys (all of them, the volatile ones, in TTL order), the OOM refusals, the evicted
events and tracking invalidations, and INFO's evicted_keys must be the same. What depends on
elapsed time (LRU order) runs on minired alone, on its controlled clock.

The servers are shared by the session: every test puts maxmemory and the policy back.
"""
from __future__ import annotations

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import Err, Push, RawClient
from tests.support.waiting import wait_until


def _info_field(client: RawClient, section: str, name: str) -> int:
    text = client.call("INFO", section).decode()
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"{name} not in INFO {section}")


@pytest.fixture
def evicting(diff, real_redis, mini):
    """The diff pair, with maxmemory 0 / noeviction / notifications off restored afterwards."""
    diff.ports = (real_redis.port, mini.port)
    try:
        yield diff
    finally:
        diff.both("CONFIG", "SET", "maxmemory", "0")
        diff.both("CONFIG", "SET", "maxmemory-policy", "noeviction")
        diff.both("CONFIG", "SET", "maxmemory-samples", "5")
        diff.both("CONFIG", "SET", "notify-keyspace-events", "")


def _subscribers(diff) -> tuple[RawClient, RawClient]:
    pair = (RawClient(diff.ports[0]), RawClient(diff.ports[1]))
    for client in pair:
        client.call("PSUBSCRIBE", "__keyevent@*__:evicted")
    return pair


def _evicted(subscriber: RawClient, count: int) -> list[bytes]:
    return [subscriber.read()[3] for _ in range(count)]


def test_noeviction_refuses_denyoom_commands(evicting):
    diff = evicting
    diff.check("SET", "k", "v")
    diff.check("CONFIG", "SET", "maxmemory", "1")
    diff.check_error("SET", "k2", "v")
    diff.check_error("LPUSH", "l", "x")
    diff.check("GET", "k")  # reads and deletions still run
    diff.check("DBSIZE")
    diff.check("MULTI")
    diff.check_error("GET", "k")  # queuing takes memory: refused inside MULTI
    diff.check_error("EXEC")
    diff.check_error("EVAL", "return redis.call('set', 'x', 'y')", "0")
    diff.check("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', 'x', 'y')", "0")
    diff.check("DEL", "k", "x")
    assert _info_field(diff.redis, "stats", "evicted_keys") == \
        _info_field(diff.minired, "stats", "evicted_keys") == 0


def test_allkeys_random_evicts_every_key_then_refuses(evicting):
    diff = evicting
    diff.check("CONFIG", "RESETSTAT")
    diff.check("MSET", "a", "1", "b", "2", "c", "3")
    diff.check("SET", "d", "4", "EX", "100")
    diff.check("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    diff.check("CONFIG", "SET", "maxmemory", "1")
    diff.check("DBSIZE")  # (evicted before it runs, if CONFIG SET left any)
    diff.check("KEYS", "*")
    diff.check_error("SET", "e", "5")
    diff.check("GET", "a")
    assert _info_field(diff.redis, "stats", "evicted_keys") == \
        _info_field(diff.minired, "stats", "evicted_keys") == 4


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random",
                                    "volatile-ttl"])
def test_volatile_policies_keep_persistent_keys(evicting, policy):
    diff = evicting
    diff.check("SET", "persistent", "x")
    diff.check("SET", "v1", "x", "EX", "100")
    diff.check("SET", "v2", "x", "EX", "200")
    diff.check("CONFIG", "SET", "maxmemory-policy", policy)
    diff.check("CONFIG", "SET", "maxmemory", "1")
    diff.check("KEYS", "*")
    diff.check_error("SET", "v3", "x", "EX", "100")
    diff.check("GET", "persistent")


def test_volatile_ttl_evicts_the_nearest_deadline_first(evicting):
    diff = evicting
    diff.check("CONFIG", "SET", "maxmemory-samples", "10")
    diff.check("CONFIG", "SET", "notify-keyspace-events", "Ee")
    subscribers = _subscribers(diff)
    try:
        diff.check("SET", "later", "x", "EX", "3000")
        diff.check("SET", "soonest", "x", "EX", "1000")
        diff.check("SET", "middle", "x", "EX", "2000")
        diff.check("SET", "forever", "x")
        diff.check("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
        diff.check("CONFIG", "SET", "maxmemory", "1")
        diff.check("DBSIZE")
        expected, actual = (_evicted(subscriber, 3) for subscriber in subscribers)
        assert expected == [b"soonest", b"middle", b"later"]
        assert actual == expected
    finally:
        for subscriber in subscribers:
            subscriber.close()


def test_eviction_invalidates_tracked_keys_before_the_next_reply(evicting):
    diff = evicting
    diff.hello(3)
    diff.check("CLIENT", "TRACKING", "ON")
    diff.check("SET", "k", "v", "EX", "100")
    diff.check("GET", "k")
    diff.check("SET", "big", "x" * 1000)
    diff.check("CONFIG", "SET", "maxmemory-policy", "volatile-random")
    diff.check("CONFIG", "SET", "maxmemory", "1")
    push = diff.read_both()  # k's invalidation, sent as k went
    assert isinstance(push, Push) and push[1] == [b"k"]
    diff.check("GET", "big")
    diff.check("DBSIZE")


def test_object_freq_follows_redis_lfu_counter(evicting):
    diff = evicting
    diff.check("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    diff.check("SET", "k", "v")
    diff.check("OBJECT", "FREQ", "k")  # a new object's LFU_INIT_VAL
    diff.check("GET", "k")  # the first access always counts (probability 1)
    diff.check("OBJECT", "FREQ", "k")
    diff.check("TYPE", "k")  # no access (LOOKUP_NOTOUCH)
    diff.check("OBJECT", "FREQ", "k")
    payload = diff.check("DUMP", "k")
    diff.check("RESTORE", "r", "0", payload, "FREQ", "100")
    diff.check("OBJECT", "FREQ", "r")
    diff.check("RESTORE", "r2", "0", payload, "IDLETIME", "100")  # ignored under LFU
    diff.check("OBJECT", "FREQ", "r2")
    diff.check_error("OBJECT", "IDLETIME", "r")


def test_restore_idletime_sets_the_idle_time(evicting):
    diff = evicting
    diff.check("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    diff.check("SET", "k", "v")
    payload = diff.check("DUMP", "k")
    diff.check("RESTORE", "r", "0", payload, "IDLETIME", "1000")
    redis, minired = diff.both("OBJECT", "IDLETIME", "r")
    assert 1000 <= redis <= 1001 and 1000 <= minired <= 1001  # (a second may tick between)
    diff.check_error("OBJECT", "FREQ", "r")


def test_lru_evicts_the_least_recently_used_first(mini, mini_raw):
    """On minired's controlled clock: keys read later are evicted later."""
    client = mini_raw
    subscriber = RawClient(mini.port)
    try:
        client.call("CONFIG", "SET", "notify-keyspace-events", "Ee")
        subscriber.call("PSUBSCRIBE", "__keyevent@*__:evicted")
        client.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
        client.call("CONFIG", "SET", "maxmemory-samples", "10")
        # Access tracking starts (with maxmemory 0 nothing needed it yet; an earlier test on
        # this shared server may or may not have started it): the writes below are seen.
        client.call("TOUCH", "a")
        for key in ("a", "b", "c"):
            client.call("SET", key, "x")
        client.call("MINIRED", "ADVANCE", 5000)
        client.call("GET", "b")
        client.call("MINIRED", "ADVANCE", 5000)
        client.call("GET", "a")
        assert client.call("OBJECT", "IDLETIME", "c") == 10
        assert client.call("OBJECT", "IDLETIME", "b") == 5
        client.call("CONFIG", "SET", "maxmemory", "1")
        client.call("PING")
        assert _evicted(subscriber, 3) == [b"c", b"b", b"a"]
    finally:
        client.call("CONFIG", "SET", "maxmemory", "0")
        client.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        client.call("CONFIG", "SET", "maxmemory-samples", "5")
        client.call("CONFIG", "SET", "notify-keyspace-events", "")
        subscriber.close()


def test_used_memory_follows_the_dataset():
    """The modelled used_memory grows with a value and shrinks back when it goes. (A server of
    its own: on the shared one, what earlier tests left behind, such as connections still
    closing, could free memory between the two readings.)"""
    with EmbeddedServer(port=0) as server:
        client = RawClient(server.port)
        try:
            _used_memory_follows(client)
        finally:
            client.close()


def test_a_client_s_buffers_leave_the_figure_with_the_client(monkeypatch):
    """Redis frees a client's buffers with the client (freeClient), so a write right after a
    big client leaves is not refused or evicted for them. The figure reused between two
    readings (CLIENTS_INTERVAL, an hour here once the buffer is counted) must not outlive a
    client that left: under load, unit/maxmemory's fill after its clients closed evicted keys."""
    from minired.features import eviction

    with EmbeddedServer(port=0) as server:
        client = RawClient(server.port)
        loaded = RawClient(server.port)
        try:
            client.call("CONFIG", "SET", "maxmemory", "1gb")  # (the modelled figure)
            before = _info_field(client, "memory", "used_memory")
            # a command left incomplete: its 300 KB wait in the query buffer
            loaded.sock.sendall(b"*2\r\n$3\r\nGET\r\n$400000\r\n" + b"x" * 300_000)
            wait_until(lambda: _info_field(client, "memory", "used_memory") - before >= 300_000,
                       "the query buffer counted")
            monkeypatch.setattr(eviction, "CLIENTS_INTERVAL", 3600.0)
            loaded.close()
            wait_until(lambda: _info_field(client, "clients", "connected_clients") == 1,
                       "the client left")
            assert _info_field(client, "memory", "used_memory") - before < 10_000
        finally:
            client.close()


def _used_memory_follows(client: RawClient) -> None:
    before = _info_field(client, "memory", "used_memory")
    client.call("SETRANGE", "big", 99_999, "x")  # (a small request: no big query buffer)
    grown = _info_field(client, "memory", "used_memory")
    assert 100_000 <= grown - before < 101_000
    assert client.call("MEMORY", "USAGE", "big") >= 100_000
    client.call("DEL", "big")
    assert abs(_info_field(client, "memory", "used_memory") - before) < 1_000


def test_ttl_type_exists_do_not_touch_but_touch_does(mini_raw):
    client = mini_raw
    client.call("SET", "k", "v")
    client.call("OBJECT", "IDLETIME", "k")  # (access tracking starts with the first question)
    client.call("TOUCH", "k")
    client.call("MINIRED", "ADVANCE", 3000)
    for command in ("TTL", "PTTL", "TYPE", "EXISTS", "EXPIRETIME"):
        client.call(command, "k")
    assert client.call("OBJECT", "IDLETIME", "k") == 3
    client.call("TOUCH", "k")
    assert client.call("OBJECT", "IDLETIME", "k") == 0
    assert not isinstance(client.call("GET", "k"), Err)
