"""INFO lazyfreed_objects compared with real Redis: UNLINK frees a value in the background when
freeing it takes more than 64 allocations (lazyfreeGetFreeEffort), FLUSHALL/FLUSHDB ASYNC every
key (and a flush with neither word when lazyfree-lazy-user-flush is yes), DEL, expiry and
eviction as lazyfree-lazy-user-del, -expire and -eviction ask; CONFIG RESETSTAT
zeroes the count."""
from __future__ import annotations

from tests.support.respclient import RawClient
from tests.support.waiting import info_field, wait_until


def _lazyfreed(client: RawClient) -> int:
    # (Redis counts once its background thread is done: waited for, not assumed)
    wait_until(lambda: info_field(client, "memory", "lazyfree_pending_objects") == "0",
               "lazy free done")
    return int(info_field(client, "memory", "lazyfreed_objects"))


def _scenario(port: int) -> list[int]:
    client = RawClient(port)
    client.call("FLUSHALL")
    client.call("CONFIG", "RESETSTAT")
    counts = []
    client.call("SADD", "small", *range(10))
    client.call("SADD", "intset", *range(100))  # compact: one allocation
    client.call("SADD", "big", *[f"m{i}" for i in range(100)])
    client.call("HSET", "hash", *[x for i in range(100) for x in (f"f{i}", "v")])
    client.call("ZADD", "zset", *[x for i in range(200) for x in (i, f"m{i}")])
    client.call("RPUSH", "list", *[b"x" * 100] * 20000)  # many quicklist nodes
    client.call("RPUSH", "shortlist", *range(100))  # one node
    client.call("CONFIG", "SET", "stream-node-max-entries", "5")
    for i in range(400):
        client.call("XADD", "stream", "*", "f", i)
    client.call("XADD", "smallstream", "*", "f", "v")
    client.call("XGROUP", "CREATE", "smallstream", "g", "0")
    client.call("CONFIG", "SET", "stream-node-max-entries", "100")
    for key in ("small", "intset", "big", "hash", "zset", "list", "shortlist", "stream",
                "smallstream", "missing"):
        client.call("UNLINK", key)
        counts.append(_lazyfreed(client))
    client.call("DEL", "nothing")
    client.call("MSET", "a", 1, "b", 2, "c", 3)
    client.call("SELECT", 1)
    client.call("SET", "d", 4)
    client.call("FLUSHDB", "ASYNC")
    counts.append(_lazyfreed(client))
    client.call("SELECT", 0)
    client.call("FLUSHALL", "SYNC")
    counts.append(_lazyfreed(client))
    client.call("MSET", "a", 1, "b", 2)
    client.call("FLUSHALL", "ASYNC")
    counts.append(_lazyfreed(client))
    client.call("CONFIG", "SET", "lazyfree-lazy-user-flush", "yes")
    client.call("MSET", "a", 1, "b", 2, "c", 3)
    client.call("FLUSHALL")
    counts.append(_lazyfreed(client))
    client.call("CONFIG", "SET", "lazyfree-lazy-user-flush", "no")
    client.call("CONFIG", "RESETSTAT")
    counts.append(_lazyfreed(client))
    client.close()
    return counts


def test_lazyfreed_objects_as_redis(real_redis, mini):
    assert _scenario(mini.port) == _scenario(real_redis.port)


def _lazy_settings_scenario(port: int) -> list[int]:
    """DEL with lazyfree-lazy-user-del, a key's expiry with lazyfree-lazy-expire and key
    eviction with lazyfree-lazy-eviction, each off then on: a value whose freeing takes many
    allocations is then freed in the background (dbGenericDelete's async), as UNLINK's."""
    client = RawClient(port)
    client.call("FLUSHALL")
    client.call("CONFIG", "RESETSTAT")
    counts = []

    def big(key: str) -> None:
        client.call("SADD", key, *[f"m{i}" for i in range(100)])

    try:
        for setting in ("no", "yes"):
            client.call("CONFIG", "SET", "lazyfree-lazy-user-del", setting)
            big("big")
            client.call("SET", "small", "v")
            client.call("DEL", "big", "small", "missing")
            counts.append(_lazyfreed(client))
        for setting in ("no", "yes"):
            client.call("CONFIG", "SET", "lazyfree-lazy-expire", setting)
            big("expiring")
            client.call("PEXPIRE", "expiring", 1)
            wait_until(lambda: client.call("EXISTS", "expiring") == 0, "expired")
            counts.append(_lazyfreed(client))
        client.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        for setting in ("no", "yes"):
            client.call("CONFIG", "SET", "lazyfree-lazy-eviction", setting)
            big("evicted")
            client.call("SET", "small", "v")
            client.call("CONFIG", "SET", "maxmemory", 1)
            client.call("SET", "more", "v")  # (refused: everything evicted, still over)
            client.call("CONFIG", "SET", "maxmemory", 0)
            counts.append(_lazyfreed(client))
            counts.append(client.call("DBSIZE"))
    finally:
        client.call("CONFIG", "SET", "maxmemory", 0)
        client.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        for kind in ("user-del", "expire", "eviction"):
            client.call("CONFIG", "SET", f"lazyfree-lazy-{kind}", "no")
        client.close()
    return counts


def test_lazy_deletion_settings_as_redis(real_redis, mini):
    expected = _lazy_settings_scenario(real_redis.port)
    assert expected == [0, 1, 1, 2, 2, 0, 3, 0]
    assert _lazy_settings_scenario(mini.port) == expected
