"""EXPIRE family, TTL family and PERSIST compared with real Redis, plus expiry over minired's
movable clock (MINIRED ADVANCE) where waiting on real Redis would be slow."""
import time

import pytest


def _in_range(reply, low, high):
    return isinstance(reply, int) and low <= reply <= high


def test_ttl_of_missing_and_persistent_keys(diff):
    for command in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        diff.check(command, "missing")
    diff.check("SET", "k", "v")
    for command in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        diff.check(command, "k")
        diff.check(command)
    diff.check("PERSIST", "k")
    diff.check("PERSIST", "missing")


def test_expire_units(diff):
    diff.check("SET", "k", "v")
    diff.check("EXPIRE", "k", "100")
    diff.check("TTL", "k")
    assert all(_in_range(r, 99_000, 100_000) for r in diff.both("PTTL", "k"))
    diff.check("PEXPIRE", "k", "50000")
    diff.check("TTL", "k")
    diff.check("EXPIREAT", "k", "99999999999")
    diff.check("EXPIRETIME", "k")
    diff.check("PEXPIRETIME", "k")
    diff.check("PEXPIREAT", "k", "99999999999999")
    diff.check("PEXPIRETIME", "k")
    diff.check("EXPIRETIME", "k")
    diff.check("PEXPIREAT", "k", "99999999999499")
    diff.check("EXPIRETIME", "k")
    diff.check("PERSIST", "k")
    diff.check("TTL", "k")
    diff.check("PERSIST", "k")


@pytest.mark.parametrize("command", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_in_the_past_deletes(diff, command):
    # "1" is the past only for the absolute forms; PEXPIRE k 1 would race the next command.
    for when in ("0", "-1", "1") if command.endswith("AT") else ("0", "-1"):
        diff.check("SET", "k", "v")
        diff.check(command, "k", when)
        diff.check("EXISTS", "k")
    diff.check(command, "missing", "100")


@pytest.mark.parametrize("command", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_overflow_and_bad_values(diff, command):
    diff.check("SET", "k", "v")
    for when in ("9223372036854775807", "-9223372036854775808", "9223372036854775",
                 "9223372036854776", "-9223372036854775", "-9223372036854776", "x", "1.5", "",
                 "99999999999999999999"):
        diff.check(command, "k", when)
        diff.check(command, "missing", when)
        diff.check("SET", "k", "v")


def test_expire_options(diff):
    diff.check("SET", "k", "v")
    diff.check("EXPIRE", "k", "100", "XX")
    diff.check("EXPIRE", "k", "100", "GT")
    diff.check("TTL", "k")
    diff.check("EXPIRE", "k", "100", "LT")
    diff.check("TTL", "k")
    diff.check("EXPIRE", "k", "200", "NX")
    diff.check("EXPIRE", "k", "200", "NX")
    diff.check("EXPIRE", "k", "300", "GT")
    diff.check("TTL", "k")
    diff.check("EXPIRE", "k", "100", "GT")
    diff.check("EXPIRE", "k", "100", "LT")
    diff.check("TTL", "k")
    diff.check("EXPIRE", "k", "150", "LT", "XX")
    diff.check("EXPIRE", "k", "150", "xx", "gt")
    diff.check("TTL", "k")
    diff.check("EXPIRE", "k", "-1", "LT")
    diff.check("EXISTS", "k")
    for options in (("NX", "XX"), ("NX", "GT"), ("NX", "LT"), ("GT", "LT"), ("FOO",),
                    ("NX", "FOO"), ("FOO", "NX", "XX"), ("NX", "XX", "GT", "LT"), ("NX", "NX")):
        diff.check("SET", "k", "v")
        diff.check("EXPIRE", "k", "100", *options)
        diff.check("PEXPIREAT", "missing", "x", *options)
    diff.check("EXPIRE", "k", "x", "FOO")
    diff.check("EXPIRE", "k")


def test_overwrite_clears_ttl_and_keepers_keep_it(diff):
    diff.check("SET", "k", "v", "EX", "100")
    diff.check("SET", "k", "w")
    diff.check("TTL", "k")
    diff.check("SET", "k", "v", "EX", "100")
    diff.check("SETRANGE", "k", "0", "x")
    diff.check("APPEND", "k", "y")
    diff.check("INCRBYFLOAT", "n", "1")
    diff.check("TTL", "k")
    diff.check("DEL", "k")
    diff.check("TTL", "k")
    diff.check("SET", "k", "v", "EX", "100")
    diff.check("RENAME", "k", "k2")
    diff.check("TTL", "k2")


def test_short_expiry_really_expires(diff):
    diff.check("SET", "k", "v", "PX", "30")
    diff.check("SET", "k2", "v")
    diff.check("PEXPIRE", "k2", "30")
    diff.check("RPUSH", "l", "x")
    diff.check("PEXPIRE", "l", "30")
    diff.check("GETEX", "k3", "PX", "30")
    time.sleep(0.08)
    for key in ("k", "k2", "l"):
        diff.check("EXISTS", key)
        diff.check("TTL", key)
        diff.check("GET", key)
    diff.check("KEYS", "*")
    diff.check("SCAN", "0")
    diff.check("RANDOMKEY")


def test_clock_advance_expires_keys(mini_raw):
    assert mini_raw.call("SET", "k", "v", "EX", "100") == b"OK"
    assert mini_raw.call("SET", "p", "v") == b"OK"
    assert mini_raw.call("EXPIRE", "p", "50", "GT") == 0
    assert mini_raw.call("EXPIRE", "p", "50", "LT") == 1
    mini_raw.call("MINIRED", "ADVANCE", "49000")
    assert mini_raw.call("TTL", "k") == 51
    assert mini_raw.call("TTL", "p") == 1
    # A key lives through the millisecond of its deadline (Redis expires it once now > when):
    # one more than the 50 s left is past it whatever real time went by.
    mini_raw.call("MINIRED", "ADVANCE", "1001")
    assert mini_raw.call("EXISTS", "p") == 0
    assert mini_raw.call("TTL", "p") == -2
    assert mini_raw.call("GET", "k") == b"v"
    mini_raw.call("MINIRED", "ADVANCE", "51000")
    assert mini_raw.call("GET", "k") is None
    assert mini_raw.call("DBSIZE") == 0


def test_ttl_rounding(mini_raw):
    mini_raw.call("SET", "k", "v", "PX", "1499")
    assert mini_raw.call("TTL", "k") == 1
    mini_raw.call("SET", "k", "v", "PX", "1500")
    assert mini_raw.call("TTL", "k") in (1, 2)
    mini_raw.call("SET", "k", "v", "PX", "2600")
    assert mini_raw.call("TTL", "k") == 3
    mini_raw.call("SET", "k", "v", "PXAT", "99999999999500")
    assert mini_raw.call("EXPIRETIME", "k") == 100000000000
    mini_raw.call("SET", "k", "v", "PXAT", "1000000000500")
    assert mini_raw.call("EXPIRETIME", "k") == -2
