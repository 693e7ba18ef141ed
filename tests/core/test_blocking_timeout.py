"""Blocking timeouts read exactly as Redis 7.0 reads them: strtold, times 1000 in long double,
rounded up to whole milliseconds. The cases whose outcome is visible to a client (error,
forever, short timeout) were checked against a real redis-server; test_blocking_diff.py
compares the error cases on the wire."""
from __future__ import annotations

import pytest

from minired.commands.streams import parse_block_timeout
from minired.engine.blocking import parse_timeout
from minired.protocol import errors
from minired.protocol.errors import RedisError


@pytest.mark.parametrize("raw, ms", [
    (b"0", 0), (b"1", 1000), (b"1.5", 1500), (b"0.05", 50), (b"+0.01", 10), (b"1.", 1000),
    (b".5", 500), (b"1e3", 1_000_000), (b"1E-2", 10), (b"0e0", 0), (b"-0", 0), (b"-0.0", 0),
    # Any positive fraction of a millisecond waits one millisecond, even a subnormal one.
    (b"0.0001", 1), (b"0.001", 1), (b"1e-300", 1), (b"1e-4940", 1),
    # Rounded up: 1.0005 s is 1001 ms.
    (b"1.0005", 1001), (b"0.0015", 2),
    # Negative values that round up to 0 ms mean "forever". -0.001 is among them because its
    # long double is a hair above -0.001.
    (b"-0.0001", 0), (b"-0.0009", 0), (b"-0.001", 0), (b"-1e-3", 0), (b"-0.0010", 0),
    # strtold reads hex floats too.
    (b"0x10", 16000), (b"0x1p-20", 1), (b"0X1.8P1", 3000), (b"0x.8", 500),
    (b"0X1.8P-3", 188), (b"0x1p-16445", 1),
    # Huge but still below 2**63 ms: a wait that never ends in practice.
    (b"9000000000000000", 9_000_000_000_000_000_000),
])
def test_accepted(raw, ms):
    assert parse_timeout(raw) == ms


@pytest.mark.parametrize("raw", [
    b"-1", b"-0.0011", b"-0.00100000000000000001", b"-0.002",
    # Casting infinity or anything past 2**63 ms to long long gives LLONG_MIN.
    b"inf", b"-inf", b"Infinity", b"+INF", b"1e17", b"1e400", b"1e4000", b"1e4932",
    b"9223372036854775808",
])
def test_negative(raw):
    with pytest.raises(RedisError) as info:
        parse_timeout(raw)
    assert info.value.message == errors.TIMEOUT_NEGATIVE


@pytest.mark.parametrize("raw", [
    b"", b" 1", b"1 ", b"\t1", b"abc", b"1e", b"1e+", b"e1", b".", b"-", b"+", b"0x", b"0xg",
    b"0x1p", b"1_0", b"1,5", b"+-1", b"--1", b"nan", b"-nan", b"NaN(123)", b"1e5000",
    b"-1e5000", b"1e-5000", b"0x1p-20000", b"0x1p20000", b"1" * 5200, b"\x001", b"2\x00junk",
    b"1.2e4932", b"1e-4952", b"0x1p-16446",
])
def test_not_a_float(raw):
    with pytest.raises(RedisError) as info:
        parse_timeout(raw)
    assert info.value.message == errors.TIMEOUT_NOT_FLOAT


def test_absurd_exponents_are_refused_quickly():
    with pytest.raises(RedisError):
        parse_timeout(b"1e999999999999")
    with pytest.raises(RedisError):
        parse_timeout(b"0x1p-999999999999")
    assert parse_timeout(b"0e999999999999") == 0


@pytest.mark.parametrize("raw, expected", [
    (b"0", 0), (b"100", 100), (b"-1", errors.TIMEOUT_NEGATIVE),
    (b"1.5", errors.TIMEOUT_NOT_INTEGER), (b"abc", errors.TIMEOUT_NOT_INTEGER),
    (b"9223372036854775808", errors.TIMEOUT_NOT_INTEGER),
])
def test_milliseconds(raw, expected):
    if isinstance(expected, int):
        assert parse_block_timeout(raw) == expected
    else:
        with pytest.raises(RedisError) as info:
            parse_block_timeout(raw)
        assert info.value.message == expected
