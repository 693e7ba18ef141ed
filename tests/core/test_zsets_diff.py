"""Sorted set commands compared with real Redis, in RESP2 and RESP3 (whose reply shapes differ:
doubles, and [member, score] pairs for WITHSCORES)."""

import pytest

from tests.support.differential import Err
from tests.support.respclient import NullArray, RawClient
from tests.support.waiting import wait_blocked

PROTOCOLS = pytest.mark.parametrize("protocol", [2, 3])


def _fill(diff, key="z"):
    diff.check("ZADD", key, "1", "a", "2", "b", "2", "c", "3", "d", "-1.5", "e", "inf", "f",
               "-inf", "g", "0.1", "h")


@PROTOCOLS
def test_zadd_options_and_replies(diff, protocol):
    diff.hello(protocol)
    diff.check("ZADD", "z", "1", "a", "2", "b")
    diff.check("ZADD", "z", "1", "a", "3", "b", "4", "c")
    diff.check("ZADD", "z", "CH", "1", "a", "5", "b", "4", "c", "6", "d")
    diff.check("ZADD", "z", "NX", "9", "a", "9", "new")
    diff.check("ZADD", "z", "XX", "9", "a", "9", "absent")
    diff.check("ZADD", "z", "XX", "CH", "10", "a", "9", "absent")
    diff.check("ZADD", "z", "GT", "CH", "1", "a", "20", "b", "7", "fresh")
    diff.check("ZADD", "z", "LT", "CH", "100", "a", "0", "b")
    diff.check("ZADD", "z", "XX", "GT", "CH", "50", "a", "1", "b")
    diff.check("ZADD", "z", "INCR", "2.5", "a")
    diff.check("ZADD", "z", "NX", "INCR", "1", "a")
    diff.check("ZADD", "z", "XX", "INCR", "1", "absent")
    diff.check("ZADD", "z", "GT", "INCR", "-1", "a")
    diff.check("ZADD", "z", "LT", "INCR", "-1", "a")
    diff.check("ZADD", "z", "INCR", "0", "a")
    diff.check("ZADD", "z", "nx", "incr", "3", "lower-case-options")
    diff.check("ZADD", "nokey", "XX", "1", "a")
    diff.check("ZADD", "nokey", "XX", "INCR", "1", "a")
    diff.check("EXISTS", "nokey")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZINCRBY", "z", "1.5", "a")
    diff.check("ZINCRBY", "z", "-3", "new-by-incr")
    diff.check("ZINCRBY", "z", "1e308", "big")
    diff.check("ZINCRBY", "z", "1e308", "big")
    diff.check("ZINCRBY", "z", "-inf", "big")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")


@PROTOCOLS
def test_zadd_of_one_pair(diff, protocol):
    """One score and member without flags (the queue's markers and completed set)."""
    diff.hello(protocol)
    for score in ["5", "5", "5.0", "+5", "6", "-0", "0", ".5", "-.5", "+inf", "-inf", "1e3", "0x10"]:
        diff.check("ZADD", "z", score, "m")
        diff.check("ZSCORE", "z", "m")
    diff.check("ZADD", "z", "7", "other")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_zadd_errors(diff):
    diff.check("SET", "s", "v")
    for args in [("z", "NX", "XX", "1", "a"), ("z", "GT", "LT", "1", "a"),
                 ("z", "GT", "NX", "1", "a"), ("z", "LT", "NX", "1", "a"),
                 ("z", "INCR", "1", "a", "2", "b"), ("z", "1"), ("z", "NX"), ("z", "1", "a", "2"),
                 ("z", "x", "1", "a"), ("z", "nan", "a"), ("z", "1e400", "a"),
                 ("z", "1e-400", "a"), ("z", " 1", "a"), ("z", "1 ", "a"), ("z", "1_0", "a"),
                 ("z", "", "a"), ("s", "x", "a"), ("s", "1", "a"), ("s", "XX", "1", "a"),
                 ("z", "NX", "a"), ("z", "ch", "a"), ("z", "-", "a"), ("z", "+", "a"), ("z", ".", "a"),
                 ("s", "-1", "a")]:
        diff.check("ZADD", *args)
    diff.check("ZADD", "z", "inf", "a")
    diff.check("ZADD", "z", "INCR", "-inf", "a")
    diff.check("ZINCRBY", "z", "-inf", "a")
    diff.check("ZINCRBY", "z", "x", "a")
    diff.check("ZINCRBY", "z", "NX", "a")
    diff.check("ZINCRBY", "s", "1", "a")
    diff.check("ZINCRBY", "z", "1")
    diff.check("EXISTS", "z")


@PROTOCOLS
def test_score_formatting(diff, protocol):
    diff.hello(protocol)
    scores = ["0.1", "1e20", "-0", "-0.0", "inf", "-inf", "+inf", "1e16", "1e17", "123456789012345678",
              "1e-310", "0x10", "0x1.8p3", "3.0", "-1e-5", "1.5e300", "2.5", ".5", "5.", "+7",
              "0e500", "1e15", "9007199254740993", "-infinity", "INF"]
    for index, score in enumerate(scores):
        diff.check("ZADD", "z", score, f"m{index}")
        diff.check("ZSCORE", "z", f"m{index}")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZMSCORE", "z", "m0", "m1", "missing")
    diff.check("ZINCRBY", "z", "0.2", "m0")
    # A new member incremented by -0 replies "-0", but is stored (and read back) as 0.
    diff.check("ZINCRBY", "z", "-0", "negzero")
    diff.check("ZADD", "z", "INCR", "-0.0", "negzero2")
    diff.check("ZSCORE", "z", "negzero")
    diff.check("ZSCAN", "z", "0")


@PROTOCOLS
def test_zscore_zmscore_zcard_zrank(diff, protocol):
    diff.hello(protocol)
    _fill(diff)
    diff.check("SET", "s", "v")
    for member in ("a", "c", "f", "g", "missing"):
        diff.check("ZSCORE", "z", member)
        diff.check("ZRANK", "z", member)
        diff.check("ZREVRANK", "z", member)
    diff.check("ZMSCORE", "z", "a", "missing", "f")
    diff.check("ZMSCORE", "nokey", "a", "b")
    diff.check("ZSCORE", "nokey", "a")
    diff.check("ZRANK", "nokey", "a")
    diff.check("ZCARD", "z")
    diff.check("ZCARD", "nokey")
    for command in ("ZSCORE", "ZRANK", "ZREVRANK", "ZMSCORE"):
        diff.check(command, "s", "a")
        diff.check(command, "z")
    diff.check("ZCARD", "s")
    diff.check("ZRANK", "z", "a", "WITHSCORE")


def test_score_ranges(diff):
    _fill(diff)
    bounds = ["-inf", "+inf", "inf", "-1.5", "(-1.5", "0", "(0", "0.1", "(0.1", "2", "(2", "3",
              "(3", "(inf", "(-inf", "", "(", " 2", "1e400", "-1e400", "0x2", "(0x2"]
    for low in bounds:
        for high in bounds[::3]:
            diff.check("ZCOUNT", "z", low, high)
            diff.check("ZRANGEBYSCORE", "z", low, high, "WITHSCORES")
            diff.check("ZREVRANGEBYSCORE", "z", high, low)
    for bad in ["a", "(a", "((1", "1 ", "nan", "(nan", "1,5", "[1", " "]:
        diff.check("ZCOUNT", "z", bad, "1")
        diff.check("ZRANGEBYSCORE", "z", "1", bad)
        diff.check("ZREMRANGEBYSCORE", "z", bad, "1")
    diff.check("ZCOUNT", "nokey", "-inf", "inf")
    diff.check("ZCOUNT", "nokey", "x", "inf")


@PROTOCOLS
def test_zrange_by_rank_score_lex_with_limits(diff, protocol):
    diff.hello(protocol)
    _fill(diff)
    for start, stop in [("0", "-1"), ("1", "3"), ("-3", "-1"), ("-100", "100"), ("5", "2"),
                        ("7", "7"), ("8", "10"), ("-1", "-1"), ("0", "0"), ("-100", "-50")]:
        diff.check("ZRANGE", "z", start, stop)
        diff.check("ZRANGE", "z", start, stop, "WITHSCORES")
        diff.check("ZRANGE", "z", start, stop, "REV", "withscores")
        diff.check("ZREVRANGE", "z", start, stop, "WITHSCORES")
    for limit in [("0", "2"), ("1", "-1"), ("2", "0"), ("-1", "3"), ("3", "100"), ("100", "1"),
                  ("0", "-5")]:
        diff.check("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", *limit)
        diff.check("ZRANGEBYSCORE", "z", "(1", "3", "WITHSCORES", "LIMIT", *limit)
        diff.check("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", *limit, "WITHSCORES")
        diff.check("ZRANGE", "z", "0", "3", "BYSCORE", "LIMIT", *limit)
        diff.check("ZRANGE", "z", "3", "0", "BYSCORE", "REV", "LIMIT", *limit, "WITHSCORES")
    diff.check("ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1")
    diff.check("ZRANGE", "nokey", "0", "-1", "WITHSCORES")
    diff.check("ZRANGEBYSCORE", "nokey", "0", "1")


LEX_BOUNDS = ["-", "+", "[a", "(a", "[b", "(b", "[bb", "(c", "[c", "[d", "(z", "[", "(", "[\x00"]


@PROTOCOLS
def test_lex_ranges_uniform_scores(diff, protocol):
    diff.hello(protocol)
    diff.check("ZADD", "z", "0", "a", "0", "b", "0", "bb", "0", "c", "0", "d", "0", "", "0", "\x00")
    for low in LEX_BOUNDS:
        for high in LEX_BOUNDS:
            diff.check("ZLEXCOUNT", "z", low, high)
            diff.check("ZRANGEBYLEX", "z", low, high)
            diff.check("ZREVRANGEBYLEX", "z", high, low, "LIMIT", "1", "2")
    diff.check("ZRANGE", "z", "[b", "[d", "BYLEX", "LIMIT", "1", "2")
    diff.check("ZRANGE", "z", "[d", "[b", "BYLEX", "REV")
    for bad in ["a", "+a", "-a", "", "]a"]:
        diff.check("ZRANGEBYLEX", "z", bad, "+")
        diff.check("ZLEXCOUNT", "z", "-", bad)
        diff.check("ZREMRANGEBYLEX", "z", bad, "+")
    diff.check("ZRANGEBYLEX", "z", "-", "+", "WITHSCORES")
    diff.check("ZRANGEBYLEX", "nokey", "-", "+")
    diff.check("ZLEXCOUNT", "nokey", "-", "+")


def test_lex_ranges_mixed_scores_walk_like_a_listpack(diff):
    diff.check("ZADD", "z", "1", "a", "2", "z", "3", "b", "4", "y", "5", "c", "6", "x")
    for low in LEX_BOUNDS:
        for high in LEX_BOUNDS[::2]:
            diff.check("ZLEXCOUNT", "z", low, high)
            diff.check("ZRANGEBYLEX", "z", low, high)
            diff.check("ZREVRANGEBYLEX", "z", high, low)
            diff.check("ZRANGEBYLEX", "z", low, high, "LIMIT", "2", "2")
            diff.check("ZREVRANGEBYLEX", "z", high, low, "LIMIT", "1", "-1")


def test_zrange_option_errors(diff):
    _fill(diff)
    diff.check("SET", "s", "v")
    cases = [
        ("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"),
        ("ZRANGE", "z", "a", "b", "BYLEX", "WITHSCORES"),
        ("ZRANGE", "z", "a", "b", "BYLEX"),
        ("ZRANGE", "z", "0", "-1", "REV", "REV"),
        ("ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"),
        ("ZRANGE", "z", "0", "-1", "LIMIT", "0"),
        ("ZRANGE", "z", "0", "-1", "BYSCORE", "LIMIT", "x", "1"),
        ("ZRANGE", "z", "x", "-1"),
        ("ZRANGE", "z", "0", "-1", "FOO"),
        ("ZRANGE", "s", "0", "-1"),
        ("ZRANGE", "s", "x", "-1"),
        ("ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "0"),
        ("ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "0", "1", "2"),
        ("ZRANGEBYSCORE", "z", "1", "2", "REV"),
        ("ZRANGEBYSCORE", "z", "1", "2", "BYLEX"),
        ("ZRANGEBYSCORE", "s", "1", "2"),
        ("ZREVRANGEBYSCORE", "z", "1", "2", "REV"),
        ("ZREVRANGE", "z", "0", "-1", "LIMIT", "0", "1"),
        ("ZREVRANGE", "z", "0", "-1", "BYSCORE"),
        ("ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"),
        ("ZRANGEBYLEX", "z", "-", "+", "LIMIT", "a", "1"),
        ("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "s", "0", "-1"),
        ("ZRANGE", "z", "0"),
    ]
    for args in cases:
        diff.check(*args)


def test_zrangestore(diff):
    _fill(diff)
    diff.check("SET", "s", "v")
    diff.check("ZRANGESTORE", "d", "z", "1", "3")
    diff.check("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff.check("ZRANGESTORE", "d", "z", "(1", "inf", "BYSCORE", "LIMIT", "1", "2")
    diff.check("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff.check("ZRANGESTORE", "d", "z", "+", "-", "BYLEX", "REV", "LIMIT", "0", "3")
    diff.check("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff.check("ZRANGESTORE", "s", "z", "0", "0")
    diff.check("TYPE", "s")
    diff.check("ZRANGESTORE", "d", "z", "10", "20")
    diff.check("EXISTS", "d")
    diff.check("ZRANGESTORE", "d", "nokey", "0", "-1")
    diff.check("ZRANGESTORE", "z", "z", "0", "1")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_zrem_and_zremrange(diff):
    _fill(diff)
    diff.check("SET", "s", "v")
    diff.check("ZREM", "z", "a", "missing", "a", "b")
    diff.check("ZREM", "nokey", "a")
    diff.check("ZREM", "s", "a")
    diff.check("ZREMRANGEBYRANK", "z", "0", "0")
    diff.check("ZREMRANGEBYRANK", "z", "-1", "-1")
    diff.check("ZREMRANGEBYRANK", "z", "5", "1")
    diff.check("ZREMRANGEBYRANK", "z", "x", "1")
    diff.check("ZREMRANGEBYRANK", "s", "0", "1")
    diff.check("ZREMRANGEBYRANK", "nokey", "0", "1")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZREMRANGEBYSCORE", "z", "(0.1", "2")
    diff.check("ZREMRANGEBYSCORE", "z", "5", "1")
    diff.check("ZREMRANGEBYSCORE", "s", "0", "1")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d")
    diff.check("ZREMRANGEBYLEX", "lex", "(a", "[c")
    diff.check("ZREMRANGEBYLEX", "lex", "[z", "[a")
    diff.check("ZREMRANGEBYLEX", "s", "-", "+")
    diff.check("ZRANGE", "lex", "0", "-1")
    diff.check("ZREMRANGEBYLEX", "lex", "-", "+")
    diff.check("EXISTS", "lex")
    diff.check("ZREM", "z", "d", "h")
    diff.check("EXISTS", "z")
    diff.check("ZREMRANGEBYRANK", "z", "0", "-1")
    diff.check("EXISTS", "z")


@PROTOCOLS
def test_zpopmin_zpopmax_zmpop(diff, protocol):
    diff.hello(protocol)
    _fill(diff)
    diff.check("SET", "s", "v")
    diff.check("ZPOPMIN", "z")
    diff.check("ZPOPMAX", "z")
    diff.check("ZPOPMIN", "z", "1")
    diff.check("ZPOPMAX", "z", "2")
    diff.check("ZPOPMIN", "z", "0")
    for bad in ("-1", "x", "1.5"):
        diff.check("ZPOPMIN", "z", bad)
    diff.check("ZPOPMIN", "z", "1", "2")
    diff.check("ZPOPMIN", "s")
    diff.check("ZPOPMIN", "s", "0")
    diff.check("ZPOPMIN", "nokey")
    diff.check("ZPOPMIN", "nokey", "0")
    diff.check("ZPOPMAX", "nokey", "3")
    diff.check("ZMPOP", "2", "nokey", "z", "MIN")
    diff.check("ZMPOP", "1", "z", "max", "COUNT", "10")
    diff.check("EXISTS", "z")
    diff.check("ZMPOP", "1", "z", "MIN")
    diff.check("ZADD", "z", "1", "a", "2", "b")
    diff.check("ZMPOP", "2", "s", "z", "MIN")
    diff.check("ZMPOP", "2", "z", "s", "MIN", "COUNT", "1")
    diff.check("ZPOPMAX", "z", "5")
    diff.check("ZPOPMAX", "z", "5")
    for args in [("0", "z", "MIN"), ("x", "z", "MIN"), ("-1", "z", "MIN"), ("1", "z", "FOO"),
                 ("1", "z", "MIN", "COUNT", "0"), ("1", "z", "MIN", "COUNT", "x"),
                 ("1", "z", "MIN", "COUNT", "1", "COUNT", "1"), ("5", "z", "MIN"),
                 ("1", "z", "MIN", "COUNT"), ("1", "z"), ("2", "z", "MIN")]:
        diff.check("ZMPOP", *args)


@PROTOCOLS
def test_set_algebra(diff, protocol):
    diff.hello(protocol)
    diff.check("ZADD", "z1", "1", "a", "2", "b", "3", "c")
    diff.check("ZADD", "z2", "10", "b", "20", "c", "30", "d")
    diff.check("ZADD", "zinf", "inf", "a", "-inf", "b", "5", "c")
    diff.check("SADD", "set", "a", "d", "e")
    diff.check("SET", "str", "v")
    for name in ("ZUNION", "ZINTER", "ZDIFF"):
        diff.check(name, "2", "z1", "z2")
        diff.check(name, "2", "z1", "z2", "WITHSCORES")
        diff.check(name, "3", "z1", "z2", "set", "WITHSCORES")
        diff.check(name, "2", "z1", "nokey", "WITHSCORES")
        diff.check(name, "1", "nokey")
        diff.check(name, "2", "z1", "z1", "WITHSCORES")
        diff.check(name, "2", "set", "z1", "WITHSCORES")
    for aggregate in ("SUM", "MIN", "MAX", "min"):
        diff.check("ZUNION", "2", "z1", "z2", "WEIGHTS", "2", "0.5", "AGGREGATE", aggregate,
                   "WITHSCORES")
        diff.check("ZINTER", "3", "z1", "z2", "zinf", "AGGREGATE", aggregate, "WITHSCORES")
        diff.check("ZUNION", "2", "zinf", "zinf", "WEIGHTS", "1", "-1", "AGGREGATE", aggregate,
                   "WITHSCORES")
    diff.check("ZUNION", "1", "zinf", "WEIGHTS", "0", "WITHSCORES")
    diff.check("ZUNION", "1", "z1", "WEIGHTS", "-1", "WITHSCORES")
    diff.check("ZINTER", "2", "z1", "z2", "WEIGHTS", "inf", "-inf", "WITHSCORES")
    for name in ("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"):
        diff.check(name, "dest", "2", "z1", "z2")
        diff.check("ZRANGE", "dest", "0", "-1", "WITHSCORES")
        diff.check(name, "str", "1", "z1")
        diff.check("TYPE", "str")
        diff.check("SET", "str", "v")
        diff.check(name, "dest", "2", "nokey", "nokey2")
        diff.check("EXISTS", "dest")
    diff.check("ZUNIONSTORE", "z1", "2", "z1", "z2", "WEIGHTS", "1", "2", "AGGREGATE", "MAX")
    diff.check("ZRANGE", "z1", "0", "-1", "WITHSCORES")
    diff.check("ZINTERCARD", "2", "z1", "z2")
    diff.check("ZINTERCARD", "2", "z1", "z2", "LIMIT", "1")
    diff.check("ZINTERCARD", "2", "z1", "z2", "LIMIT", "0")
    diff.check("ZINTERCARD", "2", "z1", "set")
    diff.check("ZINTERCARD", "2", "z1", "nokey")


def test_set_algebra_errors(diff):
    diff.check("ZADD", "z", "1", "a")
    diff.check("SET", "str", "v")
    cases = [
        ("ZUNIONSTORE", "d", "0", "z"), ("ZUNIONSTORE", "d", "x", "z"),
        ("ZUNIONSTORE", "d", "2", "z"), ("ZUNIONSTORE", "d", "-1", "z"),
        ("ZUNION", "0", "z"), ("ZINTER", "0", "z"), ("ZDIFF", "0", "z"),
        ("ZINTERSTORE", "d", "0", "z"), ("ZDIFFSTORE", "d", "0", "z"),
        ("ZINTERCARD", "0", "z"), ("ZINTERCARD", "2", "z"), ("ZINTERCARD", "x", "z"),
        ("ZINTERCARD", "1", "z", "LIMIT", "-1"), ("ZINTERCARD", "1", "z", "LIMIT", "x"),
        ("ZINTERCARD", "1", "z", "LIMIT"), ("ZINTERCARD", "1", "z", "WITHSCORES"),
        ("ZINTERCARD", "1", "z", "WEIGHTS", "1"),
        ("ZUNION", "1", "z", "WEIGHTS", "x"), ("ZUNION", "1", "z", "WEIGHTS", "nan"),
        ("ZUNION", "1", "z", "WEIGHTS", "1", "2"), ("ZUNION", "1", "z", "WEIGHTS"),
        ("ZUNION", "1", "z", "AGGREGATE", "foo"), ("ZUNION", "1", "z", "AGGREGATE"),
        ("ZUNIONSTORE", "d", "1", "z", "WITHSCORES"), ("ZUNION", "1", "str"),
        ("ZUNION", "2", "z", "str", "AGGREGATE", "foo"), ("ZINTER", "2", "nokey", "str"),
        ("ZDIFF", "1", "z", "WEIGHTS", "1"), ("ZDIFF", "1", "z", "AGGREGATE", "SUM"),
        ("ZDIFFSTORE", "d", "2", "z", "str"), ("ZUNION", "1", "z", "foo"),
    ]
    for args in cases:
        diff.check(*args)


@PROTOCOLS
def test_zrandmember(diff, protocol):
    diff.hello(protocol)
    diff.check("ZADD", "one", "5", "solo")
    diff.check("ZADD", "z", "1", "a", "2", "b", "3", "c")
    diff.check("SET", "s", "v")
    # Replies that do not depend on chance are compared exactly.
    diff.check("ZRANDMEMBER", "one")
    diff.check("ZRANDMEMBER", "one", "-3", "WITHSCORES")
    diff.check("ZRANDMEMBER", "z", "3", "WITHSCORES")
    diff.check("ZRANDMEMBER", "z", "10")
    diff.check("ZRANDMEMBER", "z", "0")
    diff.check("ZRANDMEMBER", "nokey")
    diff.check("ZRANDMEMBER", "nokey", "5", "WITHSCORES")
    for args in [("z", "x"), ("z", "-9223372036854775808"), ("z", "4611686018427387904", "WITHSCORES"),
                 ("z", "-4611686018427387904", "withscores"), ("z", "1", "WITHSCORE"),
                 ("z", "1", "WITHSCORES", "x"), ("s",), ("s", "1")]:
        diff.check("ZRANDMEMBER", *args)
    redis_reply, mini_reply = diff.both("ZRANDMEMBER", "z", "-20", "WITHSCORES")
    assert len(mini_reply) == len(redis_reply)
    scores = {b"a": b"1", b"b": b"2", b"c": b"3"}
    pairs = (mini_reply if protocol == 3 else
             [mini_reply[i:i + 2] for i in range(0, len(mini_reply), 2)])
    assert all(scores[member] == bytes(score) for member, score in pairs)
    redis_reply, mini_reply = diff.both("ZRANDMEMBER", "z", "2")
    assert len(mini_reply) == 2 and len(set(mini_reply)) == 2 and set(mini_reply) <= set(scores)
    assert diff.minired.call("ZRANDMEMBER", "z") in scores


def test_zscan(diff):
    diff.check("SET", "s", "v")
    diff.check("ZADD", "z", "1", "a", "2.5", "b", "3", "c", "inf", "d")
    diff.check("ZSCAN", "z", "0")
    diff.check("ZSCAN", "z", "0", "MATCH", "[ab]", "COUNT", "1")
    diff.check("ZSCAN", "z", "0", "match", "*")
    for args in [("z", "x"), ("z", "-1"), ("z", ""), ("z", "18446744073709551616"),
                 ("z", "0", "COUNT", "0"), ("z", "0", "COUNT", "x"), ("z", "0", "FOO"),
                 ("z", "0", "MATCH"), ("nokey", "0", "FOO"), ("s", "0"), ("z", " 1")]:
        diff.check("ZSCAN", *args)


def test_zscan_large_set_visits_every_member_once_despite_changes(mini_raw):
    members = {f"m{i}".encode(): i for i in range(1000)}
    mini_raw.call("ZADD", "big", *[x for m, i in members.items() for x in (i, m)])
    seen = []
    cursor = b"0"
    calls = 0
    while True:
        cursor, flat = mini_raw.call("ZSCAN", "big", cursor, "COUNT", "50")
        seen.extend(flat[::2])
        calls += 1
        if calls == 3:
            mini_raw.call("ZREM", "big", "m1", "m2")  # removed members may or may not show
            mini_raw.call("ZADD", "big", "5000", "late")
        if cursor == b"0":
            break
    assert 10 < calls < 100
    survivors = set(members) - {b"m1", b"m2"}
    assert survivors <= set(seen)
    assert len(seen) == len(set(seen))


def test_wrong_type_for_every_read_and_write(diff):
    diff.check("SET", "s", "v")
    for args in [("ZCOUNT", "s", "0", "1"), ("ZLEXCOUNT", "s", "-", "+"), ("ZRANGEBYLEX", "s", "-", "+"),
                 ("ZREVRANGEBYLEX", "s", "+", "-"), ("ZREVRANGE", "s", "0", "1"),
                 ("ZREVRANGEBYSCORE", "s", "1", "0"), ("ZSCAN", "s", "0"), ("ZRANDMEMBER", "s"),
                 ("ZPOPMAX", "s"), ("ZMPOP", "1", "s", "MAX"), ("BZPOPMIN", "s", "0"),
                 ("BZPOPMAX", "nokey", "s", "0"), ("BZMPOP", "0", "1", "s", "MIN"),
                 ("ZINTERCARD", "1", "s"), ("ZREMRANGEBYLEX", "s", "-", "+")]:
        diff.check(*args)


def test_arity(diff):
    for args in [("ZADD", "z", "1"), ("ZINCRBY", "z", "1"), ("ZSCORE", "z"), ("ZMSCORE", "z"),
                 ("ZCARD",), ("ZCOUNT", "z", "1"), ("ZRANGE", "z", "0"), ("ZPOPMIN",),
                 ("ZMPOP", "1", "z"), ("BZPOPMIN", "z"), ("BZMPOP", "0", "1", "z"),
                 ("ZRANGESTORE", "d", "z", "0"), ("ZUNIONSTORE", "d", "1"), ("ZUNION", "1"),
                 ("ZREMRANGEBYRANK", "z", "0"), ("ZRANDMEMBER",), ("ZSCAN", "z"), ("ZRANK", "z"),
                 ("ZINTERCARD", "1")]:
        diff.check(*args)


# --- blocking pops -----------------------------------------------------------------------------

@pytest.fixture
def waiters(real_redis, mini):
    """A second connection to each server, for the client that blocks."""
    clients = (RawClient(real_redis.port), RawClient(mini.port))
    try:
        yield clients
    finally:
        for client in clients:
            client.close()


def _both_blocked_then(diff, waiters, command, *pushes):
    """Send `command` from the waiting clients, run `pushes` on the main ones, read the
    waiters' replies and check they agree."""
    for waiter in waiters:
        waiter.send(*command)
    wait_blocked(diff.redis, diff.minired)  # pushes come after the block
    for push in pushes:
        diff.check(*push)
    replies = [waiter.read() for waiter in waiters]
    assert replies[1] == replies[0], replies
    return replies[0]


@PROTOCOLS
def test_bzpopmin_serves_at_once_then_blocks_until_a_push(diff, waiters, protocol):
    diff.hello(protocol)
    for waiter in waiters:
        waiter.call("HELLO", protocol)
    diff.check("ZADD", "q2", "3", "x", "1", "y")
    diff.check("BZPOPMIN", "q1", "q2", "0")
    diff.check("BZPOPMAX", "q1", "q2", "0.5")
    diff.check("ZADD", "q2", "5", "m", "6", "n")
    diff.check("BZMPOP", "0", "2", "q1", "q2", "MIN", "COUNT", "5")
    diff.check("EXISTS", "q2")
    reply = _both_blocked_then(diff, waiters, ("BZPOPMIN", "q1", "q2", "0"),
                               ("ZADD", "q2", "7", "late", "2", "early"))
    assert reply[:2] == [b"q2", b"early"]
    _both_blocked_then(diff, waiters, ("BZPOPMAX", "q1", "0"), ("ZADD", "q1", "1", "a", "9", "b"))
    _both_blocked_then(diff, waiters, ("BZMPOP", "0", "2", "q3", "q4", "MAX", "COUNT", "2"),
                       ("ZADD", "q4", "1", "a", "2", "b", "3", "c"))
    diff.check("ZRANGE", "q4", "0", "-1", "WITHSCORES")
    diff.check("ZRANGE", "q1", "0", "-1", "WITHSCORES")


def test_blocked_client_ignores_a_key_of_another_type(diff, waiters):
    _both_blocked_then(diff, waiters, ("BZPOPMIN", "k", "0"),
                       ("SET", "k", "string"), ("DEL", "k"), ("ZADD", "k", "1", "m"))
    diff.check("EXISTS", "k")


def test_fractional_timeouts_expire_with_a_null_array(diff):
    # A timeout that never fired would fail the read (the connections time out at 10 s).
    diff.check("BZPOPMIN", "nokey", "0.001")
    diff.check("BZPOPMAX", "nokey", "other", "0.02")
    diff.check("BZMPOP", "0.01", "1", "nokey", "MIN")
    diff.hello(3)
    diff.check("BZPOPMIN", "nokey", "0.001")
    diff.check("BZMPOP", "0.001", "1", "nokey", "MAX", "COUNT", "3")


def test_blocking_argument_errors(diff):
    for args in [("BZPOPMIN", "z", "x"), ("BZPOPMIN", "z", "-1"), ("BZPOPMIN", "z", "nan"),
                 ("BZPOPMAX", "z", ""), ("BZMPOP", "x", "1", "z", "MIN"),
                 ("BZMPOP", "0", "0", "z", "MIN"), ("BZMPOP", "0", "1", "z", "FOO"),
                 ("BZMPOP", "0", "1", "z", "MIN", "COUNT", "0"), ("BZMPOP", "-1", "1", "z", "MIN"),
                 ("BZMPOP", "0", "3", "z", "MIN")]:
        diff.check(*args)


@PROTOCOLS
def test_blocking_pops_do_not_block_inside_a_transaction(diff, protocol):
    diff.hello(protocol)
    diff.check("MULTI")
    diff.check("BZPOPMIN", "nokey", "0")
    diff.check("BZMPOP", "0", "1", "nokey", "MIN")
    diff.check("ZADD", "q", "1", "a")
    diff.check("BZPOPMAX", "nokey", "q", "0")
    diff.check("EXEC")


def test_watch_sees_only_real_changes(diff):
    diff.check("ZADD", "z", "1", "a")
    for change, expect_abort in [(("ZADD", "z", "1", "a"), False), (("ZADD", "z", "2", "a"), True),
                                 (("ZREM", "z", "missing"), False), (("ZINCRBY", "z", "0", "a"), False),
                                 (("ZREMRANGEBYSCORE", "z", "5", "6"), False),
                                 (("ZPOPMIN", "z", "0"), False), (("ZADD", "z", "NX", "9", "a"), False)]:
        diff.check("WATCH", "z")
        diff.check(*change)
        diff.check("MULTI")
        diff.check("PING")
        assert (diff.check("EXEC") is NullArray) == expect_abort, change


def test_timeout_reply_is_null_array_in_resp2(diff):
    assert diff.check("BZPOPMIN", "nokey", "0.01") is NullArray
    assert isinstance(diff.check("BZPOPMIN", "nokey", "x"), Err)


def test_large_sets_beyond_the_listpack_limits(diff):
    """Past 128 members Redis switches to a skiplist; ranges, ranks and pops must not change."""
    pairs = [x for i in range(400) for x in (str(i % 53 + (i % 7) / 8), f"member:{i:03d}")]
    diff.check("ZADD", "big", *pairs)
    diff.check("ZADD", "lex", *[x for i in range(300) for x in ("0", f"w{i * 7919 % 300:03d}")])
    for command in [("ZCOUNT", "big", "(10", "20.5"), ("ZRANGEBYSCORE", "big", "7", "(9", "WITHSCORES"),
                    ("ZREVRANGEBYSCORE", "big", "40", "30", "LIMIT", "5", "10"),
                    ("ZRANGE", "big", "100", "130", "WITHSCORES"), ("ZRANGE", "big", "-20", "-1", "REV"),
                    ("ZRANK", "big", "member:250"), ("ZREVRANK", "big", "member:250"),
                    ("ZRANGEBYLEX", "lex", "[w100", "(w150", "LIMIT", "10", "5"),
                    ("ZREVRANGEBYLEX", "lex", "+", "[w290"), ("ZLEXCOUNT", "lex", "(w010", "+"),
                    ("ZREMRANGEBYSCORE", "big", "(50", "+inf"), ("ZREMRANGEBYRANK", "big", "0", "9"),
                    ("ZREMRANGEBYLEX", "lex", "-", "(w200"), ("ZPOPMIN", "big", "3"),
                    ("ZPOPMAX", "big", "3"), ("ZCARD", "big"), ("ZRANGE", "lex", "0", "-1"),
                    ("ZRANGE", "big", "0", "-1", "WITHSCORES"),
                    ("ZRANDMEMBER", "lex", "1000")]:
        diff.check(*command)


def test_a_set_crossing_the_small_order_limit(diff):
    """A set grows past SMALL_ORDER_LIMIT (its order turns from a list into a SortedList),
    is updated, ranged and trimmed on both sides of the limit, and shrinks back below it."""
    import random

    from minired.data.zset import SMALL_ORDER_LIMIT

    rng = random.Random(35)
    size = SMALL_ORDER_LIMIT + 200
    members = [f"m{i}" for i in range(size)]
    for first in range(0, size, 100):
        pairs = []
        for member in members[first:first + 100]:
            pairs += [str(rng.choice([rng.randint(0, 50), rng.random() * 100])), member]
        diff.check("ZADD", "z", *pairs)
        diff.check("ZCARD", "z")
        diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    for _ in range(30):
        diff.check("ZADD", "z", str(rng.randint(-5, 60)), rng.choice(members))
        diff.check("ZINCRBY", "z", "1.5", rng.choice(members))
        diff.check("ZRANK", "z", rng.choice(members))
        diff.check("ZRANGEBYSCORE", "z", str(rng.randint(0, 50)), "+inf", "LIMIT", "3", "5")
        diff.check("ZREVRANGE", "z", "0", "4", "WITHSCORES")
        diff.check("ZCOUNT", "z", "(10", "20")
    diff.check("ZREM", "z", *members[:150])
    diff.check("ZREMRANGEBYSCORE", "z", "-inf", "(5")
    diff.check("ZREMRANGEBYRANK", "z", "10", "400")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZPOPMIN", "z", "20")
    diff.check("ZPOPMAX", "z", "20")
    diff.check("ZADD", "z", "7", "back", "-1", "front")
    diff.check("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff.check("ZRANGESTORE", "copy", "z", "0", "-1")
    diff.check("ZUNIONSTORE", "union", "2", "z", "copy")
    diff.check("ZRANGE", "union", "0", "-1", "WITHSCORES")


def _scan_pages(diff, key, count, paged=True):
    """ZSCAN of a skiplist: a full walk returns every member on both servers, and (paged) both
    page by COUNT, the first cursor not 0. The cursors themselves are Redis's dict internals,
    and whether a set of two or three comes back in one call depends on its hash seed."""
    members = set(diff.redis.call("ZRANGE", key, "0", "-1"))
    for client in (diff.redis, diff.minired):
        cursor, found = b"0", set()
        first = True
        while first or cursor != b"0":
            cursor, batch = client.call("ZSCAN", key, cursor, "COUNT", str(count))
            if first and paged:
                assert cursor != b"0", (client, batch)
            first = False
            found.update(batch[::2])
        assert found == members


@PROTOCOLS
def test_a_set_stays_a_skiplist_as_it_shrinks(diff, protocol):
    """Redis never converts a sorted set back to a listpack: one that grew past
    zset-max-listpack-entries, or held a member longer than zset-max-listpack-value, keeps
    answering as a skiplist (OBJECT ENCODING, ZSCAN's paging and score text, DUMP's format)
    whatever it shrinks to, by every command that removes members; a copy keeps it, a reload
    does not."""
    diff.hello(protocol)
    pairs = [x for i in range(200) for x in (str(i + 0.5), f"m{i}")]
    long_member = "x" * 65
    shrink = {
        "rank": [["ZREMRANGEBYRANK", "z", "0", "-21"]],
        "score": [["ZREMRANGEBYSCORE", "z", "-inf", "(180"]],
        "lex": [["ZADD", "z", *[x for i in range(200) for x in ("0", f"m{i:03}")]],
                ["ZREMRANGEBYLEX", "z", "-", "(m180"]],
        "pop": [["ZPOPMIN", "z", "180"]],
        "mpop": [["ZMPOP", "1", "z", "MAX", "COUNT", "180"]],
        "rem": [["ZREM", "z", *[f"m{i}" for i in range(180)]]],
    }
    for name, steps in shrink.items():
        diff.both("DEL", "z")
        if name != "lex":
            diff.check("ZADD", "z", *pairs)
        for step in steps:
            diff.check(*step)
        for check in (["OBJECT", "ENCODING", "z"], ["DUMP", "z"], ["ZCARD", "z"]):
            diff.check(*check)
        _scan_pages(diff, "z", count=1)
    diff.both("DEL", "y")
    diff.check("ZADD", "y", "1", long_member, "2.5", "a", "3", "b")
    diff.check("OBJECT", "ENCODING", "y")
    diff.check("ZREM", "y", "absent" + long_member)
    diff.check("ZREM", "y", long_member)
    diff.check("OBJECT", "ENCODING", "y")
    _scan_pages(diff, "y", count=1, paged=False)
    diff.check("DUMP", "y")
    diff.check("COPY", "y", "y2")
    diff.check("OBJECT", "ENCODING", "y2")
    diff.check("ZADD", "small", "1", "a", "2", "b")
    diff.check("ZREM", "small", "a")
    diff.check("OBJECT", "ENCODING", "small")
    diff.check("DEBUG", "RELOAD")
    for key in ("y", "y2", "z", "small"):
        diff.check("OBJECT", "ENCODING", key)
