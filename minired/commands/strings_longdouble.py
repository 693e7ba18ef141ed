"""INCRBYFLOAT arithmetic exactly as Redis does it: in x87 80-bit `long double`.

Redis parses both operands with strtold, adds them as long doubles and prints the sum with
`%.17Lf`, trailing zeros stripped. A Python float (53-bit) gives different digits (0.1 + 0.2
prints 0.30000000000000004 where Redis prints 0.3) and cannot hold 1e400, which Redis accepts.
So values are kept as exact Fractions rounded to the long double grid: a 64-bit significand,
exponents down to 2**-16445 (subnormals), overflow past 2**16384.

`fractions` (with `decimal`, ~2 ms) is imported, and the regexes compiled, on the first
INCRBYFLOAT or HINCRBYFLOAT, so that loading the command table does not pay for them.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction

_PRECISION = 64
_MIN_EXPONENT = -16382          # of the leading bit of a normal long double
_OVERFLOW = 2 ** 16384          # an int: Fractions compare with it exactly
_MAX_CHARS = 5 * 1024           # MAX_LONG_DOUBLE_CHARS: strtold input longer than this is refused


@functools.cache
def _strtold_patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """What strtold accepts once leading whitespace is ruled out (Redis refuses it)."""
    infinity = re.compile(rb"[+-]?(?:inf|infinity)", re.IGNORECASE)
    hexadecimal = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?")
    decimal = re.compile(rb"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
    return infinity, hexadecimal, decimal


class NotAFloat(ValueError):
    """The text is not a number strtold reads completely (or it is NaN, or out of range)."""


class NotFinite(ArithmeticError):
    """The result is infinite or NaN."""


def _round(value: Fraction) -> Fraction:
    """Round an exact value to the nearest long double (ties to even); inf raises NotFinite."""
    from fractions import Fraction

    if value == 0:
        return value
    sign = -1 if value < 0 else 1
    magnitude = abs(value)
    num, den = magnitude.numerator, magnitude.denominator
    exponent = num.bit_length() - den.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    exponent = max(exponent, _MIN_EXPONENT)
    shift = _PRECISION - 1 - exponent
    scaled = magnitude * (Fraction(2) ** shift)
    significand = round(scaled)  # Fraction.__round__ rounds half to even
    result = Fraction(significand) / (Fraction(2) ** shift)
    if result >= _OVERFLOW:
        raise NotFinite
    return sign * result


def parse(raw: bytes) -> Fraction:
    """A long double as Redis's string2ld reads it; inf is NotFinite, anything else invalid
    (NaN, spaces, trailing text, underflow to zero, overflow) is NotAFloat."""
    from fractions import Fraction

    if not raw or len(raw) >= _MAX_CHARS or raw[:1].isspace():
        raise NotAFloat
    infinity_pattern, hex_pattern, decimal_pattern = _strtold_patterns()
    if infinity_pattern.fullmatch(raw):
        raise NotFinite
    match = hex_pattern.fullmatch(raw)
    if match and (match.group(2) or match.group(3)):
        sign, whole, frac, exp = match.groups()
        frac = frac or b""
        digits = int((whole + frac) or b"0", 16)
        exponent = int(exp or 0) - 4 * len(frac)
        # Past these bounds the value is certainly zero or infinite as a long double.
        if digits and not -16600 < digits.bit_length() + exponent < 16600:
            raise NotAFloat
        value = Fraction(digits) * Fraction(2) ** exponent
    else:
        match = decimal_pattern.fullmatch(raw)
        if not match or not (match.group(2) or match.group(3)):
            raise NotAFloat
        sign, whole, frac, exp = match.groups()
        frac = frac or b""
        exponent = int(exp or 0) - len(frac)
        digits = int((whole + frac) or b"0")
        # Past these bounds the value is certainly zero or infinite as a long double (and the
        # exact Fraction would be needlessly huge).
        if digits and not -5000 < exponent + len(whole + frac) < 5000:
            raise NotAFloat
        value = Fraction(digits) * Fraction(10) ** exponent
    if sign == b"-":
        value = -value
    try:
        rounded = _round(value)
    except NotFinite:
        raise NotAFloat from None  # strtold's ERANGE overflow
    if rounded == 0 and value != 0:
        raise NotAFloat  # ERANGE underflow to zero
    return rounded


def add(a: Fraction, b: Fraction) -> Fraction:
    return _round(a + b)


def format_human(value: Fraction) -> bytes:
    """`%.17Lf` with trailing zeros (and a bare '.') removed, and "-0" printed as "0"."""
    scaled = abs(value) * 10**17
    digits = round(scaled)  # glibc prints the exact binary value rounded half to even
    whole, frac = divmod(digits, 10**17)
    text = b"%d.%017d" % (whole, frac)
    text = text.rstrip(b"0").rstrip(b".")
    if value < 0 and text != b"0":
        text = b"-" + text
    return text
