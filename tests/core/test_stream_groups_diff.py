"""Stream consumer groups compared with real Redis: XGROUP, XREADGROUP (blocking included), XACK,
XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS / CONSUMERS / STREAM FULL, and random sequences of
them.

Idle times and delivery times come from each server's own clock, so the replies that carry them
are compared with those fields zeroed (`check_timeless`); tests on a single minired move its
clock with MINIRED ADVANCE to check the values themselves.
"""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.differential import Differential
from tests.support.respclient import Err, Map

# --- helpers -------------------------------------------------------------------------------------

_TIME_FIELDS = (b"idle", b"seen-time")
# XINFO replies are maps; under RESP2 a flat array starting with one of these field names.
_INFO_FIRST_FIELDS = (b"name", b"length")


def _zero_field(field, value):
    if field in _TIME_FIELDS:
        return 0
    if field == b"pending" and isinstance(value, list):
        # Group PEL rows are (id, consumer, delivery time, count); a consumer's (id, time, count).
        return [list(row[:-2]) + [0, row[-1]] for row in value]
    return _zero_times_in_info(value)


def _zero_times_in_info(value):
    if isinstance(value, Map):
        return Map((field, _zero_field(field, item)) for field, item in value)
    if isinstance(value, list):
        if value and len(value) % 2 == 0 and value[0] in _INFO_FIRST_FIELDS:
            flat = []
            for field, item in zip(value[::2], value[1::2]):
                flat += [field, _zero_field(field, item)]
            return flat
        return [_zero_times_in_info(item) for item in value]
    return value


def timeless(command: tuple, reply):
    """`reply` with its clock-dependent numbers zeroed."""
    if isinstance(reply, Err):
        return reply
    name = str(command[0]).upper()
    if name == "XPENDING" and len(command) > 3:
        return [[row[0], row[1], 0, row[3]] for row in reply]
    if name == "XINFO":
        return _zero_times_in_info(reply)
    return reply


def check_timeless(diff: Differential, *command):
    expected, actual = diff.both(*command)
    assert repr(timeless(command, actual)) == repr(timeless(command, expected)), (
        f"reply differs for {command!r}\n  redis:   {expected!r}\n  minired: {actual!r}\n"
        f"  history: {diff.log[-15:]!r}")
    return expected


def fill(diff: Differential, key: str, count: int) -> None:
    for ms in range(1, count + 1):
        diff.check("XADD", key, f"{ms}-1", "f", f"v{ms}")


def read_all(diff: Differential, consumer: str = "c", key: str = "s", group: str = "g"):
    return diff.check("XREADGROUP", "GROUP", group, consumer, "STREAMS", key, ">")


def block_both(pair: Differential, *command) -> None:
    pair.redis.send(*command)
    pair.minired.send(*command)


def wait_until_blocked(diff: Differential, count: int = 1) -> None:
    """Writes must come after the readers blocked: poll both servers' client lists."""
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while True:
        listings = diff.both("CLIENT", "LIST")
        if all(listing.count(b"flags=b ") >= count for listing in listings):
            return
        assert time.monotonic() < deadline, listings
        time.sleep(0.005)


def assert_still_blocked(diff: Differential, count: int = 1) -> None:
    for listing in diff.both("CLIENT", "LIST"):
        assert listing.count(b"flags=b ") == count, listing


# --- XGROUP --------------------------------------------------------------------------------------

def test_xgroup_create(diff):
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "FOO")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ENTRIESREAD")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ENTRIESREAD", "x")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM", "ENTRIESREAD", "-2")
    diff.check("XGROUP", "CREATE", "s", "g", "bad", "MKSTREAM")
    diff.check("EXISTS", "s")
    diff.check("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM")
    diff.check("EXISTS", "s")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "mkstream", "entriesread", "-1")
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    diff.check("XGROUP", "CREATE", "s", "g2", "-")
    diff.check("XGROUP", "CREATE", "s", "g2", "1", "a", "b", "c", "d")
    diff.check("XGROUP", "CREATE", "s", "g2", "5", "ENTRIESREAD", "3")
    fill(diff, "s", 3)
    diff.check("XGROUP", "CREATE", "s", "g3", "$")
    diff.check("XGROUP", "CREATE", "s", "g4", "2")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("TYPE", "s")
    diff.check("SET", "str", "x")
    diff.check("XGROUP", "CREATE", "str", "g", "$")
    diff.check("XGROUP", "CREATE", "str", "g", "$", "MKSTREAM")


def test_xgroup_setid_destroy_and_consumers(diff):
    for args in (("SETID", "nokey", "g", "0"), ("DESTROY", "nokey", "g"),
                 ("CREATECONSUMER", "nokey", "g", "c"), ("DELCONSUMER", "nokey", "g", "c")):
        diff.check("XGROUP", *args)
    fill(diff, "s", 3)
    for args in (("SETID", "s", "g", "0"), ("CREATECONSUMER", "s", "g", "c"),
                 ("DELCONSUMER", "s", "g", "c")):
        diff.check("XGROUP", *args)
    diff.check("XGROUP", "DESTROY", "s", "g")
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD")
    diff.check("XGROUP", "SETID", "s", "g", "5", "FOO", "1")
    diff.check("XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD", "x")
    diff.check("XGROUP", "SETID", "s", "g", "5", "ENTRIESREAD", "-5")
    diff.check("XGROUP", "SETID", "s", "g", "bad")
    diff.check("XGROUP", "SETID", "s", "g", "+")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XGROUP", "SETID", "s", "g", "-", "ENTRIESREAD", "7")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XGROUP", "SETID", "s", "g", "2", "entriesread", "-1")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XGROUP", "SETID", "s", "g", "$")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    diff.check("XGROUP", "SETID", "s", "g", "0")
    read_all(diff, "bob")
    diff.check("XGROUP", "DELCONSUMER", "s", "g", "bob")
    diff.check("XGROUP", "DELCONSUMER", "s", "g", "bob")
    diff.check("XPENDING", "s", "g")
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")
    diff.check("XGROUP", "DESTROY", "s", "g")
    diff.check("XGROUP", "DESTROY", "s", "g")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("SET", "str", "x")
    diff.check("XGROUP", "DESTROY", "str", "g")


def test_xgroup_help_and_arity(diff):
    diff.check("XGROUP")
    diff.check("XGROUP", "HELP")
    diff.check("XGROUP", "HELP", "x")
    diff.check("XGROUP", "FOO")
    diff.check("XGROUP", "DESTROY", "s")
    diff.check("XGROUP", "DESTROY", "s", "g", "x")
    diff.check("XGROUP", "CREATE", "s", "g")
    diff.check("XGROUP", "SETID", "s", "g")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g")
    diff.check("XGROUP", "DELCONSUMER", "s", "g", "c", "d")


# --- XREADGROUP ----------------------------------------------------------------------------------

def test_xreadgroup_errors(diff):
    for args in (
        ("GROUP", "g", "c", "STREAMS", "s", ">"), ("STREAMS", "s", ">"),
        ("GROUP", "g", "STREAMS", "s", ">"), ("GROUP", "g", "c", "STREAMS", "s"),
        ("GROUP", "g", "c", "STREAMS", "s", ">", "x"), ("COUNT", "1", "COUNT", "1", "STREAMS", "s", ">"),
        ("GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"),
        ("GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"),
        ("GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">"),
        ("GROUP", "g", "c", "FOO", "STREAMS", "s", ">"),
        ("GROUP", "g", "c", "NOACK", "COUNT", "1", "BLOCK", "1"),
    ):
        diff.check("XREADGROUP", *args)
    fill(diff, "s", 2)
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("SET", "str", "x")
    for args in (("s", "$"), ("s", "bad"), ("s", "-"), ("str", ">"), ("s", "str", ">", ">"),
                 ("nokey", ">"), ("s", "nokey", "0", ">"), ("s", "nokey", "bad", ">"),
                 ("s", "s", "0", "$")):
        diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", *args)
    # Nothing was read: the errors came before any delivery.
    diff.check("XPENDING", "s", "g")


def test_xreadgroup_delivers_new_entries_then_history(diff):
    fill(diff, "s", 4)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    diff.check("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    diff.check("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "2")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", "0-0")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "COUNT", "0", "STREAMS", "s", "0")
    diff.check("XREADGROUP", "GROUP", "g", "bob", "COUNT", "-3", "STREAMS", "s", "0")
    # The largest ID means ">" to Redis; one below it reads (empty) history.
    diff.check("XADD", "s", "9-1", "f", "v9")
    diff.check("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s",
               "18446744073709551615-18446744073709551615")
    diff.check("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s",
               "18446744073709551615-18446744073709551614")
    # Delivery counts went up with each history read.
    check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    diff.check("XPENDING", "s", "g")
    diff.check("XINFO", "GROUPS", "s")
    # The last GROUP option wins; a reader that got nothing is not a consumer yet.
    diff.check("XREADGROUP", "GROUP", "g", "x", "GROUP", "g", "dave", "STREAMS", "s", ">")
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")


def test_xreadgroup_history_shows_deleted_entries_as_null(diff):
    fill(diff, "s", 3)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    read_all(diff)
    diff.check("XDEL", "s", "2-1")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    diff.hello(3)
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")


def test_xreadgroup_resp3_and_repeated_streams(diff):
    fill(diff, "s", 2)
    fill(diff, "t", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XGROUP", "CREATE", "t", "g", "0")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", ">")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", "0", ">")
    diff.hello(3)
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">", ">")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", "0", "0")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">", ">")
    diff.check("XREAD", "STREAMS", "s", "s", "0", "0")


def test_xreadgroup_noack_moves_the_group_without_pending_entries(diff):
    fill(diff, "s", 3)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">")
    diff.check("XPENDING", "s", "g")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    read_all(diff)
    diff.check("XPENDING", "s", "g")


def test_xreadgroup_after_setid_reassigns_pending_entries(diff):
    fill(diff, "s", 3)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    read_all(diff, "alice")
    diff.check("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    diff.check("XGROUP", "SETID", "s", "g", "1-1")
    read_all(diff, "bob")
    check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    diff.check("XPENDING", "s", "g")
    diff.check("XINFO", "GROUPS", "s")


def test_xreadgroup_inside_multi_and_scripts_does_not_block(diff):
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    diff.check("MULTI")
    diff.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    diff.check("EXEC")
    diff.check("EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', '0', "
                       "'STREAMS', 's', '>')", "0")
    diff.check("EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's', '0')",
               "0")


# --- blocking XREADGROUP -------------------------------------------------------------------------

def test_blocked_xreadgroup_is_woken_by_xadd(diff, connect):
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    reader = connect()
    block_both(reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    wait_until_blocked(diff)
    # Not a wake-up: Redis wakes XREADGROUP readers only when entries are added.
    diff.check("XGROUP", "SETID", "s", "g", "0")
    diff.check("XDEL", "s", "1-1")
    diff.check("XSETID", "s", "5-5")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g", "c")
    assert_still_blocked(diff)
    diff.check("XADD", "s", "6-1", "f", "v")
    reader.read_both()
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")
    diff.check("XPENDING", "s", "g")
    reader.check("PING")


def test_blocked_readers_of_one_group_share_the_new_entries(diff, connect):
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    first, second = connect(), connect()
    first.hello(3)
    block_both(first, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_until_blocked(diff, 1)
    block_both(second, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "NOACK", "BLOCK", "0",
               "STREAMS", "s", ">")
    wait_until_blocked(diff, 2)
    diff.check("XADD", "s", "1-1", "f", "v")
    first.read_both()
    assert_still_blocked(diff, 1)
    diff.check("MULTI")
    diff.check("XADD", "s", "2-1", "f", "v")
    diff.check("XADD", "s", "3-1", "f", "v")
    diff.check("EXEC")
    second.read_both()
    diff.check("XPENDING", "s", "g")
    diff.check("XINFO", "GROUPS", "s")


def test_blocked_xreadgroup_without_count_gets_at_most_1000_entries(diff, connect):
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = connect()
    block_both(reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    wait_until_blocked(diff)
    diff.check("EVAL", "for ms = 1, 1005 do redis.call('XADD', KEYS[1], ms .. '-1', 'f', 'v') end",
               "1", "s")
    reader.read_both()
    diff.check("XINFO", "GROUPS", "s")


def test_blocked_xreadgroup_times_out(diff):
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    diff.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "20", "STREAMS", "s", ">")
    diff.hello(3)
    diff.check("XREADGROUP", "GROUP", "g", "c", "BLOCK", "20", "STREAMS", "s", ">")
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")


@pytest.mark.parametrize("ending", [
    [("XGROUP", "DESTROY", "s", "g")],
    [("XGROUP", "DESTROY", "s", "g"), ("XADD", "s", "2-1", "f", "v")],
    [("DEL", "s")],
    [("SET", "s", "x")],
    [("RENAME", "s", "t")],
    [("FLUSHALL",)],
    [("EXPIRE", "s", "0")],
    [("SWAPDB", "0", "1")],
    [("MULTI",), ("XADD", "s", "2-1", "f", "v"), ("XGROUP", "DESTROY", "s", "g"), ("EXEC",)],
    [("MULTI",), ("DEL", "s"), ("XADD", "s", "2-1", "f", "v"), ("EXEC",)],
], ids=["destroy", "destroy-then-add", "del", "overwrite", "rename", "flushall", "expire", "swapdb",
        "add-and-destroy-in-multi", "recreated-in-multi"])
def test_blocked_xreadgroup_gets_an_error_when_its_group_goes(diff, connect, ending):
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    reader = connect()
    block_both(reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    wait_until_blocked(diff)
    for command in ending:
        diff.check(*command)
    reader.read_both()
    reader.check("PING")


def test_blocked_xreadgroup_outlives_other_groups_and_consumers(diff, connect):
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    diff.check("XGROUP", "CREATE", "s", "other", "$")
    reader = connect()
    block_both(reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    wait_until_blocked(diff)
    diff.check("XGROUP", "DESTROY", "s", "other")
    diff.check("XGROUP", "DELCONSUMER", "s", "g", "c")
    diff.check("XTRIM", "s", "MAXLEN", "0")
    assert_still_blocked(diff)
    diff.check("XADD", "s", "5-1", "f", "v")
    reader.read_both()
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")


# --- XACK / XPENDING -----------------------------------------------------------------------------

def test_xack(diff):
    diff.check("XACK", "s", "g", "1-1")
    diff.check("XACK", "s", "g", "bad")
    fill(diff, "s", 4)
    diff.check("XACK", "s", "g", "bad")
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XACK", "s", "g", "bad")
    read_all(diff)
    diff.check("XACK", "s", "g", "1-1", "bad")
    diff.check("XACK", "s", "g", "1-1", "1-1", "9-9")
    diff.check("XACK", "s", "g", "2")
    diff.check("XACK", "s", "g", "2-1", "3-1")
    diff.check("XPENDING", "s", "g")
    diff.check("SET", "str", "x")
    diff.check("XACK", "str", "g", "1-1")


def test_xpending_summary_and_ranges(diff):
    fill(diff, "s", 5)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XPENDING", "s", "g")
    diff.check("XPENDING", "s", "g", "-", "+", "10")
    read_all(diff, "bob")
    diff.check("XGROUP", "SETID", "s", "g", "3-1")
    read_all(diff, "alice")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g", "carol")
    diff.check("XPENDING", "s", "g")
    for args in (("-", "+", "10"), ("-", "+", "2"), ("-", "+", "0"), ("-", "+", "-5"),
                 ("(1-1", "(5-1", "10"), ("3", "3", "10"), ("+", "-", "10"),
                 ("-", "+", "10", "alice"), ("-", "+", "1", "bob", "extra"),
                 ("-", "+", "10", "nobody"), ("IDLE", "0", "-", "+", "10", "bob"),
                 ("IDLE", "-5", "-", "+", "10"), ("IDLE", "100000", "-", "+", "10")):
        check_timeless(diff, "XPENDING", "s", "g", *args)
    diff.hello(3)
    diff.check("XPENDING", "s", "g")
    diff.check("XGROUP", "CREATE", "s", "empty", "$")
    diff.check("XPENDING", "s", "empty")


def test_xpending_errors(diff):
    diff.check("SET", "str", "x")
    for args in (("s", "g"), ("str", "g"), ("s", "g", "-", "+", "10"), ("s", "g", "bad", "+", "1"),
                 ("s", "g", "-", "+", "10", "c", "d", "e", "f"), ("s", "g", "-"),
                 ("s", "g", "-", "+")):
        diff.check("XPENDING", *args)
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    for args in (("-", "+"), ("-", "+", "x"), ("bad", "+", "1"), ("-5", "+", "10"),
                 ("(18446744073709551615-18446744073709551615", "+", "1"), ("-", "(0-0", "1"),
                 ("IDLE",), ("IDLE", "5", "-", "+"), ("IDLE", "x", "-", "+", "10"),
                 ("foo", "1", "-", "+", "10"), ("x", "y")):
        diff.check("XPENDING", "s", "g", *args)
    diff.check("XPENDING", "s", "nog")


# --- XCLAIM / XAUTOCLAIM -------------------------------------------------------------------------

def test_xclaim(diff):
    fill(diff, "s", 4)
    diff.check("XCLAIM", "nokey", "g", "c", "0", "1-1")
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XCLAIM", "s", "nog", "c", "0", "1-1")
    diff.check("XCLAIM", "s", "g", "c", "x", "1-1")
    read_all(diff, "alice")
    diff.check("XCLAIM", "s", "g", "bob", "-5", "2-1")
    diff.check("XCLAIM", "s", "g", "bob", "0", "2-1", "3-1", "JUSTID")
    diff.check("XCLAIM", "s", "g", "bob", "0", "2-1", "RETRYCOUNT", "7", "JUSTID")
    diff.check("XCLAIM", "s", "g", "bob", "0", "2-1", "RETRYCOUNT", "-3")
    diff.check("XCLAIM", "s", "g", "bob", "0", "2-1", "RETRYCOUNT", "9223372036854775807",
               "JUSTID")
    diff.check("XCLAIM", "s", "g", "bob", "100000", "4-1")
    diff.check("XCLAIM", "s", "g", "bob", "0", "9-9", "FORCE")
    diff.check("XCLAIM", "s", "g", "carol", "0", "4-1", "2-1", "4-1")
    diff.check("XCLAIM", "s", "g", "carol", "0", "JUSTID")
    check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    diff.check("XPENDING", "s", "g")
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")


def test_xclaim_force_deleted_entries_and_lastid(diff):
    fill(diff, "s", 4)
    diff.check("XGROUP", "CREATE", "s", "g", "2-1")
    diff.check("XCLAIM", "s", "g", "c", "0", "1-1")
    diff.check("XCLAIM", "s", "g", "c", "0", "1-1", "FORCE")
    diff.check("XCLAIM", "s", "g", "c", "0", "1-1", "FORCE", "JUSTID")
    read_all(diff, "alice")
    diff.check("XDEL", "s", "3-1")
    # Deleted entries are dropped from the PEL, not claimed.
    diff.check("XCLAIM", "s", "g", "c", "0", "3-1", "4-1")
    diff.check("XCLAIM", "s", "g", "c", "0", "3-1", "FORCE")
    diff.check("XPENDING", "s", "g")
    diff.check("XCLAIM", "s", "g", "c", "0", "4-1", "LASTID", "10-0")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XCLAIM", "s", "g", "c", "0", "4-1", "LASTID", "5-0")
    diff.check("XCLAIM", "s", "g", "c", "0", "4-1", "LASTID", "20-0", "BOGUS")
    diff.check("XINFO", "GROUPS", "s")
    # Delivery times that are negative or in the future are taken as now.
    for option in (("IDLE", "-5"), ("IDLE", "1000000000000000"), ("TIME", "99999999999999"),
                   ("TIME", "-1"), ("IDLE", "-9223372036854775808")):
        diff.check("XCLAIM", "s", "g", "c", "0", "4-1", *option, "JUSTID")
        check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")


def test_xclaim_errors(diff):
    fill(diff, "s", 2)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    read_all(diff)
    for options in (("bad",), ("IDLE",), ("IDLE", "x"), ("TIME", "x"), ("RETRYCOUNT", "x"),
                    ("LASTID", "x"), ("FORCE", "JUSTID", "foo"), ("JUSTID", "2-1"), ("-",)):
        diff.check("XCLAIM", "s", "g", "c2", "0", "1-1", *options)
    diff.check("XPENDING", "s", "g")
    diff.check("SET", "str", "x")
    diff.check("XCLAIM", "str", "g", "c", "0", "1-1")


def test_xautoclaim(diff):
    fill(diff, "s", 5)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XAUTOCLAIM", "s", "g", "c", "0", "0")
    read_all(diff, "alice")
    diff.check("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "2")
    diff.check("XAUTOCLAIM", "s", "g", "bob", "0", "3-1", "COUNT", "2", "JUSTID")
    diff.check("XDEL", "s", "2-1", "4-1")
    diff.check("XAUTOCLAIM", "s", "g", "carol", "0", "-", "COUNT", "1")
    # A deleted entry counts against COUNT and is reported in the third element.
    diff.check("XAUTOCLAIM", "s", "g", "carol", "0", "(1-1", "COUNT", "1")
    diff.check("XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "100", "JUSTID")
    diff.check("XAUTOCLAIM", "s", "g", "carol", "1000000", "0")
    diff.check("XAUTOCLAIM", "s", "g", "carol", "-1", "+")
    diff.check("XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "1", "COUNT", "2", "JUSTID",
               "JUSTID")
    check_timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    check_timeless(diff, "XINFO", "CONSUMERS", "s", "g")
    diff.hello(3)
    diff.check("XAUTOCLAIM", "s", "g", "dave", "0", "0")


def test_xautoclaim_gives_up_after_ten_attempts_per_count(diff):
    fill(diff, "s", 25)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    read_all(diff)
    diff.check("XAUTOCLAIM", "s", "g", "c2", "1000000", "0", "COUNT", "1")
    diff.check("XAUTOCLAIM", "s", "g", "c2", "1000000", "10-1", "COUNT", "2")
    diff.check("XAUTOCLAIM", "s", "g", "c2", "1000000", "10-1", "COUNT", "1")


def test_xautoclaim_errors(diff):
    for args in (("0", "0"), ("x", "0"), ("0", "bad"), ("0", "0", "COUNT", "0"),
                 ("0", "0", "COUNT", "x"), ("0", "0", "FOO"), ("0", "0", "COUNT"),
                 ("0", "(18446744073709551615-18446744073709551615"),
                 ("0", "0", "COUNT", "576460752303423488"),
                 ("0", "0", "COUNT", "576460752303423487")):
        diff.check("XAUTOCLAIM", "s", "g", "c", *args)
    fill(diff, "s", 1)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    for count in ("9223372036854775807", "576460752303423488", "576460752303423487",
                  "100000000000000", "1000000000"):
        diff.check("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", count)
    diff.check("SET", "str", "x")
    diff.check("XAUTOCLAIM", "str", "g", "c", "0", "0")


# --- XINFO ---------------------------------------------------------------------------------------

def test_xinfo_groups_and_consumers_errors(diff):
    diff.check("SET", "str", "x")
    for args in (("GROUPS", "nokey"), ("GROUPS", "str"), ("CONSUMERS", "nokey", "g"),
                 ("CONSUMERS", "str", "g"), ("GROUPS",), ("CONSUMERS", "s"),
                 ("GROUPS", "s", "x")):
        diff.check("XINFO", *args)
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    diff.check("XINFO", "CONSUMERS", "s", "nog")
    diff.check("XINFO", "CONSUMERS", "s", "g")
    diff.check("XINFO", "GROUPS", "s")
    diff.hello(3)
    diff.check("XINFO", "GROUPS", "s")


def test_entries_read_and_lag_through_deletions(diff):
    fill(diff, "s", 3)
    diff.check("XDEL", "s", "1-1")
    for group, start in (("at-first", "2-1"), ("before", "0-5"), ("deleted", "1-0"), ("zero", "0")):
        diff.check("XGROUP", "CREATE", "s", group, start)
    diff.check("XGROUP", "CREATE", "s", "known", "0", "ENTRIESREAD", "0")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XDEL", "s", "3-1")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XADD", "s", "4-1", "f", "v")
    diff.check("XADD", "s", "5-1", "f", "v")
    diff.check("XDEL", "s", "4-1")
    diff.check("XINFO", "GROUPS", "s")
    for group in ("at-first", "zero", "known"):
        diff.check("XREADGROUP", "GROUP", group, "c", "COUNT", "1", "STREAMS", "s", ">")
        diff.check("XINFO", "GROUPS", "s")
    diff.check("XTRIM", "s", "MAXLEN", "0")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XADD", "s", "6-1", "f", "v")
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XSETID", "s", "9-9", "ENTRIESADDED", "20")
    diff.check("XINFO", "GROUPS", "s")


def test_xinfo_stream_full(diff):
    diff.check("XINFO", "STREAM", "nokey", "FULL", "COUNT", "x")
    fill(diff, "s", 12)
    diff.check("XINFO", "STREAM", "s", "FULL")
    for group in ("g1", "g2"):
        diff.check("XGROUP", "CREATE", "s", group, "0")
    diff.check("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "11", "STREAMS", "s", ">")
    diff.check("XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "s", ">")
    diff.check("XGROUP", "CREATECONSUMER", "s", "g2", "carol")
    diff.check("XDEL", "s", "5-1")
    for args in ((), ("COUNT", "0"), ("COUNT", "3"), ("count", "-5")):
        check_timeless(diff, "XINFO", "STREAM", "s", "FULL", *args)
    for args in (("FOO",), ("FULL", "COUNT"), ("FULL", "COUNT", "x"), ("FULL", "FOO", "1"),
                 ("FULL", "COUNT", "1", "2"), ("FULL", "COUNT", "9223372036854775808")):
        diff.check("XINFO", "STREAM", "s", *args)
    diff.check("XINFO", "STREAM", "s")
    diff.hello(3)
    check_timeless(diff, "XINFO", "STREAM", "s", "FULL", "COUNT", "2")


# --- WATCH, COPY, and the clock ------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
    ("XACK", "s", "g", "1-1"),
    ("XCLAIM", "s", "g", "c2", "0", "1-1"),
    ("XAUTOCLAIM", "s", "g", "c2", "0", "0"),
    ("XGROUP", "CREATE", "s", "g2", "0"),
    ("XGROUP", "SETID", "s", "g", "0"),
    ("XGROUP", "DESTROY", "s", "g"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "c9"),
    ("XGROUP", "DELCONSUMER", "s", "g", "c"),
    ("XGROUP", "CREATE", "fresh", "g", "0", "MKSTREAM"),
    ("XSETID", "s", "9-0"),  # found by bench/grammar_fuzz.py --blocking
], ids=lambda command: " ".join(command[:2]) + (" MKSTREAM" if "MKSTREAM" in command else ""))
def test_watch_sees_only_a_created_key(diff, connect, command):
    fill(diff, "s", 2)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    watcher = connect()
    watcher.check("WATCH", command[2] if command[0] == "XGROUP" else command[1])
    watcher.check("MULTI")
    watcher.check("PING")
    diff.check(*command)
    watcher.check("EXEC")


def test_copy_takes_the_groups_along(diff):
    fill(diff, "s", 3)
    diff.check("XGROUP", "CREATE", "s", "g", "0")
    diff.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    diff.check("COPY", "s", "t")
    diff.check("XACK", "t", "g", "1-1")
    diff.check("XPENDING", "s", "g")
    diff.check("XPENDING", "t", "g")
    diff.check("XINFO", "GROUPS", "t")


def test_idle_times_come_from_the_server_clock(mini_raw):
    call = mini_raw.call
    call("XADD", "s", "1-1", "f", "v")
    call("XADD", "s", "2-1", "f", "v")
    call("XGROUP", "CREATE", "s", "g", "0")
    call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    call("MINIRED", "ADVANCE", "60000")
    rows = call("XPENDING", "s", "g", "-", "+", "10")
    assert [row[0] for row in rows] == [b"1-1", b"2-1"]
    assert all(60000 <= row[2] < 70000 for row in rows), rows
    assert len(call("XPENDING", "s", "g", "IDLE", "60000", "-", "+", "10")) == 2
    assert call("XPENDING", "s", "g", "IDLE", "70000", "-", "+", "10") == []
    [consumer] = call("XINFO", "CONSUMERS", "s", "g")
    assert 60000 <= consumer[consumer.index(b"idle") + 1] < 70000
    # min-idle-time is measured on the same clock.
    assert call("XCLAIM", "s", "g", "bob", "70000", "1-1") == []
    assert call("XCLAIM", "s", "g", "bob", "60000", "1-1", "JUSTID") == [b"1-1"]
    assert call("XCLAIM", "s", "g", "carol", "60000", "1-1", "JUSTID") == []
    assert call("XAUTOCLAIM", "s", "g", "carol", "60000", "0", "JUSTID") == [b"0-0", [b"2-1"], []]
    # IDLE and TIME set the delivery time relative to, and on, the server clock.
    now = call("MINIRED", "CLOCK")
    call("XCLAIM", "s", "g", "bob", "0", "1-1", "IDLE", "5000", "JUSTID")
    call("XCLAIM", "s", "g", "bob", "0", "2-1", "TIME", str(now - 8000), "JUSTID")
    idle = {row[0]: row[2] for row in call("XPENDING", "s", "g", "-", "+", "10")}
    assert 5000 <= idle[b"1-1"] < 6000 and 8000 <= idle[b"2-1"] < 9000, idle
    full = call("XINFO", "STREAM", "s", "FULL")
    [group] = full[full.index(b"groups") + 1]
    pending = group[group.index(b"pending") + 1]
    assert pending[1][2] == now - 8000


# --- random sequences ----------------------------------------------------------------------------

_IDS = st.sampled_from(["0", "1-1", "2-1", "3-1", "4-1", "6-1", "9-1", "2", "5"])
_GROUPS = st.sampled_from(["g1", "g2"])
_CONSUMERS = st.sampled_from(["alice", "bob", "carol"])
# Idle thresholds far from any real idle time, so both servers decide alike.
_MIN_IDLE = st.sampled_from(["0", "3600000"])
_COUNTS = st.sampled_from(["1", "2", "5"])


def _command(*parts):
    return st.tuples(*[p if isinstance(p, st.SearchStrategy) else st.just(p) for p in parts])


def _optional(*parts):
    return st.one_of(st.just(()), _command(*parts))


_SEQUENCE_COMMANDS = st.one_of(
    _command("XADD", "s", "next", "f", "v"),
    _command("XADD", "s", "MAXLEN", st.sampled_from(["1", "3"]), "next", "f", "v"),
    _command("XDEL", "s", _IDS),
    _command("XTRIM", "s", "MAXLEN", st.sampled_from(["0", "2"])),
    _command("XGROUP", "CREATE", "s", _GROUPS, st.sampled_from(["0", "$", "2-1"]),
             st.sampled_from(["MKSTREAM", "ENTRIESREAD"])),
    _command("XGROUP", "SETID", "s", _GROUPS, st.sampled_from(["0", "$", "2-1", "+"])),
    _command("XGROUP", "DESTROY", "s", _GROUPS),
    _command("XGROUP", "CREATECONSUMER", "s", _GROUPS, _CONSUMERS),
    _command("XGROUP", "DELCONSUMER", "s", _GROUPS, _CONSUMERS),
    st.tuples(_command("XREADGROUP", "GROUP", _GROUPS, _CONSUMERS),
              _optional("COUNT", _COUNTS), _optional("NOACK"),
              _command("STREAMS", "s", st.sampled_from([">", ">", "0", "2-1"]))),
    st.tuples(_command("XACK", "s", _GROUPS), st.lists(_IDS, min_size=1, max_size=3)),
    st.tuples(_command("XCLAIM", "s", _GROUPS, _CONSUMERS, _MIN_IDLE),
              st.lists(_IDS, min_size=1, max_size=3),
              _optional("JUSTID"), _optional("FORCE"), _optional("RETRYCOUNT", _COUNTS),
              _optional("LASTID", _IDS)),
    st.tuples(_command("XAUTOCLAIM", "s", _GROUPS, _CONSUMERS, _MIN_IDLE, _IDS),
              _optional("COUNT", _COUNTS), _optional("JUSTID")),
    _command("XPENDING", "s", _GROUPS),
    st.tuples(_command("XPENDING", "s", _GROUPS, "-", "+", "10"), _optional(_CONSUMERS)),
    _command("XINFO", "GROUPS", "s"),
    _command("XINFO", "CONSUMERS", "s", _GROUPS),
    _command("XINFO", "STREAM", "s", "FULL"),
)


def _flatten(parts) -> tuple:
    if isinstance(parts, tuple):
        return tuple(item for part in parts for item in _flatten(part))
    if isinstance(parts, list):
        return tuple(parts)
    return (parts,)


@settings(max_examples=60)
@given(data=st.data())
def test_random_group_sequences_match_redis(diff, data):
    diff.both("FLUSHALL")
    # Start with a group on a few entries, so that most commands have something to work on.
    for ms in (1, 2, 3):
        diff.check("XADD", "s", f"{ms}-1", "f", "v")
    diff.check("XGROUP", "CREATE", "s", "g1", "0")
    next_ms = 4
    for drawn in data.draw(st.lists(_SEQUENCE_COMMANDS, min_size=1, max_size=30)):
        command = _flatten(drawn)
        if command[0] == "XADD":
            command = tuple(f"{next_ms}-1" if part == "next" else part for part in command)
            next_ms += 1
        elif command[:2] == ("XGROUP", "CREATE") and command[-1] == "ENTRIESREAD":
            command += ("1",)
        check_timeless(diff, *command)
