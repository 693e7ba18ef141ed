"""Streams compared with real Redis: XADD, XRANGE, XREVRANGE, XDEL, XLEN, XSETID, XINFO STREAM,
XREAD (blocking included). Explicit IDs keep both servers' replies comparable; `*` IDs come
from each server's own clock and are checked for shape."""
from __future__ import annotations

import re
import time

from minired.data.keyspace import type_name
from minired.data.stream import Stream
from tests.support.differential import Differential


def wait_until_blocked(pair: Differential) -> None:
    """The XADD must come after the reader blocked: poll both servers' client lists."""
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while True:
        lists = pair.both("CLIENT", "LIST")
        if all(b"flags=b " in listing for listing in lists):
            return
        assert time.monotonic() < deadline, lists
        time.sleep(0.01)


def fill(diff, key: str, count: int, start_ms: int = 1) -> None:
    for i in range(count):
        diff.check("XADD", key, f"{start_ms + i}-1", "field", f"value{i}")


def test_stream_type_is_registered():
    assert type_name(Stream()) == "stream"


def test_xadd_explicit_ids_and_errors(diff):
    diff.check("XADD", "s", "1-1", "a", "1")
    diff.check("XADD", "s", "1-1", "a", "1")
    diff.check("XADD", "s", "1-0", "a", "1")
    diff.check("XADD", "s", "0-0", "a", "1")
    diff.check("XADD", "fresh", "0-0", "a", "1")
    diff.check("XADD", "s", "1-*", "b", "2")
    diff.check("XADD", "s", "1-*", "b", "2", "c", "3")
    diff.check("XADD", "s", "5-*", "x", "y")
    diff.check("XADD", "s", "5", "x", "y")
    diff.check("XADD", "s", "6", "x", "y")
    diff.check("XADD", "s", "7-1", "a")
    diff.check("XADD", "s", "7-1", "a", "1", "b")
    diff.check("XADD", "s", "bad", "a", "1")
    diff.check("XADD", "s", "-5", "a", "1")
    diff.check("XADD", "s", "8-", "a", "1")
    diff.check("XADD", "s", "-", "a", "1")
    diff.check("XADD", "s", "+", "a", "1")
    diff.check("XADD", "s", "x" * 130, "a", "1")
    diff.check("XLEN", "s")
    diff.check("XRANGE", "s", "-", "+")


def test_xadd_id_parser_leniencies(diff):
    # Redis falls back to strtoull: spaces, signs and leading zeros are accepted.
    diff.check("XADD", "s", " 99", "a", "1")
    diff.check("XADD", "s", "+100", "a", "1")
    diff.check("XADD", "s", "0101-00", "a", "1")
    diff.check("XADD", "s", "102- 7", "a", "1")
    diff.check("XADD", "s", "103-+8", "a", "1")
    diff.check("XADD", "s", "104 ", "a", "1")
    diff.check("XADD", "s", "18446744073709551616-1", "a", "1")
    diff.check("XADD", "s", "105-18446744073709551615", "a", "1")
    diff.check("XADD", "s", "105-*", "a", "1")
    diff.check("XRANGE", "s", "-", "+")


def test_xadd_options(diff):
    diff.check("XADD", "nokey", "NOMKSTREAM", "*", "a", "1")
    diff.check("XADD", "s", "NOMKSTREAM", "x", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "-1", "*", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "x", "*", "a", "1")
    diff.check("XADD", "s", "LIMIT", "10", "*", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "10", "LIMIT", "10", "*", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "~", "10", "LIMIT", "-1", "*", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "~", "10", "MINID", "5", "*", "a", "1")
    diff.check("XADD", "s", "MINID", "-", "1-1", "a", "1")
    diff.check("XADD", "s", "MAXLEN", "1", "=", "a", "1")
    fill(diff, "s", 5)
    diff.check("XADD", "s", "MAXLEN", "=", "3", "10-1", "a", "1")
    diff.check("XADD", "s", "MINID", "5", "11-1", "a", "1")
    diff.check("XADD", "s", "NOMKSTREAM", "MAXLEN", "2", "12-1", "a", "1")
    diff.check("XADD", "s", "maxlen", "~", "1", "limit", "0", "13-1", "a", "1")
    diff.check("XRANGE", "s", "-", "+")
    diff.check("XLEN", "s")


def test_xadd_auto_ids_come_from_the_server_clock(mini_raw):
    first = mini_raw.call("XADD", "s", "*", "a", "1")
    second = mini_raw.call("XADD", "s", "*", "a", "2")
    assert re.fullmatch(rb"\d+-\d+", first) and re.fullmatch(rb"\d+-\d+", second)
    assert tuple(map(int, second.split(b"-"))) > tuple(map(int, first.split(b"-")))
    now = mini_raw.call("MINIRED", "CLOCK")
    assert abs(int(first.split(b"-")[0]) - now) < 10_000
    future = mini_raw.call("XADD", "s", f"{now + 10**9}-5", "a", "3")
    # The clock is behind the last ID: * continues that ID's sequence.
    assert mini_raw.call("XADD", "s", "*", "a", "4") == future[:-1] + b"6"


def test_exhausted_stream(diff):
    diff.check("XADD", "s", "18446744073709551615-18446744073709551615", "a", "b")
    diff.check("XADD", "s", "*", "a", "b")
    diff.check("XADD", "s", "18446744073709551615-*", "a", "b")
    diff.check("XADD", "t", "18446744073709551615-18446744073709551614", "a", "b")
    diff.check("XADD", "t", "18446744073709551615-*", "a", "b")
    diff.check("XADD", "t", "18446744073709551615-*", "a", "b")


def test_xrange_and_xrevrange(diff):
    fill(diff, "s", 10)
    diff.check("XADD", "s", "10-2", "other", "fields", "n", "42")
    for args in (
        ("-", "+"), ("3", "5"), ("3-1", "5-0"), ("(3-1", "+"), ("-", "(5-1"), ("(3", "(5"),
        ("5", "3"), ("-", "+", "COUNT", "3"), ("-", "+", "COUNT", "0"), ("-", "+", "COUNT", "-5"),
        ("-", "+", "count", "2", "COUNT", "4"), ("10", "10"), ("10-2", "+"),
        ("(", "+"), ("(-", "+"), ("-", "(0-0"), ("(18446744073709551615-18446744073709551615", "+"),
        ("-", "+", "COUNT"), ("-", "+", "FOO", "1"), ("-", "+", "COUNT", "x"), ("x", "+"),
        ("0-1-2", "+"),
    ):
        diff.check("XRANGE", "s", *args)
        diff.check("XREVRANGE", "s", *reversed(args[:2]), *args[2:])
    diff.check("XRANGE", "nokey", "-", "+")
    diff.check("XRANGE", "nokey", "-", "+", "COUNT", "0")
    diff.hello(3)
    diff.check("XRANGE", "s", "-", "+", "COUNT", "2")
    diff.check("XRANGE", "s", "-", "+", "COUNT", "0")
    diff.check("XRANGE", "nokey", "-", "+")


def test_ranges_across_many_nodes(diff):
    fill(diff, "s", 350)
    diff.check("XRANGE", "s", "95", "205", "COUNT", "7")
    diff.check("XREVRANGE", "s", "205", "95", "COUNT", "7")
    diff.check("XRANGE", "s", "(100-1", "(102-1")
    diff.check("XREVRANGE", "s", "+", "-", "COUNT", "3")
    diff.check("XDEL", "s", *(f"{i}-1" for i in range(90, 120)))
    diff.check("XRANGE", "s", "85", "125")
    diff.check("XREVRANGE", "s", "125", "85")
    diff.check("XINFO", "STREAM", "s")


def test_xdel(diff):
    fill(diff, "s", 5)
    diff.check("XDEL", "s", "2-1", "2-1", "4", "9-9")
    diff.check("XDEL", "s", "3-1", "bad")
    diff.check("XDEL", "s", "-")
    diff.check("XDEL", "nokey", "bad")
    diff.check("XRANGE", "s", "-", "+")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XDEL", "s", "1-1", "3-1", "5-1")
    diff.check("XLEN", "s")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XADD", "s", "5-1", "a", "1")
    diff.check("XADD", "s", "6-1", "a", "1")
    diff.check("XINFO", "STREAM", "s")


def test_xsetid(diff):
    diff.check("XADD", "s", "5-5", "a", "1")
    diff.check("XSETID", "s", "1-1")
    diff.check("XSETID", "s", "9-9", "ENTRIESADDED", "0")
    diff.check("XSETID", "s", "9-9", "ENTRIESADDED", "-1")
    diff.check("XSETID", "s", "9-9", "MAXDELETEDID", "10-0")
    diff.check("XSETID", "nokey", "1-1")
    diff.check("XSETID", "s", "9-9", "foo")
    diff.check("XSETID", "s", "+")
    diff.check("XSETID", "s", "9-9", "ENTRIESADDED", "5", "MAXDELETEDID", "2-2")
    diff.check("XSETID", "s", "3-3")
    diff.check("XSETID", "s", "2-1")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XADD", "s", "9-9", "a", "1")
    diff.check("XADD", "s", "9-*", "a", "1")


def test_xinfo_stream(diff):
    diff.check("XINFO", "STREAM", "nokey")
    diff.check("XINFO", "STREAM")
    diff.check("XINFO", "FOO")
    diff.check("XINFO", "HELP")
    fill(diff, "s", 3)
    diff.check("TYPE", "s")
    diff.check("XINFO", "STREAM", "s")
    diff.check("XINFO", "STREAM", "s", "x")
    diff.check("XINFO", "STREAM", "s", "FULL", "x")
    diff.hello(3)
    diff.check("XINFO", "STREAM", "s")
    diff.check("XDEL", "s", "1-1", "2-1", "3-1")
    diff.check("XINFO", "STREAM", "s")
    diff.check("EXISTS", "s")  # an emptied stream stays
    diff.check("TYPE", "s")


def test_wrong_type(diff):
    diff.check("SET", "str", "x")
    for command in (("XADD", "str", "*", "a", "1"), ("XLEN", "str"), ("XRANGE", "str", "-", "+"),
                    ("XREVRANGE", "str", "+", "-"), ("XDEL", "str", "1-1"),
                    ("XTRIM", "str", "MAXLEN", "1"), ("XREAD", "STREAMS", "str", "0"),
                    ("XSETID", "str", "1-1"), ("XINFO", "STREAM", "str")):
        diff.check(*command)


# --- XREAD -------------------------------------------------------------------------------------

def test_xread(diff):
    fill(diff, "a", 3)
    fill(diff, "b", 2, start_ms=10)
    diff.check("XREAD", "STREAMS", "a", "b", "0", "0")
    diff.check("XREAD", "COUNT", "1", "STREAMS", "a", "b", "1-1", "0")
    diff.check("XREAD", "COUNT", "0", "STREAMS", "a", "2")
    diff.check("XREAD", "COUNT", "-3", "STREAMS", "a", "2")
    diff.check("XREAD", "STREAMS", "a", "b", "$", "$")
    diff.check("XREAD", "STREAMS", "a", "nokey", "3-1", "0")
    diff.check("XREAD", "STREAMS", "nokey", "0")
    diff.check("XREAD", "STREAMS", "a", "+")
    diff.hello(3)
    diff.check("XREAD", "STREAMS", "a", "b", "2", "11")
    diff.check("XREAD", "STREAMS", "a", "$")


def test_xread_errors(diff):
    for args in (
        ("STREAMS", "a"), ("STREAMS", "a", "b", "0"), ("BLOCK", "-1", "STREAMS", "a", "0"),
        ("BLOCK", "x", "STREAMS", "a", "0"), ("BLOCK", "1.5", "STREAMS", "a", "0"),
        ("GROUP", "g", "c", "STREAMS", "a", "0"), ("NOACK", "STREAMS", "a", "0"),
        ("STREAMS", "a", ">"), ("COUNT", "x", "STREAMS", "a", "0"), ("FOO", "STREAMS", "a", "0"),
        ("COUNT", "1", "a", "0"), ("STREAMS", "a", "bad"), ("STREAMS", "a", "-"),
        ("BLOCK", "9223372036854775808", "STREAMS", "a", "0"),
    ):
        diff.check("XREAD", *args)


def test_xread_block_woken_by_xadd(diff, connect):
    reader = connect()
    diff.check("XADD", "s", "1-1", "a", "1")
    reader.redis.send("XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$")
    reader.minired.send("XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$")
    wait_until_blocked(diff)
    diff.check("XADD", "s", "2-1", "b", "2")
    reader.read_both()
    reader.check("PING")


def test_xread_block_serves_resp3_map_and_count(diff, connect):
    reader = connect()
    reader.hello(3)
    reader.redis.send("XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "0")
    reader.minired.send("XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "0")
    wait_until_blocked(diff)
    diff.check("XADD", "s", "1-1", "a", "1", "b", "2")
    reader.read_both()


def test_xread_block_times_out_with_null(diff):
    diff.check("XREAD", "BLOCK", "30", "STREAMS", "s", "$")
    diff.hello(3)
    diff.check("XREAD", "BLOCK", "30", "STREAMS", "s", "$")


def test_xread_block_returns_at_once_when_data_is_there(diff):
    fill(diff, "s", 2)
    diff.check("XREAD", "BLOCK", "0", "STREAMS", "s", "1-1")


def test_xgroup_setid_checks_its_arguments_before_the_key(diff):
    """Found by bench/grammar_fuzz.py: Redis reads the argument count and ENTRIESREAD first."""
    diff.check("XGROUP", "SETID", "nokey", "3-1", "ENTRIESREAD", "3")
    diff.check("XADD", "stream", "1-1", "f", "v")
    diff.check("XGROUP", "SETID", "stream", "nogroup", "$", "ENTRIESREAD", " 1")
    diff.check("XGROUP", "SETID", "nokey", "g1", "$", "ENTRIESREAD", "-9223372036854775808")
    diff.check("SET", "str", "hello")
    diff.check("XGROUP", "SETID", "str", "g1", "$", "ENTRIESREAD", "1.5")
    diff.check("XGROUP", "SETID", "stream", "g1", "$", "FOO", "1")
    diff.check("XGROUP", "SETID", "stream", "nogroup", "bad-id")


def test_xgroup_setid_reads_entriesread_before_counting_arguments(diff):
    diff.check("XADD", "stream", "1-1", "f", "v")
    diff.check("XGROUP", "CREATE", "stream", "g1", "$")
    for tail in (("ENTRIESREAD", "-2", "-1"), ("ENTRIESREAD", "x", "4"),
                 ("ENTRIESREAD", "3", "foo"), ("ENTRIESREAD", "3", "ENTRIESREAD", "4"),
                 ("foo", "3", "bar"), ("5",), ("ENTRIESREAD",), ("ENTRIESREAD", "3")):
        diff.check("XGROUP", "SETID", "stream", "g1", "$", *tail)
