"""INCRBYFLOAT arithmetic exactly as Redis does it: in x87 80-bit `long double`.

Redis parses both operands with strtold, adds them as long doubles and prints the sum with
`%.17Lf`, trailing zeros stripped. A Python float (53-bit) gives different digits (0.1 + 0.2
prints 0.30000000000000004 where Redis prints 0.3) and cannot hold 1e400, which Redis accepts.
So values are kept as exact Fractions on the long double grid that minired/data/strtold.py reads
them onto, and every sum is rounded back onto it.

`fractions` (with `decimal`, ~2 ms) is imported on the first INCRBYFLOAT or HINCRBYFLOAT, so
that loading the command table does not pay for it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minired.data.strtold import NotAFloat, overflows, round_to_grid, strtold

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = ["NotAFloat", "NotFinite", "add", "format_human", "parse"]


class NotFinite(ArithmeticError):
    """The result is infinite or NaN."""


def _exact(sign: int, significand: int, scale: int) -> Fraction:
    from fractions import Fraction

    value = Fraction(significand << scale) if scale >= 0 else Fraction(significand, 1 << -scale)
    return -value if sign < 0 else value


def _round(value: Fraction) -> Fraction:
    """Round an exact value to the nearest long double (ties to even); inf raises NotFinite."""
    if value == 0:
        return value
    magnitude = abs(value)
    significand, scale = round_to_grid(magnitude.numerator, magnitude.denominator)
    if overflows(significand, scale):
        raise NotFinite
    return _exact(-1 if value < 0 else 1, significand, scale)


def parse(raw: bytes) -> Fraction:
    """A long double as Redis's string2ld reads it (strtold.py); inf is NotFinite, anything
    else Redis refuses is NotAFloat."""
    read = strtold(raw)
    if read is None:
        raise NotFinite
    return _exact(*read)


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
