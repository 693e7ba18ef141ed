"""Argument parsing shared by all commands, with Redis's exact acceptance rules and errors."""
from __future__ import annotations

import functools
import math
import re

from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import string2ll

_INT64_MAX = 2**63 - 1
_C_INT_MIN, _C_INT_MAX = -(2**31), 2**31 - 1


def parse_int(raw: bytes, error: str = errors.NOT_INTEGER) -> int:
    """A signed 64-bit integer as Redis's string2ll reads it (resp.string2ll: no spaces, no '+',
    no leading zeros), or `error`. Compiled, that is a C call (args.pxd)."""
    value = string2ll(raw)
    if value is None:
        raise RedisError(error)
    return value


def parse_c_int(raw: bytes, error: str | None = None) -> int:
    """getIntFromObjectOrReply: an integer that fits a C int (a database index), or Redis's
    error for a non-integer or one out of the int's range; `error`, where given, replaces both
    (as Redis's msg argument does)."""
    value = parse_int(raw, error or errors.NOT_INTEGER)
    if not _C_INT_MIN <= value <= _C_INT_MAX:
        raise RedisError(error or errors.VALUE_NOT_BETWEEN.format(_C_INT_MIN, _C_INT_MAX))
    return value


def int_text(value: int) -> bytes:
    """An int64's decimal digits, as Redis stores a counter. In the compiled build `number` is
    a C integer (args.pxd), which Cython prints in an f-string itself: cheaper than b"%d"."""
    number = value
    return f"{number}".encode()


def parse_float(raw: bytes, error: str = errors.NOT_FLOAT) -> float:
    """A double as Redis's string2d reads it: strtod syntax (hex and 'inf' included) filling the
    whole string, no leading space, no NaN, and no overflow or underflow to zero."""
    if raw.isdigit() and len(raw) < 300:
        return float(raw)  # the common case, a plain integer (c_strtod's first test, inline)
    if not raw or raw[0] in _C_SPACE:
        raise RedisError(error)
    parsed = c_strtod(raw)
    if parsed is None or parsed[1] or parsed[0] != parsed[0]:
        raise RedisError(error)
    return parsed[0]


def parse_non_negative(raw: bytes, error: str = errors.MUST_BE_POSITIVE) -> int:
    """getPositiveLongFromObjectOrReply: one error for non-integers and negatives alike."""
    value = parse_int(raw, error)
    if value < 0:
        raise RedisError(error)
    return value


def index_range(start: int, end: int, length: int) -> tuple[int, int] | None:
    """Redis's inclusive [start, end] index arguments (negative ones count from the tail) clamped
    to a sequence of `length`, for LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK: the first and last
    index, or None when they select nothing."""
    if start < 0:
        start += length
    if end < 0:
        end += length
    if start < 0:
        start = 0
    if start > end or start >= length:
        return None
    return start, min(end, length - 1)


# C strtod, as Redis's string2d and sorted-set range parsing see it -----------------------------

_C_SPACE = frozenset(b" \t\n\v\f\r")


@functools.cache
def _c_double() -> re.Pattern:
    # Compiled on the first non-integer number rather than at import: start-up pays for
    # every regex compiled while the command table loads.
    return re.compile(
        rb"[+-]?(?:"
        rb"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
        rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
        rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
        rb"|([nN][aA][nN])(?:\([0-9A-Za-z_]*\))?)")


def c_strtod(raw: bytes) -> tuple[float, bool] | None:
    """`(value, out_of_range)` if all of raw is one strtod number (no surrounding space), else
    None. out_of_range is strtod's ERANGE that Redis refuses: overflow to infinity, or a
    non-zero literal that underflows to 0."""
    if raw.isdigit() and len(raw) < 300:
        return float(raw), False  # the common case, a plain integer: nothing to check
    match = _c_double().fullmatch(raw)
    if match is None:
        return None
    if match.group(1):
        return math.nan, False
    text = raw.lstrip(b"+-")
    if text[:2] in (b"0x", b"0X"):
        try:
            value = float.fromhex(raw.decode())
        except OverflowError:
            return (math.inf if raw[:1] != b"-" else -math.inf), True
        mantissa = text[2:].split(b"p")[0].split(b"P")[0]
    else:
        value = float(raw)
        if math.isinf(value):
            return value, text[:1] not in b"iI"
        mantissa = text.split(b"e")[0].split(b"E")[0]
    return value, value == 0.0 and mantissa.strip(b"0.") != b""


def parse_range_double(raw: bytes) -> float | None:
    """A sorted-set range bound after its optional '(' as zslParseRange reads it: plain strtod,
    so leading space is skipped, out-of-range values saturate, and "" is 0. None if invalid."""
    if raw.isdigit() and len(raw) < 300:
        return float(raw)  # (c_strtod's first test, inline)
    if not raw:
        return 0.0
    stripped = raw.lstrip(b" \t\n\v\f\r")
    parsed = c_strtod(stripped) if stripped else None
    if parsed is None or parsed[0] != parsed[0]:
        return None
    return parsed[0]


def parse_random_count(argv, flag: bytes) -> tuple[int, bool]:
    """The count and WITHSCORES/WITHVALUES flag of ZRANDMEMBER and HRANDFIELD."""
    count = parse_int(argv[2])
    if count < -_INT64_MAX:
        raise RedisError(errors.VALUE_NOT_BETWEEN.format(-_INT64_MAX, _INT64_MAX))
    if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != flag):
        raise RedisError(errors.SYNTAX)
    with_values = len(argv) == 4
    if with_values and not -(_INT64_MAX // 2) <= count <= _INT64_MAX // 2:
        raise RedisError(errors.VALUE_OUT_OF_RANGE)
    return count, with_values
