"""DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis 7.0's dataset signature (debug.c), bit for bit.

Redis's test suite compares digests taken before and after a reload (AOF, RDB, DEBUG RELOAD):
the same data must give the same 40 hex digits on minired as on Redis. The algorithm:
  xor(d, data):  d ^= SHA1(data)                 order-free: set members, hash fields, keys
  mix(d, data):  d = SHA1(d ^ SHA1(data))         ordered: list elements, stream entries
Per key: mix the key name, mix the type code (4 bytes, big-endian), then the value as each type
is walked in Redis (below), then xor "!!expire!!" when the key has a TTL (its deadline is not
part of the digest). The key's digest is xored (as data: its SHA1) into the result; before the
first key of a non-empty database its number (4 bytes, big-endian) is mixed into the result.
Hash fields and sorted-set members are digested as pairs the same way: each pair mixed from
zero, its SHA1 xored into the key's digest.

Sorted-set scores are printed with "%.17g" (7.0's snprintf; later versions use fpconv_dtoa).
Elements stored as integers (intset, listpack) are digested as their decimal text, which is
the bytes minired keeps. Keys whose TTL has passed but that were not yet deleted count, as in
Redis (it walks the dictionary without looking keys up).
"""
from __future__ import annotations

from hashlib import sha1
from typing import Any, Iterable

from minired.data.packed import live
from minired.data.quicklist import QuickList
from minired.data.stream import MAX_ID, MIN_ID, Stream
from minired.data.zset import ZSet

# OBJ_STRING, OBJ_LIST, OBJ_SET, OBJ_ZSET, OBJ_HASH, OBJ_STREAM (server.h), as 4 big-endian bytes.
_TYPE_CODES = {bytes: b"\0\0\0\0", QuickList: b"\0\0\0\1", set: b"\0\0\0\2", ZSet: b"\0\0\0\3",
               dict: b"\0\0\0\4", Stream: b"\0\0\0\6"}
_EXPIRE_MARK = b"!!expire!!"
ZERO = 0
_from_bytes = int.from_bytes


def _sha1(data: bytes) -> int:
    return _from_bytes(sha1(data).digest(), "big")


# The SHA1s of the constant inputs, taken once (digesting a big dataset is SHA1 after SHA1).
_TYPE_SHA1 = {kind: _sha1(code) for kind, code in _TYPE_CODES.items()}
_EXPIRE_SHA1 = _sha1(_EXPIRE_MARK)
_STRING_SHA1 = _TYPE_SHA1[bytes]


def _mix(digest: int, data: bytes) -> int:
    """mixDigest: SHA1 of (digest xor SHA1(data))."""
    return _sha1((digest ^ _sha1(data)).to_bytes(20, "big"))


def _mix_all(digest: int, items: Iterable[bytes]) -> int:
    for item in items:
        digest = _mix(digest, item)
    return digest


def _seeded(data: bytes) -> int:
    """mixDigest of data into a zeroed digest: SHA1(SHA1(data))."""
    return _sha1(sha1(data).digest())


def _xor_digest(digest: int) -> int:
    """What xorDigest(d, digest, 20) xors into d: the SHA1 of a 20-byte digest."""
    return _sha1(digest.to_bytes(20, "big"))


def _pair(first: bytes, second: bytes) -> int:
    """A hash field and its value, or a sorted-set member and its score: mixed from zero, the
    result xored into the key's digest (so pairs are order-free, each pair's halves are not)."""
    return _xor_digest(_mix(_seeded(first), second))


def _score_text(score: float) -> bytes:
    return b"%.17g" % score


def value_digest(value: Any, has_expiry: bool, digest: int = ZERO) -> int:
    """xorObjectDigest: `digest` with the value's type, contents and TTL flag mixed in."""
    value = live(value)
    kind = type(value)
    digest = _sha1((digest ^ _TYPE_SHA1[kind]).to_bytes(20, "big"))
    if kind is bytes:
        digest = _mix(digest, value)
    elif kind is QuickList:
        digest = _mix_all(digest, value)
    elif kind is set:
        for member in value:
            digest ^= _sha1(member)
    elif kind is ZSet:
        for score, member in value:
            digest ^= _pair(member, _score_text(score))
    elif kind is dict:
        for field, item in value.items():
            digest ^= _pair(field, item)
    else:  # Stream: entries in ID order, each "ms.seq" then its fields and values
        for (ms, seq), pairs in value.range(MIN_ID, MAX_ID):
            digest = _mix(digest, b"%d.%d" % (ms, seq))
            digest = _mix_all(digest, pairs)
    if has_expiry:
        digest ^= _EXPIRE_SHA1
    return digest


def key_digest(db, key: bytes) -> int:
    """DEBUG DIGEST-VALUE's digest of one key's value (zero for a missing key). Expired keys not
    yet deleted count: Redis reads its dictionary directly, not through a lookup."""
    value = db.data.get(key)
    if value is None:
        return ZERO
    return value_digest(value, key in db.expires)


def dataset_digest(keyspace) -> int:
    """computeDatasetDigest over every database."""
    final = ZERO
    for db in keyspace.dbs:
        if not db.data:
            continue
        final = _mix(final, db.index.to_bytes(4, "big"))
        expires = db.expires
        for key, value in db.data.items():
            digest = _from_bytes(sha1(sha1(key).digest()).digest(), "big")
            if type(value) is bytes:  # value_digest's string case, inlined: most keys are
                digest = _from_bytes(sha1((digest ^ _STRING_SHA1).to_bytes(20, "big")).digest(),
                                     "big")
                digest ^= _from_bytes(sha1(value).digest(), "big")
                digest = _from_bytes(sha1(digest.to_bytes(20, "big")).digest(), "big")
                if expires and key in expires:
                    digest ^= _EXPIRE_SHA1
            else:
                digest = value_digest(value, key in expires, digest)
            final ^= _from_bytes(sha1(digest.to_bytes(20, "big")).digest(), "big")
    return final


def hex_digest(digest: int) -> bytes:
    return b"%040x" % digest
