"""Sorted set commands: adding, scoring, ranges, removal, pops and the blocking pops.

Set algebra (ZUNION/ZINTER/ZDIFF and their STORE forms), ZRANDMEMBER and ZSCAN are in
zsets_algebra.py. Argument checks run in the order Redis runs them, so that the same bad
command gets the same error (e.g. scores are parsed before the key's type is checked).
"""
from __future__ import annotations

import math
from operator import itemgetter

import cython

from minired.data.keyspace import Database
from minired.data.zset import LexRange, ScoreRange, ZSet
from minired.engine.args import index_range, parse_float, parse_int, parse_non_negative, parse_range_double
from minired.engine.blocking import Block, parse_timeout
from minired.engine.client import Client
from minired.engine.table import command, keys_after_numkeys
from minired.features.notifications import GENERIC, ZSET, after_removal, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY

G = "sorted-set"  # Redis's group name (COMMAND DOCS)


# --- replies -----------------------------------------------------------------------------------

def scored_reply(c, pairs) -> list:
    """(member, score) pairs: flat under RESP2, [member, score] pairs under RESP3."""
    if c.protocol == 2:
        flat = []
        for member, score in pairs:
            flat.append(member)
            flat.append(score)
        return flat
    return [[member, score] for member, score in pairs]


# --- argument parsing ----------------------------------------------------------------------------

def parse_score_range(low: bytes, high: bytes) -> ScoreRange:
    """min and max as zslParseRange reads them: strtod numbers, '(' for an open bound."""
    low_exclusive = low[:1] == b"("
    high_exclusive = high[:1] == b"("
    low_value = parse_range_double(low[1:] if low_exclusive else low)
    high_value = parse_range_double(high[1:] if high_exclusive else high)
    if low_value is None or high_value is None:
        raise RedisError(errors.ZRANGE_SCORE_NOT_FLOAT)
    return ScoreRange(low_value, high_value, low_exclusive, high_exclusive)


def _lex_bound(raw: bytes) -> tuple[bytes | None, bool, int]:
    """(value, exclusive, infinity) for one lex bound; infinity is -1 for '-', 1 for '+'."""
    first = raw[:1]
    if first == b"[":
        return raw[1:], False, 0
    if first == b"(":
        return raw[1:], True, 0
    # Redis reads the argument as a C string: '+' or '-' must be followed by its terminator.
    if first in (b"+", b"-") and raw[1:2] in (b"", b"\0"):
        return None, True, 1 if first == b"+" else -1
    raise RedisError(errors.ZRANGE_LEX_INVALID)


def parse_lex_range(low: bytes, high: bytes) -> LexRange:
    low_value, low_exclusive, low_infinity = _lex_bound(low)
    high_value, high_exclusive, high_infinity = _lex_bound(high)
    if low_infinity or high_infinity:
        # '+' as the minimum or '-' as the maximum matches nothing.
        empty = low_infinity == 1 or high_infinity == -1
    else:
        empty = low_value > high_value or (low_value == high_value and
                                           (low_exclusive or high_exclusive))
    return LexRange(low_value, high_value, low_exclusive, high_exclusive, empty)


def _rank_span(length: int, start: int, end: int) -> tuple[int, int]:
    """Rank arguments as the [first, stop) span of entries they select."""
    bounds = index_range(start, end, length)
    return (bounds[0], bounds[1] + 1) if bounds is not None else (0, 0)


# --- adding and scoring ---------------------------------------------------------------------------

_ZADD_FLAGS = {b"nx": "nx", b"xx": "xx", b"ch": "ch", b"incr": "incr", b"gt": "gt", b"lt": "lt"}
_SCORE_STARTS = frozenset(b"0 1 2 3 4 5 6 7 8 9 - + .".split())


def _add_one(c, key: bytes, score: float, member: bytes) -> int:
    """ZADD key score member, without flags (the queue's markers and its completed set)."""
    db = c.db
    zset = db.get_typed(key, ZSet)
    if zset is None:
        zset = ZSet()
        zset.add(member, score)
        db.set(key, zset)
        current = None
    else:
        current = zset.scores.get(member)
        if current is not None and current == score:
            c.changes = 0
            return 0
        zset.add(member, score)
        db.signal_modified(key)
    if db.notifier is not None:
        notify(db, ZSET, b"zadd", key)
    return 1 if current is None else 0


def _zadd(c, argv, incr: bool):
    if not incr and len(argv) == 4 and argv[2][:1] in _SCORE_STARTS:
        # One pair, and a score where a flag could stand: no flag can begin like a number.
        return _add_one(c, argv[1], parse_float(argv[2]), argv[3])
    index = 2
    nx = xx = gt = lt = ch = False
    while index < len(argv):
        flag = _ZADD_FLAGS.get(argv[index].lower())
        if flag is None:
            break
        if flag == "nx":
            nx = True
        elif flag == "xx":
            xx = True
        elif flag == "gt":
            gt = True
        elif flag == "lt":
            lt = True
        elif flag == "ch":
            ch = True
        else:
            incr = True
        index += 1
    pairs = len(argv) - index
    if pairs % 2 or not pairs:
        raise RedisError(errors.SYNTAX)
    if nx and xx:
        raise RedisError(errors.ZADD_XX_AND_NX)
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise RedisError(errors.ZADD_GT_LT_NX)
    if incr and pairs > 2:
        raise RedisError(errors.ZADD_INCR_SINGLE_PAIR)
    scores = [parse_float(argv[i]) for i in range(index, len(argv), 2)]
    key = argv[1]
    db = c.db
    zset = db.get_typed(key, ZSet)
    is_new_key = zset is None
    if is_new_key:
        if xx:
            c.changes = 0
            return None if incr else 0
        zset = ZSet()
    added = updated = processed = 0
    score = 0.0
    for score, member in zip(scores, argv[index + 1::2]):
        current = zset.scores.get(member)
        if current is None:
            if xx:
                continue
            zset.add(member, score)
            added += 1
            processed += 1
            continue
        if nx:
            continue
        if incr:
            score += current
            if math.isnan(score):
                raise RedisError(errors.ZSCORE_NAN)
        if (lt and score >= current) or (gt and score <= current):
            continue
        processed += 1
        if score != current:
            zset.add(member, score)
            updated += 1
    if is_new_key:
        if zset:
            db.set(key, zset)
    elif added or updated:
        db.signal_modified(key)
    if (added or updated) and db.notifier is not None:
        notify(db, ZSET, b"zincr" if incr else b"zadd", key)
    c.changes = added + updated
    if incr:
        return score if processed else None
    return added + updated if ch else added


@command("zadd", arity=-4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def zadd(c, argv):
    return _zadd(c, argv, False)


@command("zincrby", arity=4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def zincrby(c, argv):
    return _zadd(c, argv, True)


@command("zscore", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def zscore(c, argv):
    zset = c.db.read_typed(argv[1], ZSet)
    return None if zset is None else zset.scores.get(argv[2])


@command("zmscore", arity=-3, flags="readonly fast", keys=(1, 1, 1), group=G)
def zmscore(c, argv):
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return [None] * (len(argv) - 2)
    get = zset.scores.get
    return [get(member) for member in argv[2:]]


@command("zcard", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def zcard(c, argv):
    zset = c.db.read_typed(argv[1], ZSet)
    return 0 if zset is None else len(zset)


@command("zcount", arity=4, flags="readonly fast", keys=(1, 1, 1), group=G)
def zcount(c, argv):
    spec = parse_score_range(argv[2], argv[3])
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return 0
    start, stop = zset.score_span(spec)
    return stop - start


@command("zlexcount", arity=4, flags="readonly fast", keys=(1, 1, 1), group=G)
def zlexcount(c, argv):
    spec = parse_lex_range(argv[2], argv[3])
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return 0
    start, stop = zset.lex_span(spec)
    return stop - start


def _rank(c, argv, reverse: bool):
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return None
    rank = zset.rank(argv[2])
    if rank is None:
        return None
    return len(zset) - 1 - rank if reverse else rank


@command("zrank", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def zrank(c, argv):
    return _rank(c, argv, reverse=False)


@command("zrevrank", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def zrevrank(c, argv):
    return _rank(c, argv, reverse=True)


# --- ranges -------------------------------------------------------------------------------------

_BY_RANK, _BY_SCORE, _BY_LEX = "rank", "score", "lex"


def _zrange(c, argv, source_index: int, by: str | None, reverse: bool | None,
            destination: bytes | None = None):
    """ZRANGE and its older forms, as zrangeGenericCommand: `by`/`reverse` are None where
    the command accepts BYSCORE/BYLEX/REV options, fixed otherwise."""
    store = destination is not None
    withscores = False
    offset, limit = 0, -1
    index = source_index + 3
    while index < len(argv):
        option = argv[index].lower()
        if option == b"withscores" and not store:
            withscores = True
        elif option == b"limit" and len(argv) - index - 1 >= 2:
            offset = parse_int(argv[index + 1])
            limit = parse_int(argv[index + 2])
            index += 2
        elif option == b"rev" and reverse is None:
            reverse = True
        elif option == b"bylex" and by is None:
            by = _BY_LEX
        elif option == b"byscore" and by is None:
            by = _BY_SCORE
        else:
            raise RedisError(errors.SYNTAX)
        index += 1
    reverse = bool(reverse)
    by = by or _BY_RANK
    if limit != -1 and by == _BY_RANK:
        raise RedisError(errors.ZRANGE_LIMIT_NEEDS_BY)
    if withscores and by == _BY_LEX:
        raise RedisError(errors.ZRANGE_WITHSCORES_BYLEX)
    low, high = argv[source_index + 1], argv[source_index + 2]
    if reverse and by != _BY_RANK:
        low, high = high, low
    if by == _BY_RANK:
        start, end = parse_int(low), parse_int(high)
    elif by == _BY_SCORE:
        spec = parse_score_range(low, high)
    else:
        spec = parse_lex_range(low, high)

    zset = c.db.read_typed(argv[source_index], ZSet)
    if zset is None:
        entries = []
    elif by == _BY_RANK:
        first, stop = _rank_span(len(zset), start, end)
        if reverse:
            first, stop = len(zset) - stop, len(zset) - first
        entries = zset.entries(first, stop, reverse)
    elif by == _BY_SCORE:
        first, stop = zset.score_span(spec)
        entries = _limited(zset, first, stop, offset, limit, reverse)
    elif zset.has_uniform_scores():
        first, stop = zset.lex_span(spec, reverse)
        entries = _limited(zset, first, stop, offset, limit, reverse)
    else:
        entries = zset.lex_walk(spec, offset, limit, reverse)

    if store:
        return _store_range(c, destination, entries)
    if withscores:
        return scored_reply(c, [(member, score) for score, member in entries])
    return [member for _, member in entries]


def _limited(zset: ZSet, start: int, stop: int, offset: int, limit: int, reverse: bool) -> list:
    """LIMIT offset count over the rank span, walking from its far end when reversed.
    A negative offset skips everything and a negative count means no limit, as in Redis."""
    if offset < 0:
        return []
    if reverse:
        stop -= offset
        if limit >= 0:
            start = max(start, stop - limit)
    else:
        start += offset
        if limit >= 0:
            stop = min(stop, start + limit)
    if start >= stop:
        return []
    return zset.entries(start, stop, reverse)


def _store_range(c, destination: bytes, entries: list) -> int:
    return store_result(c, destination, entries, b"zrangestore")


def store_result(c, destination: bytes, entries: list, event: bytes) -> int:
    """A computed sorted set into destination (deleted when the result is empty)."""
    db = c.db
    if not entries:
        if db.delete_without_lookup(destination):
            if db.notifier is not None:
                notify(db, GENERIC, b"del", destination)
        else:
            c.changes = 0
        return 0
    db.set(destination, ZSet(entries))
    if db.notifier is not None:
        notify(db, ZSET, event, destination)
    return len(entries)


@command("zrange", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def zrange(c, argv):
    return _zrange(c, argv, 1, by=None, reverse=None)


@command("zrevrange", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def zrevrange(c, argv):
    return _zrange(c, argv, 1, by=_BY_RANK, reverse=True)


@command("zrangebyscore", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def zrangebyscore(c, argv):
    return _zrange(c, argv, 1, by=_BY_SCORE, reverse=False)


@command("zrevrangebyscore", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def zrevrangebyscore(c, argv):
    return _zrange(c, argv, 1, by=_BY_SCORE, reverse=True)


@command("zrangebylex", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def zrangebylex(c, argv):
    return _zrange(c, argv, 1, by=_BY_LEX, reverse=False)


@command("zrevrangebylex", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def zrevrangebylex(c, argv):
    return _zrange(c, argv, 1, by=_BY_LEX, reverse=True)


@command("zrangestore", arity=-5, flags="write denyoom", keys=(1, 2, 1), group=G)
def zrangestore(c, argv):
    return _zrange(c, argv, 2, by=None, reverse=None, destination=argv[1])


# --- removal ------------------------------------------------------------------------------------

_member_of = itemgetter(1)  # of a (score, member) entry


def _shrinking(c, zset: ZSet, members=None, first: int = 0, stop: int = 0) -> None:
    """Before `members` (or, if None, those ranked first..stop-1) leave zset: a set Redis holds
    as a skiplist now (too long for a listpack, or one of them too long to be in one) is marked
    to stay one, as Redis never converts a sorted set back (see ZSet.skiplist)."""
    if zset.skiplist:
        return
    if members is None:  # (lazy: a set too long for a listpack is known by its length)
        members = map(_member_of, zset.order.islice(first, stop))
    config = c.config
    if not zset.fits_listpack(config.number("zset-max-listpack-entries"),
                              config.number("zset-max-listpack-value"), members):
        zset.skiplist = True


@command("zrem", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database, zset=ZSet)
def zrem(c, argv):
    key = argv[1]
    db = c.db
    zset = db.get_typed(key, ZSet)
    if zset is None:
        c.changes = 0
        return 0
    _shrinking(c, zset, argv[2:])
    removed = 0
    for member in argv[2:]:
        if zset.remove(member):
            removed += 1
            if not zset:
                break
    if removed:
        after_removal(db, key, zset, ZSET, b"zrem")
    c.changes = removed
    return removed


@cython.locals(c=Client, argv=list, db=Database, zset=ZSet)
def _zremrange(c, argv, by: str) -> int:
    if by == _BY_RANK:
        start, end = parse_int(argv[2]), parse_int(argv[3])
    elif by == _BY_SCORE:
        spec = parse_score_range(argv[2], argv[3])
    else:
        spec = parse_lex_range(argv[2], argv[3])
    key = argv[1]
    db = c.db
    zset = db.get_typed(key, ZSet)
    if zset is None:
        c.changes = 0
        return 0
    if by == _BY_RANK:
        first, stop = _rank_span(len(zset), start, end)
    elif by == _BY_SCORE:
        first, stop = zset.score_span(spec)
    else:
        first, stop = zset.lex_span(spec)
    if first < stop:
        _shrinking(c, zset, None, first, stop)
    removed = zset.delete_span(first, stop)
    if removed:
        after_removal(db, key, zset, ZSET, _ZREMRANGE_EVENTS[by])
    c.changes = removed
    return removed


_ZREMRANGE_EVENTS = {_BY_RANK: b"zremrangebyrank", _BY_SCORE: b"zremrangebyscore",
                     _BY_LEX: b"zremrangebylex"}


@command("zremrangebyrank", arity=4, flags="write", keys=(1, 1, 1), group=G)
def zremrangebyrank(c, argv):
    return _zremrange(c, argv, _BY_RANK)


@command("zremrangebyscore", arity=4, flags="write", keys=(1, 1, 1), group=G)
def zremrangebyscore(c, argv):
    return _zremrange(c, argv, _BY_SCORE)


@command("zremrangebylex", arity=4, flags="write", keys=(1, 1, 1), group=G)
def zremrangebylex(c, argv):
    return _zremrange(c, argv, _BY_LEX)


# --- pops ---------------------------------------------------------------------------------------

def _pop(c, key: bytes, zset: ZSet, count: int, highest: bool) -> list:
    size = len(zset)
    taken = min(count, size)
    _shrinking(c, zset, None, size - taken if highest else 0, size if highest else taken)
    popped = zset.pop(count, highest)
    after_removal(c.db, key, zset, ZSET, b"zpopmax" if highest else b"zpopmin")
    return popped


def _zpop(c, argv, highest: bool):
    if len(argv) > 3:
        raise RedisError(errors.SYNTAX)
    count = parse_non_negative(argv[2]) if len(argv) == 3 else None
    key = argv[1]
    zset = c.db.get_typed(key, ZSet)
    if zset is None or count == 0:
        c.changes = 0
        return []
    popped = _pop(c, key, zset, 1 if count is None else count, highest)
    c.changes = len(popped)
    if count is None:
        # A single pop is a flat [member, score] in both protocols; only COUNT nests in RESP3.
        (member, score), = popped
        return [member, score]
    return scored_reply(c, popped)


@command("zpopmin", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
def zpopmin(c, argv):
    return _zpop(c, argv, highest=False)


@command("zpopmax", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
def zpopmax(c, argv):
    return _zpop(c, argv, highest=True)


def _first_nonempty(c, keys: list[bytes]) -> tuple[bytes, ZSet] | None:
    """The first key holding a sorted set; a key of another type on the way is WRONGTYPE."""
    db = c.db
    for key in keys:
        value = db.get(key)
        if value is None:
            continue
        if type(value) is not ZSet:
            raise RedisError(errors.WRONGTYPE)
        return key, value
    return None


def _ready_zset(c, key: bytes) -> tuple[bytes, ZSet] | None:
    """The sorted set a waiter is served from once `key` was written: Redis serves only from
    the key that became ready, and only if it now holds a sorted set."""
    value = c.db.get(key)
    return (key, value) if type(value) is ZSet else None


def _parse_mpop(argv, numkeys_index: int) -> tuple[list[bytes], bool, int]:
    """numkeys key... MIN|MAX [COUNT count], as zmpopGenericCommand reads them."""
    try:
        numkeys = parse_int(argv[numkeys_index])
    except RedisError:
        raise RedisError(errors.NUMKEYS_NOT_POSITIVE) from None
    if numkeys < 1:
        raise RedisError(errors.NUMKEYS_NOT_POSITIVE)
    where_index = numkeys_index + numkeys + 1
    if where_index >= len(argv):
        raise RedisError(errors.SYNTAX)
    where = argv[where_index].lower()
    if where not in (b"min", b"max"):
        raise RedisError(errors.SYNTAX)
    count = None
    index = where_index + 1
    while index < len(argv):
        if count is None and argv[index].lower() == b"count" and index + 1 < len(argv):
            count = parse_int(argv[index + 1], errors.COUNT_NOT_POSITIVE)
            if count < 1:
                raise RedisError(errors.COUNT_NOT_POSITIVE)
            index += 2
        else:
            raise RedisError(errors.SYNTAX)
    keys = argv[numkeys_index + 1:where_index]
    return keys, where == b"max", count or 1


def _mpop_reply(c, found, highest: bool, count: int):
    key, zset = found
    popped = _pop(c, key, zset, count, highest)
    return [key, [[member, score] for member, score in popped]]


@command("zmpop", arity=-4, flags="write", group=G, key_finder=keys_after_numkeys(1))
def zmpop(c, argv):
    keys, highest, count = _parse_mpop(argv, 1)
    found = _first_nonempty(c, keys)
    if found is None:
        c.changes = 0
        return NULL_ARRAY
    return _counted_mpop(c, found, highest, count)


def _counted_mpop(c, found, highest: bool, count: int):
    """ZMPOP/BZMPOP served at once: one change per element popped."""
    reply = _mpop_reply(c, found, highest, count)
    c.changes = len(reply[1])
    return reply


# --- blocking pops ---------------------------------------------------------------------------------

def _bzpop(c, argv, highest: bool):
    timeout_ms = parse_timeout(argv[-1])
    keys = argv[1:-1]

    def pop_from(client, found):
        if found is None:
            return None
        key, zset = found
        (member, score), = _pop(client, key, zset, 1, highest)
        return [key, member, score]

    reply = pop_from(c, _first_nonempty(c, keys))
    if reply is not None:
        return reply
    if not c.can_block:
        c.changes = 0
        return NULL_ARRAY
    def serve(client, key):
        reply = pop_from(client, _ready_zset(client, key))
        if reply is not None:
            client.db.dirty += 1  # (a waiter served is counted as at once, unlike BLPOP's)
        return reply

    return Block(keys, timeout_ms, serve, NULL_ARRAY, value_type=ZSet)


@command("bzpopmin", arity=-3, flags="write noscript blocking fast", keys=(1, -2, 1), group=G)
def bzpopmin(c, argv):
    return _bzpop(c, argv, highest=False)


@command("bzpopmax", arity=-3, flags="write noscript blocking fast", keys=(1, -2, 1), group=G)
def bzpopmax(c, argv):
    return _bzpop(c, argv, highest=True)


@command("bzmpop", arity=-5, flags="write blocking", group=G, key_finder=keys_after_numkeys(2))
def bzmpop(c, argv):
    timeout_ms = parse_timeout(argv[1])
    keys, highest, count = _parse_mpop(argv, 2)
    found = _first_nonempty(c, keys)
    if found is not None:
        return _counted_mpop(c, found, highest, count)
    if not c.can_block:
        c.changes = 0
        return NULL_ARRAY

    def serve(client, key):
        found = _ready_zset(client, key)
        if found is None:
            return None
        reply = _mpop_reply(client, found, highest, count)
        client.db.dirty += len(reply[1])
        return reply

    return Block(keys, timeout_ms, serve, NULL_ARRAY, value_type=ZSet)
