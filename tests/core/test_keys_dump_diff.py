"""DUMP / RESTORE: payloads must move between minired and real Redis in both directions, and
RESTORE's options and errors must match Redis."""
import pytest

BUILDERS = {
    "small int": [("SET", "k", "12")],
    "int16": [("SET", "k", "-30000")],
    "int32": [("SET", "k", "2000000000")],
    "big int": [("SET", "k", "9223372036854775807")],
    "short string": [("SET", "k", "hello")],
    "empty string": [("SET", "k", "")],
    "binary": [("SET", "k", b"\x00\xff\r\n" * 5)],
    "compressible": [("SET", "k", "abc" * 200)],
    "incompressible": [("SET", "k", bytes(range(256)) * 3)],
    "list": [("RPUSH", "k", "a", "1", "-70000", "x" * 100, "")],
    "long list": [("RPUSH", "k", *[str(i) * (i % 7) for i in range(300)])],
    "intset": [("SADD", "k", "1", "-2", "300", "70000", "5000000000")],
    "set": [("SADD", "k", "a", "b", "1")],
    "hash": [("HSET", "k", "f", "v", "n", "12", "empty", "")],
    "big hash": [("HSET", "k", "f", "v" * 100)],
    "zset": [("ZADD", "k", "1.5", "a", "-inf", "b", "2", "c", "inf", "d", "0.1", "e")],
    "big zset": [("ZADD", "k", *[x for i in range(200) for x in (str(i / 7), "m%d" % i)])],
}


def _contents(client, key="k"):
    kind = client.call("TYPE", key)
    if kind == b"string":
        return kind, client.call("GET", key)
    if kind == b"list":
        return kind, client.call("LRANGE", key, "0", "-1")
    if kind == b"set":
        return kind, sorted(client.call("SMEMBERS", key))
    if kind == b"hash":
        flat = client.call("HGETALL", key)
        return kind, sorted(zip(flat[::2], flat[1::2]))
    if kind == b"zset":
        return kind, client.call("ZRANGE", key, "0", "-1", "WITHSCORES")
    return kind, None


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_payloads_move_both_ways(diff, name):
    for command in BUILDERS[name]:
        diff.check(*command)
    from_redis = diff.redis.call("DUMP", "k")
    from_minired = diff.minired.call("DUMP", "k")
    expected = _contents(diff.redis)
    assert diff.minired.call("RESTORE", "copy", "0", from_redis) == b"OK"
    assert _contents(diff.minired, "copy") == expected
    assert diff.redis.call("RESTORE", "copy", "0", from_minired) == b"OK"
    assert _contents(diff.redis, "copy") == expected
    assert diff.minired.call("RESTORE", "copy2", "0", from_minired) == b"OK"
    assert _contents(diff.minired, "copy2") == expected


@pytest.mark.parametrize("value", ["0", "12", "-5", "300", "-30000", "2000000000", "hello", "",
                                   "12345678901", "123456789012", "x" * 20])
def test_short_string_payloads_are_byte_identical(diff, value):
    diff.check("SET", "k", value)
    diff.check("DUMP", "k")


def test_restore_options_and_errors(diff):
    diff.check("SET", "src", "value")
    payload = diff.redis.call("DUMP", "src")
    diff.check("DUMP", "missing")
    diff.check("RESTORE", "src", "0", payload)
    diff.check("RESTORE", "k", "0", payload)
    diff.check("GET", "k")
    diff.check("TTL", "k")
    diff.check("RESTORE", "k", "0", payload, "REPLACE")
    diff.check("RESTORE", "t", "100000", payload)
    ttl_redis, ttl_mini = diff.both("PTTL", "t")
    assert 90_000 < ttl_redis <= 100_000 and 90_000 < ttl_mini <= 100_000
    diff.check("RESTORE", "abs", "99999999999999", payload, "ABSTTL")
    diff.check("PEXPIRETIME", "abs")
    diff.check("RESTORE", "past", "1", payload, "ABSTTL")
    diff.check("EXISTS", "past")
    diff.check("SET", "past", "x")
    diff.check("RESTORE", "past", "1", payload, "ABSTTL", "REPLACE")
    diff.check("EXISTS", "past")
    diff.check("RESTORE", "idle", "0", payload, "IDLETIME", "1000")
    diff.check("RESTORE", "freq", "0", payload, "FREQ", "100")
    for bad in (("IDLETIME", "-1"), ("IDLETIME", "x"), ("FREQ", "256"), ("FREQ", "-1"), ("FREQ",),
                ("IDLETIME", "1", "FREQ", "1"), ("FREQ", "1", "IDLETIME", "1"), ("FOO",),
                ("REPLACE", "ABSTTL", "BAR")):
        diff.check("RESTORE", "new", "0", payload, *bad)
    diff.check("RESTORE", "new", "-1", payload)
    diff.check("RESTORE", "new", "x", payload)
    diff.check("RESTORE", "src", "x", payload)
    diff.check("RESTORE", "new", "0", "garbage")
    diff.check("RESTORE", "new", "0", "")
    diff.check("RESTORE", "new", "0", payload[:-1] + bytes([payload[-1] ^ 1]))
    diff.check("RESTORE", "new", "0", payload[:1] + b"\xff" + payload[2:])
    diff.check("RESTORE", "new", "0")
    diff.check("DUMP")


def test_restore_rejects_future_rdb_version_and_bad_bodies(diff, mini_raw):
    import struct

    from minired.features.rdb_format import crc64

    def framed(body: bytes, version: int = 10) -> bytes:
        data = body + struct.pack("<H", version)
        return data + struct.pack("<Q", crc64(data))

    diff.check("RESTORE", "a", "0", framed(b"\x00\x05hello", version=11))
    diff.check("RESTORE", "b", "0", framed(b"\x00\x05hello", version=9))
    diff.check("GET", "b")
    for body in (b"\x00\x09hello", b"\x63\x01a", b"\x01\x00", b"\x02\x00", b"\x04\x01\x01a",
                 b"", b"\x00", b"\x00\xc3\x05\x10abc"):
        diff.check("RESTORE", "c", "0", framed(body))
    diff.check("EXISTS", "c")
