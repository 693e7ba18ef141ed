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
