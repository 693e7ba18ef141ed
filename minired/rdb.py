"""RDB encoding primitives shared by DUMP/RESTORE and FUNCTION DUMP/RESTORE: lengths, strings
(with the integer and LZF encodings), and the payload footer (2-byte RDB version + CRC64).
"""
from __future__ import annotations

import struct

RDB_VERSION = 10  # Redis 7.0

ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3


class BadData(Exception):
    """The bytes do not decode as RDB."""


# --- CRC64 (Jones polynomial, reflected, as Redis's crc64.c) ---------------------------------

def _crc64_table() -> list[int]:
    poly = 0x95AC9329AC4BC9B5
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64_TABLE = _crc64_table()


def crc64(data: bytes, crc: int = 0) -> int:
    table = _CRC64_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


# --- payload framing ---------------------------------------------------------------------------

def seal(body: bytes) -> bytes:
    """A DUMP payload: the body, the RDB version, and the CRC64 of both."""
    body += struct.pack("<H", RDB_VERSION)
    return body + struct.pack("<Q", crc64(body))


def footer_ok(payload: bytes, allow_zero_crc: bool = False) -> bool:
    """Whether the payload's version is one we read and its checksum matches."""
    if len(payload) < 10:
        return False
    version = struct.unpack("<H", payload[-10:-8])[0]
    crc = struct.unpack("<Q", payload[-8:])[0]
    if version > RDB_VERSION:
        return False
    return (allow_zero_crc and crc == 0) or crc == crc64(payload[:-8])


# --- writing -----------------------------------------------------------------------------------

def encode_length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFF_FFFF:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def encode_string(value: bytes) -> bytes:
    """rdbSaveRawString without compression: short decimal integers use the int encodings."""
    if len(value) <= 11:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is not None and b"%d" % number == value:
            if -(1 << 7) <= number < 1 << 7:
                return bytes((0xC0 | ENC_INT8,)) + struct.pack("<b", number)
            if -(1 << 15) <= number < 1 << 15:
                return bytes((0xC0 | ENC_INT16,)) + struct.pack("<h", number)
            if -(1 << 31) <= number < 1 << 31:
                return bytes((0xC0 | ENC_INT32,)) + struct.pack("<i", number)
    return encode_length(len(value)) + value


# --- reading -----------------------------------------------------------------------------------

class Reader:
    """A cursor over RDB bytes; every read past the end raises BadData."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise BadData
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

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
            return struct.unpack(">I", self.take(4))[0], None
        if first == 0x81:
            return struct.unpack(">Q", self.take(8))[0], None
        raise BadData

    def count(self) -> int:
        n, special = self.length()
        if special is not None:
            raise BadData
        return n

    def string(self) -> bytes:
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
            compressed_len = self.count()
            plain_len = self.count()
            return lzf_decompress(self.take(compressed_len), plain_len)
        raise BadData

    def double(self) -> float:
        return struct.unpack("<d", self.take(8))[0]


def lzf_decompress(data: bytes, expected: int) -> bytes:
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            run = ctrl + 1
            if i + run > n:
                raise BadData
            out += data[i:i + run]
            i += run
            continue
        length = ctrl >> 5
        if length == 7:
            if i >= n:
                raise BadData
            length += data[i]
            i += 1
        if i >= n:
            raise BadData
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
        i += 1
        if ref < 0:
            raise BadData
        for _ in range(length + 2):
            out.append(out[ref])
            ref += 1
    if len(out) != expected:
        raise BadData
    return bytes(out)
