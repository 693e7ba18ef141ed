"""minired/data/strtold.py against the C library's strtold, called through ctypes, and read the way
Redis's string2ld reads it. On x86_64 glibc a long double is the x87 80-bit format that
Redis uses, so every text must read as the same exact value or be refused alike."""
from __future__ import annotations

import ctypes
import errno
import platform
import re
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minired.data.strtold import MAX_CHARS, NotAFloat, strtold

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64"
    or ctypes.sizeof(ctypes.c_longdouble) != 16,
    reason="needs glibc's x87 long double")


class _LongDouble(ctypes.c_longdouble):
    """A subclass, so ctypes hands the result back as it is rather than as a (53-bit) float."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.strtold.restype = _LongDouble
_libc.strtold.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
_HEX_FLOAT = re.compile(rb"(-?)0x([0-9a-f]+)(?:\.([0-9a-f]*))?p([+-]\d+)")


def _exact(text: bytes) -> Fraction:
    """The value printf's %La printed."""
    sign, whole, fraction, exponent = _HEX_FLOAT.fullmatch(text).groups()
    fraction = fraction or b""
    value = Fraction(int(whole + fraction, 16)) * Fraction(2) ** (int(exponent) - 4 * len(fraction))
    return -value if sign else value


def string2ld(raw: bytes) -> Fraction | str | None:
    """Redis's string2ld on the C library: the value, "inf" for an infinity, None if refused."""
    if not raw or len(raw) >= MAX_CHARS:
        return None
    buffer = ctypes.create_string_buffer(raw)
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    value = _libc.strtold(buffer, ctypes.byref(end))
    failed = ctypes.get_errno() == errno.ERANGE
    consumed = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)
    printed = ctypes.create_string_buffer(64)
    _libc.snprintf(printed, 64, b"%La", value)
    text = printed.value
    if raw[:1].isspace() or consumed != len(raw) or b"nan" in text:
        return None
    if b"inf" in text:
        return None if failed else "inf"  # HUGE_VAL from overflow is refused, "inf" read
    exact = _exact(text)
    if failed and exact == 0:
        return None  # underflow to zero
    return exact


def emulated(raw: bytes) -> Fraction | str | None:
    try:
        read = strtold(raw)
    except NotAFloat:
        return None
    if read is None:
        return "inf"
    sign, significand, scale = read
    return sign * Fraction(significand) * Fraction(2) ** scale


_DIGITS = st.text("0123456789", max_size=40)
_HEX_DIGITS = st.text("0123456789abcdefABCDEF", max_size=24)


@st.composite
def _numbers(draw) -> bytes:
    sign = draw(st.sampled_from(["", "+", "-"]))
    if draw(st.booleans()):
        mantissa = draw(_HEX_DIGITS) + draw(st.sampled_from(["", "."])) + draw(_HEX_DIGITS)
        exponent = draw(st.sampled_from(["", "p"])) + draw(st.sampled_from(["", "+", "-"]))
        exponent += str(draw(st.integers(0, 17000))) if exponent else ""
        return f"{sign}0{draw(st.sampled_from('xX'))}{mantissa}{exponent}".encode()
    mantissa = draw(_DIGITS) + draw(st.sampled_from(["", "."])) + draw(_DIGITS)
    exponent = draw(st.sampled_from(["", "e", "E"]))
    if exponent:
        exponent += draw(st.sampled_from(["", "+", "-"])) + str(draw(st.integers(0, 5100)))
    return f"{sign}{mantissa}{exponent}".encode()


_JUNK = st.text("0123456789.+-eExXpPabcdfinINFtyaN() \t", max_size=24).map(str.encode)


@settings(max_examples=600)
@given(st.one_of(_numbers(), _JUNK))
@example(b"0.1")
@example(b"1e-4940")    # subnormal
@example(b"1e-4960")    # underflow to zero: refused
@example(b"1.18973149535723176502e+4932")  # the largest long double
@example(b"1.2e4932")   # past it: refused
@example(b"0x1p-16445")  # the smallest subnormal
@example(b"0x1p16384")
@example(b"-inf")
@example(b"Infinity")
@example(b"nan")
@example(b"nan(123)")
@example(b" 1")
@example(b"1 ")
@example(b"-0")
@example(b"0x")
@example(b".")
@example(b"1" * 6000)
def test_reads_as_the_c_library_does(raw):
    assert emulated(raw) == string2ld(raw)

