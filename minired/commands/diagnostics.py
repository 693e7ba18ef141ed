"""MEMORY and LATENCY: the server's reports on itself, as Redis 7.0 words and shapes them.

Memory figures are INFO's (commands/info.py): the process's resident size stands for every
allocator total, so the fragmentation ratios are 1; what minired does not have (replication
backlog, replica and cluster buffers, per-client buffer accounting) is 0. The per-database
hash table overheads are Redis's formula (dict entries, bucket array, key objects) applied to
minired's key counts. MEMORY DOCTOR reads the memory above start-up as Redis reads its
allocations (minired's start-up is a whole interpreter), so a fresh or small instance gets
Redis's "empty" report. minired's allocator is not jemalloc: MEMORY MALLOC-STATS answers as a
Redis built with libc malloc does.

Latency: the per-command histograms are recorded by dispatch.call (see minired/engine/latency.py).
The latency monitor's events (durations past latency-monitor-threshold) are recorded for
commands (command, fast-command) and the active expire cycle (expire-cycle), for LATENCY LATEST,
HISTORY and RESET; GRAPH answers as for an event without samples and DOCTOR gives Redis's report
for an instance without events (neither draws Redis's graphs or analysis yet).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import signal
import struct
import time
from typing import Callable

from minired import REDIS_VERSION
from minired.commands import debug_reports
from minired.commands.info import (
    aof_buffered,
    memory_figures,
    replication_buffers,
    scripting_memory,
)
from minired.commands.keys_object import encoding
from minired.commands.server import persistence_of
from minired.data.packed import live
from minired.engine import latency
from minired.engine.args import parse_int
from minired.engine.config_values import parse_memory
from minired.engine.debug_settings import (
    QUICKLIST_PACKED_THRESHOLD,
    QUICKLIST_PACKED_THRESHOLD_MAX,
    REPLY_BUFFER_PEAK_RESET_MS,
)
from minired.engine.panic import die, server_panic
from minired.engine.table import COMMANDS, command, container_command, help_reply, stats_of
from minired.features import eviction, replication
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Encoded, Status, Verbatim, encode_into

G = "server"
log = logging.getLogger("minired")


# --- MEMORY --------------------------------------------------------------------------------------

container_command("memory", G, summary="A container for memory diagnostics commands")


@command("usage", arity=-3, flags="readonly", keys=(2, 2, 1), parent="memory", group=G)
def memory_usage(c, argv):
    """Estimate the memory usage of a key"""
    # (the estimate reads every element, so SAMPLES changes nothing but what Redis refuses:
    # any number of SAMPLES options, each a non-negative integer)
    for i in range(3, len(argv), 2):
        if argv[i].lower() != b"samples" or i + 1 == len(argv):
            raise RedisError(errors.SYNTAX)
        if parse_int(argv[i + 1]) < 0:
            raise RedisError(errors.SYNTAX)
    value = c.db.get(argv[2], False)  # (Redis finds it in the dict: no access, no expiry)
    if value is None:
        return None
    # The size the used_memory model counts for the key (features/eviction.py).
    return eviction.key_size(argv[2], value)


# Redis's sizes on a 64-bit build: dictEntry, a bucket pointer, robj.
_DICT_ENTRY, _BUCKET, _ROBJ = 24, 8, 16


def _dict_slots(size: int) -> int:
    """Buckets of a Redis dict holding `size` entries: it doubles from 4 when full."""
    if not size:
        return 0
    slots = 4
    while slots < size:
        slots *= 2
    return slots


def _database_overheads(server) -> list[tuple[int, int, int]]:
    """(database, main hash table bytes, expires hash table bytes), for databases with keys."""
    found = []
    for db in server.keyspace.dbs:
        keys = len(db.data)
        if not keys:
            continue
        expires = len(db.expires)
        main = keys * (_DICT_ENTRY + _ROBJ) + _dict_slots(keys) * _BUCKET
        found.append((db.index, main, expires * _DICT_ENTRY + _dict_slots(expires) * _BUCKET))
    return found


def _float(value: float) -> float:
    """Redis computes these ratios in C floats: the reply shows the float's digits."""
    return struct.unpack("f", struct.pack("f", value))[0]


def memory_overview(server) -> dict:
    """getMemoryOverheadData's figures, from what minired knows of its memory."""
    used, peak, startup = memory_figures(server)
    scripting = scripting_memory(server)
    databases = _database_overheads(server)
    overhead = (startup + aof_buffered(server) + scripting["scripts"]
                + scripting["functions_memory"] + sum(main + exp for _, main, exp in databases))
    overhead = min(overhead, used)
    keys = sum(len(db.data) for db in server.keyspace.dbs)
    net_usage = used - startup if used > startup else 1
    return {
        "used": used, "peak": peak, "startup": startup, "overhead": overhead,
        "aof_buffer": aof_buffered(server), "lua_caches": scripting["scripts"],
        "functions_caches": scripting["functions_memory"], "databases": databases,
        "keys": keys, "net_usage": net_usage, "cached_scripts": scripting["cached"],
    }


@command("stats", arity=2, flags="", parent="memory", group=G)
def memory_stats(c, argv):
    """Show memory usage details"""
    m = memory_overview(c.server)
    used, dataset = m["used"], m["used"] - m["overhead"]
    _, backlog, replicas_buffers = replication_buffers(c.server)
    reply = {
        b"peak.allocated": m["peak"],
        b"total.allocated": used,
        b"startup.allocated": m["startup"],
        b"replication.backlog": backlog,
        b"clients.slaves": replicas_buffers,
        b"clients.normal": 0,
        b"cluster.links": 0,
        b"aof.buffer": m["aof_buffer"],
        b"lua.caches": m["lua_caches"],
        b"functions.caches": m["functions_caches"],
    }
    for index, main, expires in m["databases"]:
        reply[b"db.%d" % index] = {
            b"overhead.hashtable.main": main,
            b"overhead.hashtable.expires": expires,
            b"overhead.hashtable.slot-to-keys": 0,  # (cluster mode only)
        }
    reply.update({
        b"overhead.total": m["overhead"],
        b"keys.count": m["keys"],
        b"keys.bytes-per-key": m["net_usage"] // m["keys"] if m["keys"] else 0,
        b"dataset.bytes": dataset,
        b"dataset.percentage": _float(_float(_float(dataset) * 100) / m["net_usage"]),
        b"peak.percentage": _float(_float(_float(used) * 100) / m["peak"]),
        # The resident size stands for the allocator's figures: no fragmentation to show.
        b"allocator.allocated": used,
        b"allocator.active": used,
        b"allocator.resident": used,
        b"allocator-fragmentation.ratio": 1.0,
        b"allocator-fragmentation.bytes": 0,
        b"allocator-rss.ratio": 1.0,
        b"allocator-rss.bytes": 0,
        b"rss-overhead.ratio": 1.0,
        b"rss-overhead.bytes": 0,
        b"fragmentation": 1.0,
        b"fragmentation.bytes": 0,
    })
    return reply


_EMPTY_THRESHOLD = 5 * 1024 * 1024  # Redis's "empty" bound on its allocations
_MANY_SCRIPTS = 1000
_DOCTOR_NO_ISSUES = ("Hi Sam, I can't find any memory issue in your instance. I can only account "
                     "for what occurs on this base.\n")
_DOCTOR_EMPTY = (
    "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be "
    "used in these conditions. Please, leave for your mission on Earth and fill it with some "
    "data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
_DOCTOR_ISSUES = "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
_DOCTOR_BIG_PEAK = (
    " * Peak memory: In the past this instance used more than 150% the memory that is currently "
    "using. The allocator is normally not able to release memory after a peak, so you can expect "
    "to see a big fragmentation ratio, however this is actually harmless and is only due to the "
    "memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than "
    "expected, the memory will be used as soon as you fill the Redis instance with more data. If "
    "the memory peak was only occasional and you want to try to reclaim memory, please try the "
    "MEMORY PURGE command, otherwise the only other option is to shutdown and restart the "
    "instance.\n\n")
_DOCTOR_MANY_SCRIPTS = (
    " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). "
    "This may be because scripts are generated and `EVAL`ed, instead of being parameterized "
    "(with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called "
    "periodically, the scripts' caches may end up consuming most of your memory.\n\n")
_DOCTOR_FOOTER = "I'm here to keep you safe, Sam. I want to help you.\n"


def memory_doctor_report(in_use: int, peak_in_use: int, cached_scripts: int) -> str:
    """Redis's getMemoryDoctorReport on memory above start-up. Its fragmentation, RSS overhead
    and client buffer checks never fire on minired's figures (ratios 1, no buffer accounting)."""
    if in_use < _EMPTY_THRESHOLD:
        return _DOCTOR_EMPTY
    issues = []
    if peak_in_use / in_use > 1.5:
        issues.append(_DOCTOR_BIG_PEAK)
    if cached_scripts > _MANY_SCRIPTS:
        issues.append(_DOCTOR_MANY_SCRIPTS)
    if not issues:
        return _DOCTOR_NO_ISSUES
    return _DOCTOR_ISSUES + "".join(issues) + _DOCTOR_FOOTER


@command("doctor", arity=2, flags="", parent="memory", group=G)
def memory_doctor(c, argv):
    """Outputs memory problems report"""
    m = memory_overview(c.server)
    report = memory_doctor_report(max(m["used"] - m["startup"], 0),
                                  max(m["peak"] - m["startup"], 0), m["cached_scripts"])
    return Verbatim(report.encode())


@command("malloc-stats", arity=2, flags="", parent="memory", group=G)
def memory_malloc_stats(c, argv):
    """Show allocator internal stats"""
    # Redis's reply when not built with jemalloc (a bulk string, not verbatim, even in RESP3).
    return b"Stats not supported for the current allocator"


@command("purge", arity=2, flags="", parent="memory", group=G)
def memory_purge(c, argv):
    """Ask the allocator to release memory"""
    import gc

    gc.collect()
    return OK


@command("help", arity=2, flags="loading stale", parent="memory", group=G)
def memory_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "MEMORY",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    )


# --- LATENCY -------------------------------------------------------------------------------------

container_command("latency", G, summary="A container for latency diagnostics commands")

_LATENCY_FLAGS = "admin noscript loading stale"


@command("latest", arity=2, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_latest(c, argv):
    """Return the latest latency samples for all events."""
    return [[name.encode(), *series.samples[-1], series.max]
            for name, series in c.server.latency_events.items()]


@command("history", arity=3, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_history(c, argv):
    """Return timestamp-latency samples for the event."""
    series = c.server.latency_events.get(argv[2].decode(errors="replace"))
    return [list(sample) for sample in series.samples] if series is not None else []


@command("reset", arity=-2, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_reset(c, argv):
    """Reset latency data for one or more events."""
    events = c.server.latency_events
    if len(argv) == 2:
        count = len(events)
        events.clear()
        return count
    # (the number of event series deleted: a name given twice is deleted once)
    return sum(events.pop(name.decode(errors="replace"), None) is not None for name in argv[2:])


@command("graph", arity=3, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_graph(c, argv):
    """Return a latency graph for the event."""
    raise RedisError(errors.LATENCY_NO_SAMPLES.format(argv[2].decode(errors="replace")))


_DOCTOR_DISABLED = (
    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. "
    "You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. "
    "If we weren't in a deep space mission I'd suggest to take a look at "
    "https://redis.io/topics/latency-monitor.\n")
_DOCTOR_NO_SPIKES = (
    "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the "
    "slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think "
    "things over.\n")
_DOCTOR_ADVICES = "\nI have a few advices for you:\n\n"
_DOCTOR_DISABLE_THP = (
    "- I detected a non zero amount of anonymous huge pages used by your process. This creates "
    "very serious latency events in different conditions, especially when Redis is persisting "
    "on disk. To disable THP support use the command 'echo never > "
    "/sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local "
    "so that the command will be executed again after a reboot. Note that even if you have "
    "already disabled THP, you still need to restart the Redis process to get rid of the huge "
    "pages already created.\n")


def _anonymous_huge_pages() -> int:
    """Bytes of transparent huge pages this process uses (Redis's THPGetAnonHugePagesSize)."""
    for path in ("/proc/self/smaps_rollup", "/proc/self/smaps"):
        try:
            with open(path, "rb") as f:
                return sum(int(line.split()[1]) * 1024 for line in f
                           if line.startswith(b"AnonHugePages:"))
        except (OSError, ValueError, IndexError):
            continue
    return 0


@command("doctor", arity=2, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_doctor(c, argv):
    """Return a human readable latency analysis report."""
    if c.server.config.number("latency-monitor-threshold") == 0:
        return Verbatim(_DOCTOR_DISABLED.encode())
    # No events to analyse: only the advice that does not depend on them.
    if _anonymous_huge_pages() > 0:
        return Verbatim((_DOCTOR_ADVICES + _DOCTOR_DISABLE_THP).encode())
    return Verbatim(_DOCTOR_NO_SPIKES.encode())


def _histogram_reply(counts: list) -> dict:
    return {b"calls": sum(counts), b"histogram_usec": latency.cumulative_buckets(counts)}


def _named_spec(name: bytes):
    """A command or 'container|sub' as Redis's lookupCommandBySds finds it: one level only."""
    parts = name.lower().split(b"|")
    if len(parts) > 2:
        return None
    spec = COMMANDS.get(parts[0])
    if spec is None or len(parts) == 1:
        return spec
    return spec.subcommands.get(parts[1]) if spec.subcommands else None


@command("histogram", arity=-2, flags=_LATENCY_FLAGS, parent="latency", group=G)
def latency_histogram(c, argv):
    """Return the cumulative distribution of latencies of a subset of commands or all."""
    if len(argv) == 2:
        chosen = [spec for top in COMMANDS.values() for spec in (top, *top.subcommands.values())]
    else:
        # As named, a container bringing its subcommands; repeats are answered again.
        chosen = []
        for name in argv[2:]:
            spec = _named_spec(name)
            if spec is not None:
                chosen += [spec, *spec.subcommands.values()]
    recorded = [(spec, latency.recorded(stats_of(c.server, spec))) for spec in chosen]
    pairs = [(spec.full_name.encode(), _histogram_reply(counts))
             for spec, counts in recorded if any(counts)]
    # A map that may repeat a name (LATENCY HISTOGRAM get GET): encoded here, as no dict can.
    out = [(b"%%%d\r\n" if c.protocol == 3 else b"*%d\r\n")
           % (len(pairs) if c.protocol == 3 else 2 * len(pairs))]
    for name, value in pairs:
        encode_into(name, c.protocol, out)
        encode_into(value, c.protocol, out)
    return Encoded(b"".join(out))


@command("help", arity=2, flags="loading stale", parent="latency", group=G)
def latency_help(c, argv):
    """Show helpful text about the different subcommands."""
    return help_reply(
        "LATENCY",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the "
        "specified command names.",
        "    If no commands are specified then all histograms are replied.",
    )


# --- DEBUG (off unless enable-debug-command allows it, as in Redis 7) ----------------------------
# Each subcommand with the argument counts Redis accepts for it (argv included); a name with
# another count is an unknown subcommand, as in debugCommand's chain of comparisons.

_DEBUG: dict[bytes, tuple[int, int, Callable]] = {}
_ANY = 1 << 30


def _debug_sub(name: str, low: int, high: int | None = None):
    def register(handler: Callable) -> Callable:
        _DEBUG[name.encode()] = (low, low if high is None else high, handler)
        return handler
    return register


@command("debug", arity=-2, flags="admin noscript loading stale protected", group=G)
def debug(c, argv):
    """A container for debugging commands"""
    # (refused by dispatch unless enable-debug-command allows it)
    entry = _DEBUG.get(argv[1].lower())
    if entry is None or not entry[0] <= len(argv) <= entry[1]:
        raise errors.unknown_subcommand_or_arity(argv[1], "DEBUG")
    return entry[2](c, argv)


def _atof(raw: bytes) -> float:
    """C's strtod/atof: the longest numeric prefix, 0 when there is none."""
    text = raw.decode(errors="replace").strip()
    for end in range(len(text), 0, -1):
        try:
            return float(text[:end])
        except ValueError:
            continue
    return 0.0


def _atoi(raw: bytes) -> int:
    """C's atoi: the leading decimal digits (with a sign), 0 when there are none."""
    match = re.match(rb"\s*[-+]?\d+", raw)
    return int(match.group()) if match else 0


def _debug_switch(name: str, setting: str) -> None:
    """DEBUG <name> <n>: turns the DebugSettings attribute `setting` on when n, read as C's atoi
    reads it, is not 0 (a word reads as 0: off), as Redis's debugCommand does."""
    def switch(c, argv):
        setattr(c.server.debug, setting, _atoi(argv[2]) != 0)
        return OK
    _debug_sub(name, 3)(switch)


@_debug_sub("help", 2)
def _debug_help(c, argv):
    return help_reply("DEBUG", *debug_reports.HELP)


@_debug_sub("sleep", 3)
def _debug_sleep(c, argv):
    seconds = _atof(argv[2])
    if seconds > 0:
        time.sleep(seconds)  # DEBUG SLEEP stops the whole server, as in Redis
    return OK


@_debug_sub("set-active-expire", 3)
def _debug_set_active_expire(c, argv):
    c.server.active_expire_enabled = _atoi(argv[2]) != 0
    return OK


@_debug_sub("error", 3)
def _debug_error(c, argv):
    # No newlines in an error line: Redis maps them to spaces.
    return RedisError(argv[2].decode(errors="surrogateescape").translate(_NO_NEWLINES))


_NO_NEWLINES = str.maketrans("\r\n", "  ")


@_debug_sub("log", 3)
def _debug_log(c, argv):
    log.warning("DEBUG LOG: %s", argv[2].decode(errors="replace"))
    return OK


@_debug_sub("leak", 3)
def _debug_leak(c, argv):
    return OK  # Redis leaks a copy of the string on purpose (for leak checkers): nothing to do


@_debug_sub("reload", 2, _ANY)
def _debug_reload(c, argv):
    options = {option.lower() for option in argv[2:]}
    if not options <= {b"merge", b"noflush", b"nosave"}:
        raise RedisError(errors.DEBUG_RELOAD_OPTIONS)
    save, flush = b"nosave" not in options, b"noflush" not in options
    persistence_of(c).reload(save=save, flush=flush, merge=b"merge" in options)
    return OK


@_debug_sub("loadaof", 2, _ANY)
def _debug_loadaof(c, argv):
    persistence_of(c).reload_aof()
    return OK


# --- the crashes: Redis's crash report's first lines in the log, then the signal Redis dies of ---

@_debug_sub("segfault", 2, _ANY)
def _debug_segfault(c, argv):
    die(signal.SIGSEGV, f"Redis {REDIS_VERSION} crashed by signal: {int(signal.SIGSEGV)}, si_code: 2",
        "Crashed running the instruction at: (unknown)", "Accessing address: (unknown)")


@_debug_sub("panic", 2, _ANY)
def _debug_panic(c, argv):
    server_panic(f"DEBUG PANIC called at Unix time {int(time.time())}", "debug.c")


@_debug_sub("assert", 2, _ANY)
def _debug_assert(c, argv):
    die(signal.SIGABRT, "=== ASSERTION FAILED CLIENT CONTEXT ===", "=== ASSERTION FAILED ===",
        "==> debug.c '1 == 2' is not true")


@_debug_sub("oom", 2, _ANY)
def _debug_oom(c, argv):
    log.warning("Out Of Memory allocating %d bytes!", 2**64 - 1)
    die(signal.SIGABRT)


def _restart(c, argv):
    if len(argv) >= 3:
        parse_int(argv[2])
    return RedisError(errors.DEBUG_RESTART_FAILED)  # minired cannot exec itself anew


_DEBUG[b"restart"] = _DEBUG[b"crash-and-recover"] = (2, _ANY, _restart)


@_debug_sub("drop-cluster-packet-filter", 3)
def _debug_drop_cluster_packet_filter(c, argv):
    c.server.debug.cluster_drop_packet_filter = parse_int(argv[2])
    return OK


def _raw_value(c, key: bytes):
    """The value at key as stored, even if its TTL has passed (DEBUG reads the dictionary
    directly); ERR no such key when there is none."""
    value = c.db.data.get(key)
    if value is None:
        raise RedisError(errors.NO_SUCH_KEY)
    return live(value)


def _looked_up_value(c, key: bytes):
    """objectCommandLookupOrReply: a read lookup (an expired key is gone)."""
    value = c.db.read(key, notify=False)
    if value is None:
        raise RedisError(errors.NO_SUCH_KEY)
    return value


@_debug_sub("object", 3)
def _debug_object(c, argv):
    value = _raw_value(c, argv[2])
    server = c.server
    track = c.db.keytrack  # (read if kept: DEBUG OBJECT starts no access tracking)
    lru = track.lru_field(argv[2]) if track is not None else None
    idle_s = track.idle_ms(argv[2]) // 1000 if track is not None else 0
    return Status(debug_reports.object_line(value, c.db.index, argv[2], server.config,
                                            server.clock.ms(), server.debug.quicklist_packed_threshold,
                                            lru, idle_s))


@_debug_sub("sdslen", 3)
def _debug_sdslen(c, argv):
    value = _raw_value(c, argv[2])
    kind = encoding(value, c.server.config)
    if kind not in ("embstr", "raw"):
        raise RedisError(errors.DEBUG_NOT_SDS)
    return Status(debug_reports.sds_report(argv[2], value, kind))


@_debug_sub("listpack", 3)
def _debug_listpack(c, argv):
    value = _looked_up_value(c, argv[2])
    if encoding(value, c.server.config) != "listpack":
        raise RedisError(errors.DEBUG_NOT_LISTPACK)
    return Status(b"Listpack structure printed on stdout")  # (minired prints nothing)


@_debug_sub("quicklist", 3, 4)
def _debug_quicklist(c, argv):
    value = _looked_up_value(c, argv[2])
    if encoding(value, c.server.config) != "quicklist":
        raise RedisError(errors.DEBUG_NOT_QUICKLIST)
    return Status(b"Quicklist structure printed on stdout")  # (minired prints nothing)


def _positive(raw: bytes) -> int:
    """getPositiveLongFromObjectOrReply: one error for a negative number and for no number."""
    number = parse_int(raw, errors.MUST_BE_POSITIVE)
    if number < 0:
        raise RedisError(errors.MUST_BE_POSITIVE)
    return number


@_debug_sub("populate", 3, 5)
def _debug_populate(c, argv):
    count = _positive(argv[2])
    size = _positive(argv[4]) if len(argv) == 5 else 0
    # The prefix is a C string to Redis: it ends at its first NUL byte.
    prefix = argv[3].split(b"\0", 1)[0] if len(argv) >= 4 else b"key"
    db = c.db
    for j in range(count):
        key = b"%b:%d" % (prefix, j)
        if db.get(key) is not None:  # lookupKeyWrite: an existing key is kept as it is
            continue
        value = b"value:%d" % j
        if size:
            value = value[:size].ljust(size, b"\0")
        db.set(key, value)
    return OK


@_debug_sub("digest", 2)
def _debug_digest(c, argv):
    from minired.data import digest  # (hashlib: kept off start-up)

    return Status(digest.hex_digest(digest.dataset_digest(c.server.keyspace)))


@_debug_sub("digest-value", 2, _ANY)
def _debug_digest_value(c, argv):
    from minired.data import digest

    return [Status(digest.hex_digest(digest.key_digest(c.db, key))) for key in argv[2:]]


@_debug_sub("protocol", 3)
def _debug_protocol(c, argv):
    return debug_reports.protocol_sample(argv[2], c.protocol)


@_debug_sub("quicklist-packed-threshold", 3)
def _debug_quicklist_packed_threshold(c, argv):
    try:
        size = parse_memory(argv[2].decode(errors="replace"))
    except ValueError:
        size = None
    if size is None or size > QUICKLIST_PACKED_THRESHOLD_MAX:
        raise RedisError(errors.DEBUG_PACKED_THRESHOLD)
    c.server.debug.quicklist_packed_threshold = size or QUICKLIST_PACKED_THRESHOLD
    return OK


_debug_switch("set-skip-checksum-validation", "skip_checksum_validation")


@_debug_sub("aof-flush-sleep", 3)
def _debug_aof_flush_sleep(c, argv):
    c.server.debug.aof_flush_sleep_us = _atoi(argv[2])
    return OK


@_debug_sub("replicate", 3, _ANY)
def _debug_replicate(c, argv):
    state = replication.state(c.server)
    if state is not None:
        state.feed_as_is(argv[2:])
    return OK


@_debug_sub("structsize", 2)
def _debug_structsize(c, argv):
    return debug_reports.STRUCT_SIZES


@_debug_sub("htstats", 3)
def _debug_htstats(c, argv):
    index = parse_int(argv[2])
    keyspace = c.server.keyspace
    if not 0 <= index < len(keyspace):
        raise RedisError(errors.DEBUG_OUT_OF_RANGE_DB)
    return debug_reports.database_stats(keyspace[index])


@_debug_sub("htstats-key", 3)
def _debug_htstats_key(c, argv):
    return debug_reports.value_table_stats(_looked_up_value(c, argv[2]), c.server.config)


@_debug_sub("change-repl-id", 2)
def _debug_change_repl_id(c, argv):
    log.info("Changing replication IDs after receiving DEBUG change-repl-id")
    replication.master(c.server).new_history()
    return OK


@_debug_sub("stringmatch-test", 2)
def _debug_stringmatch_test(c, argv):
    return Status(b"Apparently Redis did not crash: test passed")


_debug_switch("set-disable-deny-scripts", "disable_deny_scripts")


@_debug_sub("config-rewrite-force-all", 2)
def _debug_config_rewrite_force_all(c, argv):
    rewrite = c.server.hooks.rewrite_config
    if rewrite is None:  # (Redis hands its rewrite a NULL path: fopen fails with EFAULT)
        raise RedisError(errors.DEBUG_REWRITE_FAILED.format(os.strerror(errno.EFAULT)))
    try:
        rewrite(True)
    except OSError as exc:
        raise RedisError(errors.DEBUG_REWRITE_FAILED.format(exc.strerror)) from None
    return OK


@_debug_sub("client-eviction", 2)
def _debug_client_eviction(c, argv):
    eviction = c.server.hooks.client_eviction
    if eviction is None or not c.server.config.clients_limited:  # (Redis frees its pools)
        raise RedisError(errors.DEBUG_CLIENT_EVICTION_OFF)
    return Verbatim(eviction.pools().encode())


_debug_switch("pause-cron", "pause_cron")


@_debug_sub("replybuffer", 4)
def _debug_replybuffer(c, argv):
    settings = c.server.debug
    what, value = argv[2].lower(), argv[3]
    if what == b"peak-reset-time":
        if value.lower() == b"never":
            settings.reply_buffer_peak_reset_ms = -1
        elif value.lower() == b"reset":
            settings.reply_buffer_peak_reset_ms = REPLY_BUFFER_PEAK_RESET_MS
        else:
            settings.reply_buffer_peak_reset_ms = parse_int(value)
    elif what == b"resizing":
        settings.reply_buffer_resizing = _atoi(value) != 0
    else:
        raise errors.unknown_subcommand_or_arity(argv[1], "DEBUG")
    return OK


@_debug_sub("clusterlink", 5)
def _debug_clusterlink(c, argv):
    if argv[2].lower() != b"kill":
        raise errors.unknown_subcommand_or_arity(argv[1], "DEBUG")
    raise RedisError(errors.DEBUG_CLUSTER_ONLY)  # no cluster bus links in minired to kill
