"""DUMP and RESTORE with Redis's payload format: an RDB-encoded value (minired/features/rdb.py, the same
encoders the dump.rdb file uses), the 2-byte RDB version and a CRC64 of everything before it.
"""
from __future__ import annotations

import logging
import struct
from typing import Any

from minired import LOG_VERBOSE
from minired.engine.args import parse_int
from minired.engine.client import Client
from minired.engine.table import command
from minired.features import eviction
from minired.features.notifications import GENERIC, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK

# The RDB codec (minired/features/rdb*.py) is imported by the functions below when first
# called: DUMP and RESTORE are rare, and its modules are ~4 ms of every start-up.

G = "generic"
log = logging.getLogger("minired")


def dump_encoding(value: Any, config) -> bytes:
    """value's RDB encoding (type byte first) as DUMP writes it: strings over 20 bytes
    LZF-compressed with rdbcompression yes, and the compact-encoding thresholds configured.
    Also DEBUG OBJECT's serializedlength."""
    from minired.features.rdb import Compact, encode_value
    from minired.features.rdb_format import COMPRESS_AS_REDIS, NO_COMPRESSION

    compress = COMPRESS_AS_REDIS if config.get("rdbcompression") == "yes" else NO_COMPRESSION
    return encode_value(value, compress, Compact.from_config(config.get))


def load_payload(payload: bytes, check_crc: bool = True, deep: bool = False,
                 stats: Any = None) -> Any:
    """The value in a DUMP payload (its compact encodings checked entry by entry with deep, and
    counted in stats); RedisError with Redis's text if it is not one."""
    from minired.features.rdb import decode_value
    from minired.features.rdb_format import BadData, Reader, footer_ok

    if not footer_ok(payload, check_crc=check_crc):
        raise RedisError(errors.DUMP_PAYLOAD_INVALID)
    # Like Redis, read from the whole payload: the footer is not fenced off from the body.
    reader = Reader(payload, 0, deep)
    try:
        return decode_value(reader)
    except (BadData, struct.error, IndexError, ValueError) as exc:
        if isinstance(exc, BadData) and str(exc):
            # rdbReportError in a RESTORE: the reason at verbose level, the error to the client.
            # (Redis names its rdb.c line; minired has none to name.)
            log.log(LOG_VERBOSE, "Internal error in RDB reading offset 0, function at rdb.c:0 "
                    "-> %s", exc)
        raise RedisError(errors.BAD_DATA_FORMAT) from None
    finally:
        if stats is not None:
            stats.dump_payload_sanitizations += reader.sanitized


# --- commands --------------------------------------------------------------------------------

def server_dump(server: Any, value: Any) -> bytes:
    """createDumpPayload: value's DUMP payload with the server's rdbcompression and compact
    encoding thresholds (DUMP, MIGRATE): its encoding, the RDB version and a CRC64."""
    from minired.features.rdb_format import seal

    return seal(dump_encoding(value, server.config))


@command("dump", arity=2, flags="readonly", keys=(1, 1, 1), group=G)
def dump(c, argv):
    value = c.db.read(argv[1])
    if value is None:
        return None
    return server_dump(c.server, value)


def _sanitizes(c: Client) -> bool:
    """Whether c's RESTORE checks its payload deeply (rdbLoadObject): sanitize-dump-payload yes,
    or clients, for a client that is not the master and whose user is not skip-sanitize-payload."""
    mode = c.server.config.get("sanitize-dump-payload")
    if mode != "clients":
        return mode == "yes"
    return c.flags != "M" and not (c.user is not None
                                   and "skip-sanitize-payload" in c.user.flags)


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
            idle = parse_int(argv[j + 1])
            if idle < 0:
                raise RedisError(errors.RESTORE_INVALID_IDLETIME)
            idle_given = True
            j += 1
        elif opt == b"FREQ" and has_value and not idle_given:
            freq = parse_int(argv[j + 1])
            if not 0 <= freq <= 255:
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
    value = load_payload(argv[3], not c.server.debug.skip_checksum_validation, _sanitizes(c),
                         c.server.stats)
    deleted = replace and db.delete_without_lookup(key)
    if ttl and not absolute_ttl:
        ttl += c.server.clock.ms()
    if ttl and db.clock.already_passed(ttl):  # (db.clock stands still while an AOF loads)
        if deleted and db.notifier is not None:
            notify(db, GENERIC, b"del", key)
        return OK  # already expired: the key is (still) gone
    db.set(key, value)
    if ttl:
        db.set_expiry(key, ttl)
    if idle_given or freq_given:
        # objectSetLRUOrLFU: the field the policy uses; the other option is ignored.
        lfu = (c.server.config.get("maxmemory-policy") or "").endswith("-lfu")
        if idle_given and not lfu:
            eviction.tracker(c.server, db).set_idle(key, idle)
        elif freq_given and lfu:
            eviction.tracker(c.server, db).set_frequency(key, freq)
    if db.notifier is not None:
        notify(db, GENERIC, b"restore", key)
    return OK
