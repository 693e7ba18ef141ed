"""List commands, blocking ones included (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP).

A list is a QuickList (minired/data/quicklist.py): bytes elements in packed nodes, O(1)
pushes and pops at both ends. Argument errors,
their order, and which reply is null (RESP2 `$-1` vs `*-1`) follow Redis 7.0's t_list.c.
Every change in place ends with `db.signal_modified(key)` (WATCH and blocked clients rely on
it); a list that loses its last element is deleted.
"""
from __future__ import annotations

from itertools import islice

import cython

from minired.data.keyspace import Database
from minired.data.quicklist import QuickList
from minired.engine.args import index_range, parse_int, parse_non_negative
from minired.engine.blocking import Block, parse_timeout
from minired.engine.client import Client
from minired.engine.table import command, keys_after_numkeys
from minired.features.notifications import GENERIC, LIST, notify
from minired.protocol import errors
from minired.protocol.errors import WRONGTYPE, RedisError
from minired.protocol.resp import NULL_ARRAY, OK

G = "list"

_LONG_MIN = -(2**63)


def _list(db, key: bytes):
    """The list at key, None if there is none; WRONGTYPE for another type."""
    value = db.get(key)
    if value is not None and type(value) is not QuickList:
        raise RedisError(WRONGTYPE)
    return value


def _is_left(raw: bytes) -> bool:
    """LEFT / RIGHT (any case) of LMOVE, LMPOP and friends."""
    where = raw.lower()
    if where == b"left":
        return True
    if where == b"right":
        return False
    raise RedisError(errors.SYNTAX)


def _pop_one(db, key: bytes, value: QuickList, left: bool) -> bytes:
    item = value.popleft() if left else value.pop()
    if not value:
        db.delete_if_empty(key, value)
    db.signal_modified(key)
    if db.notifier is not None:
        _notify_change(db, b"lpop" if left else b"rpop", key, value)
    return item


def _pop_many(db, key: bytes, value: QuickList, left: bool, count: int) -> list:
    pop = value.popleft if left else value.pop
    items = [pop() for _ in range(min(count, len(value)))]
    if not value:
        db.delete_if_empty(key, value)
    db.signal_modified(key)
    if db.notifier is not None:
        _notify_change(db, b"lpop" if left else b"rpop", key, value)
    return items


def _notify_change(db, event: bytes, key: bytes, value: QuickList) -> None:
    """The event of a change that removed elements, and "del" if it removed the last one."""
    notify(db, LIST, event, key)
    if not value:
        notify(db, GENERIC, b"del", key)


def _move(db, source_key: bytes, source: QuickList, target_key: bytes, from_left: bool,
          to_left: bool):
    """LMOVE once the source is known to be a non-empty list: the moved element, or
    WRONGTYPE (raised) when the target holds another type."""
    target = source if target_key == source_key else db.get(target_key)
    if target is not None and type(target) is not QuickList:
        raise RedisError(WRONGTYPE)
    item = source.popleft() if from_left else source.pop()
    if target is None:
        db.set(target_key, QuickList((item,)))
    else:
        if to_left:
            target.appendleft(item)
        else:
            target.append(item)
        db.signal_modified(target_key)
    if db.notifier is not None:  # as lmoveHandlePush does, the push comes first
        notify(db, LIST, b"lpush" if to_left else b"rpush", target_key)
    if not source:
        db.delete_if_empty(source_key, source)
    db.signal_modified(source_key)
    if db.notifier is not None:
        _notify_change(db, b"lpop" if from_left else b"rpop", source_key, source)
    return item


# --- pushes ------------------------------------------------------------------------------------

def _push(c, argv, left: bool, only_existing: bool) -> int:
    db = c.db
    key = argv[1]
    value = db.get(key)
    if value is None:
        if only_existing:
            c.changes = 0
            return 0
        value = QuickList()
        if left:
            value.extendleft(argv[2:])
        else:
            value.extend(argv[2:])
        c.changes = len(argv) - 2  # one per element pushed
        db.set(key, value)
        if db.notifier is not None:
            notify(db, LIST, b"lpush" if left else b"rpush", key)
        return len(value)
    if type(value) is not QuickList:
        raise RedisError(WRONGTYPE)
    if len(argv) == 3:
        if left:
            value.appendleft(argv[2])
        else:
            value.append(argv[2])
    else:
        c.changes = len(argv) - 2  # one per element pushed
        if left:
            value.extendleft(argv[2:])
        else:
            value.extend(argv[2:])
    db.signal_modified(key)
    if db.notifier is not None:
        notify(db, LIST, b"lpush" if left else b"rpush", key)
    return len(value)


@command("lpush", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def lpush(c, argv):
    """Prepend elements; the last one given ends up first."""
    return _push(c, argv, True, False)


@command("rpush", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def rpush(c, argv):
    """Append elements."""
    return _push(c, argv, False, False)


@command("lpushx", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def lpushx(c, argv):
    """Prepend elements only if the list exists."""
    return _push(c, argv, True, True)


@command("rpushx", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def rpushx(c, argv):
    """Append elements only if the list exists."""
    return _push(c, argv, False, True)


# --- pops --------------------------------------------------------------------------------------

def _pop(c, argv, left: bool):
    argc = len(argv)
    if argc == 2:
        db = c.db
        key = argv[1]
        value = db.get(key)
        if value is None:
            c.changes = 0
            return None
        if type(value) is not QuickList:
            raise RedisError(WRONGTYPE)
        return _pop_one(db, key, value, left)
    if argc > 3:
        raise errors.wrong_arity(argv[0].lower().decode())
    count = parse_non_negative(argv[2])
    db = c.db
    value = _list(db, argv[1])
    if value is None:
        c.changes = 0
        return NULL_ARRAY
    if count == 0:
        c.changes = 0
        return []
    return _popped(c, _pop_many(db, argv[1], value, left, count))


def _popped(c, items: list) -> list:
    """Elements popped at once: one change each."""
    c.changes = len(items)
    return items


@command("lpop", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def lpop(c, argv):
    """Remove and return the first element, or the first COUNT elements."""
    return _pop(c, argv, True)


@command("rpop", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def rpop(c, argv):
    """Remove and return the last element, or the last COUNT elements."""
    return _pop(c, argv, False)


def _mpop_arguments(argv, numkeys_index: int) -> tuple[list, bool, int]:
    """numkeys key [key ...] LEFT|RIGHT [COUNT count] of LMPOP and BLMPOP."""
    numkeys = parse_int(argv[numkeys_index], errors.NUMKEYS_NOT_POSITIVE)
    if numkeys <= 0:
        raise RedisError(errors.NUMKEYS_NOT_POSITIVE)
    where_index = numkeys_index + numkeys + 1
    if where_index >= len(argv):
        raise RedisError(errors.SYNTAX)
    left = _is_left(argv[where_index])
    count = None
    i = where_index + 1
    while i < len(argv):
        if count is None and argv[i].lower() == b"count" and i + 1 < len(argv):
            count = parse_int(argv[i + 1], errors.COUNT_NOT_POSITIVE)
            if count <= 0:
                raise RedisError(errors.COUNT_NOT_POSITIVE)
            i += 2
        else:
            raise RedisError(errors.SYNTAX)
    return argv[numkeys_index + 1:where_index], left, count or 1


@command("lmpop", arity=-4, flags="write", key_finder=keys_after_numkeys(1), group=G)
def lmpop(c, argv):
    """Pop up to COUNT elements from the first non-empty list of several."""
    keys, left, count = _mpop_arguments(argv, 1)
    db = c.db
    for key in keys:
        value = _list(db, key)
        if value is not None:
            return [key, _popped(c, _pop_many(db, key, value, left, count))]
    c.changes = 0
    return NULL_ARRAY


# --- reads -------------------------------------------------------------------------------------

@command("llen", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def llen(c, argv):
    """The length of a list (0 if missing)."""
    value = c.db.read_typed(argv[1], QuickList)
    return 0 if value is None else len(value)


@command("lrange", arity=4, flags="readonly", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def lrange(c, argv):
    """Elements from start to end inclusive; negative indexes count from the tail."""
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    value = c.db.read_typed(argv[1], QuickList)
    if value is None:
        return []
    length = len(value)
    bounds = index_range(start, end, length)
    if bounds is None:
        return []
    start, end = bounds
    return value.slice_list(start, end + 1)


@command("lindex", arity=3, flags="readonly", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def lindex(c, argv):
    """The element at an index (negative from the tail), or null."""
    value = c.db.read_typed(argv[1], QuickList)
    if value is None:
        return None
    index = parse_int(argv[2])
    if index < 0:
        index += len(value)
    if not 0 <= index < len(value):
        return None
    return value[index]


@command("lpos", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def lpos(c, argv):
    """Index of matching elements, with RANK (which match, negative from the tail), COUNT
    (how many, 0 = all) and MAXLEN (how many elements to scan)."""
    rank, count, maxlen = 1, None, 0
    i = 3
    while i < len(argv):
        option = argv[i].lower()
        has_value = i + 1 < len(argv)
        if option == b"rank" and has_value:
            rank = parse_int(argv[i + 1])
            if rank == 0:
                raise RedisError(errors.LPOS_RANK_ZERO)
        elif option == b"count" and has_value:
            count = parse_non_negative(argv[i + 1], errors.LPOS_COUNT_NEGATIVE)
        elif option == b"maxlen" and has_value:
            maxlen = parse_non_negative(argv[i + 1], errors.LPOS_MAXLEN_NEGATIVE)
        else:
            raise RedisError(errors.SYNTAX)
        i += 2
    value = c.db.read_typed(argv[1], QuickList)
    if value is None:
        return None if count is None else []
    element = argv[2]
    from_tail = rank < 0
    # Matches to pass over before reporting. Redis negates RANK in a C long, so the most
    # negative RANK stays negative and means the first match from the tail; with COUNT, its
    # stop test (matches - rank + 1 >= count) then overflows to a negative number and never
    # holds: every match from the tail is reported, whatever the COUNT.
    skip = 0 if rank == _LONG_MIN else abs(rank) - 1
    if rank == _LONG_MIN and count is not None:
        count = 0
    length = len(value)
    scanned = value if maxlen == 0 or maxlen >= length else None
    if from_tail:
        items = reversed(value) if scanned is not None else islice(reversed(value), maxlen)
    else:
        items = value if scanned is not None else islice(value, maxlen)
    found = []
    wanted = 1 if count is None else count
    for position, item in enumerate(items):
        if item == element:
            if skip:
                skip -= 1
                continue
            found.append(length - 1 - position if from_tail else position)
            if len(found) == wanted:
                break
    if count is None:
        return found[0] if found else None
    return found


# --- edits -------------------------------------------------------------------------------------

@command("lset", arity=4, flags="write denyoom", keys=(1, 1, 1), group=G)
def lset(c, argv):
    """Replace the element at an index."""
    db = c.db
    value = _list(db, argv[1])
    if value is None:
        raise RedisError(errors.NO_SUCH_KEY)
    index = parse_int(argv[2])
    if index < 0:
        index += len(value)
    if not 0 <= index < len(value):
        raise RedisError(errors.INDEX_OUT_OF_RANGE)
    value[index] = argv[3]
    db.signal_modified(argv[1])
    if db.notifier is not None:
        notify(db, LIST, b"lset", argv[1])
    return OK


@command("linsert", arity=5, flags="write denyoom", keys=(1, 1, 1), group=G)
def linsert(c, argv):
    """Insert an element before or after the first occurrence of a pivot."""
    where = argv[2].lower()
    if where not in (b"before", b"after"):
        raise RedisError(errors.SYNTAX)
    db = c.db
    value = _list(db, argv[1])
    if value is None:
        c.changes = 0
        return 0
    try:
        index = value.index(argv[3])
    except ValueError:
        c.changes = 0
        return -1
    value.insert(index if where == b"before" else index + 1, argv[4])
    db.signal_modified(argv[1])
    if db.notifier is not None:
        notify(db, LIST, b"linsert", argv[1])
    return len(value)


@command("lrem", arity=4, flags="write", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def lrem(c, argv):
    """Remove COUNT occurrences of an element: from the head if positive, from the tail if
    negative, all of them if 0."""
    count = parse_int(argv[2])
    db = c.db
    key = argv[1]
    value = _list(db, key)
    if value is None:
        c.changes = 0
        return 0
    removed = value.remove_equal(argv[3], count)
    if removed:
        db.delete_if_empty(key, value)
        db.signal_modified(key)
        if db.notifier is not None:
            _notify_change(db, b"lrem", key, value)
    c.changes = removed
    return removed


@command("ltrim", arity=4, flags="write", keys=(1, 1, 1), group=G)
def ltrim(c, argv):
    """Keep only the elements from start to end inclusive."""
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    db = c.db
    key = argv[1]
    value = _list(db, key)
    if value is None:
        c.changes = 0
        return OK
    length = len(value)
    bounds = index_range(start, end, length)
    if bounds is None:
        value.clear()
    else:
        start, end = bounds
        if 2 * (end + 1 - start) < length:  # most of it goes: keep a copy of the rest
            kept = value.slice_list(start, end + 1)
            value.clear()
            value.extend(kept)
        else:
            for _ in range(length - 1 - end):
                value.pop()
            for _ in range(start):
                value.popleft()
    db.delete_if_empty(key, value)
    db.signal_modified(key)  # Redis signals even when nothing was trimmed
    if db.notifier is not None:
        _notify_change(db, b"ltrim", key, value)
    c.changes = length - len(value)  # one per element trimmed (none: not propagated)
    return OK


@command("lmove", arity=5, flags="write denyoom", keys=(1, 2, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def lmove(c, argv):
    """Pop from one end of a list and push onto an end of another (or the same) list."""
    from_left = _is_left(argv[3])
    to_left = _is_left(argv[4])
    db = c.db
    source = _list(db, argv[1])
    if source is None:
        c.changes = 0
        return None
    return _move(db, argv[1], source, argv[2], from_left, to_left)


@command("rpoplpush", arity=3, flags="write denyoom", keys=(1, 2, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def rpoplpush(c, argv):
    """LMOVE source destination RIGHT LEFT."""
    db = c.db
    source = _list(db, argv[1])
    if source is None:
        c.changes = 0
        return None
    return _move(db, argv[1], source, argv[2], False, True)


# --- blocking ----------------------------------------------------------------------------------
# Each tries to answer at once; if every key is empty it returns a Block (or, inside MULTI or a
# script, the timeout reply at once). The Block's retry serves from the key that became ready,
# as Redis does, so a client blocked on several keys gets the element that woke it.

def _blocking_pop(c, keys: list, left: bool, count: int | None, timeout_ms: int):
    """BLPOP/BRPOP (count None: reply [key, element]) and BLMPOP (reply [key, [elements]])."""
    db = c.db
    for key in keys:
        value = _list(db, key)
        if value is not None:
            if count is None:
                return [key, _pop_one(db, key, value, left)]
            return [key, _popped(c, _pop_many(db, key, value, left, count))]
    if not c.can_block:
        c.changes = 0
        return NULL_ARRAY

    def serve(client, key):
        value = client.db.get(key)
        if type(value) is not QuickList:
            return None
        if count is None:
            return [key, _pop_one(client.db, key, value, left)]
        items = _pop_many(client.db, key, value, left, count)
        client.db.dirty += len(items)  # (Redis counts BLMPOP's elements when served, not BLPOP's)
        return [key, items]

    return Block(keys, timeout_ms, serve, NULL_ARRAY, value_type=QuickList)


@command("blpop", arity=-3, flags="write noscript blocking", keys=(1, -2, 1), group=G)
def blpop(c, argv):
    """LPOP from the first non-empty list, waiting up to timeout seconds (0 = forever)."""
    timeout_ms = parse_timeout(argv[-1])
    return _blocking_pop(c, argv[1:-1], True, None, timeout_ms)


@command("brpop", arity=-3, flags="write noscript blocking", keys=(1, -2, 1), group=G)
def brpop(c, argv):
    """RPOP from the first non-empty list, waiting up to timeout seconds (0 = forever)."""
    timeout_ms = parse_timeout(argv[-1])
    return _blocking_pop(c, argv[1:-1], False, None, timeout_ms)


@command("blmpop", arity=-5, flags="write blocking", key_finder=keys_after_numkeys(2), group=G)
def blmpop(c, argv):
    """LMPOP, waiting up to timeout seconds (0 = forever) for a list to fill."""
    keys, left, count = _mpop_arguments(argv, 2)
    timeout_ms = parse_timeout(argv[1])
    return _blocking_pop(c, keys, left, count, timeout_ms)


def _blocking_move(c, argv, from_left: bool, to_left: bool, timeout_ms: int):
    db = c.db
    source_key, target_key = argv[1], argv[2]
    source = _list(db, source_key)
    if source is not None:
        return _move(db, source_key, source, target_key, from_left, to_left)
    if not c.can_block:
        c.changes = 0
        return None

    def serve(client, key):
        value = client.db.get(key)
        if type(value) is not QuickList:
            return None
        try:
            return _move(client.db, key, value, target_key, from_left, to_left)
        except RedisError as exc:  # the target turned into another type: the wait ends
            return exc

    # Redis answers any timed-out list wait with a null array, BLMOVE's included (though
    # BLMOVE inside MULTI answers a null bulk, above).
    return Block([source_key], timeout_ms, serve, NULL_ARRAY, value_type=QuickList)


@command("blmove", arity=6, flags="write denyoom noscript blocking", keys=(1, 2, 1), group=G)
def blmove(c, argv):
    """LMOVE, waiting up to timeout seconds (0 = forever) for the source to fill."""
    from_left = _is_left(argv[3])
    to_left = _is_left(argv[4])
    timeout_ms = parse_timeout(argv[5])
    return _blocking_move(c, argv, from_left, to_left, timeout_ms)


@command("brpoplpush", arity=4, flags="write denyoom noscript blocking", keys=(1, 2, 1),
         group=G)
def brpoplpush(c, argv):
    """BLMOVE source destination RIGHT LEFT timeout."""
    timeout_ms = parse_timeout(argv[3])
    return _blocking_move(c, argv, False, True, timeout_ms)
