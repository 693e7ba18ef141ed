"""Sorted set algebra and sampling: ZUNION/ZINTER/ZDIFF (+STORE), ZINTERCARD, ZRANDMEMBER, ZSCAN.

Inputs may be sorted sets or plain sets (members of a set score 1), as in Redis.
"""
from __future__ import annotations

import math
import random

from minired.commands.collection_scan import scan_members
from minired.commands.keys import parse_scan_cursor, parse_scan_options
from minired.commands.keys_object import is_compact
from minired.commands.zsets import G, scored_reply, store_result
from minired.data.zset import ZSet
from minired.engine.args import parse_float, parse_int, parse_non_negative, parse_random_count
from minired.engine.table import command, keys_after_numkeys
from minired.features.output_limits import LEAST_BULK, reply_overflows
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import format_double

_UNION, _INTER, _DIFF = "union", "inter", "diff"


def _keys_after_destination(argv: list) -> list[int]:
    """ZUNIONSTORE dest numkeys key...: the destination, then the numkeys source keys."""
    return [1] + keys_after_numkeys(2)(argv)


class _Source:
    """One input: its (member, score) pairs in Redis's iteration order, and lookups."""

    __slots__ = ("value", "weight")

    def __init__(self, value) -> None:
        self.value = value
        self.weight = 1.0

    def __len__(self) -> int:
        return 0 if self.value is None else len(self.value)

    def items(self):
        value = self.value
        if value is None:
            return ()
        if type(value) is ZSet:
            return ((member, score) for score, member in value.order)
        return ((member, 1.0) for member in value)

    def score(self, member: bytes) -> float | None:
        value = self.value
        if type(value) is ZSet:
            return value.scores.get(member)
        return 1.0 if value is not None and member in value else None


def _aggregate(mode: bytes, current: float, value: float) -> float:
    if mode == b"sum":
        total = current + value
        # inf + -inf is NaN; Redis settles it as 0.
        return 0.0 if math.isnan(total) else total
    if mode == b"min":
        return value if value < current else current
    return value if value > current else current


def _setop(c, argv, name: str, numkeys_index: int, op: str, store: bool = False,
           cardinality_only: bool = False):
    """zunionInterDiffGenericCommand: the combined scores as a member -> score dict, or (for
    ZINTERCARD) the cardinality. Returns (result, withscores)."""
    numkeys = parse_int(argv[numkeys_index])
    if numkeys < 1:
        raise RedisError(errors.ZSETOP_NEEDS_KEY.format(name))
    first = numkeys_index + 1
    if numkeys > len(argv) - first:
        raise RedisError(errors.SYNTAX)
    db = c.db
    sources = []
    for key in argv[first:first + numkeys]:
        value = db.read(key)
        if value is not None and type(value) is not ZSet and type(value) is not set:
            raise RedisError(errors.WRONGTYPE)
        sources.append(_Source(value))

    aggregate = b"sum"
    withscores = False
    limit = 0
    index = first + numkeys
    while index < len(argv):
        option = argv[index].lower()
        remaining = len(argv) - index
        if (option == b"weights" and op != _DIFF and not cardinality_only
                and remaining >= numkeys + 1):
            for offset, source in enumerate(sources, start=index + 1):
                source.weight = parse_float(argv[offset], errors.WEIGHT_NOT_FLOAT)
            index += numkeys + 1
        elif (option == b"aggregate" and op != _DIFF and not cardinality_only
              and remaining >= 2):
            aggregate = argv[index + 1].lower()
            if aggregate not in (b"sum", b"min", b"max"):
                raise RedisError(errors.SYNTAX)
            index += 2
        elif option == b"withscores" and not store and not cardinality_only:
            withscores = True
            index += 1
        elif option == b"limit" and cardinality_only and remaining >= 2:
            limit = parse_non_negative(argv[index + 1], errors.LIMIT_NEGATIVE)
            index += 2
        else:
            raise RedisError(errors.SYNTAX)

    if op != _DIFF:
        # Smallest first, as Redis orders the inputs (it bounds the work of an intersection).
        sources.sort(key=len)
    if cardinality_only:
        return _intersection_cardinality(sources, limit), False
    if op == _INTER:
        return _intersection(sources, aggregate), withscores
    if op == _UNION:
        return _union(sources, aggregate), withscores
    return _difference(sources), withscores


def _weighted(score: float, weight: float) -> float:
    value = score * weight
    return 0.0 if math.isnan(value) else value


def _intersection(sources: list[_Source], aggregate: bytes) -> dict:
    result = {}
    smallest, others = sources[0], sources[1:]
    if not len(smallest):
        return result
    for member, score in smallest.items():
        total = _weighted(score, smallest.weight)
        for source in others:
            value = source.score(member)
            if value is None:
                break
            total = _aggregate(aggregate, total, value * source.weight)
        else:
            result[member] = total
    return result


def _intersection_cardinality(sources: list[_Source], limit: int) -> int:
    smallest, others = sources[0], sources[1:]
    count = 0
    for member, _ in smallest.items():
        if all(source.score(member) is not None for source in others):
            count += 1
            if count == limit:
                break
    return count


def _union(sources: list[_Source], aggregate: bytes) -> dict:
    result: dict[bytes, float] = {}
    for source in sources:
        weight = source.weight
        for member, score in source.items():
            value = _weighted(score, weight)
            current = result.get(member)
            result[member] = value if current is None else _aggregate(aggregate, current, value)
    return result


def _difference(sources: list[_Source]) -> dict:
    first, others = sources[0], sources[1:]
    return {member: score for member, score in first.items()
            if all(source.score(member) is None for source in others)}


def _ranked(scores: dict) -> list[tuple[float, bytes]]:
    return sorted((score, member) for member, score in scores.items())


def _reply(c, scores: dict, withscores: bool):
    ranked = _ranked(scores)
    if withscores:
        return scored_reply(c, [(member, score) for score, member in ranked])
    return [member for _, member in ranked]


def _store(c, destination: bytes, scores: dict, event: bytes) -> int:
    return store_result(c, destination, _ranked(scores), event)


@command("zunion", arity=-3, flags="readonly", group=G, key_finder=keys_after_numkeys(1))
def zunion(c, argv):
    return _reply(c, *_setop(c, argv, "zunion", 1, _UNION))


@command("zinter", arity=-3, flags="readonly", group=G, key_finder=keys_after_numkeys(1))
def zinter(c, argv):
    return _reply(c, *_setop(c, argv, "zinter", 1, _INTER))


@command("zdiff", arity=-3, flags="readonly", group=G, key_finder=keys_after_numkeys(1))
def zdiff(c, argv):
    return _reply(c, *_setop(c, argv, "zdiff", 1, _DIFF))


@command("zunionstore", arity=-4, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=_keys_after_destination)
def zunionstore(c, argv):
    return _store(c, argv[1], _setop(c, argv, "zunionstore", 2, _UNION, store=True)[0],
                  b"zunionstore")


@command("zinterstore", arity=-4, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=_keys_after_destination)
def zinterstore(c, argv):
    return _store(c, argv[1], _setop(c, argv, "zinterstore", 2, _INTER, store=True)[0],
                  b"zinterstore")


@command("zdiffstore", arity=-4, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=_keys_after_destination)
def zdiffstore(c, argv):
    return _store(c, argv[1], _setop(c, argv, "zdiffstore", 2, _DIFF, store=True)[0],
                  b"zdiffstore")


@command("zintercard", arity=-3, flags="readonly", group=G, key_finder=keys_after_numkeys(1))
def zintercard(c, argv):
    return _setop(c, argv, "zintercard", 1, _INTER, cardinality_only=True)[0]


# --- sampling and iteration ----------------------------------------------------------------------

@command("zrandmember", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def zrandmember(c, argv):
    if len(argv) == 2:
        zset = c.db.read_typed(argv[1], ZSet)
        if zset is None:
            return None
        return zset.order[random.randrange(len(zset))][1]
    count, withscores = parse_random_count(argv, b"withscores")
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None or count == 0:
        return []
    order = zset.order
    size = len(order)
    if count < 0 and reply_overflows(c, -count * LEAST_BULK * (1 + withscores)):
        return []  # the client is gone: Redis stops such a reply mid-run
    if count < 0 or count == 1:
        picked = [order[random.randrange(size)] for _ in range(abs(count))]
    elif count >= size:
        # Redis answers with the whole set, highest rank first.
        picked = list(reversed(order))
    else:
        picked = [order[i] for i in random.sample(range(size), count)]
    if withscores:
        return scored_reply(c, [(member, score) for score, member in picked])
    return [member for _, member in picked]


@command("zscan", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def zscan(c, argv):
    cursor = parse_scan_cursor(argv[2])
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return [b"0", []]
    count, pattern, _ = parse_scan_options(argv, 3, allow_type=False)
    next_cursor, members = scan_members(c, argv[1], zset, zset.scores,
                                        (member for _, member in zset.order),
                                        cursor, count, pattern)
    scores = zset.scores
    # ZSCAN shows scores as stored: a listpack holds them as d2string wrote them, a skiplist
    # as doubles that are printed with %.17g.
    text = _listpack_score if is_compact(zset, c.server.config) else format_double
    flat = []
    for member in members:
        flat.append(member)
        flat.append(text(scores[member]))
    return [next_cursor, flat]


_HALF_LLONG_MAX = (2**63 - 1) // 2


def _listpack_score(score: float) -> bytes:
    """Redis 7.0's d2string: integral values within double2ll's range (|x| <= 2**62) as
    integers, the rest with %.17g."""
    if score.is_integer() and -_HALF_LLONG_MAX <= score <= _HALF_LLONG_MAX:
        return b"%d" % score
    return format_double(score)
