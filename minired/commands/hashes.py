"""Hash commands. A hash is a dict field -> value; insertion order is kept, which is also the
order Redis replies in for the small (listpack) hashes clients mostly see."""
from __future__ import annotations

import itertools
import random

import cython

from minired.commands import strings_longdouble as longdouble
from minired.commands.collection_scan import scan_members
from minired.commands.keys import parse_scan_cursor, parse_scan_options
from minired.data.keyspace import Database
from minired.engine.args import int_text, parse_int, parse_random_count
from minired.engine.client import Client
from minired.engine.table import command
from minired.features.notifications import HASH, after_removal, notify
from minired.features.output_limits import LEAST_BULK, reply_overflows
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK

G = "hash"
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _set_fields(c, argv) -> int:
    """HSET/HMSET: store the field/value pairs, returning how many fields are new."""
    if len(argv) % 2:
        raise errors.wrong_arity(argv[0].lower().decode("latin-1"))
    key = argv[1]
    db = c.db
    fields = db.get_typed(key, dict)
    created = fields is None
    if created:
        fields = {}
    before = len(fields)
    for index in range(2, len(argv), 2):
        fields[argv[index]] = argv[index + 1]
    if len(argv) > 4:
        c.changes = (len(argv) - 2) // 2  # one per field set, new or not
    if created:
        db.set(key, fields)
    else:
        db.signal_modified(key)
    if db.notifier is not None:
        notify(db, HASH, b"hset", key)
    return len(fields) - before


@command("hset", arity=-4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def hset(c, argv):
    return _set_fields(c, argv)


@command("hmset", arity=-4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def hmset(c, argv):
    _set_fields(c, argv)
    return OK


@command("hsetnx", arity=4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def hsetnx(c, argv):
    key, field = argv[1], argv[2]
    db = c.db
    fields = db.get_typed(key, dict)
    if fields is None:
        db.set(key, {field: argv[3]})
    elif field in fields:
        c.changes = 0
        return 0
    else:
        fields[field] = argv[3]
        db.signal_modified(key)
    if db.notifier is not None:
        notify(db, HASH, b"hset", key)
    return 1


@command("hget", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def hget(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    return None if fields is None else fields.get(argv[2])


@command("hmget", arity=-3, flags="readonly fast", keys=(1, 1, 1), group=G)
def hmget(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    if fields is None:
        return [None] * (len(argv) - 2)
    get = fields.get
    return [get(field) for field in argv[2:]]


@command("hgetall", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def hgetall(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    # A map in RESP3, a flat field/value array in RESP2 (the encoder flattens dicts).
    return {} if fields is None else dict(fields)


@command("hdel", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def hdel(c, argv):
    key = argv[1]
    db = c.db
    fields = db.get_typed(key, dict)
    if fields is None:
        c.changes = 0
        return 0
    deleted = 0
    for field in argv[2:]:
        if fields.pop(field, None) is not None:
            deleted += 1
            if not fields:
                break
    if deleted:
        after_removal(db, key, fields, HASH, b"hdel")
    c.changes = deleted
    return deleted


@command("hexists", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def hexists(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    return int(fields is not None and argv[2] in fields)


@command("hlen", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def hlen(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    return 0 if fields is None else len(fields)


@command("hstrlen", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def hstrlen(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    if fields is None:
        return 0
    value = fields.get(argv[2])
    return 0 if value is None else len(value)


@command("hkeys", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
def hkeys(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    return [] if fields is None else list(fields)


@command("hvals", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
def hvals(c, argv):
    fields = c.db.read_typed(argv[1], dict)
    return [] if fields is None else list(fields.values())


@command("hincrby", arity=4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def hincrby(c, argv):
    increment = parse_int(argv[3])
    key, field = argv[1], argv[2]
    db = c.db
    fields = db.get_typed(key, dict)
    current = 0
    if fields is not None and field in fields:
        current = parse_int(fields[field], errors.HASH_NOT_INTEGER)
    result = current + increment
    if not _INT64_MIN <= result <= _INT64_MAX:
        raise RedisError(errors.OVERFLOW)
    _store_number(db, key, fields, field, int_text(result))
    if db.notifier is not None:
        notify(db, HASH, b"hincrby", key)
    return result


@command("hincrbyfloat", arity=4, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def hincrbyfloat(c, argv):
    # Redis does this sum in long double, printed with %.17Lf: see strings_longdouble.
    try:
        increment = longdouble.parse(argv[3])
    except longdouble.NotAFloat:
        raise RedisError(errors.NOT_FLOAT) from None
    except longdouble.NotFinite:
        raise RedisError(errors.NAN_OR_INFINITY) from None
    key, field = argv[1], argv[2]
    db = c.db
    fields = db.get_typed(key, dict)
    current = 0
    if fields is not None and field in fields:
        try:
            current = longdouble.parse(fields[field])
        except longdouble.NotAFloat:
            raise RedisError(errors.HASH_NOT_FLOAT) from None
        except longdouble.NotFinite:
            # strtold reads a stored "inf"; adding to it can only give an infinite result.
            raise RedisError(errors.INCR_FLOAT_NAN) from None
    try:
        result = longdouble.add(current, increment)
    except longdouble.NotFinite:
        raise RedisError(errors.INCR_FLOAT_NAN) from None
    text = longdouble.format_human(result)
    _store_number(db, key, fields, field, text)
    if db.notifier is not None:
        notify(db, HASH, b"hincrbyfloat", key)
    return text


def _store_number(db, key: bytes, fields: dict | None, field: bytes, text: bytes) -> None:
    if fields is None:
        db.set(key, {field: text})
    else:
        fields[field] = text
        db.signal_modified(key)


@command("hrandfield", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def hrandfield(c, argv):
    if len(argv) == 2:
        fields = c.db.read_typed(argv[1], dict)
        if not fields:
            return None
        return _nth_field(fields, random.randrange(len(fields)))
    count, withvalues = parse_random_count(argv, b"withvalues")
    fields = c.db.read_typed(argv[1], dict)
    if fields is None or count == 0:
        return []
    size = len(fields)
    if count >= size:
        picked = list(fields)
    else:
        names = list(fields)
        if count < 0:
            if reply_overflows(c, -count * LEAST_BULK * (1 + withvalues)):
                return []  # the client is gone: Redis stops such a reply mid-run
            picked = [names[random.randrange(size)] for _ in range(-count)]
        else:
            picked = random.sample(names, count)
    if not withvalues:
        return picked
    if c.protocol == 2:
        flat = []
        for field in picked:
            flat.append(field)
            flat.append(fields[field])
        return flat
    return [[field, fields[field]] for field in picked]


def _nth_field(fields: dict, index: int) -> bytes:
    return next(itertools.islice(fields, index, None))


@command("hscan", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def hscan(c, argv):
    cursor = parse_scan_cursor(argv[2])
    fields = c.db.read_typed(argv[1], dict)
    if fields is None:
        return [b"0", []]
    count, pattern, _ = parse_scan_options(argv, 3, allow_type=False)
    next_cursor, names = scan_members(c, argv[1], fields, fields, fields, cursor, count, pattern)
    flat = []
    for name in names:
        flat.append(name)
        flat.append(fields[name])
    return [next_cursor, flat]
