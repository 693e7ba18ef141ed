"""Glob patterns exactly as Redis's stringmatchlen reads them (KEYS, SCAN MATCH, PSUBSCRIBE,
PUBSUB CHANNELS, CONFIG GET, COMMAND LIST FILTERBY PATTERN ...), compiled to regular expressions.

Matching byte by byte in Python would make KEYS and SCAN MATCH slow, so a pattern is parsed
once with stringmatchlen's rules into a regex and cached. The quirks kept on purpose:
  - `\\x` is a literal x, also inside brackets; a trailing lone `\\` is a literal backslash;
  - `[^...]` negates; `a-z` ranges may be given backwards (`[z-a]`) and compare signed chars;
    a `-` before the last pattern byte forms a range with it (`[a-]` is a..']');
  - an unclosed `[` takes the rest of the pattern as the class;
  - an empty string matches only the empty pattern (stringmatchlen never enters its loop).
"""
from __future__ import annotations

import re
from typing import Callable

_CACHE_LIMIT = 1024
_cache: dict[bytes, Callable[[bytes], bool]] = {}


def _signed(byte: int) -> int:
    return byte - 256 if byte > 127 else byte


def _class(pattern: bytes, pos: int) -> tuple[bytes, int]:
    """Parse a bracket class starting after '['; return (regex class, position after it)."""
    n = len(pattern)
    negate = pos < n and pattern[pos] == 0x5E  # '^'
    if negate:
        pos += 1
    members: set[int] = set()
    ranges: list[tuple[int, int]] = []
    while True:
        if pos < n and pattern[pos] == 0x5C and n - pos >= 2:  # '\\' escapes the next byte
            pos += 1
            members.add(pattern[pos])
        elif pos < n and pattern[pos] == 0x5D:  # ']'
            break
        elif pos >= n:
            break  # unclosed: the class ends with the pattern
        elif n - pos >= 3 and pattern[pos + 1] == 0x2D:  # '-'
            start, end = _signed(pattern[pos]), _signed(pattern[pos + 2])
            if start > end:
                start, end = end, start
            ranges.append((start, end))
            pos += 2
        else:
            members.add(pattern[pos])
        pos += 1
    allowed = [b for b in range(256)
               if (b in members or any(lo <= _signed(b) <= hi for lo, hi in ranges)) != negate]
    if not allowed:
        return b"(?!)", pos + 1
    return b"[" + b"".join(re.escape(bytes((b,))) for b in allowed) + b"]", pos + 1


def _compile(pattern: bytes) -> Callable[[bytes], bool]:
    parts: list[bytes] = []
    pos, n = 0, len(pattern)
    while pos < n:
        char = pattern[pos]
        if char == 0x2A:  # '*'
            if not parts or parts[-1] != b".*":
                parts.append(b".*")
            pos += 1
        elif char == 0x3F:  # '?'
            parts.append(b".")
            pos += 1
        elif char == 0x5B:  # '['
            regex_class, pos = _class(pattern, pos + 1)
            parts.append(regex_class)
        else:
            if char == 0x5C and n - pos >= 2:
                pos += 1
                char = pattern[pos]
            parts.append(re.escape(bytes((char,))))
            pos += 1
    fullmatch = re.compile(b"".join(parts), re.DOTALL).fullmatch

    def match(subject: bytes) -> bool:
        if not subject:
            return not pattern
        return fullmatch(subject) is not None

    return match


def matcher(pattern: bytes) -> Callable[[bytes], bool]:
    """A predicate telling whether a string matches the glob pattern."""
    found = _cache.get(pattern)
    if found is None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        found = _cache[pattern] = _compile(pattern)
    return found


_SPECIAL = frozenset(b"*?[\\")


def glob_match(pattern: bytes, subject: bytes, nocase: bool = False) -> bool:
    """Whether subject matches pattern. nocase compares as stringmatchlen(..., nocase=1) does:
    both sides through C's tolower, which lowers ASCII letters only, as bytes.lower() does."""
    if nocase:
        return matcher(pattern.lower())(subject.lower())
    return matcher(pattern)(subject)


def is_literal(pattern: bytes) -> bool:
    """True if the pattern has no special character, so it can only match itself."""
    return not _SPECIAL.intersection(pattern)
