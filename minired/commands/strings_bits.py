"""Bit-level string commands (SETBIT, GETBIT, BITCOUNT, BITPOS) and LCS.

Bits are numbered from the most significant bit of the first byte, as in Redis. Ranges are
turned into absolute bit positions and handled with Python big integers, which keeps the edge
handling of BIT-mode ranges simple and the byte scanning in C.
"""
from __future__ import annotations

from array import array

from minired.engine.args import parse_int
from minired.engine.table import command
from minired.features.notifications import STRING, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError

G = "bitmap"


def parse_bit_offset(c, raw: bytes) -> int:
    """A bit offset (getBitOffsetFromArgument): an integer in [0, proto-max-bulk-len * 8)."""
    offset = parse_int(raw, errors.BIT_OFFSET)
    if offset < 0 or (offset >> 3) >= c.server.config.proto_max_bulk_len:
        raise RedisError(errors.BIT_OFFSET)
    return offset


@command("setbit", arity=4, flags="write denyoom", keys=(1, 1, 1), group=G)
def setbit(c, argv):
    offset = parse_bit_offset(c, argv[2])
    on = parse_int(argv[3], errors.BIT_VALUE)
    if on not in (0, 1):
        raise RedisError(errors.BIT_VALUE)
    db = c.db
    key = argv[1]
    value = db.get_typed(key, bytes)
    byte_index = offset >> 3
    mask = 0x80 >> (offset & 7)
    grown = value is None or len(value) <= byte_index
    if value is None:
        value = b""
    if len(value) <= byte_index:
        value += bytes(byte_index + 1 - len(value))
    old_byte = value[byte_index]
    new_byte = (old_byte | mask) if on else (old_byte & ~mask)
    if new_byte == old_byte and not grown:
        c.changes = 0  # nothing changed: not dirty, no signal (WATCH, tracking)
        return 1 if old_byte & mask else 0
    value = value[:byte_index] + bytes((new_byte,)) + value[byte_index + 1:]
    db.set(key, value, keep_ttl=True)
    if db.notifier is not None:
        notify(db, STRING, b"setbit", key)
    return 1 if old_byte & mask else 0


@command("getbit", arity=3, flags="readonly fast", keys=(1, 1, 1), group=G)
def getbit(c, argv):
    offset = parse_bit_offset(c, argv[2])
    value = c.db.read_typed(argv[1], bytes)
    byte_index = offset >> 3
    if value is None or byte_index >= len(value):
        return 0
    return 1 if value[byte_index] & (0x80 >> (offset & 7)) else 0


def _range_unit(raw: bytes) -> bool:
    """True for BIT, False for BYTE."""
    unit = raw.upper()
    if unit == b"BIT":
        return True
    if unit == b"BYTE":
        return False
    raise RedisError(errors.SYNTAX)


def _clamp(start: int, end: int, length: int) -> tuple[int, int]:
    """Redis's index normalisation: negatives count from the end, then clamp to the value."""
    if start < 0:
        start = max(length + start, 0)
    if end < 0:
        end = max(length + end, 0)
    return start, min(end, length - 1)


def _bits(value: bytes, first_bit: int, last_bit: int) -> tuple[int, int, int]:
    """The bits first_bit..last_bit of value as (integer, its width, shift of last_bit)."""
    chunk = value[first_bit >> 3:(last_bit >> 3) + 1]
    width = len(chunk) * 8
    relative_first = first_bit & 7
    relative_last = relative_first + (last_bit - first_bit)
    shift = width - 1 - relative_last
    mask = ((1 << (relative_last - relative_first + 1)) - 1) << shift
    return int.from_bytes(chunk, "big") & mask, mask, width


@command("bitcount", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def bitcount(c, argv):
    value = c.db.read_typed(argv[1], bytes)
    if value is None:
        return 0
    argc = len(argv)
    if argc == 2:
        return int.from_bytes(value, "big").bit_count()
    if argc not in (4, 5):
        raise RedisError(errors.SYNTAX)
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    if start < 0 and end < 0 and start > end:
        return 0  # before the unit is read, as in Redis
    in_bits = _range_unit(argv[4]) if argc == 5 else False
    length = len(value) * 8 if in_bits else len(value)
    start, end = _clamp(start, end, length)
    if start > end:
        return 0
    if not in_bits:
        return int.from_bytes(value[start:end + 1], "big").bit_count()
    bits, _, _ = _bits(value, start, end)
    return bits.bit_count()


@command("bitpos", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def bitpos(c, argv):
    bit = parse_int(argv[2])
    if bit not in (0, 1):
        raise RedisError(errors.BIT_ARGUMENT)
    value = c.db.read_typed(argv[1], bytes)
    if value is None:
        return -1 if bit else 0
    argc = len(argv)
    if argc > 6:
        raise RedisError(errors.SYNTAX)
    in_bits = False
    end_given = argc >= 5
    if argc == 3:
        start, end = 0, len(value) - 1
    else:
        start = parse_int(argv[3])
        if argc == 6:
            in_bits = _range_unit(argv[5])
        end = parse_int(argv[4]) if end_given else (len(value) * 8 + 7 if in_bits else len(value) - 1)
    length = len(value) * 8 if in_bits else len(value)
    start, end = _clamp(start, end, length)
    if start > end:
        return -1
    first_bit, last_bit = (start, end) if in_bits else (start * 8, end * 8 + 7)
    bits, mask, width = _bits(value, first_bit, last_bit)
    wanted = bits if bit else ~bits & mask
    if wanted:
        return (first_bit & ~7) + width - wanted.bit_length()
    if bit == 0 and not end_given:
        # With no explicit end the string counts as padded with zero bits on the right.
        return (last_bit | 7) + 1
    return -1


@command("lcs", arity=-3, flags="readonly", keys=(1, 2, 1), group="string")
def lcs(c, argv):
    db = c.db
    a, b = db.read(argv[1]), db.read(argv[2])
    if (a is not None and type(a) is not bytes) or (b is not None and type(b) is not bytes):
        raise RedisError(errors.LCS_NOT_STRINGS)
    a = a or b""
    b = b or b""
    want_idx = want_len = with_match_len = False
    min_match_len = 0
    j = 3
    while j < len(argv):
        opt = argv[j].upper()
        if opt == b"IDX":
            want_idx = True
        elif opt == b"LEN":
            want_len = True
        elif opt == b"WITHMATCHLEN":
            with_match_len = True
        elif opt == b"MINMATCHLEN" and j + 1 < len(argv):
            min_match_len = max(parse_int(argv[j + 1]), 0)
            j += 1
        else:
            raise RedisError(errors.SYNTAX)
        j += 1
    if want_idx and want_len:
        raise RedisError(errors.LCS_IDX_AND_LEN)
    if (len(a) + 1) * (len(b) + 1) * 4 > c.server.config.proto_max_bulk_len:
        raise RedisError(errors.LCS_TOO_MUCH_MEMORY)
    table = _lcs_table(a, b)
    width = len(b) + 1
    total = table[len(a) * width + len(b)]
    if want_len:
        return total
    return _lcs_walk(a, b, table, total, want_idx, min_match_len, with_match_len)


def _lcs_table(a: bytes, b: bytes) -> array:
    """table[i * (len(b)+1) + j] = length of the LCS of a[:i] and b[:j]."""
    width = len(b) + 1
    table = array("I", bytes(4 * (len(a) + 1) * width))
    previous = [0] * width
    for i, byte_a in enumerate(a, 1):
        row = [0] * width
        for j, byte_b in enumerate(b, 1):
            if byte_a == byte_b:
                row[j] = previous[j - 1] + 1
            else:
                up, left = previous[j], row[j - 1]
                row[j] = up if up > left else left
        table[i * width:(i + 1) * width] = array("I", row)
        previous = row
    return table


def _lcs_walk(a: bytes, b: bytes, table: array, total: int, want_idx: bool,
              min_match_len: int, with_match_len: bool):
    """Walk the table back from the end as lcsCommand does, collecting the LCS string and the
    matching ranges (latest first, as Redis emits them)."""
    width = len(b) + 1
    result = bytearray(total)
    matches = []
    unset = len(a)
    a_start = a_end = b_start = b_end = 0
    a_start = unset
    i, j, k = len(a), len(b), total
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            result[k - 1] = a[i - 1]
            if a_start == unset:
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            k -= 1
            i -= 1
            j -= 1
        else:
            if table[(i - 1) * width + j] > table[i * width + j - 1]:
                i -= 1
            else:
                j -= 1
            if a_start != unset:
                emit = True
        if emit:
            match_len = a_end - a_start + 1
            if want_idx and (min_match_len == 0 or match_len >= min_match_len):
                match = [[a_start, a_end], [b_start, b_end]]
                if with_match_len:
                    match.append(match_len)
                matches.append(match)
            a_start = unset
    if want_idx:
        return {b"matches": matches, b"len": total}
    return bytes(result)
