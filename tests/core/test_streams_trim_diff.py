"""Trimming compared with real Redis. Approximate trimming removes whole macro nodes only, so
these tests check that node boundaries (entry count and listpack byte size) fall where Redis
puts them: XLEN after `~` trims and XINFO STREAM's radix tree counts expose them directly."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_approximate_maxlen_keeps_whole_nodes(diff):
    for i in range(1, 451):
        diff.check("XADD", "events", "MAXLEN", "~", "120", f"{i}-0", "event", "waiting",
                   "jobId", str(i))
    diff.check("XLEN", "events")
    diff.check("XINFO", "STREAM", "events")
    diff.check("XRANGE", "events", "-", "+", "COUNT", "2")


def test_byte_limit_closes_nodes_before_the_entry_limit(diff):
    # ~200-byte values fill a 4096-byte listpack long before 100 entries.
    for i in range(1, 301):
        diff.check("XADD", "big", "MAXLEN", "~", "50", f"{i}-0", "payload", "x" * (150 + i % 90))
    diff.check("XLEN", "big")
    diff.check("XINFO", "STREAM", "big")


def test_integer_values_are_sized_as_listpack_integers(diff):
    for i in range(1, 401):
        diff.check("XADD", "nums", f"{i}-{i}", "n", str(i * 7919), "neg", str(-i), "z", "007")
    diff.check("XTRIM", "nums", "MAXLEN", "~", "150")
    diff.check("XINFO", "STREAM", "nums")


def test_an_approximate_trim_without_limit_stops_at_10000_entries(diff):
    """With stream-node-max-entries 0 (no count limit: nodes close on bytes), a `~` trim
    with no LIMIT removes whole nodes up to 10,000 entries, as Redis bounds it."""
    fill = "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], i .. '-0', 'f', 'v') end"
    try:
        for name, value in (("stream-node-max-entries", "0"), ("stream-node-max-bytes", "30000")):
            diff.check("CONFIG", "SET", name, value)
        diff.check("EVAL", fill, "1", "s", "24000")
        diff.check("XINFO", "STREAM", "s")
        diff.check("XTRIM", "s", "MAXLEN", "~", "10")
        diff.check("XADD", "s", "MAXLEN", "~", "10", "30000-0", "f", "v")  # (not *: a clock)
        diff.check("XLEN", "s")
    finally:
        diff.check("CONFIG", "SET", "stream-node-max-entries", "100")
        diff.check("CONFIG", "SET", "stream-node-max-bytes", "4096")


def test_xtrim_strategies(diff):
    for i in range(1, 301):
        diff.check("XADD", "s", f"{i}-1", "f", "v")
    diff.check("XTRIM", "s", "MAXLEN", "~", "250")
    diff.check("XTRIM", "s", "MAXLEN", "~", "150", "LIMIT", "50")
    diff.check("XTRIM", "s", "MAXLEN", "~", "150", "LIMIT", "100")
    diff.check("XTRIM", "s", "MINID", "~", "250")
    diff.check("XTRIM", "s", "MINID", "=", "255-1")
    diff.check("XTRIM", "s", "MINID", "255")
    diff.check("XTRIM", "s", "MAXLEN", "10")
    diff.check("XTRIM", "s", "MAXLEN", "=", "5")
    diff.check("XRANGE", "s", "-", "+")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XTRIM", "s", "MAXLEN", "0")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XTRIM", "nokey", "MAXLEN", "0")


def test_xtrim_errors(diff):
    diff.check("XADD", "s", "1-1", "f", "v")
    for args in (("MAXLEN",), ("FOO", "1"), ("MAXLEN", "~", "x"), ("MAXLEN", "-1"),
                 ("MINID", "bad"), ("MINID", "+"), ("MAXLEN", "1", "LIMIT", "5"),
                 ("MAXLEN", "~", "1", "LIMIT", "-1"), ("LIMIT", "5", "x"),
                 ("MAXLEN", "1", "MINID", "1"), ("MAXLEN", "1", "NOMKSTREAM")):
        diff.check("XTRIM", "s", *args)


_fields = st.lists(st.sampled_from(["f", "name", "jobId", "12", "-5"]), min_size=1, max_size=3)
_value = st.one_of(st.integers(-10**12, 10**12).map(str), st.text("ab", max_size=300))
_add = st.tuples(st.just("add"), _fields, st.lists(_value, min_size=3, max_size=3))
_trim = st.tuples(st.just("trim"), st.sampled_from(["MAXLEN", "MINID"]), st.booleans(),
                  st.integers(0, 400))
_delete = st.tuples(st.just("del"), st.integers(1, 400))


@settings(max_examples=25)
@given(ops=st.lists(st.one_of(_add, _add, _add, _trim, _delete), min_size=20, max_size=160),
       node_entries=st.sampled_from([100, 7]))
def test_random_histories_leave_the_same_nodes(diff, ops, node_entries):
    diff.check("DEL", "s")
    diff.check("CONFIG", "SET", "stream-node-max-entries", str(node_entries))
    try:
        next_ms = 1
        for op in ops:
            if op[0] == "add":
                _, fields, values = op
                pairs = [x for field, value in zip(fields, values) for x in (field, value)]
                diff.check("XADD", "s", f"{next_ms}-0", *pairs)
                next_ms += 1
            elif op[0] == "trim":
                _, strategy, approx, amount = op
                target = f"{amount}-0" if strategy == "MINID" else str(amount)
                diff.check("XTRIM", "s", strategy, "~" if approx else "=", target)
            else:
                diff.check("XDEL", "s", f"{op[1]}-0")
        diff.check("XLEN", "s")
        diff.check("XINFO", "STREAM", "s")
        diff.check("XRANGE", "s", "-", "+", "COUNT", "5")
    finally:
        diff.check("CONFIG", "SET", "stream-node-max-entries", "100")
