"""String commands: GET/SET and their variants, counters, ranges (bit operations and LCS live in
strings_bits.py)."""
from __future__ import annotations

import cython

from minired.commands import strings_longdouble as longdouble
from minired.commands.keys import set_deadline
from minired.data.keyspace import Database
from minired.engine.args import int_text, parse_int
from minired.engine.client import Client
from minired.engine.table import command
from minired.features.notifications import GENERIC, STRING, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK

G = "string"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

# SET / GETEX option flags, as t_string.c names them.
_NX, _XX, _GET, _KEEPTTL, _PERSIST = 1, 2, 4, 8, 16
_EX, _PX, _EXAT, _PXAT = 32, 64, 128, 256
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT
_MAX_SECONDS = INT64_MAX // 1000  # the largest EX/EXAT that converts to ms in an int64
_MAX_EXPIRE = INT64_MAX
# Each option's bit by its spelling: the upper and lower case spellings clients send are looked
# up as they are, without building an uppercased copy; other spellings are uppercased first.
_OPTION_BITS = {spelling: bit
                for name, bit in ((b"NX", _NX), (b"XX", _XX), (b"GET", _GET), (b"KEEPTTL", _KEEPTTL),
                                  (b"PERSIST", _PERSIST), (b"EX", _EX), (b"PX", _PX),
                                  (b"EXAT", _EXAT), (b"PXAT", _PXAT))
                for spelling in (name, name.lower())}


def _parse_set_options(argv: list, start: int, is_set: bool) -> tuple[int, bytes | None]:
    """SET and GETEX options as parseExtendedStringArgumentsOrReply reads them: each option
    is refused (syntax error) when an option it conflicts with came before it."""
    flags = 0
    expire = None
    j = start
    argc = len(argv)
    while j < argc:
        found = _OPTION_BITS.get(argv[j])
        if found is None:
            found = _OPTION_BITS.get(argv[j].upper(), 0)
        bit = found
        if bit & _ANY_EXPIRE:
            # The same expiry option again is allowed (the last value wins); another one is not.
            if j + 1 == argc or flags & (_KEEPTTL | _PERSIST | (_ANY_EXPIRE & ~bit)):
                raise RedisError(errors.SYNTAX)
            j += 1
            expire = argv[j]
        elif bit == _NX or bit == _XX:
            if not is_set or flags & (_NX | _XX) & ~bit:
                raise RedisError(errors.SYNTAX)
        elif bit == _GET:
            if not is_set:
                raise RedisError(errors.SYNTAX)
        elif bit == _KEEPTTL:
            if not is_set or flags & (_PERSIST | _ANY_EXPIRE):
                raise RedisError(errors.SYNTAX)
        elif bit == _PERSIST:
            if is_set or flags & (_ANY_EXPIRE | _KEEPTTL):
                raise RedisError(errors.SYNTAX)
        else:
            raise RedisError(errors.SYNTAX)
        flags |= bit
        j += 1
    return flags, expire


def _deadline(c, raw: bytes, flags: int, command_name: str) -> int:
    """The absolute expiry in ms for an EX/PX/EXAT/PXAT argument (getExpireMillisecondsOrReply)."""
    value = parse_int(raw)
    in_seconds = flags & (_EX | _EXAT)
    if value <= 0 or (in_seconds and value > _MAX_SECONDS):
        raise RedisError(errors.INVALID_EXPIRE.format(command_name))
    if in_seconds:
        value *= 1000
    if flags & (_EX | _PX):
        now = c.server.clock.ms()  # (not db.clock, which stands still while an AOF loads)
        if now > 0 and value > _MAX_EXPIRE - now:  # the int64 addition would overflow in Redis
            raise RedisError(errors.INVALID_EXPIRE.format(command_name))
        value += now
    return value


def _set_generic(c, key: bytes, value: bytes, flags: int, deadline: int | None,
                 ok_reply=OK, abort_reply=None):
    db = c.db
    if flags & _GET:
        old = db.read_typed(key, bytes)
        found = old is not None
    else:
        old = None
        found = (flags & (_NX | _XX)) and db.get(key) is not None
    if (flags & _NX and found) or (flags & _XX and not found):
        c.changes = 0
        return old if flags & _GET else abort_reply
    if deadline is None:
        db.set(key, value, keep_ttl=bool(flags & _KEEPTTL))
    else:  # the new deadline replaces any old one: no need to clear it first
        db.set(key, value, keep_ttl=True)
        db.set_expiry(key, deadline)
    if db.notifier is not None:
        notify(db, STRING, b"set", key)
        if deadline is not None:
            notify(db, GENERIC, b"expire", key)
    return old if flags & _GET else ok_reply


@command("get", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def get(c, argv):
    return c.db.read_typed(argv[1], bytes)


@command("set", arity=-3, flags="write denyoom", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database)
def set_(c, argv):
    if len(argv) == 3:
        db = c.db
        db.set(argv[1], argv[2])
        if db.notifier is not None:
            notify(db, STRING, b"set", argv[1])
        return OK
    flags, expire = _parse_set_options(argv, 3, is_set=True)
    deadline = None if expire is None else _deadline(c, expire, flags, "set")
    return _set_generic(c, argv[1], argv[2], flags, deadline)


@command("setnx", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def setnx(c, argv):
    return _set_generic(c, argv[1], argv[2], _NX, None, ok_reply=1, abort_reply=0)


@command("setex", arity=4, flags="write denyoom", keys=(1, 1, 1), group=G)
def setex(c, argv):
    deadline = _deadline(c, argv[2], _EX, "setex")
    return _set_generic(c, argv[1], argv[3], 0, deadline)


@command("psetex", arity=4, flags="write denyoom", keys=(1, 1, 1), group=G)
def psetex(c, argv):
    deadline = _deadline(c, argv[2], _PX, "psetex")
    return _set_generic(c, argv[1], argv[3], 0, deadline)


@command("getset", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def getset(c, argv):
    db = c.db
    old = db.read_typed(argv[1], bytes)
    db.set(argv[1], argv[2])
    if db.notifier is not None:
        notify(db, STRING, b"set", argv[1])
    return old


@command("getdel", arity=2, flags="write fast", keys=(1, 1, 1), group=G)
def getdel(c, argv):
    db = c.db
    value = db.read_typed(argv[1], bytes)
    if value is None:
        c.changes = 0
    else:
        db.delete(argv[1])
        if db.notifier is not None:
            notify(db, GENERIC, b"del", argv[1])
    return value


@command("getex", arity=-2, flags="write fast", keys=(1, 1, 1), group=G)
def getex(c, argv):
    flags, expire = _parse_set_options(argv, 2, is_set=False)
    db = c.db
    key = argv[1]
    value = db.read_typed(key, bytes)
    if value is None:
        c.changes = 0
        return None
    if expire is not None:
        deadline = _deadline(c, expire, flags, "getex")
        # Only an absolute deadline can be in the past: EX and PX count from now.
        set_deadline(db, key, deadline,
                     bool(flags & (_EXAT | _PXAT)) and db.clock.already_passed(deadline))
    elif flags & _PERSIST and db.persist(key):
        db.signal_modified(key)
        if db.notifier is not None:
            notify(db, GENERIC, b"persist", key)
    else:
        c.changes = 0  # (a plain GET, or PERSIST of a key without a TTL)
    return value


@command("mget", arity=-2, flags="readonly fast", keys=(1, -1, 1), group=G)
def mget(c, argv):
    get_value = c.db.read
    values = []
    for key in argv[1:]:
        value = get_value(key)
        values.append(value if type(value) is bytes else None)
    return values


def _pairs(argv: list) -> list[tuple[bytes, bytes]]:
    if len(argv) % 2 == 0:
        raise errors.wrong_arity(argv[0].decode("utf-8", "replace").lower())
    return list(zip(argv[1::2], argv[2::2]))


@command("mset", arity=-3, flags="write denyoom", keys=(1, -1, 2), group=G)
def mset(c, argv):
    db = c.db
    pairs = _pairs(argv)
    for key, value in pairs:
        db.set(key, value)
        if db.notifier is not None:
            notify(db, STRING, b"set", key)
    c.changes = len(pairs)
    return OK


@command("msetnx", arity=-3, flags="write denyoom", keys=(1, -1, 2), group=G)
def msetnx(c, argv):
    db = c.db
    pairs = _pairs(argv)
    if any(db.get(key) is not None for key, _ in pairs):
        c.changes = 0
        return 0
    for key, value in pairs:
        db.set(key, value)
        if db.notifier is not None:
            notify(db, STRING, b"set", key)
    c.changes = len(pairs)
    return 1


# --- counters ------------------------------------------------------------------------------

def _incr_by(c, key: bytes, increment: int) -> int:
    db = c.db
    current = db.get_typed(key, bytes)
    value = 0 if current is None else parse_int(current)
    result = value + increment
    if not INT64_MIN <= result <= INT64_MAX:
        raise RedisError(errors.OVERFLOW)
    db.set(key, int_text(result), True)  # keep_ttl
    if db.notifier is not None:
        notify(db, STRING, b"incrby", key)
    return result


@command("incr", arity=2, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def incr(c, argv):
    return _incr_by(c, argv[1], 1)


@command("decr", arity=2, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def decr(c, argv):
    return _incr_by(c, argv[1], -1)


@command("incrby", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def incrby(c, argv):
    return _incr_by(c, argv[1], parse_int(argv[2]))


@command("decrby", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def decrby(c, argv):
    decrement = parse_int(argv[2])
    if decrement == INT64_MIN:
        raise RedisError(errors.DECREMENT_OVERFLOW)
    return _incr_by(c, argv[1], -decrement)


@command("incrbyfloat", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def incrbyfloat(c, argv):
    db = c.db
    key = argv[1]
    current = db.get_typed(key, bytes)
    operands = []
    for raw in (b"0" if current is None else current, argv[2]):
        try:
            operands.append(longdouble.parse(raw))
        except longdouble.NotAFloat:
            raise RedisError(errors.NOT_FLOAT) from None
        except longdouble.NotFinite:
            operands.append(None)  # inf: valid to parse, but any sum with it is not finite
    if None in operands:
        raise RedisError(errors.INCR_FLOAT_NAN)
    try:
        result = longdouble.format_human(longdouble.add(*operands))
    except longdouble.NotFinite:
        raise RedisError(errors.INCR_FLOAT_NAN) from None
    db.set(key, result, keep_ttl=True)
    if db.notifier is not None:
        notify(db, STRING, b"incrbyfloat", key)
    return result


# --- whole-string and range operations -----------------------------------------------------

def check_string_length(c, size: int) -> None:
    if size > c.server.config.proto_max_bulk_len:
        raise RedisError(errors.STRING_TOO_LONG)


@command("append", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def append(c, argv):
    db = c.db
    key = argv[1]
    current = db.get_typed(key, bytes)
    if current is None:
        value = argv[2]
        db.set(key, value)
    else:
        check_string_length(c, len(current) + len(argv[2]))
        value = current + argv[2]
        db.set(key, value, keep_ttl=True)
    if db.notifier is not None:
        notify(db, STRING, b"append", key)
    return len(value)


@command("strlen", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def strlen(c, argv):
    value = c.db.read_typed(argv[1], bytes)
    return 0 if value is None else len(value)


@command("getrange", arity=4, flags="readonly", keys=(1, 1, 1), group=G)
def getrange(c, argv):
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    value = c.db.read_typed(argv[1], bytes)
    if value is None:
        return b""
    length = len(value)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(length + start, 0)
    if end < 0:
        end = max(length + end, 0)
    end = min(end, length - 1)
    if start > end or length == 0:
        return b""
    return value[start:end + 1]


@command("substr", arity=4, flags="readonly", keys=(1, 1, 1), group=G)
def substr(c, argv):
    return getrange(c, argv)


# From this size on, SETRANGE builds the new value in one copy (a memoryview's slices joined).
_ONE_COPY = 4096


@command("setrange", arity=4, flags="write denyoom", keys=(1, 1, 1), group=G)
def setrange(c, argv):
    offset = parse_int(argv[2])
    if offset < 0:
        raise RedisError(errors.OFFSET_OUT_OF_RANGE)
    db = c.db
    key = argv[1]
    patch = argv[3]
    current = db.get_typed(key, bytes)
    if current is None:
        if not patch:
            c.changes = 0
            return 0
        check_string_length(c, offset + len(patch))
        current = b""
    else:
        if not patch:
            c.changes = 0
            return len(current)
        check_string_length(c, offset + len(patch))
    if len(current) < offset:
        current += bytes(offset - len(current))
    if len(current) < _ONE_COPY:
        value = current[:offset] + patch + current[offset + len(patch):]
    else:  # a big value is copied once, not once per slice and concatenation
        view = memoryview(current)
        value = b"".join((view[:offset], patch, view[offset + len(patch):]))
    db.set(key, value, keep_ttl=True)
    if db.notifier is not None:
        notify(db, STRING, b"setrange", key)
    return len(value)
