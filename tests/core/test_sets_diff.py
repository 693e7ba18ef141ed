"""Set commands compared with real Redis, in RESP2 and RESP3 (where SMEMBERS, SINTER, SPOP with
a count ... are RESP3 sets). Member order is unspecified, so set replies compare unordered."""
import pytest

PROTOCOLS = pytest.mark.parametrize("protocol", [2, 3])


@PROTOCOLS
def test_add_remove_membership(diff, protocol):
    diff.hello(protocol)
    diff.check("SADD", "s", "a", "b", "c", "a")
    diff.check("SADD", "s", "c", "d")
    diff.check("SADD", "ints", "3", "1", "-5", "10", "1")
    diff.check("SREM", "s", "a", "missing", "a")
    diff.check("SREM", "nokey", "a")
    diff.check("SMEMBERS", "s", unordered=True)
    diff.check("SMEMBERS", "ints", unordered=True)
    diff.check("SMEMBERS", "nokey")
    diff.check("SCARD", "s")
    diff.check("SCARD", "nokey")
    diff.check("SISMEMBER", "s", "b")
    diff.check("SISMEMBER", "s", "a")
    diff.check("SISMEMBER", "nokey", "a")
    diff.check("SMISMEMBER", "s", "a", "b", "missing", "d")
    diff.check("SMISMEMBER", "nokey", "a", "b")
    diff.check("SREM", "s", "b", "c", "d")
    diff.check("EXISTS", "s")


@PROTOCOLS
def test_spop_and_srandmember(diff, protocol):
    diff.hello(protocol)
    diff.check("SADD", "one", "only")
    diff.check("SADD", "s", "a", "b", "c")
    diff.check("SRANDMEMBER", "one")
    diff.check("SRANDMEMBER", "one", "-3")
    diff.check("SRANDMEMBER", "s", "3", unordered=True)
    diff.check("SRANDMEMBER", "s", "10", unordered=True)
    diff.check("SRANDMEMBER", "s", "0")
    diff.check("SRANDMEMBER", "nokey")
    diff.check("SRANDMEMBER", "nokey", "3")
    diff.check("SPOP", "one")
    diff.check("EXISTS", "one")
    diff.check("SPOP", "nokey")
    diff.check("SPOP", "nokey", "2")
    diff.check("SPOP", "s", "0")
    for args in [("s", "x"), ("s", "-1"), ("s", "1", "2")]:
        diff.check("SPOP", *args)
    for args in [("s", "x"), ("s", "-9223372036854775808"), ("s", "1", "2")]:
        diff.check("SRANDMEMBER", *args)
    redis_reply, mini_reply = diff.both("SRANDMEMBER", "s", "-7")
    assert len(mini_reply) == 7 and set(mini_reply) <= {b"a", b"b", b"c"}
    redis_reply, mini_reply = diff.both("SPOP", "s", "2")
    assert type(mini_reply) is type(redis_reply) and len(set(mini_reply)) == 2
    rest = diff.minired.call("SPOP", "s", "5")
    assert len(rest) == 1 and set(mini_reply) | set(rest) == {b"a", b"b", b"c"}
    diff.redis.call("SPOP", "s", "5")
    diff.check("EXISTS", "s")
    diff.check("SADD", "s", "x", "y")
    diff.check("SPOP", "s", "2", unordered=True)
    diff.check("EXISTS", "s")


def test_smove(diff):
    diff.check("SADD", "src", "a", "b")
    diff.check("SADD", "dst", "b")
    diff.check("SET", "str", "v")
    diff.check("SMOVE", "src", "dst", "a")
    diff.check("SMOVE", "src", "dst", "a")
    diff.check("SMOVE", "src", "dst", "b")
    diff.check("EXISTS", "src")
    diff.check("SMEMBERS", "dst", unordered=True)
    diff.check("SMOVE", "dst", "dst", "a")
    diff.check("SMOVE", "dst", "dst", "zz")
    diff.check("SMOVE", "dst", "new", "a")
    diff.check("SMEMBERS", "new")
    diff.check("SMOVE", "nokey", "str", "a")
    diff.check("SMOVE", "dst", "str", "b")
    diff.check("SMOVE", "str", "dst", "b")
    diff.check("SMOVE", "dst", "str", "missing")


@PROTOCOLS
def test_algebra(diff, protocol):
    diff.hello(protocol)
    diff.check("SADD", "s1", "a", "b", "c", "1")
    diff.check("SADD", "s2", "b", "c", "d")
    diff.check("SADD", "s3", "c", "e", "1")
    diff.check("SET", "str", "v")
    for name in ("SINTER", "SUNION", "SDIFF"):
        diff.check(name, "s1", unordered=True)
        diff.check(name, "s1", "s2", unordered=True)
        diff.check(name, "s1", "s2", "s3", unordered=True)
        diff.check(name, "s1", "nokey", unordered=True)
        diff.check(name, "nokey", "s1", unordered=True)
        diff.check(name, "s1", "s1", unordered=True)
        diff.check(name, "nokey", "str")
        diff.check(name, "str")
    for name in ("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"):
        diff.check(name, "dest", "s1", "s2")
        diff.check("SMEMBERS", "dest", unordered=True)
        diff.check(name, "str", "s1", "s3")
        diff.check("TYPE", "str")
        diff.check("SET", "str", "v")
        diff.check(name, "dest", "nokey", "nokey2")
        diff.check("EXISTS", "dest")
        diff.check(name, "dest", "s1", "str")
    diff.check("SUNIONSTORE", "s1", "s1", "s2")
    diff.check("SMEMBERS", "s1", unordered=True)
    diff.check("SINTERCARD", "2", "s1", "s2")
    diff.check("SINTERCARD", "3", "s1", "s2", "s3", "LIMIT", "1")
    diff.check("SINTERCARD", "2", "s1", "s2", "limit", "0")
    diff.check("SINTERCARD", "2", "s1", "nokey")
    for args in [("0", "s1"), ("x", "s1"), ("-1", "s1"), ("3", "s1"), ("1", "s1", "LIMIT", "-1"),
                 ("1", "s1", "LIMIT", "x"), ("1", "s1", "LIMIT"), ("1", "s1", "FOO"),
                 ("2", "nokey", "str")]:
        diff.check("SINTERCARD", *args)


def test_sscan(diff):
    diff.check("SADD", "ints", "1", "2", "10", "20")
    diff.check("SSCAN", "ints", "0", unordered=True)
    redis_reply, mini_reply = diff.both("SSCAN", "ints", "0", "MATCH", "1*")
    assert mini_reply[0] == b"0" and sorted(mini_reply[1]) == sorted(redis_reply[1])
    diff.check("SSCAN", "nokey", "0", "FOO")
    diff.check("SET", "str", "v")
    for args in [("ints", "x"), ("ints", "0", "COUNT", "0"), ("ints", "0", "FOO"),
                 ("ints", "0", "MATCH"), ("str", "0")]:
        diff.check("SSCAN", *args)


def test_sscan_large_set_is_fully_walked(mini_raw):
    members = {f"member-{i}".encode() for i in range(700)}
    mini_raw.call("SADD", "big", *members)
    seen = []
    cursor = b"0"
    while True:
        cursor, found = mini_raw.call("SSCAN", "big", cursor, "COUNT", "25", "MATCH", "member-*")
        seen.extend(found)
        if cursor == b"0":
            break
    assert sorted(seen) == sorted(members)


def test_wrong_type_and_arity(diff):
    diff.check("SET", "str", "v")
    for args in [("SADD", "str", "a"), ("SREM", "str", "a"), ("SISMEMBER", "str", "a"),
                 ("SMISMEMBER", "str", "a"), ("SMEMBERS", "str"), ("SCARD", "str"),
                 ("SPOP", "str"), ("SPOP", "str", "1"), ("SRANDMEMBER", "str"),
                 ("SRANDMEMBER", "str", "1"), ("SSCAN", "str", "0"), ("SINTERCARD", "1", "str")]:
        diff.check(*args)
    for args in [("SADD", "s"), ("SREM", "s"), ("SISMEMBER", "s"), ("SMISMEMBER", "s"),
                 ("SMOVE", "a", "b"), ("SINTER",), ("SINTERSTORE", "d"), ("SINTERCARD", "1"),
                 ("SSCAN", "s"), ("SPOP",)]:
        diff.check(*args)


def test_watch_after_in_place_changes(diff):
    diff.check("SADD", "s", "a", "b")
    diff.check("SADD", "t", "x")
    for change in [("SADD", "s", "a"), ("SADD", "s", "c"), ("SREM", "s", "missing"),
                   ("SREM", "s", "c"), ("SMOVE", "t", "s", "x"), ("SMOVE", "s", "s", "a"),
                   ("SPOP", "s", "0"), ("SINTERSTORE", "s", "s", "s")]:
        diff.check("WATCH", "s")
        diff.check(*change)
        diff.check("MULTI")
        diff.check("PING")
        diff.check("EXEC")
