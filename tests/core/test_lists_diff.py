"""List commands against real Redis: replies, reply types (RESP2 and RESP3), errors and their
order, plus random command sequences compared step by step."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request, diff):
    diff.hello(request.param)
    return request.param


def test_push_and_range(diff, proto):
    diff.check("LPUSH", "l", "a", "b", "c")
    diff.check("RPUSH", "l", "d", "e")
    diff.check("LRANGE", "l", 0, -1)
    diff.check("LPUSHX", "l", "x", "y")
    diff.check("RPUSHX", "l", "z")
    diff.check("LPUSHX", "missing", "x")
    diff.check("RPUSHX", "missing", "x")
    diff.check("EXISTS", "missing")
    diff.check("LLEN", "l")
    diff.check("LLEN", "missing")
    for start, end in [(0, -1), (1, 3), (-3, -1), (-100, 100), (5, 2), (100, 200), (-1, -1),
                       (0, 0), (3, -4), (-2, 100), (7, 7), (8, 9), (-9, -8)]:
        diff.check("LRANGE", "l", start, end)
    diff.check("LRANGE", "missing", 0, -1)


def test_pop_shapes(diff, proto):
    diff.check("RPUSH", "l", "a", "b", "c", "d", "e")
    diff.check("LPOP", "l")
    diff.check("RPOP", "l")
    diff.check("LPOP", "l", 0)
    diff.check("RPOP", "l", 0)
    diff.check("LPOP", "l", 2)
    diff.check("RPOP", "l", 5)
    diff.check("EXISTS", "l")
    # Missing key: null bulk without COUNT, null array with COUNT (even COUNT 0).
    diff.check("LPOP", "l")
    diff.check("RPOP", "l")
    diff.check("LPOP", "l", 1)
    diff.check("RPOP", "l", 0)
    diff.check_error("LPOP", "l", -1)
    diff.check_error("LPOP", "l", "x")
    diff.check_error("LPOP", "l", "1", "2")
    diff.check_error("RPOP", "l", "1", "2")
    diff.check("SET", "s", "v")
    diff.check_error("LPOP", "s")
    diff.check_error("RPOP", "s", 2)
    diff.check_error("LPOP", "s", 0)


def test_wrong_type_everywhere(diff):
    diff.check("SET", "s", "v")
    diff.check("RPUSH", "l", "a")
    for args in [("LPUSH", "s", "x"), ("RPUSH", "s", "x"), ("LPUSHX", "s", "x"),
                 ("RPUSHX", "s", "x"), ("LLEN", "s"), ("LRANGE", "s", 0, -1),
                 ("LINDEX", "s", 0), ("LSET", "s", 0, "x"), ("LINSERT", "s", "BEFORE", "a", "b"),
                 ("LREM", "s", 0, "a"), ("LTRIM", "s", 0, 1), ("LPOS", "s", "a"),
                 ("LMOVE", "s", "l", "LEFT", "RIGHT"), ("LMOVE", "l", "s", "LEFT", "RIGHT"),
                 ("RPOPLPUSH", "s", "l"), ("RPOPLPUSH", "l", "s"), ("LMPOP", 2, "s", "l", "LEFT"),
                 ("BLPOP", "s", "l", 1), ("BRPOP", "s", 1), ("BLMOVE", "s", "l", "LEFT", "LEFT", 1),
                 ("BLMOVE", "l", "s", "LEFT", "LEFT", 1), ("BRPOPLPUSH", "l", "s", 1),
                 ("BLMPOP", 1, 2, "s", "l", "RIGHT")]:
        diff.check_error(*args)
    diff.check("LRANGE", "l", 0, -1)
    # A missing source never reaches the destination's type check; a non-empty list first
    # in the key list is served before a wrong-typed one is looked at.
    diff.check("LMOVE", "missing", "s", "LEFT", "RIGHT")
    diff.check("RPOPLPUSH", "missing", "s")
    diff.check("LMPOP", 2, "l", "s", "LEFT")
    diff.check("RPUSH", "l", "a")
    diff.check("BLPOP", "l", "s", 1)


def test_index_set_insert(diff, proto):
    diff.check("RPUSH", "l", "a", "b", "c", "b")
    for index in [0, 1, -1, -4, 4, -5, 100]:
        diff.check("LINDEX", "l", index)
    diff.check("LINDEX", "missing", 0)
    diff.check("LINDEX", "missing", "notanumber")  # missing key wins over the bad index
    diff.check_error("LINDEX", "l", "x")
    diff.check_error("LINDEX", "l", "1.5")
    diff.check("LSET", "l", 0, "A")
    diff.check("LSET", "l", -1, "Z")
    diff.check_error("LSET", "l", 4, "x")
    diff.check_error("LSET", "l", -5, "x")
    diff.check_error("LSET", "l", "x", "x")
    diff.check_error("LSET", "missing", 0, "x")
    diff.check_error("LSET", "missing", "x", "x")
    diff.check("LINSERT", "l", "BEFORE", "b", "before-b")
    diff.check("LINSERT", "l", "after", "b", "after-b")
    diff.check("LINSERT", "l", "AFTER", "Z", "tail")
    diff.check("LINSERT", "l", "BEFORE", "nope", "x")
    diff.check("LINSERT", "missing", "BEFORE", "a", "x")
    diff.check_error("LINSERT", "l", "MIDDLE", "a", "x")
    diff.check_error("LINSERT", "missing", "MIDDLE", "a", "x")
    diff.check("LRANGE", "l", 0, -1)


def test_lrem_and_ltrim(diff):
    elements = ["a", "b", "a", "c", "a", "b", "a"]
    for count in [0, 1, 2, -1, -2, 10, -10]:
        diff.check("DEL", "l")
        diff.check("RPUSH", "l", *elements)
        diff.check("LREM", "l", count, "a")
        diff.check("LRANGE", "l", 0, -1)
    diff.check("LREM", "l", 0, "nope")
    diff.check("LREM", "missing", 0, "a")
    diff.check_error("LREM", "l", "x", "a")
    diff.check_error("LREM", "missing", "x", "a")
    diff.check("DEL", "l")
    diff.check("RPUSH", "l", "a", "a")
    diff.check("LREM", "l", 0, "a")
    diff.check("EXISTS", "l")
    for start, end in [(1, -2), (0, -1), (-100, 100), (2, 1), (0, 0), (-1, -1), (50, 60)]:
        diff.check("DEL", "l")
        diff.check("RPUSH", "l", *elements)
        diff.check("LTRIM", "l", start, end)
        diff.check("LRANGE", "l", 0, -1)
        diff.check("EXISTS", "l")
    diff.check("LTRIM", "missing", 0, 1)
    diff.check_error("LTRIM", "l", "a", 1)
    diff.check_error("LTRIM", "missing", 0, "b")


def test_lpos(diff, proto):
    diff.check("RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c")
    for options in [(), ("RANK", 1), ("RANK", 2), ("RANK", 3), ("RANK", 4), ("RANK", -1),
                    ("RANK", -3), ("RANK", -4), ("COUNT", 0), ("COUNT", 2), ("COUNT", 10),
                    ("RANK", -1, "COUNT", 2), ("RANK", 2, "COUNT", 0), ("MAXLEN", 3),
                    ("MAXLEN", 7), ("MAXLEN", 7, "COUNT", 0), ("RANK", -1, "MAXLEN", 1),
                    ("RANK", -1, "MAXLEN", 2, "COUNT", 0), ("COUNT", 0, "MAXLEN", 0),
                    ("rank", 1, "count", 1, "maxlen", 100), ("RANK", 1, "RANK", -2),
                    ("RANK", "-9223372036854775808"), ("RANK", "-9223372036854775807"),
                    # Redis's stop test overflows with the most negative RANK: every match
                    ("RANK", "-9223372036854775808", "COUNT", 1),
                    ("RANK", "-9223372036854775808", "COUNT", 2, "MAXLEN", 7),
                    ("RANK", "9223372036854775807", "COUNT", 1),
                    ("RANK", 2, "COUNT", "9223372036854775807")]:
        diff.check("LPOS", "l", "c", *options)
    diff.check("LPOS", "l", "zzz")
    diff.check("LPOS", "l", "zzz", "COUNT", 0)
    diff.check("LPOS", "missing", "a")
    diff.check("LPOS", "missing", "a", "COUNT", 1)
    for options in [("RANK", 0), ("RANK", "x"), ("COUNT", -1), ("COUNT", "x"), ("MAXLEN", -1),
                    ("MAXLEN", "x"), ("RANK",), ("COUNT",), ("FOO", 1), ("RANK", 1, "COUNT")]:
        diff.check_error("LPOS", "l", "c", *options)
        diff.check_error("LPOS", "missing", "c", *options)


def test_lmove_and_rpoplpush(diff, proto):
    diff.check("RPUSH", "src", "a", "b", "c")
    for wherefrom in ("LEFT", "RIGHT"):
        for whereto in ("left", "right"):
            diff.check("LMOVE", "src", "dst", wherefrom, whereto)
    diff.check("LRANGE", "src", 0, -1)
    diff.check("LRANGE", "dst", 0, -1)
    diff.check("RPOPLPUSH", "dst", "dst")  # rotation
    diff.check("LMOVE", "dst", "dst", "LEFT", "RIGHT")
    diff.check("LRANGE", "dst", 0, -1)
    diff.check("RPUSH", "one", "x")
    diff.check("LMOVE", "one", "one", "LEFT", "LEFT")
    diff.check("LRANGE", "one", 0, -1)
    diff.check("RPOPLPUSH", "dst", "fresh")
    diff.check("LMOVE", "missing", "dst", "LEFT", "LEFT")
    diff.check("RPOPLPUSH", "missing", "dst")
    diff.check_error("LMOVE", "src", "dst", "UP", "LEFT")
    diff.check_error("LMOVE", "missing", "dst", "LEFT", "DOWN")
    diff.check("RPOPLPUSH", "src", "dst")
    diff.check("EXISTS", "src")


def test_lmpop(diff, proto):
    diff.check("RPUSH", "b", "1", "2", "3")
    diff.check("RPUSH", "c", "x")
    diff.check("LMPOP", 3, "a", "b", "c", "LEFT")
    diff.check("LMPOP", 3, "a", "b", "c", "RIGHT", "COUNT", 10)
    diff.check("LMPOP", 2, "b", "c", "left", "count", 1)
    diff.check("LMPOP", 3, "a", "b", "c", "LEFT")
    diff.check("EXISTS", "b", "c")
    for args in [(0, "a", "LEFT"), (-1, "a", "LEFT"), ("x", "a", "LEFT"), (1, "a"),
                 (2, "a", "LEFT"), (1, "a", "UP"), (1, "a", "LEFT", "COUNT"),
                 (1, "a", "LEFT", "COUNT", 0), (1, "a", "LEFT", "COUNT", -1),
                 (1, "a", "LEFT", "COUNT", "x"), (1, "a", "LEFT", "COUNT", 1, "COUNT", 1),
                 (1, "a", "LEFT", "FOO"), (5, "a", "b", "LEFT")]:
        diff.check_error("LMPOP", *args)


def test_arity_errors(diff):
    for args in [("LPUSH", "l"), ("RPUSH",), ("LPOP",), ("LLEN",), ("LLEN", "a", "b"),
                 ("LRANGE", "l", 0), ("LINDEX", "l"), ("LSET", "l", 0), ("LINSERT", "l", "BEFORE", "a"),
                 ("LREM", "l", 0), ("LTRIM", "l", 0), ("LPOS", "l"), ("LMOVE", "a", "b", "LEFT"),
                 ("RPOPLPUSH", "a"), ("LMPOP", 1, "a"), ("BLPOP", "l"), ("BRPOP", "l"),
                 ("BLMOVE", "a", "b", "LEFT", "LEFT"), ("BRPOPLPUSH", "a", "b"),
                 ("BLMPOP", 0, 1, "a")]:
        diff.check_error(*args)


def test_binary_and_empty_elements(diff):
    diff.check("RPUSH", "l", b"", b"\x00\xff", b"a\r\nb", "é")
    diff.check("LRANGE", "l", 0, -1)
    diff.check("LPOS", "l", b"")
    diff.check("LREM", "l", 1, b"\x00\xff")
    diff.check("LINSERT", "l", "AFTER", b"", b"\r\n")
    diff.check("LRANGE", "l", 0, -1)


def test_expired_list_is_gone(diff):
    diff.check("RPUSH", "l", "a", "b")
    diff.check("PEXPIRE", "l", 1)
    time.sleep(0.02)
    diff.check("LLEN", "l")
    diff.check("LPUSHX", "l", "x")
    diff.check("RPUSH", "l", "c")
    diff.check("PTTL", "l")
    diff.check("LRANGE", "l", 0, -1)


def test_long_list_ranges(diff):
    diff.check("RPUSH", "l", *range(300))
    for start, end in [(0, 9), (-10, -1), (150, 160), (-160, -150), (290, 1000), (-1000, 5)]:
        diff.check("LRANGE", "l", start, end)
    diff.check("LINDEX", "l", 250)
    diff.check("LINDEX", "l", -250)
    diff.check("LTRIM", "l", 100, -100)
    diff.check("LLEN", "l")
    diff.check("LPOS", "l", "150", "RANK", -1)


_elements = st.sampled_from(["a", "b", "c", "d"])
_keys = st.sampled_from(["k1", "k2"])
_index = st.integers(min_value=-6, max_value=6)
_side = st.sampled_from(["LEFT", "RIGHT"])
_list_commands = st.one_of(
    st.tuples(st.sampled_from(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), _keys,
              _elements).map(list),
    st.tuples(st.sampled_from(["LPOP", "RPOP"]), _keys).map(list),
    st.tuples(st.sampled_from(["LPOP", "RPOP"]), _keys, st.integers(0, 4)).map(list),
    st.tuples(st.just("LRANGE"), _keys, _index, _index).map(list),
    st.tuples(st.just("LINDEX"), _keys, _index).map(list),
    st.tuples(st.just("LSET"), _keys, _index, _elements).map(list),
    st.tuples(st.just("LINSERT"), _keys, st.sampled_from(["BEFORE", "AFTER"]), _elements,
              _elements).map(list),
    st.tuples(st.just("LREM"), _keys, _index, _elements).map(list),
    st.tuples(st.just("LTRIM"), _keys, _index, _index).map(list),
    st.tuples(st.just("LPOS"), _keys, _elements, st.sampled_from(["RANK", "COUNT", "MAXLEN"]),
              st.integers(-3, 3)).map(list),
    st.tuples(st.just("LMOVE"), _keys, _keys, _side, _side).map(list),
    st.tuples(st.just("LMPOP"), st.just(2), st.just("k1"), st.just("k2"), _side,
              st.just("COUNT"), st.integers(1, 3)).map(list),
    st.tuples(st.just("LLEN"), _keys).map(list),
)


@settings(max_examples=40)
@given(st.lists(_list_commands, min_size=1, max_size=25))
def test_random_sequences_match_redis(diff, commands):
    diff.both("FLUSHALL")
    for args in commands:
        diff.check(*args)
    diff.check("LRANGE", "k1", 0, -1)
    diff.check("LRANGE", "k2", 0, -1)
