"""The compact containers of the RDB format, as Redis 7.0 writes and reads them: listpacks
(written as lpAppend builds them, read, and checked as lpValidateIntegrity does), and the older
ziplists, intsets and zipmaps (read and checked). rdb.py makes values of them.
"""
from __future__ import annotations

import re
import struct
from typing import Callable

from minired.data import shared_integers
from minired.features.rdb_format import BadData, Reader, integer_value


def _lp_backlen(size: int) -> bytes:
    if size <= 127:
        return bytes((size,))
    if size < 16383:
        return bytes((size >> 7, (size & 127) | 128))
    if size < 2097151:
        return bytes((size >> 14, ((size >> 7) & 127) | 128, (size & 127) | 128))
    if size < 268435455:
        return bytes((size >> 21, ((size >> 14) & 127) | 128, ((size >> 7) & 127) | 128,
                      (size & 127) | 128))
    return bytes((size >> 28, ((size >> 21) & 127) | 128, ((size >> 14) & 127) | 128,
                  ((size >> 7) & 127) | 128, (size & 127) | 128))


def _lp_int(value: int) -> bytes:
    if 0 <= value <= 127:
        return _LP_SMALL_INTS[value]
    if -4096 <= value <= 4095:
        u = value & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF, 2))
    if -32768 <= value <= 32767:
        return b"\xf1" + struct.pack("<h", value) + b"\x03"
    if -8388608 <= value <= 8388607:
        return b"\xf2" + (value & 0xFFFFFF).to_bytes(3, "little") + b"\x04"
    if -2147483648 <= value <= 2147483647:
        return b"\xf3" + struct.pack("<i", value) + b"\x05"
    return b"\xf4" + struct.pack("<q", value) + b"\x09"


_LP_SMALL_INTS = [bytes((value, 1)) for value in range(128)]


# The header and the backlen of a listpack string of under 64 bytes, by its length.
_LP_SHORT_HEAD = [bytes((0x80 | n,)) for n in range(64)]
_LP_SHORT_BACKLEN = [bytes((n + 1,)) for n in range(64)]


def listpack_element(item: "bytes | int") -> bytes:
    if type(item) is int:
        return _lp_int(item)
    number = integer_value(item)  # lpStringToInt64: integers are stored as integers
    if number is not None:
        return _lp_int(number)
    n = len(item)
    if n < 64:  # most elements: two table reads
        return _LP_SHORT_HEAD[n] + item + _LP_SHORT_BACKLEN[n]
    if n < 4096:
        head = bytes((0xE0 | (n >> 8), n & 0xFF))
    else:
        head = b"\xf0" + struct.pack("<I", n)
    return head + item + _lp_backlen(len(head) + n)


def listpack(items: list) -> bytes:
    """A listpack of the items (bytes, or ints stored as integers), as lpAppend builds it."""
    return listpack_of([listpack_element(item) for item in items])


def listpack_of(elements: list[bytes]) -> bytes:
    """The listpack holding these encoded elements."""
    body = b"".join(elements)
    count = len(elements) if len(elements) < 65535 else 65535
    return struct.pack("<IH", 6 + len(body) + 1, count) + body + b"\xff"


_LP_INT_WIDTH = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}


# (the shared texts' list, bound here once: compiled, a C variable of rdb_containers.pxd)
_SHARED_INTEGERS = shared_integers.COUNT
_INT_TEXT: list[bytes] = shared_integers.TEXTS


def int_text(value: int) -> bytes:
    """An integer element as the text Redis returns for it: no formatting, and 0..9999 shared."""
    if 0 <= value < _SHARED_INTEGERS:
        if not _INT_TEXT:
            shared_integers.fill()
        return _INT_TEXT[value]
    return b"%d" % value


def listpack_items(blob: bytes, text: bool = False, keys_only: bool = False) -> list:
    """The elements of a listpack: bytes for strings, and for integers ints (or, with `text`,
    their decimal text). With `keys_only`, the listpack holds pairs (a hash's fields and
    values): only the first of each is made, as text; the others are walked and checked the
    same way, never made, and an odd count is refused."""
    if len(blob) < 7 or struct.unpack("<I", blob[:4])[0] != len(blob) or blob[-1] != 0xFF:
        raise BadData("Listpack integrity check failed")
    entries: list = []
    append = entries.append
    buf = blob  # compiled, a pointer into blob (rdb_containers.pxd)
    pos, end = 6, len(blob) - 1
    text = text or keys_only
    made = True  # whether this entry is made (with keys_only, one in two)
    while pos < end:
        first = buf[pos]
        if first < 0x80:
            if made:
                append(int_text(first) if text else first)
            size = 1
        elif first < 0xC0:
            n = first & 0x3F
            if pos + 1 + n > end:  # (checked before the pointer is sliced, compiled)
                raise BadData("Listpack integrity check failed")
            if made:
                append(buf[pos + 1:pos + 1 + n])
            size = 1 + n
        elif first < 0xE0:
            value = ((first & 0x1F) << 8) | buf[pos + 1]
            value = value - 8192 if value >= 4096 else value
            if made:
                append(int_text(value) if text else value)
            size = 2
        elif first < 0xF0:
            n = ((first & 0x0F) << 8) | buf[pos + 1]
            if pos + 2 + n > end:
                raise BadData("Listpack integrity check failed")
            if made:
                append(buf[pos + 2:pos + 2 + n])
            size = 2 + n
        elif first == 0xF0:
            n = struct.unpack("<I", blob[pos + 1:pos + 5])[0]
            if made:
                append(blob[pos + 5:pos + 5 + n])
            size = 5 + n
        elif first in _LP_INT_WIDTH:
            width = _LP_INT_WIDTH[first]
            if made:
                number = int.from_bytes(blob[pos + 1:pos + 1 + width], "little", signed=True)
                append(int_text(number) if text else number)
            size = 1 + width
        else:
            raise BadData("Listpack integrity check failed")
        pos += size + (1 if size < 128 else 2 if size < 16383 else 3 if size < 2097151
                       else 4 if size < 268435455 else 5)
        if pos > end:
            raise BadData("Listpack integrity check failed")
        if keys_only:
            made = not made
    if not made:  # (keys_only: a field without its value)
        raise BadData("Listpack integrity check failed")
    return entries


def _lp_entry_end(blob: bytes, pos: int) -> int:
    """Where the listpack entry at pos ends, its backlen checked as lpValidateNext does; -1 if
    it is not a valid entry inside the listpack."""
    last = len(blob) - 1  # (the EOF byte)
    first = blob[pos]
    if first < 0xE0 or 0xF1 <= first <= 0xF4:
        header = 1
    elif first < 0xF0:
        header = 2
    elif first == 0xF0:
        header = 5
    else:
        return -1
    if pos + header > last:
        return -1
    if first < 0x80:
        size = 1
    elif first < 0xC0:
        size = 1 + (first & 0x3F)
    elif first < 0xE0:
        size = 2
    elif first < 0xF0:
        size = 2 + (((first & 0x0F) << 8) | blob[pos + 1])
    elif first == 0xF0:
        size = 5 + struct.unpack("<I", blob[pos + 1:pos + 5])[0]
    else:
        size = 1 + _LP_INT_WIDTH[first]
    backlen = _lp_backlen(size)
    end = pos + size + len(backlen)
    if end > last:
        return -1
    decoded, shift, at = 0, 0, end - 1  # lpDecodeBacklen: read from the last byte back
    while True:
        decoded |= (blob[at] & 127) << shift
        if not blob[at] & 128:
            break
        shift += 7
        at -= 1
        if shift > 28:
            return -1
    return end if decoded == size else -1


def check_listpack(blob: bytes, count_in_header: bool = True) -> None:
    """lpValidateIntegrity with deep: every entry (and its backlen) inside the listpack, the last
    one right before the EOF byte, and as many as the header says (unless it says 65535)."""
    if len(blob) < 7 or struct.unpack("<I", blob[:4])[0] != len(blob) or blob[-1] != 0xFF:
        raise BadData("Listpack integrity check failed")
    pos, count, last = 6, 0, len(blob) - 1
    while pos < last:
        pos = _lp_entry_end(blob, pos)
        if pos < 0:
            raise BadData("Listpack integrity check failed")
        count += 1
    declared = struct.unpack("<H", blob[4:6])[0]
    if count_in_header and declared != 65535 and declared != count:
        raise BadData("Listpack integrity check failed")


def check_intset(blob: bytes) -> None:
    """intsetValidateIntegrity with deep: the integers strictly ascending (no duplicates)."""
    width = struct.unpack("<I", blob[:4])[0]
    values = [int.from_bytes(blob[i:i + width], "little", signed=True)
              for i in range(8, len(blob), width)]
    if any(a >= b for a, b in zip(values, values[1:])):
        raise BadData("Intset integrity check failed")


def check_ziplist(blob: bytes) -> None:
    """ziplistValidateIntegrity with deep: each entry's prevlen is the size of the one before,
    the tail offset points at the last entry, the count matches the header (unless 65535)."""
    if len(blob) < 11 or struct.unpack("<I", blob[:4])[0] != len(blob) or blob[-1] != 0xFF:
        raise BadData("Ziplist integrity check failed")
    tail = struct.unpack("<I", blob[4:8])[0]
    pos, previous_size, count, last_entry, end = 10, 0, 0, 10, len(blob) - 1
    while pos < end:
        start = pos
        if blob[pos] == 0xFE:
            prevlen = struct.unpack("<I", blob[pos + 1:pos + 5])[0]
            pos += 5
        else:
            prevlen = blob[pos]
            pos += 1
        if prevlen != previous_size:
            raise BadData("Ziplist integrity check failed")
        first = blob[pos]
        kind = first >> 6
        if kind == 0:
            pos += 1 + (first & 0x3F)
        elif kind == 1:
            pos += 2 + (((first & 0x3F) << 8) | blob[pos + 1])
        elif kind == 2:
            pos += 5 + struct.unpack(">I", blob[pos + 1:pos + 5])[0]
        else:
            pos += {0xC0: 3, 0xD0: 5, 0xE0: 9, 0xF0: 4, 0xFE: 2}.get(first, 1)
        if pos > end:
            raise BadData("Ziplist integrity check failed")
        previous_size, last_entry = pos - start, start
        count += 1
    declared = struct.unpack("<H", blob[8:10])[0]
    if tail != last_entry or (declared != 65535 and declared != count):
        raise BadData("Ziplist integrity check failed")


def read_packed(reader: "Reader", check: Callable[[bytes], None]) -> bytes:
    """A listpack or intset string, checked deeply (and counted) when the reader is deep."""
    blob = reader.string()
    if reader.deep:
        reader.sanitized += 1
        check(blob)
    return blob


def read_ziplist(reader: "Reader") -> bytes:
    """A ziplist (RDB 9 and older): always checked deeply, as Redis converts it to a listpack
    entry by entry (ziplistValidateIntegrity with deep, not counted as a sanitization)."""
    blob = reader.string()
    check_ziplist(blob)
    return blob


def element_text(item: "bytes | int") -> bytes:
    return item if type(item) is bytes else int_text(item)


def listpack_entries(blob: bytes) -> list[bytes]:
    """The elements of a listpack, integers spelled in decimal as Redis returns them."""
    return listpack_items(blob, True)


def ziplist_entries(blob: bytes) -> list[bytes]:
    """The elements of a ziplist (RDB 9 and older): the same values, another layout."""
    if len(blob) < 11 or struct.unpack("<I", blob[:4])[0] != len(blob) or blob[-1] != 0xFF:
        raise BadData("Ziplist integrity check failed")
    entries: list[bytes] = []
    pos, end = 10, len(blob) - 1
    try:
        while pos < end:
            pos += 5 if blob[pos] == 0xFE else 1  # prevlen
            first = blob[pos]
            kind = first >> 6
            if kind == 0:
                n = first & 0x3F
                entries.append(blob[pos + 1:pos + 1 + n])
                pos += 1 + n
            elif kind == 1:
                n = ((first & 0x3F) << 8) | blob[pos + 1]
                entries.append(blob[pos + 2:pos + 2 + n])
                pos += 2 + n
            elif kind == 2:
                n = struct.unpack(">I", blob[pos + 1:pos + 5])[0]
                entries.append(blob[pos + 5:pos + 5 + n])
                pos += 5 + n
            elif first == 0xC0:
                entries.append(int_text(struct.unpack("<h", blob[pos + 1:pos + 3])[0]))
                pos += 3
            elif first == 0xD0:
                entries.append(int_text(struct.unpack("<i", blob[pos + 1:pos + 5])[0]))
                pos += 5
            elif first == 0xE0:
                entries.append(int_text(struct.unpack("<q", blob[pos + 1:pos + 9])[0]))
                pos += 9
            elif first == 0xF0:
                entries.append(int_text(int.from_bytes(blob[pos + 1:pos + 4], "little",
                                                        signed=True)))
                pos += 4
            elif first == 0xFE:
                entries.append(int_text(struct.unpack("<b", blob[pos + 1:pos + 2])[0]))
                pos += 2
            elif 0xF1 <= first <= 0xFD:
                entries.append(int_text((first & 0x0F) - 1))
                pos += 1
            else:
                raise BadData("Ziplist integrity check failed")
    except (IndexError, struct.error):
        raise BadData("Ziplist integrity check failed") from None
    if pos != end:
        raise BadData("Ziplist integrity check failed")
    return entries


def zipmap_pairs(blob: bytes) -> list[tuple[bytes, bytes]]:
    """The field/value pairs of a zipmap (hashes of RDB 3 and older)."""
    pairs = []
    pos = 1  # zmlen

    def length() -> int:
        nonlocal pos
        first = blob[pos]
        if first < 254:
            pos += 1
            return first
        if first == 254:
            value = struct.unpack("<I", blob[pos + 1:pos + 5])[0]
            pos += 5
            return value
        raise BadData("Zipmap integrity check failed")

    try:
        while blob[pos] != 0xFF:
            n = length()
            field = blob[pos:pos + n]
            pos += n
            n = length()
            free = blob[pos]
            value = blob[pos + 1:pos + 1 + n]
            pos += 1 + n + free
            pairs.append((field, value))
    except (IndexError, struct.error):
        raise BadData("Zipmap integrity check failed") from None
    return pairs


_INTSET_FORMAT = {2: "h", 4: "i", 8: "q"}


def intset_members(blob: bytes) -> set[bytes]:
    if len(blob) < 8:
        raise BadData("Intset integrity check failed")
    width, count = struct.unpack("<II", blob[:8])
    if width not in _INTSET_FORMAT or len(blob) != 8 + width * count:
        raise BadData("Intset integrity check failed")
    numbers = struct.unpack_from("<%d%s" % (count, _INTSET_FORMAT[width]), blob, 8)
    return {int_text(number) for number in numbers}


def pairs_of(items: list[bytes]) -> list[tuple[bytes, bytes]]:
    if len(items) % 2:
        raise BadData("Listpack integrity check failed")
    return list(zip(items[::2], items[1::2]))


# The longest number strtod reads at the start of a string (after white space). A pattern, not
# compiled here: re compiles (and caches) it on first use, for the rare score that is not a
# plain number, rather than at every start (~0.4 ms).
_STRTOD_PREFIX = (
    rb"[ \t\n\v\f\r]*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    rb"(?:[pP][+-]?[0-9]+)?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN]))")


def zset_score(raw: bytes) -> float:
    """A zset listpack's (or ziplist's) score as zzlStrtod reads it: strtod of its first 127
    bytes, so a score that is no number reads as the number it starts with, or 0."""
    try:
        if b"_" in raw:  # (Python's float takes 1_000; strtod reads 1)
            raise ValueError
        score = float(raw)
    except ValueError:
        match = re.match(_STRTOD_PREFIX, raw[:127].split(b"\0", 1)[0])
        if match is None:
            return 0.0
        number = match.group(1)
        if b"x" in number.lower():
            sign = -1.0 if number[:1] == b"-" else 1.0
            text = number.lstrip(b"+-")[2:].decode()
            score = sign * float.fromhex("0x" + (text if "p" in text.lower() else text + "p0"))
        else:
            score = float(number)
    if score != score:
        raise BadData("Zset with NAN score detected")
    return score
