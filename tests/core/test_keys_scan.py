"""SCAN: options and errors as Redis, and the guarantee clients rely on: every key present for
the whole scan is returned at least once, even while keys are added and removed between calls,
and the scan ends (cursor 0)."""
import random

import pytest


def _full_scan(client, *options, mutate=None):
    seen, cursor, calls = [], b"0", 0
    while True:
        cursor, keys = client.call("SCAN", cursor, *options)
        seen.extend(keys)
        calls += 1
        assert calls < 10_000, "SCAN did not terminate"
        if cursor == b"0":
            return seen, calls
        if mutate is not None:
            mutate(calls)


def test_scan_options_and_errors(diff):
    diff.check("MSET", "a1", "1", "a2", "2", "b1", "3")
    diff.check("RPUSH", "list", "x")
    for options in ((), ("COUNT", "100"), ("MATCH", "a*"), ("MATCH", "*"), ("TYPE", "string"),
                    ("TYPE", "list"), ("TYPE", "LIST"), ("TYPE", "nosuchtype"),
                    ("MATCH", "a*", "TYPE", "string", "COUNT", "5")):
        redis_reply, mini_reply = diff.both("SCAN", "0", "COUNT", "1000", *options)
        assert mini_reply[0] == b"0"
        assert sorted(mini_reply[1]) == sorted(redis_reply[1])
    for bad in (("COUNT", "0"), ("COUNT", "-1"), ("COUNT", "x"), ("COUNT",), ("MATCH",),
                ("TYPE",), ("FOO", "bar"), ("COUNT", "1", "x")):
        diff.check("SCAN", "0", *bad)
    for cursor in ("x", " 1", "1 ", "1x", "18446744073709551616", "1.5"):
        diff.check("SCAN", cursor)
    diff.check("SCAN")


@pytest.mark.parametrize("cursor", ["", "-1", "+5", "007", "18446744073709551615"])
def test_unusual_cursors_are_accepted(diff, cursor):
    redis_reply, mini_reply = diff.both("SCAN", cursor)
    assert isinstance(redis_reply, list) and isinstance(mini_reply, list)


def test_scan_of_empty_db(diff):
    diff.check("SCAN", "0")
    diff.check("SCAN", "0", "MATCH", "x*", "TYPE", "hash")


def test_scan_visits_every_stable_key_under_churn(mini_raw):
    rng = random.Random(11)
    stable = [b"stable:%d" % i for i in range(500)]
    mini_raw.call("MSET", *[x for key in stable for x in (key, b"v")])
    volatile = [b"volatile:%d" % i for i in range(2000)]

    def mutate(call_number):
        for _ in range(20):
            key = rng.choice(volatile)
            if rng.random() < 0.5:
                mini_raw.call("SET", key, "v")
            else:
                mini_raw.call("DEL", key)

    seen, calls = _full_scan(mini_raw, "COUNT", "7", mutate=mutate)
    assert set(stable) <= set(seen)
    assert calls > 10
    matched, _ = _full_scan(mini_raw, "MATCH", "stable:1*", "COUNT", "3", mutate=mutate)
    assert set(matched) == {key for key in stable if key.startswith(b"stable:1")}


def test_scan_cursor_survives_flush_and_new_keys(mini_raw):
    mini_raw.call("MSET", *[x for i in range(50) for x in (b"k%d" % i, b"v")])
    cursor, first = mini_raw.call("SCAN", "0", "COUNT", "10")
    mini_raw.call("FLUSHALL")
    mini_raw.call("MSET", *[x for i in range(30) for x in (b"n%d" % i, b"v")])
    seen, calls = [], 0
    while cursor != b"0":
        cursor, keys = mini_raw.call("SCAN", cursor, "COUNT", "10")
        seen.extend(keys)
        calls += 1
        assert calls < 100
    assert all(key.startswith(b"n") for key in seen)


def test_scan_skips_expired_keys(mini_raw):
    mini_raw.call("SET", "live", "v")
    mini_raw.call("SET", "dying", "v", "PX", "100")
    mini_raw.call("MINIRED", "ADVANCE", "200")
    seen, _ = _full_scan(mini_raw)
    assert seen == [b"live"]


def test_cursors_are_as_small_as_redis_s(diff):
    """A cursor names a bucket of a table sized as Redis sizes its own (a power of two that
    holds the keys): below 1024 for 1,000 keys, as in Redis; a 64-bit cursor turned into a Lua
    number or a JavaScript one would lose its low digits."""
    diff.check("MSET", *[x for i in range(1000) for x in (b"k%d" % i, b"v")])
    for client in (diff.redis, diff.minired):
        cursor, largest = b"0", 0
        while True:
            cursor, _ = client.call("SCAN", cursor)
            largest = max(largest, int(cursor))
            if cursor == b"0":
                break
        assert 0 < largest < 1024


def test_a_script_scans_and_deletes_with_lua_numbers(diff):
    """fakeredis's test_deleting_while_scan: the cursor goes through tonumber() each round."""
    diff.check("MSET", *[x for i in range(100) for x in (b"key-%d" % i, b"v")])
    script = """
        local cursor, seen = 0, 0
        repeat
            local result = redis.call('SCAN', cursor)
            for _, key in ipairs(result[2]) do redis.call('DEL', key); seen = seen + 1 end
            cursor = tonumber(result[1])
        until cursor == 0
        return seen"""
    diff.check("EVAL", script, "0")
    diff.check("DBSIZE")


@pytest.mark.parametrize("grow", [True, False])
def test_a_scan_survives_the_table_growing_or_shrinking(mini_raw, grow):
    """Keys present for the whole scan are returned although the table's size, and so the
    cursor's meaning, changes between calls (Redis's reverse-binary cursor)."""
    stable = [b"stable:%d" % i for i in range(100)]
    others = [b"other:%d" % i for i in range(5000)]
    mini_raw.call("MSET", *[x for key in stable for x in (key, b"v")])
    if not grow:
        mini_raw.call("MSET", *[x for key in others for x in (key, b"v")])

    def resize(call_number):
        if call_number == 3:
            if grow:
                mini_raw.call("MSET", *[x for key in others for x in (key, b"v")])
            else:
                mini_raw.call("DEL", *others)

    seen, _ = _full_scan(mini_raw, "COUNT", "10", mutate=resize)
    assert set(stable) <= set(seen)


def test_hscan_survives_the_hash_growing(mini_raw):
    mini_raw.call("HSET", "h", *[x for i in range(1000) for x in (b"f%d" % i, b"v")])
    seen, cursor, calls = set(), b"0", 0
    while True:
        cursor, pairs = mini_raw.call("HSCAN", "h", cursor, "COUNT", "20")
        seen.update(pairs[::2])
        calls += 1
        if calls == 5:
            mini_raw.call("HSET", "h", *[x for i in range(20000) for x in (b"g%d" % i, b"v")])
        if cursor == b"0":
            break
    assert {b"f%d" % i for i in range(1000)} <= seen
