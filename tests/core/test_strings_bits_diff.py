"""SETBIT, GETBIT, BITCOUNT, BITPOS and LCS compared with real Redis."""
import random

import pytest


def test_setbit_getbit(diff):
    diff.check("SETBIT", "b", "7", "1")
    diff.check("SETBIT", "b", "7", "1")
    diff.check("SETBIT", "b", "0", "1")
    diff.check("SETBIT", "b", "100", "1")
    diff.check("GET", "b")
    diff.check("SETBIT", "b", "100", "0")
    diff.check("GET", "b")
    for offset in ("0", "1", "7", "100", "1000", "-1", "x", "4294967296", "1.5"):
        diff.check("GETBIT", "b", offset)
        diff.check("GETBIT", "missing", offset)
    for bad in (("-1", "1"), ("x", "1"), ("4294967296", "1"), ("0", "2"), ("0", "-1"), ("0", "x"),
                ("0", "01"), ("1", "")):
        diff.check("SETBIT", "b", *bad)
    diff.check("SETBIT", "b", "4294967295", "x")
    diff.check("SET", "n", "12")
    diff.check("SETBIT", "n", "6", "1")
    diff.check("GET", "n")
    diff.check("RPUSH", "l", "x")
    diff.check("SETBIT", "l", "0", "1")
    diff.check("GETBIT", "l", "0")
    diff.check("SET", "t", "a", "EX", "100")
    diff.check("SETBIT", "t", "1", "1")
    diff.check("TTL", "t")


RANGES = [(), ("0", "-1"), ("1", "3"), ("-2", "-1"), ("5", "2"), ("-1", "-5"), ("100", "200"),
          ("0", "0"), ("-100", "100"), ("x", "1"), ("0", "x"), ("1",), ("0", "-1", "BYTE"),
          ("0", "-1", "BIT"), ("3", "13", "BIT"), ("-7", "-2", "BIT"), ("9", "9", "BIT"),
          ("0", "1", "bit"), ("0", "1", "WORD"), ("0", "1", "BIT", "x"), ("-3", "-5", "BIT")]


@pytest.mark.parametrize("value", [b"foobar", b"\x00\x00\xff", b"\xff\xff\xff", b"", b"\x01",
                                   b"\x00", b"1234"])
def test_bitcount(diff, value):
    diff.check("SET", "k", value)
    for extra in RANGES:
        diff.check("BITCOUNT", "k", *extra)
        diff.check("BITCOUNT", "missing", *extra)


@pytest.mark.parametrize("value", [b"\xff\xf0\x00", b"\x00\x00\x00", b"\xff\xff\xff", b"\x00\xff\xf0",
                                   b"", b"\x0f", b"\xf0\x00\x01", b"foobar"])
def test_bitpos(diff, value):
    diff.check("SET", "k", value)
    for bit in ("0", "1"):
        for extra in RANGES:
            diff.check("BITPOS", "k", bit, *extra)
        diff.check("BITPOS", "missing", bit)
    for bad in ("2", "-1", "x"):
        diff.check("BITPOS", "k", bad)
        diff.check("BITPOS", "missing", bad)
    diff.check("BITPOS", "missing", "1", "x")


def test_bitpos_random_ranges(diff):
    rng = random.Random(7)
    for _ in range(40):
        value = bytes(rng.choice([0, 255, rng.randrange(256)]) for _ in range(rng.randrange(1, 6)))
        diff.check("SET", "k", value)
        start, end = rng.randrange(-50, 50), rng.randrange(-50, 50)
        unit = rng.choice(["BIT", "BYTE"])
        for bit in ("0", "1"):
            diff.check("BITPOS", "k", bit, start, end, unit)
            diff.check("BITPOS", "k", bit, start)
        diff.check("BITCOUNT", "k", start, end, unit)


def test_bit_commands_wrong_type(diff):
    diff.check("RPUSH", "l", "x")
    diff.check("BITCOUNT", "l")
    diff.check("BITPOS", "l", "1")
    diff.check("BITPOS", "l", "2")


def test_lcs(diff):
    diff.check("MSET", "a", "ohmytext", "b", "mynewtext")
    diff.check("LCS", "a", "b")
    diff.check("LCS", "a", "b", "LEN")
    diff.check("LCS", "a", "b", "IDX")
    diff.check("LCS", "a", "b", "IDX", "MINMATCHLEN", "4")
    diff.check("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")
    diff.check("LCS", "a", "b", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "-3")
    diff.check("LCS", "a", "b", "LEN", "WITHMATCHLEN")
    diff.check("LCS", "a", "b", "IDX", "LEN")
    diff.check("LCS", "a", "b", "FOO")
    diff.check("LCS", "a", "b", "MINMATCHLEN")
    diff.check("LCS", "a", "b", "MINMATCHLEN", "x")
    diff.check("LCS", "a", "missing")
    diff.check("LCS", "missing", "missing", "IDX")
    diff.check("LCS", "a", "a", "IDX", "WITHMATCHLEN")
    diff.check("RPUSH", "l", "x")
    diff.check("LCS", "a", "l")
    diff.check("LCS", "l", "missing", "FOO")
    diff.check("SET", "n", "12345")
    diff.check("LCS", "n", "a")
    diff.check("LCS", "a")


def test_lcs_random(diff):
    rng = random.Random(3)
    for _ in range(25):
        a = "".join(rng.choice("abc") for _ in range(rng.randrange(0, 15)))
        b = "".join(rng.choice("abc") for _ in range(rng.randrange(0, 15)))
        diff.check("MSET", "a", a, "b", b)
        diff.check("LCS", "a", "b")
        diff.check("LCS", "a", "b", "IDX", "WITHMATCHLEN")
        diff.check("LCS", "a", "b", "IDX", "MINMATCHLEN", "2")


def test_lcs_resp3(diff):
    diff.hello(3)
    diff.check("MSET", "a", "ohmytext", "b", "mynewtext")
    diff.check("LCS", "a", "b", "IDX", "WITHMATCHLEN")


def test_bitcount_of_an_empty_negative_range_ignores_the_unit(diff):
    """Found by bench/grammar_fuzz.py: start and end both negative, start > end: 0 at once."""
    diff.check("SET", "s", "foobar")
    for unit in ("5", "BIT", "BYTE", "x"):
        diff.check("BITCOUNT", "s", "-1", "-100", unit)
    diff.check("BITCOUNT", "s", "1", "-100", "x")
    diff.check("BITCOUNT", "s", "-1", "-100", "BYTE", "x")


def _changes(client) -> int:
    info = bytes(client.call("INFO", "persistence"))
    line = next(line for line in info.split(b"\r\n")
                if line.startswith(b"rdb_changes_since_last_save:"))
    return int(line.split(b":")[1])


def test_setbit_and_bitfield_count_changes_only_when_they_change_something(diff):
    """INFO rdb_changes_since_last_save (Redis's server.dirty) grows by what a write changed:
    SETBIT of a bit to its value and BITFIELD SET of a field to its value change nothing,
    BITFIELD counts each field it writes, creating or growing the string counts
    (tests/unit/bitops.tcl)."""
    commands = [("SETBIT", "foo", 0, 0), ("BITFIELD", "foo2", "SET", "i5", 0, 0),
                ("SETBIT", "foo", 0, 0), ("BITFIELD", "foo2", "SET", "i5", 0, 0),
                ("SETBIT", "foo", 0, 1), ("SETBIT", "foo", 0, 1),
                ("BITFIELD", "foo3", "INCRBY", "i5", 0, 1), ("BITFIELD", "foo3", "INCRBY", "i5", 0, 1),
                ("SETBIT", "foo", 90, 0), ("BITFIELD", "foo2", "SET", "i5", 90, 0),
                ("BITFIELD", "foo2", "GET", "i5", 0),
                ("BITFIELD", "foo4", "SET", "u8", 0, 1, "SET", "u8", 8, 2, "GET", "u8", 0),
                ("BITFIELD", "foo4", "SET", "u8", 0, 1, "SET", "u8", 8, 3),
                ("BITFIELD", "foo2", "SET", "i5", 0, "x"), ("SET", "s", "v")]
    bases = _changes(diff.redis), _changes(diff.minired)
    for command in commands:
        diff.check(*command)
        assert _changes(diff.minired) - bases[1] == _changes(diff.redis) - bases[0], command
