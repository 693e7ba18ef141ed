"""The dump.rdb file of Redis 7.0 (RDB version 10): reading one into the keyspace, writing one.

Layout: "REDIS0010", aux fields, function libraries (RDB_OPCODE_FUNCTION2), then per non-empty
database SELECTDB, RESIZEDB and its keys (an optional expiry, the type byte, the key, the value:
rdb.py), EOF, and the CRC64 of everything before it. Files of versions 1 to 10 are read, as
Redis 7.0 reads them; anything that does not decode in full is refused with RdbError, whose
message is the one Redis logs, and nothing is loaded from it.
"""
from __future__ import annotations

import random
import struct
import time
from typing import TYPE_CHECKING, Callable, Iterator

from minired import REDIS_VERSION
from minired.features.rdb import Compact, decode_object, encode_value
from minired.features.rdb_format import (
    COMPRESS_IN_FILES,
    EOF_MESSAGE,
    RDB_VERSION,
    TYPE_STRING,
    BadData,
    EmptyKey,
    Reader,
    crc64,
    encode_length,
    encode_string,
    is_object_type,
    seal,
)

if TYPE_CHECKING:
    from minired.data.keyspace import Keyspace

OPCODE_FUNCTION2 = 0xF5
OPCODE_FUNCTION_PRE_GA = 0xF6
OPCODE_MODULE_AUX = 0xF7
OPCODE_IDLE = 0xF8
OPCODE_FREQ = 0xF9
OPCODE_AUX = 0xFA
OPCODE_RESIZEDB = 0xFB
OPCODE_EXPIRETIME_MS = 0xFC
OPCODE_EXPIRETIME = 0xFD
OPCODE_SELECTDB = 0xFE
OPCODE_EOF = 0xFF

MAGIC = b"REDIS"
_CHUNK = 1 << 16


class RdbError(Exception):
    """A file that cannot be loaded in full; str() is what Redis would log, after the lines in
    `warnings` (the checksum a CRC error found). A damage Redis reports through rdbReportError
    (a corrupt or short file, a wrong checksum) has its `reason` and the offset `pos` it was
    found at: loaded at start-up, the server then runs the checker (rdb_check.py). `aux` holds
    the file's auxiliary fields read before the failure."""

    def __init__(self, message: str, warnings: tuple[str, ...] = (), reason: str | None = None,
                 pos: int = 0) -> None:
        super().__init__(message)
        self.warnings = warnings
        self.reason = reason
        self.pos = pos
        self.aux: dict[bytes, bytes] = {}


class Loaded:
    """What a load found besides keys: function library sources and a few counts."""

    __slots__ = ("functions", "keys", "expired", "end", "version", "aux", "sanitized",
                 "key_delay_us", "empty_keys", "expired_keys")

    def __init__(self) -> None:
        self.functions: list[bytes] = []
        self.keys = 0
        self.expired = 0  # keys already expired, skipped as a master skips them
        self.end = 0  # offset just past the checksum (an AOF preamble's commands follow)
        self.version = 0
        self.aux: dict[bytes, bytes] = {}
        self.sanitized = 0  # compact encodings checked deeply (INFO dump_payload_sanitizations)
        self.key_delay_us = 0  # key-load-delay: a pause after each key (debugDelay)
        self.empty_keys: list[bytes] = []  # skipped: containers saved empty (an old Redis bug)
        # (database, key) of the keys skipped as expired, when the caller asks for them: a
        # master's start-up propagates their deletion (RDBFLAGS_FEED_REPL).
        self.expired_keys: list[tuple[int, bytes]] | None = None


def is_rdb(data: bytes) -> bool:
    return data[:5] == MAGIC


def load(data: bytes, keyspace: "Keyspace", now_ms: int, keep_expired: bool = False,
         deep: bool = False, key_delay_us: int = 0, list_expired: bool = False) -> Loaded:
    """Read a whole RDB image into the (empty) keyspace: all of it, or RdbError and the keyspace
    left as it was. With deep (sanitize-dump-payload yes), compact encodings are checked entry
    by entry; key_delay_us (key-load-delay, which Redis's tests use for a slow load) pauses
    after each key; with list_expired, the keys skipped as expired are listed
    (Loaded.expired_keys)."""
    loaded = Loaded()
    loaded.key_delay_us = key_delay_us
    if list_expired:
        loaded.expired_keys = []
    staged: list[dict] = [{} for _ in keyspace.dbs]
    staged_expires: list[dict] = [{} for _ in keyspace.dbs]
    reader = Reader(data, 0, deep)
    try:
        _read(reader, loaded, staged, staged_expires, now_ms, keep_expired, len(keyspace.dbs))
    except BadData as exc:
        reason = exc.args[0] if exc.args else "Bad data format"
        short = "Short read or OOM loading DB. Unrecoverable error, aborting now. " \
            if reason == EOF_MESSAGE else ""
        # (a duplicate key, module data: Redis logs those and exits, not rdbReportError)
        reported = not reason.startswith(("Duplicate key", "The RDB file contains"))
        error = RdbError("%sInternal error in RDB reading offset %d, function at rdb.c:0 -> %s"
                         % (short, reader.pos, reason), reason=reason if reported else None,
                         pos=reader.pos)
        error.aux = loaded.aux
        raise error from None
    except RdbError as error:
        error.aux = loaded.aux
        raise
    loaded.sanitized = reader.sanitized
    for db, data_, expires in zip(keyspace.dbs, staged, staged_expires):
        db.data.update(data_)
        for key, deadline in expires.items():
            db.set_expiry(key, deadline)
    return loaded


def debug_delay(usec: int) -> None:
    """debugDelay: sleep usec microseconds; a negative value sleeps 1 us once in -usec times
    on average (even the shortest sleep is a system call)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1_000_000)


def _read(reader: Reader, loaded: Loaded, staged: list, staged_expires: list, now_ms: int,
          keep_expired: bool, databases: int) -> None:
    data = reader.data
    if len(data) < 9:
        raise BadData(EOF_MESSAGE)
    if data[:5] != MAGIC:
        raise RdbError("Wrong signature trying to load DB from file")
    try:
        version = int(data[5:9])
    except ValueError:
        raise RdbError("Wrong signature trying to load DB from file") from None
    if version < 1 or version > RDB_VERSION:
        raise RdbError("Can't handle RDB format version %d" % version)
    loaded.version = version
    reader.pos = 9
    expires_at = -1
    target = staged[0]
    target_expires = staged_expires[0]
    db_index = 0
    keys = expired = 0
    buf = data  # compiled, a pointer into data (rdb_file.pxd)
    size = len(data)
    delay = loaded.key_delay_us
    while True:
        pos = reader.pos  # reader.byte(), inline: once per key
        if pos >= size:
            raise BadData(EOF_MESSAGE)
        kind = buf[pos]
        reader.pos = pos + 1
        if kind < OPCODE_FUNCTION2:  # a key: the loop's common case first
            if not is_object_type(kind):
                raise BadData("Unknown RDB encoding type %d" % kind)
            key = reader.string()
            if kind == 0:
                value = reader.string()
            else:
                try:
                    value = decode_object(kind, reader, True)
                except EmptyKey:
                    expires_at = -1
                    loaded.empty_keys.append(key)  # Redis skips it with a log line
                    continue
            if key in target:
                raise BadData("Duplicate key '%s' found in RDB file"
                              % key.decode("utf-8", "replace"))
            if expires_at == -1:
                target[key] = value
                keys += 1
            elif expires_at < now_ms and not keep_expired:
                expired += 1
                expires_at = -1
                if loaded.expired_keys is not None:
                    loaded.expired_keys.append((db_index, key))
            else:
                target[key] = value
                target_expires[key] = expires_at
                keys += 1
                expires_at = -1
            if delay:
                debug_delay(delay)
            continue
        if kind == OPCODE_EXPIRETIME:
            expires_at = struct.unpack("<i", reader.take(4))[0] * 1000
        elif kind == OPCODE_EXPIRETIME_MS:
            expires_at = reader.ms()
        elif kind == OPCODE_FREQ:
            reader.byte()
        elif kind == OPCODE_IDLE:
            reader.count()
        elif kind == OPCODE_EOF:
            break
        elif kind == OPCODE_SELECTDB:
            db_index = reader.count()
            if db_index >= databases:
                raise RdbError("FATAL: Data file was created with a Redis server configured to "
                               "handle more than %d databases. Exiting" % databases)
            target = staged[db_index]
            target_expires = staged_expires[db_index]
        elif kind == OPCODE_RESIZEDB:
            reader.count()
            reader.count()
        elif kind == OPCODE_AUX:
            name = reader.string()
            loaded.aux[name] = reader.string()
        elif kind == OPCODE_MODULE_AUX:
            raise BadData("The RDB file contains AUX module data I can't load: no matching module")
        elif kind == OPCODE_FUNCTION2:
            loaded.functions.append(reader.string())
        else:  # OPCODE_FUNCTION_PRE_GA
            raise BadData("Pre-release function format not supported.")
    loaded.keys = keys
    loaded.expired = expired
    if version >= 5:
        end = reader.pos
        expected = struct.unpack("<Q", reader.take(8))[0]
        if expected:
            actual = crc64(data[:end])
            if actual != expected:  # (rdbLoadRio: "expected" is what the data sums to)
                raise RdbError("Internal error in RDB reading offset 0, function at rdb.c:0 -> "
                               "RDB CRC error", ("Wrong RDB checksum expected: (%x) but got (%x). "
                                                 "Aborting now." % (actual, expected),),
                               reason="RDB CRC error", pos=reader.pos)
    loaded.end = reader.pos


# --- writing -------------------------------------------------------------------------------------

def _aux(name: bytes, value: bytes) -> bytes:
    return bytes((OPCODE_AUX,)) + encode_string(name, False) + encode_string(value, False)


def save_chunks(keyspace: "Keyspace", functions: list[bytes], now_s: int, used_memory: int,
                compress_from: int = COMPRESS_IN_FILES, checksum: bool = True, aof_base: bool = False,
                compact: Compact | None = None,
                on_key: Callable[[], object] | None = None,
                repl: tuple[int, str, int] | None = None) -> Iterator[bytes]:
    """The file in pieces of ~64 KB, its checksum last (rdbSaveRio). Values are read as they
    are: the caller holds the keyspace still (a forked child, or the event loop itself).
    on_key is called after each key (the save delay, a child's progress: child_info.py).
    `repl` (rdbSaveInfo: the replication stream's database, ID and offset) is written as the
    aux fields repl-stream-db, repl-id and repl-offset, before aof-base, as Redis writes them."""
    crc = 0
    out = [b"%s%04d" % (MAGIC, RDB_VERSION),
           _aux(b"redis-ver", REDIS_VERSION.encode()),
           _aux(b"redis-bits", b"64"),
           _aux(b"ctime", b"%d" % now_s),
           _aux(b"used-mem", b"%d" % used_memory)]
    if repl is not None:
        stream_db, replid, offset = repl
        out += [_aux(b"repl-stream-db", b"%d" % stream_db), _aux(b"repl-id", replid.encode()),
                _aux(b"repl-offset", b"%d" % offset)]
    out.append(_aux(b"aof-base", b"1" if aof_base else b"0"))
    for code in functions:
        out.append(bytes((OPCODE_FUNCTION2,)) + encode_string(code, compress_from))
    size = sum(map(len, out))
    expiry_pack = struct.Struct("<q").pack
    expiry_opcode = bytes((OPCODE_EXPIRETIME_MS,))
    string_type = bytes((TYPE_STRING,))
    for db in keyspace.dbs:
        data = db.data
        if not data:
            continue
        expires = db.expires
        out.append(bytes((OPCODE_SELECTDB,)) + encode_length(db.index)
                   + bytes((OPCODE_RESIZEDB,)) + encode_length(len(data))
                   + encode_length(len(expires)))
        for key, value in data.items():
            if expires:
                deadline = expires.get(key)
                if deadline is not None:
                    out.append(expiry_opcode)
                    out.append(expiry_pack(deadline))
                    size += 9
            name = encode_string(key, compress_from)
            if type(value) is bytes:  # most keys: no encode_value call, no slicing
                body = encode_string(value, compress_from)
                out.append(string_type)
                out.append(name)
                out.append(body)
                size += 1 + len(name) + len(body)
            else:
                body = encode_value(value, compress_from, compact)
                out.append(body[:1])  # the type byte comes before the key
                out.append(name)
                out.append(body[1:])
                size += len(name) + len(body)
            if on_key is not None:
                on_key()
            if size >= _CHUNK:
                chunk = b"".join(out)
                out.clear()
                size = 0
                if checksum:
                    crc = crc64(chunk, crc)
                yield chunk
    out.append(bytes((OPCODE_EOF,)))
    chunk = b"".join(out)
    if checksum:
        crc = crc64(chunk, crc)
    yield chunk + struct.pack("<Q", crc)


def repl_info(aux: dict[bytes, bytes]) -> tuple[int, str, int] | None:
    """The (repl-stream-db, repl-id, repl-offset) a file's aux fields hold, when all three are
    there and usable (rdbLoad's rsi; loadDataFromDisk ignores a stream db of -1, which older
    versions wrote by mistake)."""
    try:
        replid = aux[b"repl-id"].decode()
        offset = int(aux[b"repl-offset"])
        stream_db = int(aux.get(b"repl-stream-db", b"-1"))
    except (KeyError, ValueError, UnicodeDecodeError):
        return None
    if len(replid) != 40 or offset == -1 or stream_db == -1:
        return None
    return stream_db, replid, offset


def functions_from_payload(payload: bytes) -> list[bytes]:
    """The library sources of a FUNCTION DUMP payload (FUNCTION2 records, version, CRC)."""
    reader = Reader(payload[:-10])
    codes = []
    while reader.pos < len(reader.data):
        if reader.byte() != OPCODE_FUNCTION2:
            raise BadData("Unknown function opcode")
        codes.append(reader.string())
    return codes


def functions_payload(codes: list[bytes]) -> bytes:
    return seal(b"".join(bytes((OPCODE_FUNCTION2,)) + encode_string(code) for code in codes))

