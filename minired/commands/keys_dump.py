"""DUMP and RESTORE with Redis's payload format: an RDB-encoded value, the 2-byte RDB version and a
CRC64 (Jones polynomial) of everything before it.

DUMP writes plain RDB encodings Redis 7.0 loads (strings with the integer encodings, lists,
sets and hashes as length-prefixed element sequences, sorted sets with binary scores). RESTORE reads those and the compact ones
real Redis 7.0 writes (LZF strings, quicklist/listpack lists, intsets, listpack hashes and
sorted sets), so payloads move both ways. Other registered value classes plug in with
`register_codec`; until one does, DUMP of such a value is refused with an error.
"""
from __future__ import annotations

import struct
from collections import deque
from typing import Any, Callable

from .. import errors
from ..errors import RedisError
from ..keyspace import type_name
from ..notifications import GENERIC, notify
from ..rdb import BadData, Reader, encode_length, encode_string, footer_ok, seal
from ..resp import OK
from ..zset import ZSet
from .args import parse_int
from .table import command

G = "generic"

TYPE_STRING, TYPE_LIST, TYPE_SET, TYPE_HASH, TYPE_ZSET_2 = 0, 1, 2, 4, 5
TYPE_SET_INTSET, TYPE_HASH_LISTPACK, TYPE_ZSET_LISTPACK, TYPE_LIST_QUICKLIST_2 = 11, 16, 17, 18

_QUICKLIST_PLAIN, _QUICKLIST_PACKED = 1, 2


def _encode_elements(rdb_type: int, items) -> bytes:
    items = list(items)
    return bytes((rdb_type,)) + encode_length(len(items)) + b"".join(encode_string(i) for i in items)


def encode_value(value: Any) -> bytes:
    kind = type(value)
    if kind is bytes:
        return bytes((TYPE_STRING,)) + encode_string(value)
    if kind is deque:
        return _encode_elements(TYPE_LIST, value)
    if kind is set:
        return _encode_elements(TYPE_SET, value)
    if kind is dict:
        out = [bytes((TYPE_HASH,)), encode_length(len(value))]
        for field, item in value.items():
            out.append(encode_string(field))
            out.append(encode_string(item))
        return b"".join(out)
    codec = CODECS.get(kind)
    if codec is None:
        raise RedisError(errors.DUMP_UNSUPPORTED_TYPE.format(type_name(value)))
    return bytes((codec[0],)) + codec[1](value)


def dump_payload(value: Any) -> bytes:
    return seal(encode_value(value))


def listpack_entries(blob: bytes) -> list[bytes]:
    """The elements of a listpack, integers spelled in decimal as Redis returns them."""
    if len(blob) < 7 or struct.unpack("<I", blob[:4])[0] != len(blob) or blob[-1] != 0xFF:
        raise BadData
    entries: list[bytes] = []
    pos, end = 6, len(blob) - 1
    while pos < end:
        first = blob[pos]
        if first < 0x80:
            entry, size = b"%d" % first, 1
        elif first < 0xC0:
            n = first & 0x3F
            entry, size = blob[pos + 1:pos + 1 + n], 1 + n
        elif first < 0xE0:
            value = ((first & 0x1F) << 8) | blob[pos + 1]
            entry, size = b"%d" % (value - 8192 if value >= 4096 else value), 2
        elif first < 0xF0:
            n = ((first & 0x0F) << 8) | blob[pos + 1]
            entry, size = blob[pos + 2:pos + 2 + n], 2 + n
        elif first == 0xF0:
            n = struct.unpack("<I", blob[pos + 1:pos + 5])[0]
            entry, size = blob[pos + 5:pos + 5 + n], 5 + n
        elif 0xF1 <= first <= 0xF4:
            width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[first]
            raw = blob[pos + 1:pos + 1 + width]
            entry, size = b"%d" % int.from_bytes(raw, "little", signed=True), 1 + width
        else:
            raise BadData
        backlen = 1 if size < 128 else 2 if size < 16384 else 3 if size < 2**21 else 4 if size < 2**28 else 5
        pos += size + backlen
        if pos > end:
            raise BadData
        entries.append(entry)
    return entries


def _intset(blob: bytes) -> set[bytes]:
    if len(blob) < 8:
        raise BadData
    width, count = struct.unpack("<II", blob[:8])
    if width not in (2, 4, 8) or len(blob) != 8 + width * count:
        raise BadData
    return {b"%d" % int.from_bytes(blob[8 + i * width:8 + (i + 1) * width], "little", signed=True)
            for i in range(count)}


def _pairs(items: list[bytes]) -> list[tuple[bytes, bytes]]:
    if len(items) % 2:
        raise BadData
    return list(zip(items[::2], items[1::2]))


def _read_quicklist(reader: Reader) -> deque:
    items: deque = deque()
    for _ in range(reader.count()):
        container = reader.count()
        if container == _QUICKLIST_PLAIN:
            items.append(reader.string())
        elif container == _QUICKLIST_PACKED:
            items.extend(listpack_entries(reader.string()))
        else:
            raise BadData
    return items


def decode_value(reader: Reader) -> Any:
    rdb_type = reader.byte()
    if rdb_type == TYPE_STRING:
        return reader.string()
    if rdb_type == TYPE_LIST:
        value: Any = deque(reader.string() for _ in range(reader.count()))
    elif rdb_type == TYPE_LIST_QUICKLIST_2:
        value = _read_quicklist(reader)
    elif rdb_type == TYPE_SET:
        value = {reader.string() for _ in range(reader.count())}
    elif rdb_type == TYPE_SET_INTSET:
        value = _intset(reader.string())
    elif rdb_type == TYPE_HASH:
        value = {}
        for _ in range(reader.count()):
            field = reader.string()
            value[field] = reader.string()
    elif rdb_type == TYPE_HASH_LISTPACK:
        value = dict(_pairs(listpack_entries(reader.string())))
    elif rdb_type in DECODERS:
        value = DECODERS[rdb_type](reader)
    else:
        raise BadData
    if not value:
        raise BadData  # Redis refuses empty containers
    return value


def load_payload(payload: bytes) -> Any:
    """The value in a DUMP payload; RedisError with Redis's text if it is not one."""
    if not footer_ok(payload):
        raise RedisError(errors.DUMP_PAYLOAD_INVALID)
    try:
        # Like Redis, read from the whole payload: the footer is not fenced off from the body.
        return decode_value(Reader(payload))
    except (BadData, struct.error, IndexError, ValueError):
        raise RedisError(errors.BAD_DATA_FORMAT) from None


# --- extension points for registered types ----------------------------------------------------

# cls -> (rdb type byte, encode(value) -> bytes after the type byte)
CODECS: dict[type, tuple[int, Callable[[Any], bytes]]] = {}
# rdb type byte -> decode(Reader) -> value
DECODERS: dict[int, Callable[[Reader], Any]] = {}


def register_codec(cls: type, rdb_type: int, encode: Callable[[Any], bytes],
                   decoders: dict[int, Callable[[Reader], Any]]) -> None:
    CODECS[cls] = (rdb_type, encode)
    DECODERS.update(decoders)


def register_zset(cls: type, to_pairs: Callable[[Any], list[tuple[bytes, float]]],
                  from_pairs: Callable[[list[tuple[bytes, float]]], Any]) -> None:
    """Sorted sets: DUMP as RDB_TYPE_ZSET_2 (member, binary double score); RESTORE also reads
    Redis 7.0's listpack form."""

    def encode(value: Any) -> bytes:
        pairs = to_pairs(value)
        return encode_length(len(pairs)) + b"".join(
            encode_string(member) + struct.pack("<d", score) for member, score in pairs)

    def decode_zset2(reader: Reader) -> Any:
        pairs = [(reader.string(), reader.double()) for _ in range(reader.count())]
        if any(score != score for _, score in pairs):
            raise BadData  # Redis refuses NaN scores
        return from_pairs(pairs)

    def decode_listpack(reader: Reader) -> Any:
        pairs = [(member, float(score))
                 for member, score in _pairs(listpack_entries(reader.string()))]
        return from_pairs(pairs)

    register_codec(cls, TYPE_ZSET_2, encode,
                   {TYPE_ZSET_2: decode_zset2, TYPE_ZSET_LISTPACK: decode_listpack})


register_zset(ZSet, to_pairs=lambda zset: [(member, score) for score, member in zset],
              from_pairs=lambda pairs: ZSet((score, member) for member, score in pairs))


# --- commands --------------------------------------------------------------------------------

@command("dump", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
def dump(c, argv):
    value = c.db.read(argv[1])
    if value is None:
        return None
    return dump_payload(value)


@command("restore", arity=-4, flags="write denyoom", keys=(1, 1, 1), group=G)
def restore(c, argv):
    replace = absolute_ttl = False
    idle_given = freq_given = False
    j = 4
    while j < len(argv):
        opt = argv[j].upper()
        has_value = j + 1 < len(argv)
        if opt == b"REPLACE":
            replace = True
        elif opt == b"ABSTTL":
            absolute_ttl = True
        elif opt == b"IDLETIME" and has_value and not freq_given:
            if parse_int(argv[j + 1]) < 0:
                raise RedisError(errors.RESTORE_INVALID_IDLETIME)
            idle_given = True
            j += 1
        elif opt == b"FREQ" and has_value and not idle_given:
            if not 0 <= parse_int(argv[j + 1]) <= 255:
                raise RedisError(errors.RESTORE_INVALID_FREQ)
            freq_given = True
            j += 1
        else:
            raise RedisError(errors.SYNTAX)
        j += 1
    db = c.db
    key = argv[1]
    if not replace and db.get(key) is not None:
        raise RedisError(errors.BUSYKEY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise RedisError(errors.RESTORE_INVALID_TTL)
    value = load_payload(argv[3])
    deleted = replace and db.delete(key)
    now = c.server.clock.ms()
    if ttl and not absolute_ttl:
        ttl += now
    if ttl and ttl <= now:
        if deleted and db.notifier is not None:
            notify(db, GENERIC, b"del", key)
        return OK  # already expired: the key is (still) gone
    db.set(key, value)
    if ttl:
        db.set_expiry(key, ttl)
    if db.notifier is not None:
        notify(db, GENERIC, b"restore", key)
    return OK
