"""Redis 7.0's RDB encoding of values (format version 10), one encoder and one decoder per type,
shared by DUMP/RESTORE payloads, FUNCTION DUMP/RESTORE and the dump.rdb file (rdb_file.py).

Written: strings (with the integer encodings and LZF compression, as rdbSaveRawString does),
lists, sets and hashes as plain element sequences, sorted sets as RDB_TYPE_ZSET_2 and streams
as RDB_TYPE_STREAM_LISTPACKS_2 (listpacks, consumer groups, PELs, consumers): all loaded by
Redis 7.0, which picks its compact encodings again as it loads. Read: all of that plus every
encoding Redis 7.0 itself loads (quicklists of listpacks or ziplists, intsets, listpack and
ziplist hashes and sorted sets, zipmaps, the old string-scored sorted sets, version 1 streams).
"""
from __future__ import annotations

import re
import struct
from typing import Any, Callable

from minired.data import shared_integers
from minired.data.keyspace import type_name
from minired.data.packed import Packed, live, pack, register_unpacking, small
from minired.data.quicklist import QuickList
from minired.data.stream import Stream, StreamNode
from minired.data.stream_groups import Consumer, ConsumerGroup, PendingEntry, estimate_entries_read
from minired.data.zset import ZSet, pack_scores, scores_view
from minired.features import lzf
from minired.protocol.resp import string2ll

RDB_VERSION = 10  # Redis 7.0

ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3

TYPE_STRING, TYPE_LIST, TYPE_SET, TYPE_ZSET, TYPE_HASH, TYPE_ZSET_2 = 0, 1, 2, 3, 4, 5
TYPE_MODULE, TYPE_MODULE_2 = 6, 7
TYPE_HASH_ZIPMAP, TYPE_LIST_ZIPLIST, TYPE_SET_INTSET, TYPE_ZSET_ZIPLIST = 9, 10, 11, 12
TYPE_HASH_ZIPLIST, TYPE_LIST_QUICKLIST, TYPE_STREAM_LISTPACKS = 13, 14, 15
TYPE_HASH_LISTPACK, TYPE_ZSET_LISTPACK, TYPE_LIST_QUICKLIST_2 = 16, 17, 18
TYPE_STREAM_LISTPACKS_2 = 19


def is_object_type(kind: int) -> bool:
    """A type byte that starts a key's value, as a version-10 file may hold them:
    RDB_TYPE_STRING (0) to RDB_TYPE_STREAM_LISTPACKS_2 (19), 8 unused. Compiled, a C test (the
    load loop asks it once per key)."""
    return 0 <= kind < 20 and kind != 8


OBJECT_TYPES = frozenset(kind for kind in range(256) if is_object_type(kind))

_QUICKLIST_PLAIN, _QUICKLIST_PACKED = 1, 2
_U64 = 2**64 - 1
_INT64_MAX = 2**63 - 1
_STREAM_DELETED, _STREAM_SAMEFIELDS = 1, 2


EOF_MESSAGE = "Unexpected EOF reading RDB file"


class BadData(Exception):
    """The bytes do not decode as RDB."""


class EmptyKey(BadData):
    """A container with no elements: RESTORE refuses it, a file load skips the key."""


class ModuleData(BadData):
    """A module's value: minired has no modules, as a Redis without that module."""


# --- CRC64 (Jones polynomial, reflected: Redis's crc64.c) ----------------------------------------

def _crc64_table() -> list[int]:
    poly = 0x95AC9329AC4BC9B5
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64_TABLE: list[int] = []  # filled on first use


def _crc64_python(data: bytes, crc: int = 0) -> int:
    if not _CRC64_TABLE:
        _CRC64_TABLE.extend(_crc64_table())
    table = _CRC64_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


# anycrc's model, made on first use: importing anycrc and building the model cost ~1 ms of
# start-up, and most servers never DUMP or save.
_crc64_model = None


def crc64(data: bytes, crc: int = 0) -> int:
    """CRC64 as Redis's crc64.c: by anycrc in C (GB/s) where installed, else the loop above
    (~6 MB/s)."""
    global _crc64_model
    if not data:
        return crc
    model = _crc64_model
    if model is None:
        try:
            import anycrc
        except ImportError:  # pragma: no cover - anycrc is a dependency
            return _crc64_python(data, crc)
        model = _crc64_model = anycrc.Model("CRC64-REDIS")
    return model.calc(data, crc)


# --- payload framing -----------------------------------------------------------------------------

def seal(body: bytes) -> bytes:
    """A DUMP payload: the body, the RDB version, and the CRC64 of both."""
    body += struct.pack("<H", RDB_VERSION)
    return body + struct.pack("<Q", crc64(body))


def footer_ok(payload: bytes, allow_zero_crc: bool = False, check_crc: bool = True) -> bool:
    """Whether the payload's version is one we read and its checksum matches (not checked
    without `check_crc`: DEBUG SET-SKIP-CHECKSUM-VALIDATION 1)."""
    if len(payload) < 10:
        return False
    version = struct.unpack("<H", payload[-10:-8])[0]
    if version > RDB_VERSION:
        return False
    if not check_crc:
        return True
    crc = struct.unpack("<Q", payload[-8:])[0]
    return (allow_zero_crc and crc == 0) or crc == crc64(payload[:-8])


# --- writing primitives --------------------------------------------------------------------------

def integer_value(raw: bytes) -> int | None:
    """string2ll's reading of raw, sooner for what a save meets most: text that is plainly not
    a number (one C call to tell), and short digit strings (int() in C)."""
    if raw.isdigit():  # ASCII digits only, at least one
        if len(raw) < 19 and (raw[0] != 48 or len(raw) == 1):  # no leading zero, fits int64
            return int(raw)
        return string2ll(raw)
    if raw[:1] == b"-":
        return string2ll(raw)
    return None


def encode_length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFF_FFFF:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


# encode_string's compress_from: from which length strings are LZF-compressed.
COMPRESS_AS_REDIS = 21  # rdbSaveRawString's: every string over 20 bytes (DUMP payloads)
# Files: pure-Python LZF costs ~20 us per short string, and saving a few bytes of a short one
# is not worth it (a save of 200k short keys took 4.6 s instead of 0.6 s). Redis reads both.
COMPRESS_IN_FILES = 256
NO_COMPRESSION = 1 << 62


def encode_string(value: bytes, compress_from: int = COMPRESS_AS_REDIS) -> bytes:
    """rdbSaveRawString: short decimal integers in the int encodings, strings of compress_from
    bytes or more (and over 20) LZF-compressed when that saves at least four bytes."""
    size = len(value)
    if size <= 11:
        number = integer_value(value)
        if number is not None and -(1 << 31) <= number < 1 << 31:
            if -(1 << 7) <= number < 1 << 7:
                return bytes((0xC0 | ENC_INT8,)) + struct.pack("<b", number)
            if -(1 << 15) <= number < 1 << 15:
                return bytes((0xC0 | ENC_INT16,)) + struct.pack("<h", number)
            return bytes((0xC0 | ENC_INT32,)) + struct.pack("<i", number)
    elif size >= compress_from and size > 20:
        packed = lzf.compress(value, size - 4)
        if packed is not None:
            return (bytes((0xC0 | ENC_LZF,)) + encode_length(len(packed)) + encode_length(size)
                    + packed)
    return encode_length(size) + value


def _encode_ms(ms: int) -> bytes:
    return struct.pack("<q", ms)


def _encode_id(stream_id: tuple) -> bytes:
    return struct.pack(">QQ", *stream_id)


# --- reading primitives --------------------------------------------------------------------------

class Reader:
    """A cursor over RDB bytes; every read past the end raises BadData."""

    __slots__ = ("data", "pos", "deep", "sanitized")

    def __init__(self, data: bytes, pos: int = 0, deep: bool = False) -> None:
        self.data = data
        self.pos = pos
        # Check compact encodings entry by entry as well (sanitize-dump-payload): see
        # check_listpack, check_ziplist, check_intset.
        self.deep = deep
        self.sanitized = 0  # compact encodings checked deeply (INFO dump_payload_sanitizations)

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise BadData(EOF_MESSAGE)
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        data = self.data
        buf = data  # compiled, a pointer into data (rdb.pxd)
        pos = self.pos
        if pos >= len(data):
            raise BadData(EOF_MESSAGE)
        self.pos = pos + 1
        return buf[pos]

    def length(self) -> tuple[int, int | None]:
        """(length, None) or (0, special string encoding)."""
        first = self.byte()
        kind = first >> 6
        if kind == 0:
            return first & 0x3F, None
        if kind == 1:
            return ((first & 0x3F) << 8) | self.byte(), None
        if kind == 3:
            return 0, first & 0x3F
        if first == 0x80:
            return self.big_endian(4), None
        if first == 0x81:  # (a stream's IDs: every millisecond time since 2004 takes 8 bytes)
            return self.big_endian(8), None
        raise BadData("Unknown length encoding %d in rdbLoadLen()" % first)

    def big_endian(self, n: int) -> int:
        """The next n (at most 8) bytes as a big-endian unsigned integer."""
        data = self.data
        buf = data  # compiled, a pointer into data (rdb.pxd)
        pos = self.pos
        if pos + n > len(data):
            raise BadData(EOF_MESSAGE)
        value = 0
        for i in range(pos, pos + n):
            value = (value << 8) | buf[i]
        self.pos = pos + n
        return value

    def count(self) -> int:
        data = self.data
        buf = data  # compiled, a pointer into data (rdb.pxd)
        pos = self.pos
        if pos < len(data) and buf[pos] < 0x40:  # one byte: most counts, inline
            self.pos = pos + 1
            return buf[pos]
        # rdbLoadLen(rdb, NULL): a special encoding's byte reads as its low 6 bits.
        n, special = self.length()
        return n if special is None else special

    def unchecked_count(self) -> int:
        """A count read as Redis's rdbLoadLen(rdb, NULL) where its caller checks no error (a
        stream's IDs and counters): a special encoding's low 6 bits, RDB_LENERR (2**64 - 1)
        for an unknown encoding. Only a read past the end fails."""
        first = self.byte()
        if first < 0x40:  # a 6-bit length, in this byte: most of them
            return first
        if first >> 6 == 3:
            return first & 0x3F
        if first >> 6 == 2 and first not in (0x80, 0x81):
            return _U64
        self.pos -= 1
        return self.length()[0]

    def string(self) -> bytes:
        # The common cases inline: loading is mostly this call. A length under 64 in one byte,
        # and an LZF string whose two lengths each take one byte (Redis compresses every
        # string over 20 bytes, so most values of a file it wrote are those).
        data = self.data
        buf = data  # compiled, a pointer into data (rdb.pxd)
        pos = self.pos
        size = len(data)
        if pos < size:
            first = buf[pos]
            if first < 0x40:
                end = pos + 1 + first
                if end <= size:
                    self.pos = end
                    # (compiled, a slice of the pointer: the bytes made straight from it, where
                    # slicing the bytes object made a slice object and went through its
                    # subscript, ~800 instructions of the ~1,400 a short string took)
                    return buf[pos + 1:end]
            elif first == 0xC3 and pos + 3 <= size:  # 0xC0 | ENC_LZF (a C constant compiled)
                compressed_len = buf[pos + 1]
                plain_len = buf[pos + 2]
                end = pos + 3 + compressed_len
                if compressed_len < 0x40 and plain_len < 0x40 and end <= size:
                    self.pos = end
                    try:
                        return lzf.decompress_span(data, pos + 3, end, plain_len)
                    except lzf.LzfError:
                        raise BadData("Invalid LZF compressed string") from None
        n, special = self.length()
        if special is None:
            return self.take(n)
        if special == ENC_INT8:
            return b"%d" % struct.unpack("<b", self.take(1))[0]
        if special == ENC_INT16:
            return b"%d" % struct.unpack("<h", self.take(2))[0]
        if special == ENC_INT32:
            return b"%d" % struct.unpack("<i", self.take(4))[0]
        if special == ENC_LZF:
            packed_size = self.count()
            plain_size = self.count()
            try:
                return lzf.decompress(self.take(packed_size), plain_size)
            except lzf.LzfError:
                raise BadData("Invalid LZF compressed string") from None
        raise BadData("Unknown RDB string encoding type %d" % special)

    def double(self) -> float:
        return struct.unpack("<d", self.take(8))[0]

    def string_double(self) -> float:
        """rdbLoadDoubleValue: the old sorted set scores, as length-prefixed text."""
        n = self.byte()
        if n == 253:
            return float("nan")
        if n == 254:
            return float("inf")
        if n == 255:
            return float("-inf")
        try:
            return float(self.take(n))
        except ValueError:
            raise BadData("Invalid double value") from None

    def ms(self) -> int:
        return struct.unpack("<q", self.take(8))[0]

    def stream_id(self) -> tuple[int, int]:
        return struct.unpack(">QQ", self.take(16))


# --- compact containers (listpack, ziplist, intset, zipmap) --------------------------------------

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


def _lp_element(item: "bytes | int") -> bytes:
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
    return _listpack_of([_lp_element(item) for item in items])


def _listpack_of(elements: list[bytes]) -> bytes:
    """The listpack holding these encoded elements."""
    body = b"".join(elements)
    count = len(elements) if len(elements) < 65535 else 65535
    return struct.pack("<IH", 6 + len(body) + 1, count) + body + b"\xff"


_LP_INT_WIDTH = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}


# (the shared texts' list, bound here once: compiled, a C variable of rdb.pxd)
_SHARED_INTEGERS = shared_integers.COUNT
_INT_TEXT: list[bytes] = shared_integers.TEXTS


def _int_text(value: int) -> bytes:
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
    buf = blob  # compiled, a pointer into blob (rdb.pxd)
    pos, end = 6, len(blob) - 1
    text = text or keys_only
    made = True  # whether this entry is made (with keys_only, one in two)
    while pos < end:
        first = buf[pos]
        if first < 0x80:
            if made:
                append(_int_text(first) if text else first)
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
                append(_int_text(value) if text else value)
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
                append(_int_text(number) if text else number)
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


def _read_packed(reader: "Reader", check: Callable[[bytes], None]) -> bytes:
    """A listpack or intset string, checked deeply (and counted) when the reader is deep."""
    blob = reader.string()
    if reader.deep:
        reader.sanitized += 1
        check(blob)
    return blob


def _read_ziplist(reader: "Reader") -> bytes:
    """A ziplist (RDB 9 and older): always checked deeply, as Redis converts it to a listpack
    entry by entry (ziplistValidateIntegrity with deep, not counted as a sanitization)."""
    blob = reader.string()
    check_ziplist(blob)
    return blob


def _as_bytes(item: "bytes | int") -> bytes:
    return item if type(item) is bytes else _int_text(item)


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
                entries.append(_int_text(struct.unpack("<h", blob[pos + 1:pos + 3])[0]))
                pos += 3
            elif first == 0xD0:
                entries.append(_int_text(struct.unpack("<i", blob[pos + 1:pos + 5])[0]))
                pos += 5
            elif first == 0xE0:
                entries.append(_int_text(struct.unpack("<q", blob[pos + 1:pos + 9])[0]))
                pos += 9
            elif first == 0xF0:
                entries.append(_int_text(int.from_bytes(blob[pos + 1:pos + 4], "little",
                                                        signed=True)))
                pos += 4
            elif first == 0xFE:
                entries.append(_int_text(struct.unpack("<b", blob[pos + 1:pos + 2])[0]))
                pos += 2
            elif 0xF1 <= first <= 0xFD:
                entries.append(_int_text((first & 0x0F) - 1))
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


def _intset(blob: bytes) -> set[bytes]:
    if len(blob) < 8:
        raise BadData("Intset integrity check failed")
    width, count = struct.unpack("<II", blob[:8])
    if width not in _INTSET_FORMAT or len(blob) != 8 + width * count:
        raise BadData("Intset integrity check failed")
    numbers = struct.unpack_from("<%d%s" % (count, _INTSET_FORMAT[width]), blob, 8)
    return {_int_text(number) for number in numbers}


def _pairs(items: list[bytes]) -> list[tuple[bytes, bytes]]:
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


def _score(raw: bytes) -> float:
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


# --- streams -------------------------------------------------------------------------------------

def _signed64(value: int) -> int:
    value &= _U64
    return value - 2**64 if value > _INT64_MAX else value


def _node_listpack(node: StreamNode) -> bytes:
    """The listpack of one macro node, laid out as streamAppendItem builds it. The entries a
    deletion left in Redis's listpack are gone here; as many tombstones stand in for them, at the
    node's last ID, so the node's counts and its last ID load back as they were."""
    master_ms, master_seq = node.master_id
    fields = node.master_fields
    nfields = len(fields)
    items: list = [len(node.ids), node.deleted, nfields, *fields, 0]
    for (ms, seq), pairs in zip(node.ids, node.values):
        ms_diff, seq_diff = _signed64(ms - master_ms), _signed64(seq - master_seq)
        if len(pairs) == 2 * nfields and pairs[0::2] == fields:
            items += (_STREAM_SAMEFIELDS, ms_diff, seq_diff, *pairs[1::2], nfields + 3)
        else:
            n = len(pairs) // 2
            items += (0, ms_diff, seq_diff, n, *pairs, 2 * n + 4)
    if node.deleted:
        ms_diff = _signed64(node.last_id[0] - master_ms)
        seq_diff = _signed64(node.last_id[1] - master_seq)
        tombstone = (_STREAM_DELETED | _STREAM_SAMEFIELDS, ms_diff, seq_diff,
                     *([b""] * nfields), nfields + 3)
        for _ in range(node.deleted):
            items += tombstone
    return listpack(items)


def _encode_stream(stream: Stream, compress_from: int) -> bytes:
    out = [encode_length(len(stream.nodes))]
    for node in stream.nodes:
        out.append(encode_string(_encode_id(node.master_id), compress_from))
        out.append(encode_string(_node_listpack(node), compress_from))
    out.append(encode_length(stream.length))
    for stream_id in (stream.last_id, stream.first_id, stream.max_deleted_id):
        out.append(encode_length(stream_id[0]))
        out.append(encode_length(stream_id[1]))
    out.append(encode_length(stream.entries_added))
    groups = sorted(stream.groups.items())  # Redis walks its radix tree: by name
    out.append(encode_length(len(groups)))
    for name, group in groups:
        out.append(encode_string(name, compress_from))
        out.append(encode_length(group.last_id[0]))
        out.append(encode_length(group.last_id[1]))
        out.append(encode_length(_U64 if group.entries_read is None else group.entries_read))
        out.append(encode_length(len(group.pending)))
        for stream_id, entry in group.pending.items():
            out.append(_encode_id(stream_id) + _encode_ms(entry.delivery_time)
                       + encode_length(entry.delivery_count & _U64))
        consumers = group.sorted_consumers()
        out.append(encode_length(len(consumers)))
        for consumer in consumers:
            out.append(encode_string(consumer.name, compress_from))
            out.append(_encode_ms(consumer.seen_time))
            out.append(encode_length(len(consumer.pending)))
            out.extend(_encode_id(stream_id) for stream_id in consumer.pending)
    return b"".join(out)


def _decode_node(master_id: tuple, blob: bytes, deep: bool = False) -> StreamNode:
    """A stream node's listpack; with deep, checked as streamValidateListpackIntegrity does: its
    entries one by one (not their count in the header), then that the entries (live and
    deleted) are as many as the master entry says, each with its lp-count right."""
    if deep:
        check_listpack(blob, count_in_header=False)
    items = listpack_items(blob)
    if not items:
        raise BadData("Empty listpack inside stream")
    if deep:
        _check_node_layout(items)
    try:
        it = iter(items)
        next(it)  # live count: the entries themselves say
        next(it)  # deleted count: likewise
        nfields = next(it)
        fields = [_as_bytes(next(it)) for _ in range(nfields)]
        next(it)  # the master entry's terminator
        node = StreamNode(master_id, fields)
        ids = node.ids
        values = node.values
        master_ms, master_seq = master_id
        last_id = master_id
        for flags in it:
            stream_id = ((master_ms + next(it)) & _U64, (master_seq + next(it)) & _U64)
            if flags & _STREAM_SAMEFIELDS:
                pairs = []
                for field in fields:
                    pairs.append(field)
                    pairs.append(_as_bytes(next(it)))
            else:
                pairs = [_as_bytes(next(it)) for _ in range(2 * next(it))]
            next(it)  # lp-count
            if flags & _STREAM_DELETED:
                node.deleted += 1
            else:
                # Taken in the listpack's order, as Redis takes them, even out of order: a
                # stream's reads then walk them in that order as Redis's iterator does.
                # (not node.append: it sizes each entry, and the listpack's size says it all)
                ids.append(stream_id)
                values.append(pairs)
            last_id = stream_id
    except (StopIteration, TypeError):
        raise BadData("Stream listpack integrity check failed") from None
    node.last_id = last_id
    # Sizes as the listpack has them (tombstones included), so nodes fill up as in Redis: the
    # entries take what the listpack holds beyond the node's fixed part and counts.
    node._entries_bytes = len(blob) - node.byte_size()  # (byte_size counts no entry yet)
    return node


def _check_node_layout(items: list) -> None:
    try:
        live, deleted, master_fields = items[0], items[1], items[2]
        pos = 3 + master_fields
        if items[pos] != 0:  # the master entry's terminator
            raise BadData("Stream listpack integrity check failed")
        pos += 1
        for _ in range(live + deleted):
            flags = items[pos]
            fields, extra = master_fields, 3
            int(items[pos + 1]) + int(items[pos + 2])  # the ID's two parts are integers
            pos += 3
            if not flags & _STREAM_SAMEFIELDS:
                fields = items[pos]
                pos += 1 + fields
                extra += fields + 1
            pos += fields
            if items[pos] != fields + extra:  # lp-count
                raise BadData("Stream listpack integrity check failed")
            pos += 1
    except (IndexError, TypeError, ValueError):
        raise BadData("Stream listpack integrity check failed") from None
    if pos != len(items):
        raise BadData("Stream listpack integrity check failed")


def _node_key(node: StreamNode) -> tuple:
    return node.master_id


def _decode_stream(reader: Reader, version_2: bool) -> Stream:
    stream = Stream()
    # Redis's rax orders the nodes by key whatever the file's order, refuses a key twice, and
    # keeps a node whose entries are all deleted (minired drops it).
    node_keys: set = set()
    for _ in range(reader.count()):
        key = reader.string()
        if len(key) != 16:
            raise BadData("Stream node key entry is not the size of a stream ID")
        if reader.deep:
            reader.sanitized += 1
        node = _decode_node(struct.unpack(">QQ", key), reader.string(), reader.deep)
        if node.ids or node.deleted:
            if node.master_id in node_keys:
                raise BadData("Listpack re-added with existing key")
            node_keys.add(node.master_id)
            if node.ids:
                stream.nodes.append(node)
    stream.nodes.sort(key=_node_key)
    # The length is taken as the file says, as Redis takes it, even where it is not the
    # number of entries (stream.py does not count on it to find them).
    stream.length = reader.unchecked_count()
    stream.last_id = (reader.unchecked_count(), reader.unchecked_count())
    if version_2:
        stream.first_id = (reader.unchecked_count(), reader.unchecked_count())
        stream.max_deleted_id = (reader.unchecked_count(), reader.unchecked_count())
        stream.entries_added = reader.unchecked_count()
    else:
        first = stream.first_entry()
        stream.first_id = first[0] if first is not None else (0, 0)
        stream.entries_added = stream.length
    if stream.length and not node_keys:
        raise BadData("Stream length inconsistent with rax entries")
    for _ in range(reader.count()):
        name = reader.string()
        last_id = (reader.count(), reader.count())
        if version_2:
            entries_read = reader.count()
            entries_read = None if entries_read > _INT64_MAX else entries_read
        else:
            entries_read = estimate_entries_read(stream, last_id)
        group = ConsumerGroup(last_id, entries_read)
        if name in stream.groups:
            raise BadData("Duplicated consumer group name")
        stream.groups[name] = group
        for _ in range(reader.count()):
            stream_id = reader.stream_id()
            entry = PendingEntry(None, reader.ms())
            count = reader.count()
            entry.delivery_count = count - 2**64 if count > _INT64_MAX else count
            if stream_id in group.pending:
                raise BadData("Duplicated global PEL entry loading stream consumer group")
            group.pending[stream_id] = entry
        for _ in range(reader.count()):
            consumer = Consumer(reader.string(), 0)
            consumer.seen_time = reader.ms()
            if consumer.name in group.consumers:
                raise BadData("Duplicate stream consumer detected")
            group.consumers[consumer.name] = consumer
            for _ in range(reader.count()):
                stream_id = reader.stream_id()
                entry = group.pending.get(stream_id)
                if entry is None or entry.consumer is not None:
                    raise BadData("Consumer entry not found in group global PEL")
                entry.consumer = consumer
                consumer.pending[stream_id] = entry
        for entry in group.pending.values():
            if entry.consumer is None:
                raise BadData("Stream CG PEL entry without consumer")
    return stream


# --- values --------------------------------------------------------------------------------------

def _encode_elements(rdb_type: int, items, compress_from: int) -> bytes:
    items = list(items)
    return (bytes((rdb_type,)) + encode_length(len(items))
            + b"".join([encode_string(item, compress_from) for item in items]))


class Compact:
    """Up to which sizes Redis 7.0 keeps a value in a compact encoding (its config): values
    within them are written in that encoding, as Redis writes them, so DUMP payloads are
    Redis's bytes and files load with the same encodings."""

    __slots__ = ("hash_entries", "hash_value", "zset_entries", "zset_value", "intset_entries",
                 "list_fill")

    def __init__(self, hash_entries: int = 512, hash_value: int = 64, zset_entries: int = 128,
                 zset_value: int = 64, intset_entries: int = 512, list_fill: int = -2) -> None:
        self.hash_entries = hash_entries
        self.hash_value = hash_value
        self.zset_entries = zset_entries
        self.zset_value = zset_value
        self.intset_entries = intset_entries
        self.list_fill = list_fill

    @classmethod
    def from_config(cls, get: Callable[[str], Any]) -> "Compact":
        return cls(int(get("hash-max-listpack-entries")), int(get("hash-max-listpack-value")),
                   int(get("zset-max-listpack-entries")), int(get("zset-max-listpack-value")),
                   int(get("set-max-intset-entries")), int(get("list-max-listpack-size")))


_INT64_MIN = -(2**63)
# quicklist.c: optimization_level, the node sizes of list-max-listpack-size -1 .. -5.
_QUICKLIST_NODE_BYTES = (4096, 8192, 16384, 32768, 65536)
_QUICKLIST_SAFETY_LIMIT = 8192
_QUICKLIST_SIZE_ESTIMATE_OVERHEAD = 8
_QUICKLIST_LARGE_ELEMENT = 1 << 30


def d2string(value: float) -> bytes:
    """A score as Redis 7.0's d2string spells it (listpack sorted sets store this text)."""
    if value != value:
        return b"nan"
    if value in (float("inf"), float("-inf")):
        return b"inf" if value > 0 else b"-inf"
    if value == 0:
        return b"-0" if struct.pack("<d", value)[7] & 0x80 else b"0"
    if -4503599627370495 < value < 4503599627370496 and value == int(value):
        return b"%d" % int(value)
    return b"%.17g" % value


def _intset_blob(members) -> bytes | None:
    numbers = []
    for member in members:
        number = integer_value(member)
        if number is None:
            return None
        numbers.append(number)
    numbers.sort()
    low, high = numbers[0], numbers[-1]
    if low >= -(1 << 15) and high < 1 << 15:
        width, code = 2, "h"
    elif low >= -(1 << 31) and high < 1 << 31:
        width, code = 4, "i"
    else:
        width, code = 8, "q"
    return struct.pack("<II", width, len(numbers)) + struct.pack("<%d%s" % (len(numbers), code),
                                                                  *numbers)


def quicklist_nodes(items, fill: int,
                    large_element: int = _QUICKLIST_LARGE_ELEMENT) -> list[list[bytes]]:
    """The nodes a quicklist built by tail pushes holds (_quicklistNodeAllowInsert); elements
    of `large_element` bytes or more are plain nodes of their own (packed_threshold)."""
    return [node for node, _ in _quicklist_layout(items, fill, large_element)]


def _quicklist_node_limit(fill: int) -> int | None:
    """A node's most bytes for list-max-listpack-size `fill` (negative), None for a count."""
    return _QUICKLIST_NODE_BYTES[min(-fill, 5) - 1] if fill < 0 else None


def _quicklist_layout(items, fill: int,
                      large_element: int) -> list[tuple[list[bytes], list[bytes]]]:
    """quicklist_nodes, each node with its elements' listpack encodings (the sizes that decide
    the layout are theirs, so a save reuses them instead of encoding every element twice)."""
    nodes: list[tuple[list[bytes], list[bytes]]] = []
    node: list[bytes] | None = None
    encoded: list[bytes] = []
    node_bytes = 0
    limit = _quicklist_node_limit(fill)
    for item in items:
        size = len(item)
        allowed = False
        if node is not None and size < large_element:
            new_size = node_bytes + size + _QUICKLIST_SIZE_ESTIMATE_OVERHEAD
            if limit is not None and new_size <= limit:
                allowed = True
            elif new_size > _QUICKLIST_SAFETY_LIMIT:
                allowed = False
            else:
                allowed = fill >= 0 and len(node) < fill
        if not allowed:
            node = []
            encoded = []
            nodes.append((node, encoded))
            node_bytes = 7  # an empty listpack
        element = _lp_element(item)
        node.append(item)
        encoded.append(element)
        node_bytes += len(element)
        if size >= large_element:
            node = None  # a plain node holds its one element only
    return nodes


def _written_as_loaded(packed: Packed, compress_from: int, compact: Compact | None) -> bytes | None:
    """encode_value of a value still held as its file's listpack, where that is the encoding
    encode_value chooses for the value (the same limits decide): the listpack as loaded, as
    Redis writes a value it loaded and kept, without unpacking it (minired's own listpacks are
    Redis's bytes). None where the live value must decide."""
    if compact is None:
        return None
    kind = packed.kind
    blob = packed.blob
    if kind is HashListpack:
        texts = listpack_items(blob, True)
        if len(texts) // 2 > compact.hash_entries or max(map(len, texts)) > compact.hash_value:
            return None
        return bytes((TYPE_HASH_LISTPACK,)) + encode_string(blob, compress_from)
    if kind is ZSetListpack:
        members = listpack_items(blob, False, True)
        if (not compact.zset_entries or len(members) > compact.zset_entries
                or max(map(len, members)) > compact.zset_value):
            return None
        return bytes((TYPE_ZSET_LISTPACK,)) + encode_string(blob, compress_from)
    if kind is ListListpack:
        texts = listpack_items(blob, True)
        fill = compact.list_fill
        limit = _quicklist_node_limit(fill) or _QUICKLIST_SAFETY_LIMIT
        # One node, as _quicklist_layout lays the elements out: its test for the last element
        # (the node then holds all but that one: less than the whole listpack) holds.
        longest = max(map(len, texts))
        if (fill >= 0 and len(texts) > fill) or \
                len(blob) + longest + _QUICKLIST_SIZE_ESTIMATE_OVERHEAD > limit:
            return None
        return (bytes((TYPE_LIST_QUICKLIST_2,)) + encode_length(1)
                + encode_length(_QUICKLIST_PACKED) + encode_string(blob, compress_from))
    return None


def encode_value(value: Any, compress_from: int = COMPRESS_AS_REDIS,
                 compact: Compact | None = None) -> bytes:
    """The type byte and the RDB encoding of a value; TypeError for a type RDB cannot hold.
    With `compact`, values within its sizes are written in Redis's compact encodings."""
    kind = type(value)
    if kind is bytes:
        return bytes((TYPE_STRING,)) + encode_string(value, compress_from)
    if kind is Packed:  # (SAVE of a small collection nobody has looked up since the load)
        written = _written_as_loaded(value, compress_from, compact)
        if written is not None:
            return written
        value = live(value)
        kind = type(value)
    if kind is QuickList:
        if compact is None:
            return _encode_elements(TYPE_LIST, value, compress_from)
        nodes = _quicklist_layout(value, compact.list_fill, _QUICKLIST_LARGE_ELEMENT)
        out = [bytes((TYPE_LIST_QUICKLIST_2,)), encode_length(len(nodes))]
        for _, encoded in nodes:
            out.append(encode_length(_QUICKLIST_PACKED))
            out.append(encode_string(_listpack_of(encoded), compress_from))
        return b"".join(out)
    if kind is set:
        if compact is not None and len(value) <= compact.intset_entries:
            blob = _intset_blob(value)
            if blob is not None:
                return bytes((TYPE_SET_INTSET,)) + encode_string(blob, compress_from)
        return _encode_elements(TYPE_SET, value, compress_from)
    if kind is dict:
        if (compact is not None and len(value) <= compact.hash_entries
                and all(len(f) <= compact.hash_value and len(v) <= compact.hash_value
                        for f, v in value.items())):
            items = [item for pair in value.items() for item in pair]
            return bytes((TYPE_HASH_LISTPACK,)) + encode_string(listpack(items), compress_from)
        out = [bytes((TYPE_HASH,)), encode_length(len(value))]
        for field, item in value.items():
            out.append(encode_string(field, compress_from))
            out.append(encode_string(item, compress_from))
        return b"".join(out)
    if kind is ZSet:
        if (compact is not None and compact.zset_entries and len(value) <= compact.zset_entries
                and all(len(member) <= compact.zset_value for member in value.scores)):
            items = []
            for score, member in value.order:
                items.append(member)
                items.append(d2string(score))
            return bytes((TYPE_ZSET_LISTPACK,)) + encode_string(listpack(items), compress_from)
        # Greatest first, as Redis saves a skiplist (its loader then always inserts at the head).
        out = [bytes((TYPE_ZSET_2,)), encode_length(len(value))]
        pack = struct.Struct("<d").pack
        for score, member in reversed(value.order):
            out.append(encode_string(member, compress_from))
            out.append(pack(score))
        return b"".join(out)
    if kind is Stream:
        return bytes((TYPE_STREAM_LISTPACKS_2,)) + _encode_stream(value, compress_from)
    raise TypeError(type_name(value))


def _zset(pairs: list[tuple[bytes, float]]) -> dict:
    """A sorted set's scores by member, checked (decode_object makes the ZSet of them)."""
    scores = {member: score + 0.0 for member, score in pairs}  # -0.0 as ZSet.add stores it
    if len(scores) != len(pairs):
        raise BadData("Duplicate zset fields detected")
    for score in scores.values():
        if score != score:
            raise BadData("Zset with NAN score detected")
    return scores


def _zset_listpack(blob: bytes) -> dict:
    """A listpack of member, score, member, score...: integers read as numbers, not as text
    that is then parsed (most scores are integers). The scores by member, as _zset."""
    items = listpack_items(blob)
    count = len(items)
    if count % 2:
        raise BadData("Listpack integrity check failed")
    scores = {}
    for i in range(0, count, 2):
        member = items[i]
        score = items[i + 1]
        if type(member) is not bytes:
            member = _int_text(member)
        # (-0.0 as ZSet.add stores it)
        scores[member] = float(score) if type(score) is int else _score(score) + 0.0
    if len(scores) != count // 2:
        raise BadData("Duplicate zset fields detected")
    return scores


def _hash(pairs: list[tuple[bytes, bytes]]) -> dict:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise BadData("Duplicate hash fields detected")
    return value


def _hash_of(items: list[bytes]) -> dict:
    """A hash from its fields and values in turn, as listpacks and ziplists hold them."""
    if len(items) % 2:
        raise BadData("Listpack integrity check failed")
    it = iter(items)
    value = dict(zip(it, it))
    if 2 * len(value) != len(items):
        raise BadData("Duplicate hash fields detected")
    return value


def _read_quicklist(reader: Reader, version_2: bool) -> QuickList:
    items = []  # (made a QuickList whole at the end: most lists loaded are small)
    for _ in range(reader.count()):
        container = reader.count() if version_2 else _QUICKLIST_PACKED
        if container == _QUICKLIST_PLAIN:
            element = reader.string()
            if element:  # (an empty node is skipped, as below: an empty list is an empty key)
                items.append(element)
        elif container == _QUICKLIST_PACKED:
            blob = _read_packed(reader, check_listpack) if version_2 else _read_ziplist(reader)
            # An empty node is skipped, as Redis does (an empty list is then an empty key).
            items.extend(listpack_entries(blob) if version_2 else ziplist_entries(blob))
        else:
            raise BadData("Quicklist integrity check failed")
    return QuickList(tuple(items))


def _set(reader: Reader) -> set:
    count = reader.count()
    value = {reader.string() for _ in range(count)}
    if len(value) != count:
        raise BadData("Duplicate set members detected")
    return value


def _decode_hash(reader: Reader) -> dict:
    count = reader.count()
    return _hash([(reader.string(), reader.string()) for _ in range(count)])


_DECODERS: dict[int, Callable[[Reader], Any]] = {
    TYPE_LIST: lambda r: QuickList([r.string() for _ in range(r.count())]),
    TYPE_SET: _set,
    TYPE_ZSET: lambda r: _zset([(r.string(), r.string_double()) for _ in range(r.count())]),
    TYPE_HASH: _decode_hash,
    TYPE_ZSET_2: lambda r: _zset([(r.string(), r.double()) for _ in range(r.count())]),
    TYPE_HASH_ZIPMAP: lambda r: _hash(zipmap_pairs(r.string())),
    TYPE_LIST_ZIPLIST: lambda r: QuickList(ziplist_entries(_read_ziplist(r))),
    TYPE_SET_INTSET: lambda r: _intset(_read_packed(r, check_intset)),
    TYPE_ZSET_ZIPLIST: lambda r: _zset([(m, _score(s)) for m, s in
                                        _pairs(ziplist_entries(_read_ziplist(r)))]),
    TYPE_HASH_ZIPLIST: lambda r: _hash_of(ziplist_entries(_read_ziplist(r))),
    TYPE_LIST_QUICKLIST: lambda r: _read_quicklist(r, False),
    TYPE_STREAM_LISTPACKS: lambda r: _decode_stream(r, False),
    TYPE_HASH_LISTPACK: lambda r: _hash_of(listpack_entries(_read_packed(r, check_listpack))),
    TYPE_ZSET_LISTPACK: lambda r: _zset_listpack(_read_packed(r, check_listpack)),
    TYPE_LIST_QUICKLIST_2: lambda r: _read_quicklist(r, True),
    TYPE_STREAM_LISTPACKS_2: lambda r: _decode_stream(r, True),
}


# A load that packs (packed.py) keeps a small listpack or intset as the file has it: checked
# exactly as the decoders above check it, it is already one compact bytes object (smaller than
# its value marshaled), and a key nobody looks up then costs neither its elements nor a marshal.
# The formats, as Packed kinds:
class HashListpack:
    """A small hash held as its listpack (the fields and values in turn)."""


class ZSetListpack:
    """A small sorted set held as its listpack (the members and scores in turn)."""


class SetIntset:
    """A small set of integers held as its intset."""


class ListListpack:
    """A small list held as the one listpack node of its quicklist."""


def _hash_listpack_packed(reader: Reader) -> Any:
    """TYPE_HASH_LISTPACK as _hash_of checks it (the walk makes the fields only, to find
    duplicates), kept as its listpack when small."""
    blob = _read_packed(reader, check_listpack)
    fields = listpack_items(blob, False, True)
    count = len(fields)
    if not small(count):
        return _hash_of(listpack_entries(blob))
    if len(set(fields)) != count:
        raise BadData("Duplicate hash fields detected")
    if not count:
        raise EmptyKey("Empty key")
    return Packed(HashListpack, blob)


def _zset_listpack_packed(reader: Reader) -> Any:
    """TYPE_ZSET_LISTPACK, read as _zset_listpack reads it, kept as its listpack when small."""
    blob = _read_packed(reader, check_listpack)
    scores = _zset_listpack(blob)
    if not scores or not small(len(scores)):
        return scores  # (decode_object refuses an empty one, makes a big one its ZSet)
    return Packed(ZSetListpack, blob)


def _intset_packed(reader: Reader) -> Any:
    """TYPE_SET_INTSET, read as _intset reads it, kept as its intset when small."""
    blob = _read_packed(reader, check_intset)
    members = _intset(blob)
    if not members or not small(len(members)):
        return members
    return Packed(SetIntset, blob)


def _quicklist_packed(reader: Reader) -> Any:
    """TYPE_LIST_QUICKLIST_2 as _read_quicklist reads it; a list of one listpack node, when
    small, kept as that listpack."""
    start = reader.pos
    if reader.count() != 1 or reader.count() != _QUICKLIST_PACKED:
        reader.pos = start
        return _read_quicklist(reader, True)
    blob = _read_packed(reader, check_listpack)
    items = listpack_entries(blob)
    if not items or not small(len(items)):
        return QuickList(tuple(items))
    return Packed(ListListpack, blob)


_PACKED_DECODERS: dict[int, Callable[[Reader], Any]] = {
    TYPE_HASH_LISTPACK: _hash_listpack_packed,
    TYPE_ZSET_LISTPACK: _zset_listpack_packed,
    TYPE_SET_INTSET: _intset_packed,
    TYPE_LIST_QUICKLIST_2: _quicklist_packed,
}


def _zset_of_listpack(blob: bytes) -> ZSet:
    return ZSet.from_scores(_zset_listpack(blob))


def _zset_view_of_listpack(blob: bytes) -> ZSet:
    return scores_view(_zset_listpack(blob))


def _list_of_listpack(blob: bytes) -> QuickList:
    return QuickList(tuple(listpack_entries(blob)))


def _hash_of_listpack(blob: bytes) -> dict:
    return _hash_of(listpack_entries(blob))


register_unpacking(HashListpack, _hash_of_listpack)
register_unpacking(ZSetListpack, _zset_of_listpack, _zset_view_of_listpack)
register_unpacking(SetIntset, _intset)
register_unpacking(ListListpack, _list_of_listpack)


# rdbLoadObject's reason for a compact encoding it refuses whole (its checks of the encoding
# and of duplicates are one validation there): the log line names the type.
_INTEGRITY_FAILURES = {
    TYPE_HASH_ZIPMAP: "Zipmap integrity check failed.",
    TYPE_HASH_ZIPLIST: "Hash ziplist integrity check failed.",
    TYPE_ZSET_ZIPLIST: "Zset ziplist integrity check failed.",
    TYPE_HASH_LISTPACK: "Hash listpack integrity check failed.",
    TYPE_ZSET_LISTPACK: "Zset listpack integrity check failed.",
}


# The types whose decoders give a sorted set's scores (decode_object makes the ZSet).
_ZSET_TYPES = frozenset((TYPE_ZSET, TYPE_ZSET_2, TYPE_ZSET_ZIPLIST, TYPE_ZSET_LISTPACK))


def decode_object(rdb_type: int, reader: Reader, packing: bool = False) -> Any:
    """The value of the given RDB type at the reader (rdbLoadObject); with `packing`, a small
    collection as a Packed (minired/data/packed.py), as a loaded file keeps it."""
    if rdb_type == TYPE_STRING:
        return reader.string()
    decoder = _PACKED_DECODERS.get(rdb_type) if packing else None
    if decoder is None:
        decoder = _DECODERS.get(rdb_type)
    if decoder is None:
        if rdb_type in (TYPE_MODULE, TYPE_MODULE_2):
            raise ModuleData("The RDB file contains module data I can't load: no matching module")
        raise BadData("Unknown RDB encoding type %d" % rdb_type)
    try:
        value = decoder(reader)
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise BadData(_INTEGRITY_FAILURES.get(rdb_type)
                      or f"Bad data format: {exc.__class__.__name__}") from None
    except BadData as exc:
        failure = _INTEGRITY_FAILURES.get(rdb_type)
        if (failure is None and rdb_type in (TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2)
                and exc.args and exc.args[0] == "Listpack integrity check failed"):
            failure = "Stream listpack integrity check failed."
        if failure is None or isinstance(exc, EmptyKey):
            raise
        raise BadData(failure) from None
    if type(value) is Packed:
        return value
    if type(value) is not Stream and not value:
        if rdb_type == TYPE_HASH_ZIPMAP:  # (zipmapValidateIntegrity refuses an empty one)
            raise BadData(_INTEGRITY_FAILURES[rdb_type])
        raise EmptyKey("Empty key")
    if rdb_type in _ZSET_TYPES:
        # A small one packed is its scores: its order (a SortedList, ~20k instructions for
        # ten members) is made when a command first looks it up, not for every one loaded.
        return pack_scores(value) if packing else ZSet.from_scores(value)
    return pack(value) if packing else value


def decode_value(reader: Reader) -> Any:
    """A type byte, then the value (a DUMP payload's body)."""
    return decode_object(reader.byte(), reader)
