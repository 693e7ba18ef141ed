"""Argument parsing shared by all commands, with Redis's exact acceptance rules and errors."""
from __future__ import annotations

import math

from .. import errors
from ..errors import RedisError

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def parse_int(raw: bytes, error: str = errors.NOT_INTEGER) -> int:
    """A signed 64-bit integer as Redis's string2ll reads it: no spaces, no '+', no leading zeros."""
    try:
        value = int(raw)
    except ValueError:
        raise RedisError(error) from None
    # The canonical spelling must round-trip: rejects "01", "+1", " 1", "1_0", "-0".
    if b"%d" % value != raw or not _INT64_MIN <= value <= _INT64_MAX:
        raise RedisError(error)
    return value


def parse_float(raw: bytes, error: str = errors.NOT_FLOAT) -> float:
    """A double as Redis's string2d reads it: no surrounding spaces, no NaN; 'inf' allowed."""
    if not raw or raw[:1].isspace() or raw[-1:].isspace() or b"_" in raw:
        raise RedisError(error)
    try:
        value = float(raw)
    except ValueError:
        raise RedisError(error) from None
    if math.isnan(value):
        raise RedisError(error)
    return value


def parse_non_negative(raw: bytes, error: str = errors.MUST_BE_POSITIVE) -> int:
    value = parse_int(raw)
    if value < 0:
        raise RedisError(error)
    return value
