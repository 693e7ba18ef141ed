"""BITOP, BITFIELD and BITFIELD_RO.

Bits are numbered from the most significant bit of the first byte, as SETBIT numbers them.
BITOP works on whole strings as Python big integers, so long strings are combined in C rather
than byte by byte. BITFIELD reads and writes each field through the few bytes that hold it.
"""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command
from minired.features.notifications import GENERIC, STRING, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError

G = "bitmap"

_INT64_MASK = (1 << 64) - 1
_INT64_SIGN = 1 << 63


def _wrap64(number: int) -> int:
    """number as a C int64 holds it after wrapping around."""
    return ((number + _INT64_SIGN) & _INT64_MASK) - _INT64_SIGN


# --- BITOP ---------------------------------------------------------------------------------

def _bitop_and(numbers: list, width: int) -> int:
    result = numbers[0]
    for number in numbers[1:]:
        result &= number
    return result


def _bitop_or(numbers: list, width: int) -> int:
    result = 0
    for number in numbers:
        result |= number
    return result


def _bitop_xor(numbers: list, width: int) -> int:
    result = 0
    for number in numbers:
        result ^= number
    return result


def _bitop_not(numbers: list, width: int) -> int:
    return numbers[0] ^ ((1 << (width * 8)) - 1)


_BITOPS = {b"and": _bitop_and, b"or": _bitop_or, b"xor": _bitop_xor, b"not": _bitop_not}


@command("bitop", arity=-4, flags="write denyoom", keys=(2, -1, 1), group=G)
def bitop(c, argv):
    operation = _BITOPS.get(argv[1].lower())
    if operation is None:
        raise RedisError(errors.SYNTAX)
    if operation is _bitop_not and len(argv) != 4:
        raise RedisError(errors.BITOP_NOT_SINGLE_SOURCE)
    db = c.db
    # Every source is checked before anything is written: a WRONGTYPE leaves no trace.
    sources = [db.read_typed(key, bytes) or b"" for key in argv[3:]]
    width = max(len(source) for source in sources)
    target = argv[2]
    if not width:
        if db.delete_without_lookup(target):
            if db.notifier is not None:
                notify(db, GENERIC, b"del", target)
        else:
            c.changes = 0
        return 0
    # Shorter strings count as padded with zero bytes on the right.
    numbers = [int.from_bytes(source.ljust(width, b"\0"), "big") for source in sources]
    db.set(target, operation(numbers, width).to_bytes(width, "big"))
    if db.notifier is not None:
        notify(db, STRING, b"set", target)
    return width


# --- BITFIELD ------------------------------------------------------------------------------

_GET, _SET, _INCRBY = 0, 1, 2
_WRAP, _SAT, _FAIL = 0, 1, 2
_OPCODES = {b"get": (_GET, 2), b"set": (_SET, 3), b"incrby": (_INCRBY, 3)}
_OVERFLOWS = {b"wrap": _WRAP, b"sat": _SAT, b"fail": _FAIL}


def _parse_type(raw: bytes) -> tuple[bool, int]:
    """(signed, width) from i1..i64 or u1..u63 (getBitfieldTypeFromArgument)."""
    sign = raw[:1]
    if sign not in (b"i", b"u"):
        raise RedisError(errors.BITFIELD_INVALID_TYPE)
    signed = sign == b"i"
    width = parse_int(raw[1:], errors.BITFIELD_INVALID_TYPE)
    if width < 1 or width > (64 if signed else 63):
        raise RedisError(errors.BITFIELD_INVALID_TYPE)
    return signed, width


def _parse_offset(c, raw: bytes, width: int) -> int:
    """A bit offset, or with a leading '#' a field index multiplied by the type's width.

    The multiplication is a C int64 one in Redis: a huge '#' index wraps around, and what the
    wrapped offset lands on is what Redis then accepts or refuses."""
    by_field = raw[:1] == b"#"
    offset = parse_int(raw[1:] if by_field else raw, errors.BIT_OFFSET)
    if by_field:
        offset = _wrap64(offset * width)
    if offset < 0 or (offset >> 3) >= c.server.config.proto_max_bulk_len:
        raise RedisError(errors.BIT_OFFSET)
    return offset


def _parse_operations(c, argv) -> tuple[list, bool, int]:
    """The operations in argv as (opcode, signed, width, offset, argument, overflow), whether
    they only read, and the highest bit a write reaches. Every operation is checked before
    any runs, so a bad one anywhere leaves the key untouched."""
    operations = []
    overflow = _WRAP
    read_only = True
    highest_bit = 0
    argc = len(argv)
    j = 2
    while j < argc:
        remaining = argc - j - 1
        name = argv[j].lower()
        if name == b"overflow" and remaining >= 1:
            overflow = _OVERFLOWS.get(argv[j + 1].lower(), -1)
            if overflow < 0:
                raise RedisError(errors.BITFIELD_INVALID_OVERFLOW)
            j += 2
            continue
        opcode, needed = _OPCODES.get(name, (-1, 0))
        if opcode < 0 or remaining < needed:
            raise RedisError(errors.SYNTAX)
        signed, width = _parse_type(argv[j + 1])
        offset = _parse_offset(c, argv[j + 2], width)
        argument = 0
        if opcode != _GET:
            read_only = False
            highest_bit = max(highest_bit, offset + width - 1)
            argument = parse_int(argv[j + 3])
        operations.append((opcode, signed, width, offset, argument, overflow))
        j += needed + 1
    return operations, read_only, highest_bit


def _read_field(data, offset: int, width: int) -> int:
    """The unsigned field at offset; bits past the end of data read as zeros."""
    first = offset >> 3
    size = ((offset + width - 1) >> 3) - first + 1
    chunk = data[first:first + size]
    number = int.from_bytes(chunk, "big") << (8 * (size - len(chunk)))
    return (number >> (size * 8 - (offset & 7) - width)) & ((1 << width) - 1)


def _write_field(data: bytearray, offset: int, width: int, value: int) -> None:
    first = offset >> 3
    size = ((offset + width - 1) >> 3) - first + 1
    shift = size * 8 - (offset & 7) - width
    field_mask = (1 << width) - 1
    number = int.from_bytes(data[first:first + size], "big")
    number = (number & ~(field_mask << shift)) | ((value & field_mask) << shift)
    data[first:first + size] = number.to_bytes(size, "big")


def _as_signed(value: int, width: int) -> int:
    return value - (1 << width) if value >> (width - 1) else value


def _signed_direction(value: int, increment: int, width: int) -> int:
    """checkSignedBitfieldOverflow: 1 above the field's range, -1 below, 0 if value+increment
    fits. Its limits on the increment are int64 differences that wrap around for a SET of a
    value far outside the field (SET i8 with -2**63 counts as an overflow upwards), which shows
    under OVERFLOW SAT, so they are computed as C computes them."""
    high = (1 << (width - 1)) - 1
    low = -high - 1
    max_increment = _wrap64(high - value)
    min_increment = _wrap64(low - value)
    if value > high or (width != 64 and increment > max_increment) or (
            value >= 0 and 0 < increment and increment > max_increment):
        return 1
    if value < low or (width != 64 and increment < min_increment) or (
            value < 0 and increment < 0 and increment < min_increment):
        return -1
    return 0


def _settle_signed(value: int, increment: int, width: int, overflow: int) -> int | None:
    """The value to store for value+increment in a signed field: itself if it fits, else
    wrapped or saturated; None when it does not fit under OVERFLOW FAIL."""
    direction = _signed_direction(value, increment, width)
    if not direction:
        return value + increment
    if overflow == _FAIL:
        return None
    if overflow == _SAT:
        return (1 << (width - 1)) - 1 if direction > 0 else -(1 << (width - 1))
    return _as_signed((value + increment) & ((1 << width) - 1), width)


def _settle_unsigned(total: int, width: int, overflow: int) -> int | None:
    """As _settle_signed for an unsigned field, whose checks are exact."""
    high = (1 << width) - 1
    if 0 <= total <= high:
        return total
    if overflow == _FAIL:
        return None
    if overflow == _SAT:
        return high if total > high else 0
    return total & high


def _bitfield(c, argv, read_only_command: bool):
    operations, read_only, highest_bit = _parse_operations(c, argv)
    db = c.db
    key = argv[1]
    if read_only:
        data = db.read_typed(key, bytes) or b""
        if not read_only_command:
            c.changes = 0  # BITFIELD of GETs only: a write command that changed nothing
        return [_get(data, operation) for operation in operations]
    if read_only_command:
        raise RedisError(errors.BITFIELD_RO_GET_ONLY)
    value = db.get_typed(key, bytes)
    data = bytearray(value or b"")
    grown = (highest_bit >> 3) + 1 - len(data)
    if grown > 0:
        data.extend(bytes(grown))
    replies = []
    changes = 0
    for operation in operations:
        opcode, signed, width, offset, argument, overflow = operation
        if opcode == _GET:
            replies.append(_get(data, operation))
            continue
        old = _read_field(data, offset, width)
        if signed:
            old = _as_signed(old, width)
            if opcode == _INCRBY:
                new = _settle_signed(old, argument, width, overflow)
            else:
                new = _settle_signed(argument, 0, width, overflow)
        else:
            # SET takes the int64 as C's uint64 cast sees it: -1 is far above any field.
            total = old + argument if opcode == _INCRBY else argument & _INT64_MASK
            new = _settle_unsigned(total, width, overflow)
        if new is None:
            replies.append(None)
            continue
        replies.append(new if opcode == _INCRBY else old)
        _write_field(data, offset, width, new)
        if grown > 0 or new != old:
            changes += 1
    c.changes = changes  # Redis's server.dirty counts each field written or grown
    if changes:
        db.set(key, bytes(data), keep_ttl=True)
        if db.notifier is not None:
            notify(db, STRING, b"setbit", key)
    elif grown > 0:
        # Redis creates or pads the string before running the operations, but only tells
        # WATCH about it when an operation wrote something.
        if value is None and db.notifier is not None:
            db.notifier.key_created(db, key)
        db.data[key] = bytes(data)
    return replies


def _get(data, operation) -> int:
    _, signed, width, offset, _, _ = operation
    field = _read_field(data, offset, width)
    return _as_signed(field, width) if signed else field


@command("bitfield", arity=-2, flags="write denyoom", keys=(1, 1, 1), group=G)
def bitfield(c, argv):
    return _bitfield(c, argv, read_only_command=False)


@command("bitfield_ro", arity=-2, flags="readonly fast", keys=(1, 1, 1), group=G)
def bitfield_ro(c, argv):
    return _bitfield(c, argv, read_only_command=True)
