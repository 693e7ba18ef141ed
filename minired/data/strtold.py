"""C's strtold as Redis's string2ld uses it (blocking timeouts, INCRBYFLOAT, HINCRBYFLOAT).

Redis reads these numbers into an x87 80-bit long double: a 64-bit significand and exponents
down to 2**-16445 (subnormals), overflowing past 2**16384. A Python float (53 bits) reads
some texts differently and cannot hold 1e400, which Redis accepts. So the value is emulated
exactly with integers, as (sign, significand, scale) standing for sign * significand *
2**scale, rounded half to even onto the long double grid.

The regexes are compiled on the first number read, not at import: start-up pays for every
regex compiled while the command table loads.
"""
from __future__ import annotations

import functools
import re

SIGNIFICAND_BITS = 64
MIN_SCALE = -16382 - (SIGNIFICAND_BITS - 1)  # subnormals keep this fixed ulp
MAX_BITS = 16384                             # values reach at most 2**16384
MAX_CHARS = 5 * 1024                         # Redis's MAX_LONG_DOUBLE_CHARS


class NotAFloat(ValueError):
    """Not a number Redis reads: not all of the text is one strtold number, or it is NaN,
    has leading space, overflows to HUGE_VAL or underflows to zero."""


@functools.cache
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    infinity = re.compile(rb"[+-]?(?:inf|infinity)", re.IGNORECASE)
    hexadecimal = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?")
    decimal = re.compile(rb"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
    return infinity, hexadecimal, decimal


def round_to_grid(numerator: int, denominator: int) -> tuple[int, int]:
    """numerator/denominator (both > 0) rounded half to even onto the long double grid, as
    (significand, scale)."""
    exponent = numerator.bit_length() - denominator.bit_length()
    if (numerator << max(0, -exponent)) < (denominator << max(0, exponent)):
        exponent -= 1  # now 2**exponent <= value < 2**(exponent+1)
    scale = max(exponent - (SIGNIFICAND_BITS - 1), MIN_SCALE)
    if scale < 0:
        numerator <<= -scale
    else:
        denominator <<= scale
    significand, remainder = divmod(numerator, denominator)
    if 2 * remainder > denominator or (2 * remainder == denominator and significand & 1):
        significand += 1
    return significand, scale


def overflows(significand: int, scale: int) -> bool:
    return significand.bit_length() + scale > MAX_BITS


def strtold(raw: bytes) -> tuple[int, int, int] | None:
    """The long double all of `raw` reads as: (sign, significand, scale), None for infinity.
    NotAFloat for anything Redis refuses."""
    if not raw or len(raw) >= MAX_CHARS:
        raise NotAFloat
    infinity_pattern, hex_pattern, decimal_pattern = _patterns()
    if infinity_pattern.fullmatch(raw):
        return None
    match = hex_pattern.fullmatch(raw)
    hexadecimal = match is not None
    if not hexadecimal:
        match = decimal_pattern.fullmatch(raw)
        if match is None:
            raise NotAFloat
    sign_text, whole, fraction, exponent_text = match.groups()
    whole, fraction = whole or b"", fraction or b""
    if not whole and not fraction:
        raise NotAFloat
    sign = -1 if sign_text == b"-" else 1
    digits = whole + fraction
    significant = digits.lstrip(b"0")
    if not significant:
        return sign, 0, 0
    exponent = int(exponent_text or b"0")
    # Order of magnitude of the value in the exponent's base (2 for hex, 10 for decimal),
    # to refuse absurd exponents before computing with huge integers.
    point = len(significant) - len(fraction)  # digits before the point, negative if after
    magnitude = exponent + (4 * point if hexadecimal else point)
    if magnitude > (16400 if hexadecimal else 4940):
        raise NotAFloat  # strtold overflows to HUGE_VAL
    if magnitude < (-16500 if hexadecimal else -4960):
        raise NotAFloat  # strtold underflows to zero
    mantissa = int(digits, 16 if hexadecimal else 10)
    if hexadecimal:
        power = exponent - 4 * len(fraction)
        numerator, denominator = (mantissa << power, 1) if power >= 0 else (mantissa, 1 << -power)
    else:
        power = exponent - len(fraction)
        numerator, denominator = (mantissa * 10**power, 1) if power >= 0 else (mantissa, 10**-power)
    significand, scale = round_to_grid(numerator, denominator)
    if overflows(significand, scale) or significand == 0:
        raise NotAFloat  # HUGE_VAL, or underflow to zero
    return sign, significand, scale
