"""Glob-style matching exactly as Redis's stringmatchlen (util.c): KEYS, SCAN MATCH, PSUBSCRIBE, ...

Redis's matcher has quirks a regex translation would lose: an unclosed `[` matches the
characters listed so far, `[z-a]` is the range `a-z`, a trailing `\\` matches itself, and `-`
right after `[` or before `]` is literal. So this is a straight port over bytes, with a fast
path for patterns that hold no special character at all.
"""
from __future__ import annotations

_SPECIAL = frozenset(b"*?[\\")


def _lower(ch: int) -> int:
    return ch + 32 if 65 <= ch <= 90 else ch


def _match(pattern: bytes, p: int, string: bytes, s: int, nocase: bool, state: list) -> bool:
    plen = len(pattern)
    slen = len(string)

    def pat(i: int) -> int:
        # Redis reads past the pattern's length into the string's NUL terminator.
        return pattern[i] if i < plen else 0

    while p < plen and s < slen:
        ch = pattern[p]
        if ch == 42:  # '*'
            while p + 1 < plen and pattern[p + 1] == 42:
                p += 1
            if p + 1 == plen:
                return True
            while s < slen:
                if _match(pattern, p + 1, string, s, nocase, state):
                    return True
                if state[0]:
                    return False
                s += 1
            # The rest of the pattern matches nowhere in the rest of the string, so giving an
            # earlier '*' a longer match cannot help either (Redis's skipLongerMatches).
            state[0] = True
            return False
        if ch == 63:  # '?'
            s += 1
        elif ch == 91:  # '['
            p += 1
            negate = pat(p) == 94  # '^'
            if negate:
                p += 1
            matched = False
            target = string[s]
            while True:
                here = pat(p)
                if here == 92 and plen - p >= 2:  # '\\' escapes the next character
                    p += 1
                    if pattern[p] == target:
                        matched = True
                elif here == 93:  # ']'
                    break
                elif p >= plen:
                    p -= 1
                    break
                elif plen - p >= 3 and pattern[p + 1] == 45:  # a range 'x-y'
                    start, end, c = here, pattern[p + 2], target
                    if start > end:
                        start, end = end, start
                    if nocase:
                        start, end, c = _lower(start), _lower(end), _lower(c)
                    p += 2
                    if start <= c <= end:
                        matched = True
                elif here == target or (nocase and _lower(here) == _lower(target)):
                    matched = True
                p += 1
            if negate:
                matched = not matched
            if not matched:
                return False
            s += 1
        else:
            if ch == 92 and plen - p >= 2:  # '\\' makes the next character literal
                p += 1
                ch = pattern[p]
            target = string[s]
            if ch != target and not (nocase and _lower(ch) == _lower(target)):
                return False
            s += 1
        p += 1
        if s == slen:
            while p < plen and pattern[p] == 42:
                p += 1
            break
    return p >= plen and s == slen


def glob_match(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """True if `string` matches the Redis glob `pattern`."""
    if not _SPECIAL.intersection(pattern):
        if nocase:
            return pattern.lower() == string.lower()
        return pattern == string
    return _match(pattern, 0, string, 0, nocase, [False])


def is_literal(pattern: bytes) -> bool:
    """True if the pattern holds no glob character, so it matches only itself."""
    return not _SPECIAL.intersection(pattern)
