"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP.

minired stores plain Python values, so the encoding Redis 7.0 would use is derived from the
value and the `*-max-*` configuration: strings int/embstr/raw by content and length, lists
always quicklist (7.0 has no listpack lists), hashes and sorted sets listpack while small,
sets intset while all-integer and small. The same rule decides whether HSCAN/SSCAN/ZSCAN
return a collection whole (collection_scan.py) and how ZSCAN prints scores. Redis never
converts a big encoding back to a small one when elements are removed: sets and sorted sets
are marked as they shrink out of one (sets.py, zsets.py) and stay in it; a hash reports the
encoding of its current contents.

IDLETIME and FREQ read the key access tracking of minired/features/eviction.py.
"""
from __future__ import annotations

from typing import Any, Callable

from minired.data import shared_integers
from minired.data.compact import hash_fits_listpack, set_fits_intset
from minired.data.keyspace import type_name
from minired.data.quicklist import QuickList
from minired.data.stream import Stream
from minired.data.zset import ZSet
from minired.engine.table import command, container_command, help_reply
from minired.features import eviction
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import string2ll

G = "generic"

SHARED_REFCOUNT = 2**31 - 1    # OBJ_SHARED_REFCOUNT
EMBSTR_LIMIT = 44              # OBJ_ENCODING_EMBSTR_SIZE_LIMIT

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
        small = hash_fits_listpack(value, _config_int(config, "hash-max-listpack-entries"),
                                   _config_int(config, "hash-max-listpack-value"))
        return "listpack" if small else "hashtable"
    if kind is set:
        small = set_fits_intset(value, _config_int(config, "set-max-intset-entries"))
        return "intset" if small else "hashtable"
    if kind is ZSet:
        small = value.fits_listpack(_config_int(config, "zset-max-listpack-entries"),
                                    _config_int(config, "zset-max-listpack-value"))
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


# LAZYFREE_THRESHOLD: a value whose freeing takes more allocations than this is freed by a
# background thread when deleted lazily (UNLINK, FLUSHALL ASYNC, the lazyfree-lazy-* settings).
LAZYFREE_THRESHOLD = 64


def free_effort(value: Any, server) -> int:
    """lazyfreeGetFreeEffort: the allocations freeing the value takes (quicklist nodes, hash
    table entries, skiplist nodes, a stream's radix tree nodes and consumer groups' entries);
    1 for a string and every compact encoding."""
    kind = type(value)
    if kind is Stream:
        effort = len(value.nodes) + 1  # (a radix tree node per macro node at least, the root)
        if value.groups:
            first = next(iter(value.groups.values()))
            effort += len(value.groups) * (1 + len(first.pending))
        return effort
    if kind is bytes or len(value) <= LAZYFREE_THRESHOLD:
        return 1  # (never more allocations than elements: under the threshold either way)
    config = server.config
    if kind is QuickList:
        from minired.features.rdb import quicklist_nodes  # (the RDB codec: not at start-up)

        return len(quicklist_nodes(value, int(config.get("list-max-listpack-size")),
                                   server.debug.quicklist_packed_threshold))
    return 1 if is_compact(value, config) else len(value)


def _lookup(c, key: bytes):
    # OBJECT's lookup is counted but sends no keymiss and is no access of the key.
    return c.db.read(key, False, False)


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
    if type(value) is bytes and not (config.maxmemory and _lru_or_lfu(config)):
        number = string2ll(value)
        if number is not None and 0 <= number < shared_integers.COUNT:
            return SHARED_REFCOUNT
    return 1


def _lru_or_lfu(config) -> bool:
    """MAXMEMORY_FLAG_NO_SHARED_INTEGERS: the policies that need each value's own LRU field."""
    policy = config.get("maxmemory-policy") or ""
    return policy.endswith("-lru") or policy.endswith("-lfu")


def _lfu_selected(c) -> bool:
    return "lfu" in (c.server.config.get("maxmemory-policy") or "")


@command("idletime", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_idletime(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    if _lfu_selected(c):
        raise RedisError(errors.OBJECT_IDLETIME_LFU)
    return eviction.tracker(c.server, c.db).idle_ms(argv[2]) // 1000


@command("freq", arity=3, flags="readonly", keys=(2, 2, 1), parent="object", group=G)
def object_freq(c, argv):
    value = _lookup(c, argv[2])
    if value is None:
        return None
    if not _lfu_selected(c):
        raise RedisError(errors.OBJECT_FREQ_NOT_LFU)
    return eviction.tracker(c.server, c.db).frequency(argv[2])


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
