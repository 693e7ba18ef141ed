"""Glob patterns exactly as Redis 7.0's stringmatchlen reads them, for every place a pattern is
matched: KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH, PSUBSCRIBE and PUBLISH, PUBSUB CHANNELS, ACL key and
channel patterns, CONFIG GET, COMMAND LIST FILTERBY PATTERN, FUNCTION LIST LIBRARYNAME.

A pattern is read once with stringmatchlen's rules and cached: the parts between runs of stars,
each a fixed-width sequence of literal runs and byte classes. Every token but `*` matches
exactly one byte, so a part between two stars can be taken at its leftmost occurrence and never
reconsidered: that is what Redis's `skipLongerMatches` cut-off achieves, and it makes a match
O(len(string) * len(pattern)) at worst, where backtracking over the stars is exponential
(`a*a*...a*b` against a long run of `a`s). Literal runs are compared and searched with bytes
methods, so a long pattern costs nothing to prepare (a regular expression of a megabyte of
pattern took seconds to compile) and a key too short for the pattern is refused at once.

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
# Patterns up to this long are also compiled to a regular expression, which matches at C speed;
# a longer one would take long to compile (seconds for a megabyte), so it is matched part by part.
_REGEX_UP_TO = 256


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


_SPECIAL = re.compile(rb"[*?\[\\]")


def _tokens(pattern: bytes) -> list:
    """The pattern as stringmatchlen walks it: None for a run of stars, bytes for literal
    bytes, (bracket text) tuples for a class, _ANY for '?'. Literal stretches are sliced whole."""
    tokens: list = []
    n = len(pattern)
    pos = 0
    while pos < n:
        special = _SPECIAL.search(pattern, pos)
        stop = special.start() if special is not None else n
        if stop > pos:
            tokens.append(pattern[pos:stop])
            pos = stop
            continue
        char = pattern[pos]
        if char == _STAR:
            while pos + 1 < n and pattern[pos + 1] == _STAR:
                pos += 1
            tokens.append(None)
        elif char == _QUESTION:
            tokens.append(_ANY)
        elif char == _OPEN:
            start = pos
            pos += 1
            if pos < n and pattern[pos] == _CARET:
                pos += 1
            while True:
                if pos < n and pattern[pos] == _BACKSLASH and n - pos >= 2:
                    pos += 1
                elif pos < n and pattern[pos] == _CLOSE:
                    break
                elif pos >= n:
                    pos -= 1  # unclosed: the class ends with the pattern
                    break
                elif n - pos >= 3 and pattern[pos + 1] == _DASH:
                    pos += 2
                pos += 1
            tokens.append((pattern[start + 1:pos + 1],))
        else:  # a backslash: the next byte is literal; a trailing one is itself
            if n - pos >= 2:
                pos += 1
            tokens.append(pattern[pos:pos + 1])
        pos += 1
    return tokens


def _class(body: bytes, nocase: bool) -> int:
    """The byte set of a bracket class, from the bytes after '[' (up to and with its ']')."""
    n = len(body)
    pos = 0
    negate = pos < n and body[pos] == _CARET
    if negate:
        pos += 1
    found = 0
    while pos < n and body[pos] != _CLOSE:
        if body[pos] == _BACKSLASH and n - pos >= 2:
            pos += 1
            found |= 1 << body[pos]  # compared exactly, even with nocase
        elif n - pos >= 3 and body[pos + 1] == _DASH:
            found |= _range(body[pos], body[pos + 2], nocase)
            pos += 2
        else:
            found |= _byte(body[pos], nocase)
        pos += 1
    return found ^ _ANY if negate else found


class _Part:
    """A fixed-width run of tokens between two runs of stars: literal runs at their offsets
    (lowered when nocase; compared with the lowered string) and byte classes as 256-byte
    tables."""

    __slots__ = ("width", "literals", "classes")

    def __init__(self, tokens: list, nocase: bool) -> None:
        literals: list[tuple[int, bytes]] = []
        classes: list[tuple[int, bytes]] = []
        offset = 0
        for token in tokens:
            if type(token) is bytes:
                if literals and literals[-1][0] + len(literals[-1][1]) == offset:
                    literals[-1] = (literals[-1][0], literals[-1][1] + token)
                else:
                    literals.append((offset, token))
                offset += len(token)
                continue
            byte_set = _class(token[0], nocase) if type(token) is tuple else token
            if byte_set != _ANY:
                classes.append((offset, _table(byte_set)))
            offset += 1
        self.width = offset
        self.literals = [(at, text.lower() if nocase else text) for at, text in literals]
        self.classes = classes

    def plain(self) -> bytes | None:
        """The part's text if it is nothing but literal bytes, else None."""
        if self.classes or len(self.literals) > 1:
            return None
        text = self.literals[0][1] if self.literals else b""
        return text if len(text) == self.width else None

    def at(self, subject: bytes, folded: bytes, pos: int) -> bool:
        for offset, text in self.literals:
            if not folded.startswith(text, pos + offset):
                return False
        for offset, table in self.classes:
            if not table[subject[pos + offset]]:
                return False
        return True

    def find(self, subject: bytes, folded: bytes, start: int) -> int:
        """The leftmost place from `start` where the part matches, or -1."""
        last = len(subject) - self.width
        if self.literals:
            offset, text = self.literals[0]
            found = folded.find(text, start + offset)
            while found >= 0 and found - offset <= last:
                if self.at(subject, folded, found - offset):
                    return found - offset
                found = folded.find(text, found + 1)
            return -1
        for pos in range(start, last + 1):
            if self.at(subject, folded, pos):
                return pos
        return -1


_tables: dict[int, bytes] = {}


def _table(byte_set: int) -> bytes:
    found = _tables.get(byte_set)
    if found is None:
        found = bytes((byte_set >> b) & 1 for b in range(256))
        if len(_tables) < _CACHE_LIMIT:
            _tables[byte_set] = found
    return found


def _never(subject: bytes) -> bool:
    return False


def _empty(subject: bytes) -> bool:
    return not subject


def _compile(pattern: bytes, nocase: bool) -> Callable[[bytes], bool]:
    if not pattern:
        return _empty
    split: list[list] = [[]]
    for token in _tokens(pattern):
        if token is None:
            split.append([])
        else:
            split[-1].append(token)
    stars = len(split) - 1
    if stars > _MAX_NESTING + 1 or (stars == _MAX_NESTING + 1 and split[-1]):
        return _never
    parts = [_Part(tokens, nocase) for tokens in split]
    first, last, middle = parts[0], parts[-1], parts[1:-1]
    width = sum(part.width for part in parts)
    if stars == 0 and first.plain() is not None:
        literal = first.plain()
        if nocase:
            return lambda subject: subject.lower() == literal
        return lambda subject: subject == literal
    if stars == 1 and not nocase and first.plain() is not None and last.plain() is not None:
        prefix, suffix = first.plain(), last.plain()
        # `prefix*suffix`: the commonest shape (KEYS user:*), with bytes methods only.
        return lambda subject: (len(subject) >= width and subject != b""
                                and subject.startswith(prefix) and subject.endswith(suffix))

    if not nocase and len(pattern) <= _REGEX_UP_TO:
        return _regex(parts, first, last, middle)

    def match(subject: bytes) -> bool:
        size = len(subject)
        if size < width or not subject or (stars == 0 and size != width):
            return False
        folded = subject.lower() if nocase else subject
        if not first.at(subject, folded, 0):
            return False
        if stars == 0:
            return True
        pos = first.width
        for part in middle:
            pos = part.find(subject, folded, pos)
            if pos < 0:
                return False
            pos += part.width
        return size - last.width >= pos and last.at(subject, folded, size - last.width)

    return match


def _part_regex(part: _Part) -> bytes:
    pieces = [(at, len(text), re.escape(text)) for at, text in part.literals]
    pieces += [(at, 1, _fragment(table)) for at, table in part.classes]
    pieces.sort()
    source = []
    pos = 0
    for at, width, piece in pieces:
        source.append(b"." * (at - pos))  # the '?'s between
        source.append(piece)
        pos = at + width
    source.append(b"." * (part.width - pos))
    return b"".join(source)


def _fragment(table: bytes) -> bytes:
    members = [b for b in range(256) if table[b]]
    if not members:
        return b"(?!)"
    return b"[" + b"".join(re.escape(bytes((b,))) for b in members) + b"]"


def _regex(parts: list, first: _Part, last: _Part, middle: list) -> Callable[[bytes], bool]:
    """The same match as one regular expression, for short patterns: C speed per string. Each
    part between two stars is an atomic group `(?>.*?part)`: found at its leftmost place and
    never tried again, the skipLongerMatches cut-off."""
    if len(parts) == 1:
        source = _part_regex(first)
    else:
        source = (_part_regex(first) + b"".join(b"(?>.*?" + _part_regex(part) + b")"
                                                for part in middle)
                  + b".*" + _part_regex(last))
    fullmatch = re.compile(source, re.DOTALL).fullmatch

    def match(subject: bytes) -> bool:
        return subject != b"" and fullmatch(subject) is not None

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
