"""The one set of checks for what the library writes and reads back.

Every number the library stores (a job's options, a repeatable's, a queue's settings, a
worker's) is checked here before it is written: an integer (``bool`` is not one here,
nor a float with an integral value) within its range. A value that passed would be
stored as text every reader parses as a decimal integer, so a ``0.5`` slipping through
would make the job unreadable for every worker. Payloads, results and progress are
JSON as PROTOCOL.md promises: ``NaN`` and objects ``json`` cannot encode are refused,
never turned into their ``str()``.

Reading goes through the same rules (``stored_integer``, ``from_json``), so a record
written by hand or by another client fails with a reason naming the field.
"""
from __future__ import annotations

import json
import re
from typing import Any

_DECIMAL = re.compile(r"-?[0-9]+")


def integer(name: str, value: Any, low: int = 0, high: int | None = None) -> int:
    """``value`` if it is an int within [low, high]; a ValueError naming ``name`` otherwise."""
    if (isinstance(value, bool) or not isinstance(value, int)
            or value < low or (high is not None and value > high)):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bounds}, got {value!r}")
    return value


# The longest duration (ms) an option may give: server now + it stays an exact integer in
# Lua's doubles and in every sorted-set score (about 139 years).
MAX_DURATION_MS = 2**42


def duration_ms(name: str, value: Any, low: int = 0) -> int:
    """A duration in ms: an int from ``low`` to MAX_DURATION_MS (not a bool, not 1.5)."""
    return integer(name, value, low, MAX_DURATION_MS)


# The longest duration (s) an option in seconds may give, by the same bound.
MAX_DURATION_S = MAX_DURATION_MS / 1000


def seconds(name: str, value: Any, *, zero: bool = False, high: float = MAX_DURATION_S) -> float:
    """A duration in seconds: an int or float (not a bool), above 0 (from 0 with ``zero``),
    at most ``high``. NaN and infinities fail the range test, so a worker can never be set
    to heartbeat in a tight loop or to block on a timeout the server refuses."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not (0 <= value <= high) or (value == 0 and not zero)):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{name} must be a number of seconds {bound} and at most {high:g}, "
                         f"got {value!r}")
    return value


def boolean(name: str, value: Any) -> bool:
    """``value`` if it is True or False (a setting given as "no" would read as true)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def optional_integer(name: str, value: Any, low: int = 0, high: int | None = None) -> int | None:
    return None if value is None else integer(name, value, low, high)


def to_json(name: str, value: Any) -> str:
    """The JSON text of ``value``; a ValueError naming ``name`` when it has none."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{name} is not JSON: {exc}") from None


def _no_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def from_json(raw: str) -> Any:
    """Parse stored JSON, refusing Python's extensions (NaN, Infinity) as ``to_json`` does."""
    return json.loads(raw, parse_constant=_no_constant)


def stored_integer(raw: str) -> int:
    """A decimal integer as the protocol stores numbers ('12', '-1'); ValueError otherwise
    (where ``int()`` would also take ' 12', '1_2' or '١٢')."""
    if not _DECIMAL.fullmatch(raw):
        raise ValueError(f"not an integer: {raw!r}")
    return int(raw)


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of the ``allowed`` strings; a ValueError naming ``name`` otherwise."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def group_name(value: Any) -> str:
    """A job group's name: any non-empty text without NUL ('\\0' separates a group's name
    from the rest of its members in the group keys); braces and colons are fine, since a
    group never becomes part of a key name."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError(f"group must be a non-empty string without NUL, got {value!r}")
    return value
