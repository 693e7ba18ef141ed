"""The sorted set value: a dict member -> score for lookups, and a sorted sequence of
(score, member) for order, as Redis pairs a dict with a skiplist.

Both structures hold every element, so ZSCORE is one dict lookup, ZADD/ZREM/ZPOPMIN are
O(log n), and rank or score ranges are a bisect. Ranges are returned as (start, stop) rank
spans so commands can slice, count or delete without building intermediate lists.

The order of a set of up to SMALL_ORDER_LIMIT elements is a SmallOrder, a plain list kept
sorted with the C bisect functions; a bigger one is a SortedList. Below about a thousand
elements a SortedList is one such list under layers of Python code (a job queue's sets: 2-3x
the cost per ZADD or ZREMRANGEBYRANK), and above it, a list's inserts and deletes move too much.
"""
from __future__ import annotations

import marshal
import math
from bisect import bisect_left, bisect_right, insort
from itertools import islice
from typing import Any, Iterable, Iterator

from sortedcontainers import SortedList

from minired.data.keyspace import register_type
from minired.data.packed import Packed, dumps, register_packing, shared, small

_INF = math.inf


class ScoreRange:
    """A parsed ZRANGEBYSCORE-style interval: `min`/`max` with exclusive flags."""

    __slots__ = ("min", "max", "min_exclusive", "max_exclusive")

    def __init__(self, low: float, high: float, low_exclusive: bool, high_exclusive: bool) -> None:
        self.min = low
        self.max = high
        self.min_exclusive = low_exclusive
        self.max_exclusive = high_exclusive

    def is_empty(self) -> bool:
        return self.min > self.max or (self.min == self.max and
                                       (self.min_exclusive or self.max_exclusive))


class LexRange:
    """A parsed ZRANGEBYLEX-style interval. `None` bounds stand for `-` (no lower bound) and
    `+` (no upper bound); the exclusive flags mark `(` bounds. `empty` is set for intervals
    Redis rules out up front (min above max, `+` as the minimum, `-` as the maximum)."""

    __slots__ = ("min", "max", "min_exclusive", "max_exclusive", "empty")

    def __init__(self, low: bytes | None, high: bytes | None, low_exclusive: bool,
                 high_exclusive: bool, empty: bool) -> None:
        self.min = low
        self.max = high
        self.min_exclusive = low_exclusive
        self.max_exclusive = high_exclusive
        self.empty = empty

    def above_min(self, member: bytes) -> bool:
        low = self.min
        if low is None:
            return True
        return member > low if self.min_exclusive else member >= low

    def below_max(self, member: bytes) -> bool:
        high = self.max
        if high is None:
            return True
        return member < high if self.max_exclusive else member <= high


def _after(score: float) -> tuple:
    """A probe that sorts after every entry with this score (and before any larger score)."""
    return (math.nextafter(score, _INF),) if score != _INF else (_INF, _MAX_MEMBER)


class _MaxMember:
    """Compares greater than any bytes member, to bisect past all entries of one score."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


_MAX_MEMBER = _MaxMember()


# The most elements a SmallOrder holds (SortedList splits its own lists at twice its load
# factor of 1000; up to here a list's memmove costs less than a SortedList's Python layers).
SMALL_ORDER_LIMIT = 1024


class SmallOrder(list):
    """A small sorted set's order: a sorted list of (score, member) with the SortedList methods
    its readers use (ZSet changes it with the bisect functions themselves)."""

    __slots__ = ()

    def bisect_left(self, probe: tuple) -> int:
        return bisect_left(self, probe)

    def bisect_right(self, probe: tuple) -> int:
        return bisect_right(self, probe)

    def islice(self, start: int | None = None, stop: int | None = None) -> Iterator[tuple]:
        return islice(self, start, stop)


def _order(entries: list) -> Any:
    """The order for these (score, member) entries, already sorted (taken, not copied)."""
    if len(entries) <= SMALL_ORDER_LIMIT:
        return SmallOrder(entries)
    return SortedList(entries)


class ZSet:
    __slots__ = ("scores", "order", "skiplist")

    def __init__(self, items: Iterable[tuple[float, bytes]] = ()) -> None:
        self.scores: dict[bytes, float] = {}
        self.order = SmallOrder()
        # Set once Redis would hold this set as a skiplist whatever it comes to hold: it never
        # converts a sorted set back to a listpack (commands/zsets.py marks it as it shrinks;
        # OBJECT ENCODING, the SCAN paging and DUMP's format read it).
        self.skiplist = False
        for score, member in items:
            self.add(member, score)

    def __len__(self) -> int:
        return len(self.scores)

    def __bool__(self) -> bool:
        return bool(self.scores)

    def __contains__(self, member: bytes) -> bool:
        return member in self.scores

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        """(score, member) in rank order."""
        return iter(self.order)

    def __repr__(self) -> str:
        return f"ZSet({list(self.order)!r})"

    @classmethod
    def from_scores(cls, scores: dict[bytes, float]) -> "ZSet":
        """The sorted set of these members and scores (taken, not copied), its order made in
        one sort: adding members one at a time would insort each (a load, a copy)."""
        zset = cls.__new__(cls)
        zset.scores = scores
        zset.order = _order(sorted([(score, member) for member, score in scores.items()]))
        zset.skiplist = False
        return zset

    def copy(self) -> "ZSet":
        clone = ZSet.__new__(ZSet)
        clone.scores = dict(self.scores)
        clone.order = _order(list(self.order))
        clone.skiplist = self.skiplist  # (zsetDup copies a skiplist as a skiplist)
        return clone

    def __deepcopy__(self, memo: dict) -> "ZSet":
        # Members and scores are immutable, so COPY needs no deeper copy than this.
        return self.copy()

    def fits_listpack(self, max_entries: int, max_value: int, members=None) -> bool:
        """Whether Redis holds this set as a listpack under zset-max-listpack-entries and
        -value: not marked a skiplist, at most max_entries members, and none of `members` that
        are in it (all of them, if None) longer than max_value bytes. The one statement of the
        rule: OBJECT ENCODING, DUMP's format and the mark set as a set shrinks all ask here."""
        scores = self.scores
        if self.skiplist or len(scores) > max_entries:
            return False
        for member in scores if members is None else members:
            if len(member) > max_value and member in scores:
                return False
        return True

    # --- changes -------------------------------------------------------------------------------

    def add(self, member: bytes, score: float) -> bool:
        """Set member's score; True if the member is new.

        -0.0 is stored as 0.0: Redis keeps small sorted sets as listpacks, which read a
        negative zero back as 0, so that is what ZSCORE shows for every set a client builds.
        """
        score += 0.0
        # One float object for the dict and the order (compiled, score is a C double, and each
        # use of it would box a float of its own: 24 bytes a member more).
        value = score
        scores = self.scores
        order = self.order
        old = scores.get(member)
        if old is not None:
            if old == score:
                return False
            if type(order) is SmallOrder:
                del order[bisect_left(order, (old, member))]
                insort(order, (value, member))
            else:
                order.remove((old, member))
                order.add((value, member))
            scores[member] = value
            return False
        scores[member] = value
        if type(order) is SmallOrder:
            insort(order, (value, member))
            if len(order) > SMALL_ORDER_LIMIT:
                self.order = SortedList(order)
        else:
            order.add((value, member))
        return True

    def remove(self, member: bytes) -> bool:
        score = self.scores.pop(member, None)
        if score is None:
            return False
        order = self.order
        if type(order) is SmallOrder:
            del order[bisect_left(order, (score, member))]
        else:
            order.remove((score, member))
        return True

    def delete_span(self, start: int, stop: int) -> int:
        """Remove the elements ranked start..stop-1; returns how many went."""
        if start >= stop:
            return 0
        scores = self.scores
        order = self.order
        for _, member in (order[start:stop] if type(order) is SmallOrder
                          else order.islice(start, stop)):
            del scores[member]
        del order[start:stop]
        return stop - start

    def pop(self, count: int, highest: bool) -> list[tuple[bytes, float]]:
        """Remove and return up to `count` (member, score) pairs from the low or high end."""
        order = self.order
        count = min(count, len(order))
        if highest:
            taken = order[len(order) - count:]
            taken.reverse()
            del order[len(order) - count:]
        else:
            taken = order[:count]
            del order[:count]
        scores = self.scores
        for _, member in taken:
            del scores[member]
        return [(member, score) for score, member in taken]

    # --- queries -------------------------------------------------------------------------------

    def rank(self, member: bytes) -> int | None:
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.bisect_left((score, member))

    def entries(self, start: int, stop: int, reverse: bool = False) -> list[tuple[float, bytes]]:
        """(score, member) for ranks start..stop-1, highest rank first if reverse."""
        # Slicing a SortedList is a few times faster than its islice for short ranges.
        taken = self.order[start:stop]
        if reverse:
            taken.reverse()
        return taken

    def score_span(self, spec: ScoreRange) -> tuple[int, int]:
        """The rank span [start, stop) of the elements whose score lies in spec."""
        if spec.is_empty():
            return 0, 0
        order = self.order
        low = _after(spec.min) if spec.min_exclusive else (spec.min,)
        high = (spec.max,) if spec.max_exclusive else _after(spec.max)
        if type(order) is SmallOrder:
            start = bisect_left(order, low)
            stop = bisect_left(order, high)
        else:
            start = order.bisect_left(low)
            stop = order.bisect_left(high)
        return start, max(start, stop)

    def lex_span(self, spec: LexRange, reverse: bool = False) -> tuple[int, int]:
        """The rank span [start, stop) of the elements whose member lies in spec.

        Lexicographic ranges are meant for sets whose scores are all equal; then this is a
        bisect. With mixed scores Redis walks a small set's listpack in score order from the
        first element at or above min (from the last at or below max when reversed) and stops
        at the first element out of range; that walk is reproduced so replies match.
        """
        order = self.order
        n = len(order)
        if spec.empty or not n:
            return 0, 0
        # Redis first rules out a range that misses the set's first/last members entirely.
        if not spec.above_min(order[-1][1]) or not spec.below_max(order[0][1]):
            return 0, 0
        first_score = order[0][0]
        if first_score == order[-1][0]:
            if spec.min is None:
                start = 0
            elif spec.min_exclusive:
                start = order.bisect_right((first_score, spec.min))
            else:
                start = order.bisect_left((first_score, spec.min))
            if spec.max is None:
                stop = n
            elif spec.max_exclusive:
                stop = order.bisect_left((first_score, spec.max))
            else:
                stop = order.bisect_right((first_score, spec.max))
            return start, max(start, stop)
        if reverse:
            return self._lex_walk_backward(spec)
        return self._lex_walk_forward(spec)

    def has_uniform_scores(self) -> bool:
        order = self.order
        return not order or order[0][0] == order[-1][0]

    def lex_walk(self, spec: LexRange, offset: int, limit: int, reverse: bool) -> list:
        """ZRANGEBYLEX ... LIMIT on a set with mixed scores, walked as Redis walks a listpack:
        from the first element in range, `offset` elements are skipped without checking them,
        then elements are taken (at most `limit` if it is not negative) until one is out of
        range."""
        start, stop = self.lex_span(spec, reverse)
        if start == stop or offset < 0:
            return []
        entries = list(self.order)
        in_range = spec.above_min if reverse else spec.below_max
        step = -1 if reverse else 1
        index = stop - 1 - offset if reverse else start + offset
        taken = []
        while 0 <= index < len(entries) and limit != 0:
            if not in_range(entries[index][1]):
                break
            taken.append(entries[index])
            limit -= 1
            index += step
        return taken

    def _lex_walk_forward(self, spec: LexRange) -> tuple[int, int]:
        members = [member for _, member in self.order]
        start = next((i for i, member in enumerate(members) if spec.above_min(member)), None)
        if start is None or not spec.below_max(members[start]):
            return 0, 0
        stop = start + 1
        while stop < len(members) and spec.below_max(members[stop]):
            stop += 1
        return start, stop

    def _lex_walk_backward(self, spec: LexRange) -> tuple[int, int]:
        members = [member for _, member in self.order]
        last = next((i for i in range(len(members) - 1, -1, -1) if spec.below_max(members[i])),
                    None)
        if last is None or not spec.above_min(members[last]):
            return 0, 0
        start = last
        while start > 0 and spec.above_min(members[start - 1]):
            start -= 1
        return start, last + 1


def _unpack(blob: bytes) -> ZSet:
    scores = marshal.loads(blob)
    return ZSet.from_scores(dict(zip(shared(scores), scores.values())))


def _view(blob: bytes) -> ZSet:
    return scores_view(marshal.loads(blob))


def scores_view(scores: dict[bytes, float]) -> ZSet:
    """A ZSet of these scores to read only: its order a sorted list (one C sort), not a
    SortedList."""
    zset = ZSet.__new__(ZSet)
    zset.scores = scores
    zset.order = SmallOrder(sorted(zip(scores.values(), scores)))
    zset.skiplist = False
    return zset


def pack_scores(scores: dict[bytes, float]) -> Any:
    """The sorted set of these scores (taken, not copied) as pack() makes it of a ZSet: a
    Packed when small (a ZSet is its scores: the order is made again in one sort), else live."""
    if not small(len(scores)):
        return ZSet.from_scores(scores)
    return Packed(ZSet, dumps(scores))


register_type(ZSet, "zset")
register_packing(ZSet, lambda zset: dumps(zset.scores), _unpack, _view)
