"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP.

minired stores plain Python values, so the encoding Redis 7.0 would use is derived from the
value and the `*-max-*` configuration: strings int/embstr/raw by content and length, lists
always quicklist (7.0 has no listpack lists), hashes and sorted sets listpack while small,
sets intset while all-integer and small. The same rule decides whether HSCAN/SSCAN/ZSCAN
return a collection whole (collection_scan.py) and how ZSCAN prints scores. Redis never
converts a big encoding back to a small one when elements are removed; minired reports the
encoding of the current contents.

Access times and LFU counters are not tracked (minired does not evict), so every key reads as
just used: IDLETIME 0, FREQ the counter Redis gives a new key.
"""
from __future__ import annotations

from typing import Any, Callable

from minired.data.keyspace import type_name
from minired.data.quicklist import QuickList
from minired.data.zset import ZSet
from minired.engine.table import command, container_command, help_reply
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import string2ll

G = "generic"

SHARED_INTEGERS = 10000        # OBJ_SHARED_INTEGERS: 0..9999 are shared objects in Redis
SHARED_REFCOUNT = 2**31 - 1    # OBJ_SHARED_REFCOUNT
EMBSTR_LIMIT = 44              # OBJ_ENCODING_EMBSTR_SIZE_LIMIT
LFU_INIT_VAL = 5

container_command("object", G, summary="A container for object introspection commands.")

# Other registered types may describe their own encoding: cls -> fn(value, config).
ENCODINGS: dict[type, Callable[[Any, Any], str]] = {}


def register_encoding(cls: type, describe: Callable[[Any, Any], str]) -> None:
    ENCODINGS[cls] = describe


def _config_int(config, name: str) -> int:
    return int(config.get(name))


def encoding(value: Any, config) -> str:
    kind = type(value)
    if kind is bytes:
        if string2ll(value) is not None:
            return "int"
        return "embstr" if len(value) <= EMBSTR_LIMIT else "raw"
    if kind is QuickList:
        return "quicklist"
    if kind is dict:
        limit = _config_int(config, "hash-max-listpack-value")
        small = (len(value) <= _config_int(config, "hash-max-listpack-entries")
                 and all(len(f) <= limit and len(v) <= limit for f, v in value.items()))
        return "listpack" if small else "hashtable"
    if kind is set:
        small = (len(value) <= _config_int(config, "set-max-intset-entries")
                 and all(string2ll(member) is not None for member in value))
        return "intset" if small else "hashtable"
    if kind is ZSet:
        limit = _config_int(config, "zset-max-listpack-value")
        small = (len(value) <= _config_int(config, "zset-max-listpack-entries")
                 and all(len(member) <= limit for _, member in value))
        return "listpack" if small else "skiplist"
    describe = ENCODINGS.get(kind)
    if describe is not None:
        return describe(value, config)
    return type_name(value)  # "stream": Redis has one encoding per remaining type


_COMPACT = frozenset(("listpack", "intset"))


def is_compact(value: Any, config) -> bool:
    """Whether Redis would hold this hash, set or sorted set in a compact encoding (listpack,
    intset): HSCAN/SSCAN/ZSCAN then return it whole, and ZSCAN prints scores as stored text."""
    return encoding(value, config) in _COMPACT


def _lookup(c, key: bytes):
    return c.db.read(key, notify=False)  # OBJECT's lookup is counted but sends no keymiss


@command("encoding", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_encoding(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    return encoding(value, c.server.config).encode()


@command("refcount", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_refcount(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    return refcount(value, c.server.config)


def refcount(value: Any, config) -> int:
    """The references Redis would count to the value: small integers are its shared objects
    (unless maxmemory is set, which makes every value its own for LRU/LFU)."""
    if type(value) is bytes and config.maxmemory == 0:
        number = string2ll(value)
        if number is not None and 0 <= number < SHARED_INTEGERS:
            return SHARED_REFCOUNT
    return 1


def _lfu_selected(c) -> bool:
    return "lfu" in (c.server.config.get("maxmemory-policy") or "")


@command("idletime", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_idletime(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    if _lfu_selected(c):
        raise RedisError(errors.OBJECT_IDLETIME_LFU)
    return 0


@command("freq", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_freq(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    if not _lfu_selected(c):
        raise RedisError(errors.OBJECT_FREQ_NOT_LFU)
    return LFU_INIT_VAL


_HELP = (
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",)


@command("help", arity=2, flags="loading stale", parent="object", group=G)
def object_help(c, argv):
    return help_reply("OBJECT", *_HELP)
