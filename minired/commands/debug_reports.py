"""The texts and test replies of the DEBUG command (declared in diagnostics.py), as Redis 7.0.15
builds them in debug.c: HELP, OBJECT's status line, HTSTATS's hash table report, PROTOCOL's
sample replies. No command is declared here.

minired keeps Python dicts, not Redis's chained hash tables, so HTSTATS describes the table
Redis would have for as many elements (size: the power of two it grows to, at least 4) with
the elements spread over its buckets by a CRC32 of each key; nothing ever rehashes.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

from minired.commands.keys_dump import dump_encoding
from minired.commands.keys_object import encoding, refcount
from minired.data.zset import ZSet
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import BigNumber, Encoded, OrderedSet, Push, Replies, Verbatim

HELP = (
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
)

# DEBUG STRUCTSIZE: the sizes of Redis's structures on a 64-bit build.
STRUCT_SIZES = (b"bits:64 robj:16 dictentry:24 sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 "
                b"sdshdr64:17 ")

_LRU_CLOCK_MAX = (1 << 24) - 1


# --- OBJECT ---------------------------------------------------------------------------------------

def _quicklist_details(items, config, packed_threshold: int) -> str:
    """The ql_* fields DEBUG OBJECT adds for a quicklist: its nodes as Redis would fill them."""
    from minired.features.rdb import quicklist_nodes  # (the RDB codec: not at start-up)
    from minired.features.rdb_containers import listpack

    fill = int(config.get("list-max-listpack-size"))
    nodes = quicklist_nodes(items, fill, packed_threshold)
    size = sum(len(node[0]) if len(node[0]) >= packed_threshold else len(listpack(node))
               for node in nodes)
    compressed = 1 if int(config.get("list-compress-depth")) != 0 else 0
    average = len(items) / len(nodes)
    return (f" ql_nodes:{len(nodes)} ql_avg_node:{average:.2f} ql_listpack_max:{fill}"
            f" ql_compressed:{compressed} ql_uncompressed_size:{size}")


_ADDRESS_MASK = (1 << 40) - 1


def _address(value: Any, db_index: int, key: bytes) -> int:
    """Where DEBUG OBJECT says the value lives. Containers are changed in place, so their
    identity is their address. Strings are immutable bytes that INCR, APPEND ... replace where
    Redis changes its object in place (incr.tcl checks the address stays): they get one address
    per key."""
    if type(value) is bytes:
        return 0x7F0000000000 | (hash((db_index, key)) & _ADDRESS_MASK) & ~0xF
    return id(value)


def object_line(value: Any, db_index: int, key: bytes, config, now_ms: int,
                packed_threshold: int, lru: int | None = None, idle_s: int = 0) -> bytes:
    """DEBUG OBJECT's status line; `lru` the key's LRU/LFU field when access is tracked (else
    the value reads as just used), `idle_s` its idle time."""
    if lru is None:
        lru = (now_ms // 1000) & _LRU_CLOCK_MAX
    kind = encoding(value, config)
    serialized = len(dump_encoding(value, config)) - 1  # (without the type byte)
    line = (f"Value at:{_address(value, db_index, key):#x} refcount:{refcount(value, config)} "
            f"encoding:{kind} "
            f"serializedlength:{serialized} lru:{lru} "
            f"lru_seconds_idle:{idle_s}")
    if kind == "quicklist":
        line += _quicklist_details(value, config, packed_threshold)
    return line.encode()


# --- SDSLEN ---------------------------------------------------------------------------------------
# minired's strings are not sds strings: the report is what Redis would allocate for a key and
# a value of these lengths made by SET (jemalloc's size classes; a raw value's spare room trimmed
# when over a tenth of its length, as trimStringObjectIfNeeded does).

_ROBJ_SIZE = 16


def _jemalloc_size(size: int) -> int:
    """The usable size jemalloc gives a request: 8, then multiples of 16 up to 128, then four
    classes per doubling."""
    if size <= 8:
        return 8
    if size <= 128:
        return (size + 15) & ~15
    step = 1 << ((size - 1).bit_length() - 3)
    return (size + step - 1) // step * step


def _sds_header(length: int, allow_type5: bool) -> tuple[int, int]:
    """(header bytes, largest alloc the header can hold) of the sds type Redis picks."""
    if length < 32 and allow_type5:
        return 1, 0
    if length < 256:
        return 3, 255
    if length < 65536:
        return 5, 65535
    return 9, 2**32 - 1


def _sds_sizes(length: int, allow_type5: bool) -> tuple[int, int]:
    """(spare room, allocation) of sdsnewlen(length), which takes the whole size class."""
    header, largest = _sds_header(length, allow_type5)
    usable = _jemalloc_size(header + length + 1)
    if not largest:  # type 5 records no allocation: no spare room
        return 0, usable
    return min(usable - header - 1, largest) - length, usable


def sds_report(key: bytes, value: bytes, kind: str) -> bytes:
    key_avail, key_alloc = _sds_sizes(len(key), allow_type5=True)
    length = len(value)
    if kind == "embstr":
        value_avail, value_alloc = 0, _jemalloc_size(_ROBJ_SIZE + 3 + length + 1) - _ROBJ_SIZE
    else:
        value_avail, value_alloc = _sds_sizes(length, allow_type5=False)
        if value_avail > length // 10:
            value_avail = 0  # trimmed: the allocation keeps its size class
    return (b"key_sds_len:%d, key_sds_avail:%d, key_zmalloc: %d, val_sds_len:%d, "
            b"val_sds_avail:%d, val_zmalloc: %d"
            % (len(key), key_avail, key_alloc, length, value_avail, value_alloc))


# --- HTSTATS --------------------------------------------------------------------------------------

_DICT_STATS_VECTLEN = 50
_DICT_HT_INITIAL_SIZE = 4


_C_FLOAT = struct.Struct("f")


def _float(value: float) -> float:
    """The value rounded to a C float, as dictGetStats computes its ratios."""
    return _C_FLOAT.unpack(_C_FLOAT.pack(value))[0]


def table_size(elements: int) -> int:
    """The bucket count of a Redis dict holding `elements` (it doubles when full)."""
    size = _DICT_HT_INITIAL_SIZE
    while size < elements:
        size *= 2
    return size


def hash_table_stats(keys) -> str:
    """dictGetStats's report for a dict holding `keys` (bytes)."""
    keys = list(keys)
    head = "Hash table 0 stats (main hash table):\n"
    if not keys:
        return head + "No stats available for empty dictionaries\n"
    size = table_size(len(keys))
    chains = [0] * size
    for key in keys:
        chains[zlib.crc32(key) & (size - 1)] += 1
    lengths = [0] * _DICT_STATS_VECTLEN
    for chain in chains:
        lengths[min(chain, _DICT_STATS_VECTLEN - 1)] += 1
    slots = size - lengths[0]
    text = (head + f" table size: {size}\n number of elements: {len(keys)}\n"
            f" different slots: {slots}\n max chain length: {max(chains)}\n"
            f" avg chain length (counted): {_float(len(keys) / slots):.2f}\n"
            f" avg chain length (computed): {_float(len(keys) / slots):.2f}\n"
            " Chain length distribution:\n")
    for length, count in enumerate(lengths[:-1]):
        if count:
            text += f"   {length}: {count} ({_float(_float(count / size) * 100):.2f}%)\n"
    return text


def database_stats(db) -> Verbatim:
    return Verbatim(("[Dictionary HT]\n" + hash_table_stats(db.data) + "[Expires HT]\n"
                     + hash_table_stats(db.expires)).encode())


def value_table_stats(value: Any, config) -> Verbatim:
    """HTSTATS-KEY: the report of the hash table behind a set, hash or sorted set value."""
    if encoding(value, config) not in ("hashtable", "skiplist"):
        raise RedisError(errors.DEBUG_NOT_HASH_TABLE)
    members = value.scores if type(value) is ZSet else value
    return Verbatim(hash_table_stats(members).encode())


# --- PROTOCOL -------------------------------------------------------------------------------------

# RESP3's attribute frame DEBUG PROTOCOL ATTRIB sends before its reply (resp.py has no type for
# attributes: nothing else sends one).
_ATTRIBUTE = b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"


def protocol_sample(name: bytes, protocol: int) -> Any:
    """DEBUG PROTOCOL <type>: a sample reply of each RESP type."""
    name = name.lower()
    if name == b"string":
        return b"Hello World"
    if name == b"integer":
        return 12345
    if name == b"double":
        return 3.141
    if name == b"bignum":
        return BigNumber(b"1234567999999999999999999999999999999")
    if name == b"null":
        return None
    if name == b"array":
        return [0, 1, 2]
    if name == b"set":
        return OrderedSet([0, 1, 2])
    if name == b"map":
        return {0: False, 1: True, 2: False}
    if name == b"attrib":
        # An attribute is not a reply: a real one follows it (and RESP2 has no attributes).
        reply = b"Some real reply following the attribute"
        return Replies([Encoded(_ATTRIBUTE), reply]) if protocol >= 3 else reply
    if name == b"push":
        if protocol < 3:
            raise RedisError(errors.DEBUG_PROTOCOL_RESP2_PUSH)
        return Replies([Push([b"server-cpu-usage", 42]),
                        b"Some real reply following the push reply"])
    if name == b"true":
        return True
    if name == b"false":
        return False
    if name == b"verbatim":
        return Verbatim(b"This is a verbatim\nstring")
    raise RedisError(errors.DEBUG_PROTOCOL_TYPE)
