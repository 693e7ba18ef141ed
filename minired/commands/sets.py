"""Set commands. A set is a Python set of bytes; replies that Redis sends as RESP3 sets are
returned as fresh `set` objects (arrays under RESP2), copies so that a reply queued by EXEC
cannot change under later commands. A set Redis holds as an intset (small, all integers) it
replies in ascending order, and so does minired (`in_reply_order`); a hash table's order is
Redis's own and cannot be matched."""
from __future__ import annotations

import itertools
import random

from minired.commands.collection_scan import scan_members
from minired.commands.keys import parse_scan_cursor, parse_scan_options
from minired.commands.keys_object import encoding
from minired.data.compact import keep_hashtable
from minired.engine.args import parse_int, parse_non_negative
from minired.engine.table import command, keys_after_numkeys
from minired.features.notifications import GENERIC, SET, after_removal, notify
from minired.features.output_limits import LEAST_BULK, reply_overflows
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OrderedSet, string2ll

G = "set"
_LONG_MAX = 2**63 - 1
# SPOP with a count moves the members that stay to a new set when fewer than 1/5 of the count
# stay (t_set.c: "create new set" strategy).
_SPOP_MOVE_STRATEGY_MUL = 5


def in_reply_order(members: set, config) -> set | OrderedSet:
    """The members as Redis replies them: a list in ascending integer order where it holds (or
    would build) the set as an intset, otherwise `members` itself, in any order."""
    if 1 < len(members) <= config.number("set-max-intset-entries") and \
            encoding(members, config) == "intset":
        return OrderedSet(sorted(members, key=int))
    return members


def _shrinking(members: set, removed, config) -> None:
    """Before `removed` leave `members`: a set that is a hash table now (too big, or holding a
    non-integer among those leaving) stays one, as Redis never converts back to an intset."""
    if len(members) > config.number("set-max-intset-entries") or any(
            string2ll(member) is None for member in removed):
        keep_hashtable(members)


@command("sadd", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def sadd(c, argv):
    key = argv[1]
    db = c.db
    members = db.get_typed(key, set)
    if members is None:
        members = set(argv[2:])
        db.set(key, members)
        added = len(members)
    else:
        before = len(members)
        members.update(argv[2:])
        added = len(members) - before
        if added:
            db.signal_modified(key)
    if added and db.notifier is not None:
        notify(db, SET, b"sadd", key)
    c.changes = added
    return added


@command("srem", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def srem(c, argv):
    key = argv[1]
    db = c.db
    members = db.get_typed(key, set)
    if members is None:
        c.changes = 0
        return 0
    before = len(members)
    _shrinking(members, [m for m in argv[2:] if m in members], c.server.config)
    members.difference_update(argv[2:])
    removed = before - len(members)
    if removed:
        after_removal(db, key, members, SET, b"srem")
    c.changes = removed
    return removed


@command("sismember", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def sismember(c, argv):
    members = c.db.read_typed(argv[1], set)
    return int(members is not None and argv[2] in members)


@command("smismember", arity=-3, flags="readonly fast", keys=(1, 1, 1), group=G)
def smismember(c, argv):
    members = c.db.read_typed(argv[1], set) or ()
    return [int(member in members) for member in argv[2:]]


@command("smembers", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
def smembers(c, argv):
    members = c.db.read_typed(argv[1], set)
    if members is None:
        return set()
    ordered = in_reply_order(members, c.server.config)
    return set(members) if ordered is members else ordered  # (a copy: EXEC queues replies)


@command("scard", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def scard(c, argv):
    members = c.db.read_typed(argv[1], set)
    return 0 if members is None else len(members)


def _random_member(members: set) -> bytes:
    return next(itertools.islice(members, random.randrange(len(members)), None))


@command("spop", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
def spop(c, argv):
    if len(argv) > 3:
        raise RedisError(errors.SYNTAX)
    count = parse_non_negative(argv[2]) if len(argv) == 3 else None
    key = argv[1]
    db = c.db
    members = db.get_typed(key, set)
    if count is None:
        if members is None:
            c.changes = 0
            return None
        member = _random_member(members)
        _shrinking(members, (member,), c.server.config)
        members.discard(member)
        after_removal(db, key, members, SET, b"spop")
        return member
    if members is None or count == 0:
        c.changes = 0
        return set()
    if count >= len(members):
        members, popped = set(), in_reply_order(members, c.server.config)
    else:
        popped = set(random.sample(tuple(members), count))
        if (len(members) - count) * _SPOP_MOVE_STRATEGY_MUL > count:
            _shrinking(members, popped, c.server.config)  # (they leave one by one)
            members.difference_update(popped)
        else:
            # Most of the set leaves: Redis moves the members that stay to a new set, which is
            # encoded afresh (an intset again if they fit one), and stores that at the key.
            members = members - popped
            db.set(key, members, True)
    after_removal(db, key, members, SET, b"spop")
    c.changes = len(popped)
    return popped


@command("srandmember", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def srandmember(c, argv):
    if len(argv) > 3:
        raise RedisError(errors.SYNTAX)
    if len(argv) == 2:
        members = c.db.read_typed(argv[1], set)
        return None if not members else _random_member(members)
    count = parse_int(argv[2])
    if count < -_LONG_MAX:
        raise RedisError(errors.VALUE_NOT_BETWEEN.format(-_LONG_MAX, _LONG_MAX))
    members = c.db.read_typed(argv[1], set)
    if members is None or count == 0:
        return []
    if count >= len(members):
        return list(in_reply_order(members, c.server.config))
    pool = tuple(members)
    if count < 0:
        if reply_overflows(c, -count * LEAST_BULK):
            return []  # the client is gone: Redis stops such a reply mid-run
        return [pool[random.randrange(len(pool))] for _ in range(-count)]
    return random.sample(pool, count)


@command("smove", arity=4, flags="write fast", keys=(1, 2, 1), group=G)
def smove(c, argv):
    source_key, destination_key, member = argv[1], argv[2], argv[3]
    db = c.db
    source = db.get(source_key)
    destination = db.get(destination_key)
    if source is None:
        c.changes = 0
        return 0
    if type(source) is not set or (destination is not None and type(destination) is not set):
        raise RedisError(errors.WRONGTYPE)
    if source is destination:
        c.changes = 0
        return int(member in source)
    if member not in source:
        c.changes = 0
        return 0
    _shrinking(source, (member,), c.server.config)
    source.discard(member)
    after_removal(db, source_key, source, SET, b"srem")
    if destination is None:
        db.set(destination_key, {member})
    elif member not in destination:
        destination.add(member)
        db.signal_modified(destination_key)
    else:
        return 1
    c.changes = 2  # removed from the source, and added to the destination
    if db.notifier is not None:
        notify(db, SET, b"sadd", destination_key)
    return 1


# --- algebra ------------------------------------------------------------------------------------

def _sources(c, keys: list[bytes]) -> list[set | None]:
    """Every key's set (None where missing); any other type is WRONGTYPE, even after a miss."""
    db = c.db
    found = []
    for key in keys:
        value = db.read(key)
        if value is not None and type(value) is not set:
            raise RedisError(errors.WRONGTYPE)
        found.append(value)
    return found


def _intersection(sources: list[set | None]) -> set:
    if any(source is None for source in sources):
        return set()
    ordered = sorted(sources, key=len)
    return ordered[0].intersection(*ordered[1:])


def _union(sources: list[set | None]) -> set:
    return set().union(*(source for source in sources if source is not None))


def _difference(sources: list[set | None]) -> set:
    first = sources[0]
    if first is None:
        return set()
    return first.difference(*(source for source in sources[1:] if source is not None))


def _store(c, destination: bytes, members: set, event: bytes) -> int:
    db = c.db
    if not members:
        if db.delete_without_lookup(destination):
            if db.notifier is not None:
                notify(db, GENERIC, b"del", destination)
        else:
            c.changes = 0
        return 0
    db.set(destination, members)
    if db.notifier is not None:
        notify(db, SET, event, destination)
    return len(members)


@command("sinter", arity=-2, flags="readonly", keys=(1, -1, 1), group=G)
def sinter(c, argv):
    return in_reply_order(_intersection(_sources(c, argv[1:])), c.server.config)


@command("sunion", arity=-2, flags="readonly", keys=(1, -1, 1), group=G)
def sunion(c, argv):
    return in_reply_order(_union(_sources(c, argv[1:])), c.server.config)


@command("sdiff", arity=-2, flags="readonly", keys=(1, -1, 1), group=G)
def sdiff(c, argv):
    return in_reply_order(_difference(_sources(c, argv[1:])), c.server.config)


@command("sinterstore", arity=-3, flags="write denyoom", keys=(1, -1, 1), group=G)
def sinterstore(c, argv):
    return _store(c, argv[1], _intersection(_sources(c, argv[2:])), b"sinterstore")


@command("sunionstore", arity=-3, flags="write denyoom", keys=(1, -1, 1), group=G)
def sunionstore(c, argv):
    return _store(c, argv[1], _union(_sources(c, argv[2:])), b"sunionstore")


@command("sdiffstore", arity=-3, flags="write denyoom", keys=(1, -1, 1), group=G)
def sdiffstore(c, argv):
    return _store(c, argv[1], _difference(_sources(c, argv[2:])), b"sdiffstore")


@command("sintercard", arity=-3, flags="readonly", group=G, key_finder=keys_after_numkeys(1))
def sintercard(c, argv):
    try:
        numkeys = parse_int(argv[1])
    except RedisError:
        raise RedisError(errors.NUMKEYS_NOT_POSITIVE) from None
    if numkeys < 1:
        raise RedisError(errors.NUMKEYS_NOT_POSITIVE)
    if numkeys > len(argv) - 2:
        raise RedisError(errors.NUMKEYS_EXCEED_ARGS)
    limit = 0
    index = 2 + numkeys
    while index < len(argv):
        if argv[index].lower() == b"limit" and index + 1 < len(argv):
            limit = parse_non_negative(argv[index + 1], errors.LIMIT_NEGATIVE)
            index += 2
        else:
            raise RedisError(errors.SYNTAX)
    sources = _sources(c, argv[2:2 + numkeys])
    if any(source is None for source in sources):
        return 0
    smallest, *others = sorted(sources, key=len)
    count = 0
    for member in smallest:
        if all(member in other for other in others):
            count += 1
            if count == limit:
                break
    return count


@command("sscan", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def sscan(c, argv):
    cursor = parse_scan_cursor(argv[2])
    members = c.db.read_typed(argv[1], set)
    if members is None:
        return [b"0", []]
    count, pattern, _ = parse_scan_options(argv, 3, allow_type=False)
    return list(scan_members(c, argv[1], members, members,
                             in_reply_order(members, c.server.config), cursor, count, pattern))
