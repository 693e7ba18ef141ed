"""The RDB format's primitives (Redis 7.0, format version 10): the type bytes, the errors a
decoder raises, CRC64 and a DUMP payload's footer, the length and string encodings
(rdbSaveLen, rdbSaveRawString) and the Reader that reads them back (rdbLoadLen,
rdbGenericLoadStringObject). The values themselves: rdb.py.
"""
from __future__ import annotations

import struct

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

U64 = 2**64 - 1



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
        buf = data  # compiled, a pointer into data (rdb_format.pxd)
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
        buf = data  # compiled, a pointer into data (rdb_format.pxd)
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
        buf = data  # compiled, a pointer into data (rdb_format.pxd)
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
            return U64
        self.pos -= 1
        return self.length()[0]

    def string(self) -> bytes:
        # The common cases inline: loading is mostly this call. A length under 64 in one byte,
        # and an LZF string whose two lengths each take one byte (Redis compresses every
        # string over 20 bytes, so most values of a file it wrote are those).
        data = self.data
        buf = data  # compiled, a pointer into data (rdb_format.pxd)
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
