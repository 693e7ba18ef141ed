"""The report redis-check-rdb prints when dump.rdb fails to load at start-up.

When Redis cannot load its snapshot because the file is damaged (rdbReportError while
rdbFileBeingLoaded is set), it logs the reason, then runs its own checker on the same file
(redis_check_rdb_main, redis-check-rdb.c) which prints to stdout, from the file's start: the
auxiliary fields and database selections it passes ("[offset N] ..."), then "--- RDB ERROR
DETECTED ---" with the offset, what it was doing, the key and type it was reading and the counts
so far. A damage the checker's own loading reports as corruption goes through rdbReportError
again, in check mode: the block carries that "Internal error ..." line and the server logs
"Terminating server after rdb file reading failure." before it exits; a plain end of file, a
wrong checksum or an invalid type byte ends the checker with no such line. So a corrupt value
shows its "integrity check failed" twice (the test for Redis issue #3505 counts them).
"""
from __future__ import annotations

import struct

from minired.features.rdb import decode_object
from minired.features.rdb_file import (
    MAGIC,
    OPCODE_AUX,
    OPCODE_EOF,
    OPCODE_EXPIRETIME,
    OPCODE_EXPIRETIME_MS,
    OPCODE_FREQ,
    OPCODE_FUNCTION2,
    OPCODE_FUNCTION_PRE_GA,
    OPCODE_IDLE,
    OPCODE_MODULE_AUX,
    OPCODE_RESIZEDB,
    OPCODE_SELECTDB,
)
from minired.features.rdb_format import (
    EOF_MESSAGE,
    OBJECT_TYPES,
    RDB_VERSION,
    BadData,
    EmptyKey,
    Reader,
    crc64,
)

DOING = ("start", "read-type", "read-expire", "read-key", "read-object-value", "check-sum",
         "read-len", "read-aux", "read-module-aux", "read-functions")
(START, READ_TYPE, READ_EXPIRE, READ_KEY, READ_OBJECT_VALUE, CHECK_SUM, READ_LEN, READ_AUX,
 READ_MODULE_AUX, READ_FUNCTIONS) = range(10)
TYPE_NAMES = ("string", "list-linked", "set-hashtable", "zset-v1", "hash-hashtable", "zset-v2",
              "module-pre-release", "module-value", "", "hash-zipmap", "list-ziplist",
              "set-intset", "zset-ziplist", "hash-ziplist", "quicklist", "stream",
              "hash-listpack", "zset-listpack", "quicklist-v2", "stream-v2")


def _text(value: bytes) -> str:
    """A C string printed with %s: up to its first NUL."""
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")


class Check:
    """One run of the checker over a file's bytes (redis_check_rdb and its rdbstate)."""

    def __init__(self, data: bytes, deep: bool, now_ms: int, loaded_bytes: int) -> None:
        self.reader = Reader(data, 0, deep)
        self.now_ms = now_ms
        # What rdbReportError prints as its offset: the server's loading counter
        # (server.loading_loaded_bytes), left where the failed load had it.
        self.loaded_bytes = loaded_bytes
        self.lines: list[str] = []
        self.doing = START
        self.key: bytes | None = None
        # 0, not -1, until a key is done: rdbstate is a zeroed static in redis-check-rdb, so a
        # file cut before its first key is reported "Reading type 0 (string)".
        self.key_type = 0
        self.keys = self.expires = self.already_expired = 0
        # Whether the damage was reported as corruption (the server then logs Terminating...)
        self.reported = False

    def info(self, message: str) -> None:
        self.lines.append(f"[offset {self.reader.pos}] {message}")

    def generic_info(self) -> None:
        self.lines += [f"[info] {self.keys} keys read", f"[info] {self.expires} expires",
                       f"[info] {self.already_expired} already expired"]

    def error(self, message: str) -> None:
        """rdbCheckError."""
        self.lines += ["--- RDB ERROR DETECTED ---", f"[offset {self.reader.pos}] {message}",
                       f"[additional info] While doing: {DOING[self.doing]}"]
        if self.key is not None:
            self.lines.append(f"[additional info] Reading key '{_text(self.key)}'")
        if self.key_type != -1:
            name = TYPE_NAMES[self.key_type] if 0 <= self.key_type < len(TYPE_NAMES) else "unknown"
            self.lines.append(f"[additional info] Reading type {self.key_type} ({name})")
        self.generic_info()

    def run(self, name: str) -> bool:
        """The checker's report on the file (into self.lines); whether it found it sane."""
        self.info(f"Checking RDB file {name}")
        try:
            ok = self._walk()
        except BadData as exc:
            reason = exc.args[0] if exc.args else "Bad data format"
            if reason == EOF_MESSAGE:  # a read came short: the loader returns NULL, no report
                self.error(EOF_MESSAGE)
            else:  # rdbReportCorruptRDB, in check mode
                self.error("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s"
                           % (self.loaded_bytes, reason))
                self.reported = True
            return False
        if ok:
            self.info("\\o/ RDB looks OK! \\o/")
            self.generic_info()
        return ok

    def _walk(self) -> bool:
        reader = self.reader
        data = reader.data
        if len(data) < 9:
            raise BadData(EOF_MESSAGE)
        reader.pos = 9
        if data[:5] != MAGIC:
            self.error("Wrong signature trying to load DB from file")
            return False
        try:
            version = int(data[5:9])
        except ValueError:
            version = 0
        if version < 1 or version > RDB_VERSION:
            self.error("Can't handle RDB format version %d" % version)
            return False
        # As redis-check-rdb's loop: an expire (and an LRU/LFU opcode) is an opcode of its own
        # before the key's type, which is then read like any other opcode (a key with a TTL
        # has its type checked and reported too).
        expires_at = -1
        while True:
            self.doing = READ_TYPE
            kind = reader.byte()
            if kind == OPCODE_EXPIRETIME:
                self.doing = READ_EXPIRE
                expires_at = struct.unpack("<i", reader.take(4))[0] * 1000
                continue
            elif kind == OPCODE_EXPIRETIME_MS:
                self.doing = READ_EXPIRE
                expires_at = reader.ms()
                continue
            elif kind == OPCODE_FREQ:
                reader.byte()
                continue
            elif kind == OPCODE_IDLE:
                reader.count()
                continue
            elif kind == OPCODE_EOF:
                break
            elif kind == OPCODE_SELECTDB:
                self.doing = READ_LEN
                self.info("Selecting DB ID %d" % reader.count())
                continue
            elif kind == OPCODE_RESIZEDB:
                self.doing = READ_LEN
                reader.count()
                reader.count()
                continue
            elif kind == OPCODE_AUX:
                self.doing = READ_AUX
                aux_name = reader.string()
                value = reader.string()
                self.info("AUX FIELD %s = '%s'" % (_text(aux_name), _text(value)))
                continue
            elif kind == OPCODE_MODULE_AUX:
                self.doing = READ_MODULE_AUX
                raise BadData("The RDB file contains AUX module data I can't load: no matching "
                              "module")
            elif kind == OPCODE_FUNCTION_PRE_GA:
                self.error("Pre-release function format not supported %d" % version)
                return False
            elif kind == OPCODE_FUNCTION2:
                self.doing = READ_FUNCTIONS
                reader.string()
                continue
            else:
                if kind not in OBJECT_TYPES:
                    self.error("Invalid object type: %d" % kind)
                    return False
                self.key_type = kind
            self.doing = READ_KEY
            self.key = reader.string()
            self.keys += 1
            self.doing = READ_OBJECT_VALUE
            try:
                decode_object(kind, reader)
            except EmptyKey:
                # an empty container: rdbLoadObject returns NULL with no report, which the
                # checker takes for the end of the file
                raise BadData(EOF_MESSAGE) from None
            if expires_at != -1 and expires_at < self.now_ms:
                self.already_expired += 1
            if expires_at != -1:
                self.expires += 1
            self.key = None
            self.key_type = -1
            expires_at = -1
        if version >= 5:
            end = reader.pos
            self.doing = CHECK_SUM
            expected = struct.unpack("<Q", reader.take(8))[0]
            if expected == 0:
                self.info("RDB file was saved with checksum disabled: no check performed.")
            elif expected != crc64(data[:end]):
                self.error("RDB CRC error")
                return False
            else:
                self.info("Checksum OK")
        return True


def check_report(data: bytes, name: str, deep: bool, now_ms: int,
                 loaded_bytes: int) -> tuple[list[str], bool]:
    """What redis-check-rdb prints about `data` (the file `name`, as the server names it), and
    whether it ended on a damage reported as corruption, after which the server logs
    "Terminating server after rdb file reading failure."."""
    check = Check(data, deep, now_ms, loaded_bytes)
    check.run(name)
    return check.lines, check.reported
