"""Glob patterns exactly as Redis 7.0's stringmatchlen reads them, for every place a pattern is
matched: KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH, PSUBSCRIBE and PUBLISH, PUBSUB CHANNELS, ACL key and
channel patterns, CONFIG GET, COMMAND LIST FILTERBY PATTERN, FUNCTION LIST LIBRARYNAME.

A pattern is read once with stringmatchlen's rules into a list of tokens - each either a run of
`*` or a set of the bytes one string byte may be - and the tokens become a regular expression,
cached. Every token but `*` matches exactly one byte, so the part between two stars can be
taken at its leftmost occurrence and never reconsidered: that is what Redis's
`skipLongerMatches` cut-off achieves, and here it is an atomic group `(?>.*?part)`. Matching is
then O(len(string) * len(pattern)) at worst, where plain backtracking over `.*` is exponential
(`a*a*...a*b` against a long run of `a`s).

The quirks kept on purpose, all stringmatchlen's:
  - `\\x` is a literal x, also inside brackets; a trailing lone `\\` is a literal backslash;
  - `[^...]` negates; `a-z` ranges may be given backwards (`[z-a]`) and compare signed chars;
    a `-` before the last pattern byte forms a range with it (`[a-]` is a..']');
  - `[]` is an empty class (it matches nothing), and an unclosed `[` takes the rest of the
    pattern as the class;
  - an empty string matches only the empty pattern (stringmatchlen never enters its loop);
  - with nocase (CONFIG GET, COMMAND LIST, FUNCTION LIST) letters compare through tolower, but
    a backslash-escaped byte inside brackets compares exactly, and a range's ends are lowered
    after being put in order (so `[Z-a]` matches nothing);
  - the nesting limit: stringmatchlen recurses once per run of stars and gives up below depth
    1000, so a pattern whose 1001st run of stars is followed by anything matches nothing.
"""
from __future__ import annotations

import re
from typing import Callable

_CACHE_LIMIT = 1024
_cache: dict[tuple[bytes, bool], Callable[[bytes], bool]] = {}

_ANY = (1 << 256) - 1
_UPPER = ((1 << 26) - 1) << 65     # 'A'..'Z' as bits of a byte set
_STAR, _QUESTION, _OPEN, _CLOSE, _BACKSLASH, _CARET, _DASH = b"*?[]\\^-"
# stringmatchlen_impl returns 0 once `nesting > 1000`; nesting counts the runs of stars met.
_MAX_NESTING = 1000


def _signed(byte: int) -> int:
    return byte - 256 if byte > 127 else byte


def _lower(char: int) -> int:
    """C's tolower in the C locale, on a (signed) char value."""
    return char + 32 if 65 <= char <= 90 else char


def _byte(byte: int, nocase: bool) -> int:
    """The bytes equal to `byte` (through tolower when nocase), as a 256-bit set."""
    found = 1 << byte
    if nocase and (65 <= byte <= 90 or 97 <= byte <= 122):
        found |= 1 << (byte ^ 0x20)
    return found


def _range(first: int, last: int, nocase: bool) -> int:
    """The bytes c with start <= c <= end as stringmatchlen compares them: signed chars, the
    ends swapped into order and only then lowered, c lowered too when nocase."""
    start, end = _signed(first), _signed(last)
    if start > end:
        start, end = end, start
    if nocase:
        start, end = _lower(start), _lower(end)
    if start > end:
        return 0
    if start >= 0:
        found = ((1 << (end - start + 1)) - 1) << start
    elif end < 0:
        found = ((1 << (end - start + 1)) - 1) << (start + 256)
    else:
        found = ((1 << (end + 1)) - 1) | (_ANY ^ ((1 << (start + 256)) - 1))
    if nocase:
        # An upper-case letter is in when its lower-case form is; nothing else moves.
        found = (found & ~_UPPER) | (((found >> 97) & ((1 << 26) - 1)) << 65)
    return found


def _tokens(pattern: bytes, nocase: bool) -> list[int | None]:
    """The pattern as stringmatchlen walks it: None for a run of stars, else a byte set."""
    tokens: list[int | None] = []
    n = len(pattern)
    pos = 0
    while pos < n:
        char = pattern[pos]
        if char == _STAR:
            while pos + 1 < n and pattern[pos + 1] == _STAR:
                pos += 1
            tokens.append(None)
        elif char == _QUESTION:
            tokens.append(_ANY)
        elif char == _OPEN:
            pos += 1
            negate = pos < n and pattern[pos] == _CARET
            if negate:
                pos += 1
            found = 0
            while True:
                if pos < n and pattern[pos] == _BACKSLASH and n - pos >= 2:
                    pos += 1
                    found |= 1 << pattern[pos]  # compared exactly, even with nocase
                elif pos < n and pattern[pos] == _CLOSE:
                    break
                elif pos >= n:
                    pos -= 1  # unclosed: the class ends with the pattern
                    break
                elif n - pos >= 3 and pattern[pos + 1] == _DASH:
                    found |= _range(pattern[pos], pattern[pos + 2], nocase)
                    pos += 2
                else:
                    found |= _byte(pattern[pos], nocase)
                pos += 1
            tokens.append(found ^ _ANY if negate else found)
        else:
            if char == _BACKSLASH and n - pos >= 2:
                pos += 1
            tokens.append(_byte(pattern[pos], nocase))
        pos += 1
    return tokens


_fragments: dict[int, bytes] = {_ANY: b".", 0: b"(?!)"}


def _fragment(byte_set: int) -> bytes:
    found = _fragments.get(byte_set)
    if found is None:
        members = [b for b in range(256) if byte_set >> b & 1]
        escaped = b"".join(re.escape(bytes((b,))) for b in members)
        found = escaped if len(members) == 1 else b"[" + escaped + b"]"
        if len(_fragments) < _CACHE_LIMIT:
            _fragments[byte_set] = found
    return found


def _never(subject: bytes) -> bool:
    return False


def _empty(subject: bytes) -> bool:
    return not subject


def _compile(pattern: bytes, nocase: bool) -> Callable[[bytes], bool]:
    tokens = _tokens(pattern, nocase)
    # Split into the parts between runs of stars: parts[0] is anchored at the start, parts[-1]
    # at the end, each one between is searched for at its leftmost place.
    parts: list[list[int]] = [[]]
    for token in tokens:
        if token is None:
            parts.append([])
        else:
            parts[-1].append(token)
    stars = len(parts) - 1
    if stars > _MAX_NESTING + 1 or (stars == _MAX_NESTING + 1 and parts[-1]):
        return _never
    if not pattern:
        return _empty
    regex = [b"".join(_fragment(t) for t in part) for part in parts]
    if stars == 0:
        source = regex[0]
    else:
        middle = b"".join(b"(?>.*?" + part + b")" for part in regex[1:-1])
        source = regex[0] + middle + b".*" + regex[-1]
    fullmatch = re.compile(source, re.DOTALL).fullmatch

    def match(subject: bytes) -> bool:
        return bool(subject) and fullmatch(subject) is not None

    return match


def matcher(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A predicate telling whether a string matches the glob pattern (stringmatchlen)."""
    found = _cache.get((pattern, nocase))
    if found is None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        found = _cache[pattern, nocase] = _compile(pattern, nocase)
    return found


def glob_match(pattern: bytes, subject: bytes, nocase: bool = False) -> bool:
    """Whether subject matches pattern: stringmatchlen(pattern, subject, nocase)."""
    return matcher(pattern, nocase)(subject)


def has_wildcard(pattern: bytes) -> bool:
    """What CONFIG GET takes for a pattern rather than a name: strpbrk(pattern, "[*?") (a
    backslash alone does not make one, and the C string ends at the first NUL)."""
    text = pattern.split(b"\0", 1)[0]
    return b"*" in text or b"?" in text or b"[" in text
