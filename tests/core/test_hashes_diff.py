"""Hash commands compared with real Redis, in RESP2 and RESP3 (HGETALL is a map in RESP3,
HRANDFIELD WITHVALUES nests pairs)."""
import pytest

PROTOCOLS = pytest.mark.parametrize("protocol", [2, 3])


@PROTOCOLS
def test_set_get_and_listing(diff, protocol):
    diff.hello(protocol)
    diff.check("HSET", "h", "f1", "v1", "f2", "v2")
    diff.check("HSET", "h", "f1", "new", "f3", "v3")
    diff.check("HMSET", "h", "f4", "v4", "f1", "again")
    diff.check("HSETNX", "h", "f1", "ignored")
    diff.check("HSETNX", "h", "f5", "v5")
    diff.check("HSETNX", "fresh", "f", "v")
    diff.check("HSET", "h", "", "empty-field", "empty-value", "")
    diff.check("HGET", "h", "f1")
    diff.check("HGET", "h", "missing")
    diff.check("HGET", "nokey", "f")
    diff.check("HMGET", "h", "f1", "missing", "f3", "")
    diff.check("HMGET", "nokey", "a", "b")
    # Small hashes keep insertion order in Redis too, so order is compared as well.
    diff.check("HGETALL", "h")
    diff.check("HKEYS", "h")
    diff.check("HVALS", "h")
    diff.check("HGETALL", "nokey")
    diff.check("HKEYS", "nokey")
    diff.check("HVALS", "nokey")
    diff.check("HLEN", "h")
    diff.check("HLEN", "nokey")
    diff.check("HEXISTS", "h", "f2")
    diff.check("HEXISTS", "h", "missing")
    diff.check("HEXISTS", "nokey", "f")
    diff.check("HSTRLEN", "h", "f1")
    diff.check("HSTRLEN", "h", "missing")
    diff.check("HSTRLEN", "nokey", "f")


def test_hdel_removes_empty_hashes(diff):
    diff.check("HSET", "h", "a", "1", "b", "2", "c", "3")
    diff.check("HDEL", "h", "a", "missing", "a")
    diff.check("HDEL", "nokey", "a")
    diff.check("HGETALL", "h")
    diff.check("HDEL", "h", "b", "c", "d")
    diff.check("EXISTS", "h")
    diff.check("HSET", "h", "x", "1")
    diff.check("HGETALL", "h")


def test_hincrby(diff):
    diff.check("HSET", "h", "n", "5", "text", "abc", "float", "1.5", "spaced", " 5",
               "max", "9223372036854775807", "min", "-9223372036854775808", "lead", "05")
    diff.check("HINCRBY", "h", "n", "10")
    diff.check("HINCRBY", "h", "n", "-20")
    diff.check("HINCRBY", "h", "new", "7")
    diff.check("HINCRBY", "fresh", "f", "-3")
    diff.check("HGETALL", "fresh")
    for field in ("text", "float", "spaced", "lead"):
        diff.check("HINCRBY", "h", field, "1")
    diff.check("HINCRBY", "h", "max", "1")
    diff.check("HINCRBY", "h", "min", "-1")
    diff.check("HINCRBY", "h", "max", "-1")
    diff.check("HINCRBY", "h", "n", "-9223372036854775808")
    for increment in ("x", "1.5", "9223372036854775808", "", " 1"):
        diff.check("HINCRBY", "h", "n", increment)
    diff.check("HGETALL", "h")


def test_hincrbyfloat_uses_long_double_arithmetic(diff):
    diff.check("HSET", "h", "n", "5", "text", "abc", "spaced", " 5", "inf", "inf", "hex", "0x10")
    for increment in ("0.1", "0.2", "-0.3", "1e-20", "3.0e3", "1.23456789012345678901234",
                      "100000000000000000000000", "-0", "0x10", "+1.5", "1e308", "1e308",
                      "1e4000"):
        diff.check("HINCRBYFLOAT", "h", "acc", increment)
    diff.check("HINCRBYFLOAT", "h", "n", "1.5")
    diff.check("HINCRBYFLOAT", "h", "hex", "1")
    diff.check("HINCRBYFLOAT", "h", "text", "1")
    diff.check("HINCRBYFLOAT", "h", "spaced", "1")
    diff.check("HINCRBYFLOAT", "h", "inf", "1")
    for increment in ("x", "inf", "-inf", "nan", "1e5000", "1e-5000", " 1", "1 ", ""):
        diff.check("HINCRBYFLOAT", "h", "n", increment)
    diff.check("HINCRBYFLOAT", "fresh", "f", "2.5")
    # The 4000-digit value makes Redis convert the hash to a hashtable: field order is lost.
    diff.check("HGETALL", "h", pairs=True)


@PROTOCOLS
def test_hrandfield(diff, protocol):
    diff.hello(protocol)
    diff.check("HSET", "one", "f", "v")
    diff.check("HSET", "h", "a", "1", "b", "2", "c", "3")
    diff.check("HRANDFIELD", "one")
    diff.check("HRANDFIELD", "one", "-3", "WITHVALUES")
    diff.check("HRANDFIELD", "one", "-2")
    diff.check("HRANDFIELD", "h", "3", "WITHVALUES")
    diff.check("HRANDFIELD", "h", "10")
    diff.check("HRANDFIELD", "h", "0", "WITHVALUES")
    diff.check("HRANDFIELD", "nokey")
    diff.check("HRANDFIELD", "nokey", "3")
    diff.check("HRANDFIELD", "nokey", "-3", "WITHVALUES")
    for args in [("h", "x"), ("h", "1", "WITHVALUE"), ("h", "1", "WITHVALUES", "x"),
                 ("h", "-9223372036854775808"), ("h", "4611686018427387904", "WITHVALUES"),
                 ("h", "-4611686018427387904", "withvalues")]:
        diff.check("HRANDFIELD", *args)
    values = {b"a": b"1", b"b": b"2", b"c": b"3"}
    redis_reply, mini_reply = diff.both("HRANDFIELD", "h", "-10", "WITHVALUES")
    pairs = mini_reply if protocol == 3 else [mini_reply[i:i + 2] for i in range(0, 20, 2)]
    assert len(pairs) == 10 and all(values[field] == value for field, value in pairs)
    redis_reply, mini_reply = diff.both("HRANDFIELD", "h", "2")
    assert len(set(mini_reply)) == 2 and set(mini_reply) <= set(values)
    assert diff.minired.call("HRANDFIELD", "h") in values


def test_hscan(diff):
    diff.check("HSET", "h", "a", "1", "ab", "2", "b", "3")
    diff.check("HSCAN", "h", "0")
    diff.check("HSCAN", "h", "0", "MATCH", "a*")
    diff.check("HSCAN", "h", "0", "COUNT", "1", "MATCH", "b")
    diff.check("HSCAN", "nokey", "0", "BADOPTION")
    for args in [("h", "x"), ("h", "0", "COUNT", "0"), ("h", "0", "COUNT", "-1"),
                 ("h", "0", "COUNT", "x"), ("h", "0", "MATCH"), ("h", "0", "NOVALUES")]:
        diff.check("HSCAN", *args)


def test_hscan_large_hash_is_fully_walked(mini_raw):
    fields = [f"field:{i}".encode() for i in range(500)]
    mini_raw.call("HSET", "big", *[x for f in fields for x in (f, b"v" + f)])
    seen = {}
    cursor = b"0"
    while True:
        cursor, flat = mini_raw.call("HSCAN", "big", cursor, "COUNT", "20")
        for field, value in zip(flat[::2], flat[1::2]):
            assert field not in seen
            seen[field] = value
        if cursor == b"0":
            break
    assert seen == {f: b"v" + f for f in fields}


def test_wrong_type_and_arity(diff):
    diff.check("SET", "s", "v")
    for args in [("HSET", "s", "f", "v"), ("HSETNX", "s", "f", "v"), ("HMSET", "s", "f", "v"),
                 ("HGET", "s", "f"), ("HMGET", "s", "f"), ("HGETALL", "s"), ("HDEL", "s", "f"),
                 ("HEXISTS", "s", "f"), ("HLEN", "s"), ("HKEYS", "s"), ("HVALS", "s"),
                 ("HINCRBY", "s", "f", "1"), ("HINCRBYFLOAT", "s", "f", "1"),
                 ("HSTRLEN", "s", "f"), ("HSCAN", "s", "0"), ("HRANDFIELD", "s"),
                 ("HRANDFIELD", "s", "1"), ("HINCRBY", "s", "f", "x"),
                 ("HINCRBYFLOAT", "s", "f", "x")]:
        diff.check(*args)
    for args in [("HSET", "h", "f"), ("HSET", "h", "f", "v", "g"), ("HMSET", "h", "f"),
                 ("HMSET", "h", "f", "v", "g"), ("HGET", "h"), ("HDEL", "h"), ("HSETNX", "h", "f"),
                 ("HINCRBY", "h", "f"), ("HGETALL",), ("HSCAN", "h"), ("HRANDFIELD",)]:
        diff.check(*args)


def test_watch_after_in_place_changes(diff):
    diff.check("HSET", "h", "f", "v")
    for change in [("HSET", "h", "f", "v"), ("HSETNX", "h", "f", "x"), ("HDEL", "h", "missing"),
                   ("HINCRBY", "h", "n", "1"), ("HINCRBYFLOAT", "h", "n", "0.5"),
                   ("HMSET", "h", "g", "1")]:
        diff.check("WATCH", "h")
        diff.check(*change)
        diff.check("MULTI")
        diff.check("PING")
        diff.check("EXEC")
