"""SORT and SORT_RO, following sortCommandGeneric in Redis's sort.c.

The elements of a list, set or sorted set are sorted by their own value or by weights fetched
through a BY pattern, numerically or (ALPHA) as strings, and returned or STOREd as a list,
optionally replaced by values fetched through GET patterns.

What decides the order of elements that compare equal is reproduced too, since it shows in
replies: Redis sorts with glibc's qsort, a stable merge sort (Python's sort is stable too),
except for BY with a LIMIT that leaves part of the vector out, which uses pqsort, an unstable
partial quicksort ported below. Strings compared without STORE go through strcoll(), which in
the C and C.UTF-8 locales compares bytes up to the first NUL; with STORE they are compared as
whole binary strings.
"""
from __future__ import annotations

from itertools import islice
from typing import Callable

from minired.commands.sets import in_reply_order
from minired.data.csort import partial_sort
from minired.data.quicklist import QuickList
from minired.data.zset import ZSet
from minired.engine.args import c_strtod, parse_int
from minired.engine.table import COMMANDS, command
from minired.features import acl
from minired.features.notifications import GENERIC, LIST, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError

G = "generic"

_C_SPACE = b" \t\n\v\f\r"
_SMALLEST_NORMAL = 2.2250738585072014e-308


# --- keys ------------------------------------------------------------------------------------

_SKIPPED_ARGUMENTS = {b"limit": 2, b"get": 1, b"by": 1}


def sort_key_positions(argv: list) -> list[int]:
    """sortGetKeys: the sorted key, and the last STORE destination if any. Options are skipped
    with the arguments they take; anything else is read as an option of its own, so a STORE
    destination named like an option is also read as one, as in Redis."""
    positions = [1]
    store = 0
    argc = len(argv)
    i = 2
    while i < argc:
        word = argv[i].lower()
        skip = _SKIPPED_ARGUMENTS.get(word)
        if skip is not None:
            i += skip
        elif word == b"store" and i + 1 < argc:
            store = i + 1
        i += 1
    if store:
        positions.append(store)
    return positions


def sort_ro_key_positions(argv: list) -> list[int]:
    return [1]


# --- patterns and weights --------------------------------------------------------------------

def lookup_by_pattern(db, pattern: bytes, element: bytes) -> bytes | None:
    """lookupKeyByPattern: the value of the key named by pattern with its first '*' replaced by
    element, or of the hash field after '->'; "#" is the element itself.

    Redis looks for '#', '*' and '->' with C string functions, which stop at a NUL byte, but
    builds the key name from the whole pattern."""
    text_end = pattern.find(b"\0")
    if text_end < 0:
        text_end = len(pattern)
    if pattern[:1] == b"#" and text_end == 1:
        return element
    star = pattern.find(b"*", 0, text_end)
    if star < 0:
        return None
    arrow = pattern.find(b"->", star + 1, text_end)
    if arrow >= 0 and arrow + 2 < text_end:
        key = pattern[:star] + element + pattern[star + 1:arrow]
        fields = db.read(key)
        if type(fields) is not dict:
            return None
        return fields.get(pattern[arrow + 2:])
    value = db.read(pattern[:star] + element + pattern[star + 1:])
    return value if type(value) is bytes else None


def _inexact(text: bytes, value: float) -> bool:
    """Whether the number written in text is not exactly the double strtod made of it."""
    # Only a subnormal weight gets here: the exact-arithmetic modules are not loaded before.
    from decimal import Decimal
    from fractions import Fraction

    body = text.lstrip(b"+-").lower()
    if body[:2] == b"0x":
        mantissa, _, exponent = body[2:].partition(b"p")
        whole, _, fraction = mantissa.partition(b".")
        digits = exponent.lstrip(b"+-").lstrip(b"0") or b"0"
        if len(digits) > 18:  # too far from the subnormal range to be read exactly
            return True
        power = -int(digits) if exponent[:1] == b"-" else int(digits)
        exact = Fraction(int(whole + fraction or b"0", 16)) * Fraction(2) ** (
            power - 4 * len(fraction))
        return exact != Fraction(abs(value))
    # Decimal rather than Fraction: it reads any number of digits exactly.
    return Decimal(body.decode()) != Decimal(abs(value))


def sort_score(raw: bytes) -> float | None:
    """A weight as sortCommand reads it with strtod, or None if Redis refuses it.

    strtod reads up to the first NUL and skips leading spaces; Redis then wants nothing left
    over, no NaN, and no ERANGE: an overflow, or an underflow, which glibc reports for a
    result below the normal range that is not exact. An empty string is 0."""
    text = raw.split(b"\0", 1)[0]
    if not text:
        return 0.0
    number = text.lstrip(_C_SPACE)
    parsed = c_strtod(number) if number else None
    if parsed is None:
        return None
    value, out_of_range = parsed
    if out_of_range or value != value:
        return None
    if value and abs(value) < _SMALLEST_NORMAL and _inexact(number, value):
        return None
    return value


def _strcoll_key(text: bytes) -> bytes:
    return text.split(b"\0", 1)[0]


# --- the command -----------------------------------------------------------------------------

class _Options:
    __slots__ = ("desc", "alpha", "dont_sort", "limit_start", "limit_count", "by", "store",
                 "gets")

    def __init__(self) -> None:
        self.desc = self.alpha = self.dont_sort = False
        self.limit_start, self.limit_count = 0, -1
        self.by: bytes | None = None
        self.store: bytes | None = None
        self.gets: list[bytes] = []


def _parse_options(argv: list, read_only: bool, cluster: bool,
                   any_key: Callable[[], bool]) -> _Options:
    """SORT's options; a BY or GET pattern is refused in cluster mode, since the keys it names
    may live on other nodes, and to a user who may not read every key (`any_key`)."""
    options = _Options()
    argc = len(argv)
    j = 2
    while j < argc:
        left = argc - j - 1
        word = argv[j].lower()
        if word == b"asc":
            options.desc = False
        elif word == b"desc":
            options.desc = True
        elif word == b"alpha":
            options.alpha = True
        elif word == b"limit" and left >= 2:
            options.limit_start = parse_int(argv[j + 1])
            options.limit_count = parse_int(argv[j + 2])
            j += 2
        elif word == b"store" and left >= 1 and not read_only:
            options.store = argv[j + 1]
            j += 1
        elif word == b"by" and left >= 1:
            options.by = argv[j + 1]
            # A pattern without '*' names no weights: nothing to sort by. A later BY with a
            # '*' does not undo it.
            if b"*" not in argv[j + 1].split(b"\0", 1)[0]:
                options.dont_sort = True
            elif cluster:
                raise RedisError(errors.SORT_BY_IN_CLUSTER)
            elif not any_key():
                raise RedisError(errors.SORT_BY_ACL)
            j += 1
        elif word == b"get" and left >= 1:
            if cluster:
                raise RedisError(errors.SORT_GET_IN_CLUSTER)
            if not any_key():
                raise RedisError(errors.SORT_GET_ACL)
            options.gets.append(argv[j + 1])
            j += 1
        else:
            raise RedisError(errors.SYNTAX)
        j += 1
    return options


def _load(value, dont_sort: bool, desc: bool, start: int, end: int,
          config) -> tuple[list, int, int]:
    """The elements to sort and the output range within them. Unsorted lists and sorted sets
    keep their order (reversed for DESC) and only the output range is loaded. A set Redis holds
    as an intset comes in ascending order, as Redis iterates it: the order elements that
    compare equal keep, and what a replica of a Redis master stores (SORT is propagated as
    sent)."""
    if type(value) is set:
        return list(in_reply_order(value, config)), start, end
    if not dont_sort:
        return list(value.scores if type(value) is ZSet else value), start, end
    if end < start:
        return [], 0, -1
    size = len(value)
    if type(value) is ZSet:
        if desc:
            entries = value.entries(size - 1 - end, size - start, reverse=True)
        else:
            entries = value.entries(start, end + 1)
        return [member for _, member in entries], 0, end - start
    ordered = reversed(value) if desc else value
    return list(islice(ordered, start, end + 1)), 0, end - start


def _sort_keys(c, elements: list, options: _Options) -> list:
    """Each element's sort key (sortCompare's order, ascending)."""
    db = c.db
    by = options.by
    keys = []
    bad_score = False
    binary = options.store is not None
    for element in elements:
        weight = element
        if by is not None:
            weight = lookup_by_pattern(db, by, element)
        if options.alpha:
            if by is None:
                keys.append(element if binary else _strcoll_key(element))
            elif weight is None:
                keys.append((False, b""))  # a missing weight sorts first
            else:
                keys.append((True, weight if binary else _strcoll_key(weight)))
            continue
        score = 0.0
        if weight is not None:
            parsed = sort_score(weight)
            if parsed is None:
                bad_score = True
            else:
                score = parsed
        # Equal scores are ordered by the elements themselves, as binary strings.
        keys.append((score, element))
    if bad_score:
        raise RedisError(errors.SORT_SCORE_NOT_DOUBLE)
    return keys


def _sorted(c, elements: list, options: _Options, start: int, end: int) -> list:
    keys = _sort_keys(c, elements, options)
    desc = options.desc
    partial = start != 0 or end != len(elements) - 1
    if options.by is not None and options.alpha and partial and len(set(keys)) < len(keys):
        # Only ALPHA with BY has ties between different elements; without ties any correct
        # sort gives pqsort's answer, and faster.
        sign = -1 if desc else 1

        def compare(a: tuple, b: tuple) -> int:
            return sign * ((a[0] > b[0]) - (a[0] < b[0]))

        pairs = list(zip(keys, elements))
        partial_sort(pairs, compare, start, end)
        return [element for _, element in pairs]
    order = sorted(range(len(elements)), key=keys.__getitem__, reverse=desc)
    return [elements[index] for index in order]


def _reads_any_key(c, argv: list) -> bool:
    """Whether the client's user may read every key with this SORT (an unrestricted user
    always may)."""
    if not c.user_restricted or c.server.access is None:
        return True
    user = c.server.access.user_of(c)
    return user.unrestricted_key_access(COMMANDS[argv[0].lower()], argv, acl.READ)


def _sort(c, argv: list, read_only: bool):
    options = _parse_options(argv, read_only, c.server.cluster is not None,
                             lambda: _reads_any_key(c, argv))
    db = c.db
    value = db.read(argv[1])
    if value is None:
        value = ()
    elif type(value) not in (QuickList, set, ZSet):
        raise RedisError(errors.WRONGTYPE)
    if options.dont_sort and type(value) is set and (options.store is not None
                                                    or c.in_script):
        # A set's own order is not the same on replicas or in replayed scripts.
        options.dont_sort = False
        options.alpha = True
        options.by = None
    if type(value) is ZSet:
        # Redis converts a sorted set to a skiplist to sort it, SORT_RO and a failing SORT
        # too, and never back (sortCommandGeneric's zsetConvert): OBJECT ENCODING, the ZSCAN
        # paging and DUMP's format show it afterwards.
        value.skiplist = True
    size = len(value)
    start = min(max(options.limit_start, 0), size)
    count = min(max(options.limit_count, -1), size)
    end = size - 1 if count < 0 else start + count - 1
    if start >= size:
        start, end = size - 1, size - 2
    end = min(end, size - 1)
    elements, start, end = _load(value, options.dont_sort, options.desc, start, end, c.config)
    if not options.dont_sort:
        elements = _sorted(c, elements, options, start, end)
    chosen = elements[start:end + 1] if end >= start else []
    if options.gets:
        results = [lookup_by_pattern(db, pattern, element)
                   for element in chosen for pattern in options.gets]
    else:
        results = chosen
    if options.store is None:
        c.changes = 0  # (SORT is a write command only for its STORE)
        return results
    if results:
        db.set(options.store, QuickList(b"" if item is None else item for item in results))
        if db.notifier is not None:
            notify(db, LIST, b"sortstore", options.store)
        c.changes = len(results)  # one per element stored
    elif db.delete_without_lookup(options.store):
        if db.notifier is not None:
            notify(db, GENERIC, b"del", options.store)
    else:
        c.changes = 0
    return len(results)


@command("sort", arity=-2, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=sort_key_positions)
def sort(c, argv):
    return _sort(c, argv, read_only=False)


@command("sort_ro", arity=-2, flags="readonly", keys=(1, 1, 1), group=G,
         key_finder=sort_ro_key_positions)
def sort_ro(c, argv):
    return _sort(c, argv, read_only=True)
