"""INFO: every section and field Redis 7.0 reports, in Redis's order.

Values are minired's own wherever it keeps the information: counters (server.stats, the
databases' keyspace_hits/misses and lazy expiries), persistence (saves, changes since the last
save, AOF sizes), scripting (cached scripts, functions, the Lua runtimes' memory), the
instantaneous rates (minired/features/metrics.py). What minired does not have (forks, replication,
defragmentation, lazy freeing, I/O threads, allocator statistics) shows what a fresh Redis
shows for it when the feature is idle: 0, -1, "ok". Memory is the process's resident size:
used_memory and the allocator figures are all that one number, so every fragmentation ratio is
1.00.

Beyond Redis: minired_version and python_version (Server). Latencystats percentiles come from
minired's coarser per-command histograms (minired/engine/latency.py): the top of an octave.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import time

from minired import REDIS_VERSION, __version__
from minired.engine.latency import info_lines
from minired.engine.server import used_memory
from minired.engine.table import all_specs, calls_total, command, stats_of
from minired.features import failover, migrate, replication, shutdown_wait
from minired.protocol.resp import Verbatim

G = "server"


def human_bytes(size: int) -> str:
    """Redis's bytesToHuman: 512B, 1.50K, 2.00M ..."""
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for unit in "KMGTPE":
        value /= 1024
        if value < 1024 or unit == "E":
            return f"{value:.2f}{unit}"
    raise AssertionError("unreachable")


def _fields(pairs) -> list[str]:
    return [f"{name}:{value}" for name, value in pairs]


def _total_system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


# --- Server ------------------------------------------------------------------------------------

def _build_id() -> str:
    """Redis hashes its build; minired's build is its version on this interpreter."""
    import hashlib  # (hashlib costs start-up time: see tests/core/test_startup.py)

    build = f"minired {__version__} {sys.version}".encode()
    return hashlib.sha1(build).hexdigest()[:15]


def _monotonic_clock() -> str:
    implementation = time.get_clock_info("monotonic").implementation
    return "POSIX clock_gettime" if implementation.startswith("clock_gettime") else implementation


def _multiplexing_api(server) -> str:
    selector = getattr(server.loop, "_selector", None)
    if selector is not None:  # asyncio's own loop: EpollSelector, KqueueSelector ...
        return type(selector).__name__.removesuffix("Selector").lower()
    # uvloop: libuv polls with epoll on Linux, kqueue on the BSDs and macOS.
    return "epoll" if sys.platform.startswith("linux") else "kqueue"


def _compiler_version() -> str:
    import platform

    compiler = platform.python_compiler()  # "GCC 12.2.0"
    name, _, version = compiler.partition(" ")
    return version.split()[0] if name == "GCC" and version else "0.0.0"


def _server_section(server) -> list[str]:
    # The INFO sections import what only they use (platform ~3 ms: it compiles regexes as it
    # loads; resource, a C extension to load), so start-up does not pay for them.
    import platform

    uptime = int(time.monotonic() - server.stats.started_monotonic)
    uname = platform.uname()
    hz = server.config.get("hz")
    return _fields((
        ("redis_version", REDIS_VERSION),
        ("minired_version", __version__),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", _build_id()),
        ("redis_mode", "standalone" if server.cluster is None else "cluster"),
        ("os", f"{uname.system} {uname.release} {uname.machine}"),
        ("arch_bits", 64 if sys.maxsize > 2**32 else 32),
        ("python_version", platform.python_version()),
        ("monotonic_clock", _monotonic_clock()),
        ("multiplexing_api", _multiplexing_api(server)),
        # Redis's choice of atomic counters; minired's counters live on one thread.
        ("atomicvar_api", "c11-builtin"),
        ("gcc_version", _compiler_version()),
        ("process_id", os.getpid()),
        ("process_supervised", "no"),
        ("run_id", server.run_id),
        ("tcp_port", server.port),
        ("server_time_usec", server.clock.us()),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", hz),
        ("configured_hz", hz),
        # LRU_CLOCK: seconds, in 24 bits (LRU_CLOCK_RESOLUTION 1000 ms).
        ("lru_clock", server.clock.ms() // 1000 & ((1 << 24) - 1)),
        ("executable", sys.executable),
        ("config_file", server.hooks.config_file),
        ("io_threads_active", 0),
    )) + _shutdown_fields(server)


def _shutdown_fields(server) -> list[str]:
    """While a shutdown waits for the replicas: the time it still gives them."""
    left = shutdown_wait.milliseconds_left(server)
    return [] if left is None else _fields((("shutdown_in_milliseconds", left),))


# --- Clients -----------------------------------------------------------------------------------

def _clients_section(server) -> list[str]:
    waiters = server.blocking.waiters.values()
    tracking = server.tracking
    return _fields((
        # (Redis's counts its replicas apart: listLength(clients) - listLength(slaves))
        ("connected_clients", len(server.clients) - _replica_count(server)),
        ("cluster_connections", 0),
        ("maxclients", server.config.maxclients),
        # minired keeps no per-client buffer peaks (CLIENT LIST shows qbuf=0 omem=0 too).
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", 0),
        ("blocked_clients", server.blocking.blocked_clients),
        ("tracking_clients", len(tracking.clients) if tracking is not None else 0),
        ("clients_in_timeout_table", sum(1 for w in waiters if w.deadline_ms is not None)),
    ))


# --- Memory ------------------------------------------------------------------------------------

def scripting_memory(server) -> dict:
    """Script memory figures for INFO memory and MEMORY STATS, read without creating the script
    engine (a server that ran no script has none)."""
    engine = server.features.scripting
    if engine is None:
        return {"eval_vm": 0, "scripts": 0, "cached": 0, "functions": 0, "libraries": 0,
                "functions_vm": 0, "functions_memory": 0}
    functions = engine.functions
    libraries = functions.libraries if functions is not None else {}
    return {
        "eval_vm": engine.eval_memory(),
        "scripts": sum(sys.getsizeof(script.sha) + sys.getsizeof(script.body)
                       for script in engine.scripts.values()),
        "cached": len(engine.scripts),
        "functions": sum(len(library.functions) for library in libraries.values()),
        "libraries": len(libraries),
        "functions_vm": functions.vm_memory() if functions is not None else 0,
        "functions_memory": sum(sys.getsizeof(library.name) + sys.getsizeof(library.code)
                                + sum(map(sys.getsizeof, library.functions))
                                for library in libraries.values()),
    }


def aof_buffered(server) -> int:
    """Bytes written to the AOF buffer and not yet to the file (INFO, MEMORY STATS)."""
    persistence = server.features.persistence
    return sum(map(len, persistence.aof_buffer)) if persistence is not None else 0


def memory_figures(server) -> tuple[int, int, int]:
    """used_memory, its peak and used_memory_startup: the server's memory figure, the one
    maxmemory is compared with (the model of minired/features/eviction.py)."""
    memory = server.memory
    used = memory.used()
    startup = getattr(memory, "startup", None)
    if startup is not None:
        return used, memory.peak, startup
    import resource  # (a server without the model: its resident size)

    metrics = server.features.metrics
    startup = metrics.startup_memory if metrics is not None else used
    return used, max(used, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024), startup


def _replica_count(server) -> int:
    state = replication.state(server)
    return len(state.replicas) if state is not None else 0


def replication_buffers(server) -> tuple[int, int, int]:
    """mem_total_replication_buffers, and its split as Redis's getMemoryOverheadData makes it:
    what is beyond repl-backlog-size, with replicas attached, is theirs (mem_clients_slaves),
    the rest the backlog's (mem_replication_backlog)."""
    state = replication.state(server)
    if state is None:
        return 0, 0, 0
    total = state.buffered_bytes()
    size = server.config.number("repl-backlog-size")
    if state.replicas and total > size:
        return total, size, total - size
    return total, total, 0


def _memory_section(server) -> list[str]:
    used, peak, startup = memory_figures(server)
    rss = used_memory()
    aof_buffer = aof_buffered(server)
    replication_total, replication_backlog, replicas_buffers = replication_buffers(server)
    overhead = min(used, startup + aof_buffer)
    dataset = used - overhead
    net_usage = used - startup if used > startup else 1
    total = _total_system_memory()
    maxmemory = server.config.maxmemory
    lua = scripting_memory(server)
    vm_total = lua["eval_vm"] + lua["functions_vm"]
    scripts = lua["scripts"] + lua["functions_memory"]
    return _fields((
        ("used_memory", used),
        ("used_memory_human", human_bytes(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", human_bytes(peak)),
        ("used_memory_peak_perc", f"{used * 100 / peak:.2f}%"),
        ("used_memory_overhead", overhead),
        ("used_memory_startup", startup),
        ("used_memory_dataset", dataset),
        ("used_memory_dataset_perc", f"{dataset * 100 / net_usage:.2f}%"),
        ("allocator_allocated", used),
        ("allocator_active", used),
        ("allocator_resident", used),
        ("total_system_memory", total),
        ("total_system_memory_human", human_bytes(total)),
        ("used_memory_lua", lua["eval_vm"]),
        ("used_memory_vm_eval", lua["eval_vm"]),
        ("used_memory_lua_human", human_bytes(lua["eval_vm"])),
        ("used_memory_scripts_eval", lua["scripts"]),
        ("number_of_cached_scripts", lua["cached"]),
        ("number_of_functions", lua["functions"]),
        ("number_of_libraries", lua["libraries"]),
        ("used_memory_vm_functions", lua["functions_vm"]),
        ("used_memory_vm_total", vm_total),
        ("used_memory_vm_total_human", human_bytes(vm_total)),
        ("used_memory_functions", lua["functions_memory"]),
        ("used_memory_scripts", scripts),
        ("used_memory_scripts_human", human_bytes(scripts)),
        ("maxmemory", maxmemory),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", server.config.get("maxmemory-policy")),
        ("allocator_frag_ratio", "1.00"),
        ("allocator_frag_bytes", 0),
        ("allocator_rss_ratio", "1.00"),
        ("allocator_rss_bytes", 0),
        ("rss_overhead_ratio", "1.00"),
        ("rss_overhead_bytes", 0),
        ("mem_fragmentation_ratio", "1.00"),
        ("mem_fragmentation_bytes", 0),
        ("mem_not_counted_for_evict", aof_buffer),
        ("mem_replication_backlog", replication_backlog),
        ("mem_total_replication_buffers", replication_total),
        ("mem_clients_slaves", replicas_buffers),
        ("mem_clients_normal", 0),
        ("mem_cluster_links", 0),
        ("mem_aof_buffer", aof_buffer),
        ("mem_allocator", "pymalloc"),
        ("active_defrag_running", 0),
        ("lazyfree_pending_objects", 0),
        ("lazyfreed_objects", server.stats.lazyfreed_objects),
    ))


# --- Persistence -------------------------------------------------------------------------------

def _persistence_section(server) -> list[str]:
    persistence = server.features.persistence
    aof_enabled = server.config.get("appendonly") == "yes"
    faults = server.faults
    # MINIRED FAULT LOADING's window reads as Redis loading a file (clients such as ioredis
    # poll INFO until loading:0).
    loading_left = faults.loading_seconds_left() if faults is not None else None
    # The snapshot being read at start-up (persistence.load_while_serving).
    loading_file = persistence is not None and persistence.loading_since
    # What the background child last reported (childinfo.c); zeros while none runs.
    child = persistence.child_info if persistence is not None else None
    lines = _fields((
        ("loading", int(loading_left is not None or bool(loading_file))),
        ("async_loading", 0),
        ("current_cow_peak", child.cow_peak if child else 0),
        ("current_cow_size", child.cow if child else 0),
        ("current_cow_size_age", child.cow_age() if child else 0),
        ("current_fork_perc", "%.2f" % (child.fork_percent() if child else 0.0)),
        ("current_save_keys_processed", child.keys_processed if child else 0),
        ("current_save_keys_total", child.keys_total if child else 0),
        ("rdb_changes_since_last_save", persistence.changes_since_save() if persistence
         else server.keyspace.changes()),
        ("rdb_bgsave_in_progress", int(bool(persistence and persistence.saving_in_background()))),
        ("rdb_last_save_time", server.last_save),
        ("rdb_last_bgsave_status",
         "ok" if persistence is None or persistence.last_save_ok else "err"),
        ("rdb_last_bgsave_time_sec",
         persistence.last_background_save_seconds if persistence else -1),
        ("rdb_current_bgsave_time_sec",
         persistence.current_child_seconds("rdb") if persistence else -1),
        ("rdb_saves", persistence.saves if persistence else 0),
        ("rdb_last_cow_size", child.rdb_last_cow if child else 0),
        ("rdb_last_load_keys_expired", persistence.keys_expired_at_load if persistence else 0),
        ("rdb_last_load_keys_loaded", persistence.keys_loaded if persistence else 0),
        ("aof_enabled", int(aof_enabled)),
        ("aof_rewrite_in_progress",
         int(bool(persistence and persistence.current_child_seconds("aof") >= 0))),
        ("aof_rewrite_scheduled", int(bool(persistence and persistence.aof_rewrite_scheduled))),
        ("aof_last_rewrite_time_sec", persistence.aof_last_rewrite_seconds if persistence else -1),
        ("aof_current_rewrite_time_sec",
         persistence.current_child_seconds("aof") if persistence else -1),
        ("aof_last_bgrewrite_status",
         "ok" if persistence is None or persistence.aof_last_rewrite_ok else "err"),
        ("aof_rewrites", persistence.aof_rewrites if persistence else 0),
        ("aof_rewrites_consecutive_failures", persistence.aof_rewrite_failures if persistence else 0),
        ("aof_last_write_status", "err" if server.config.aof_write_error else "ok"),
        ("aof_last_cow_size", child.aof_last_cow if child else 0),
        ("module_fork_in_progress", 0),
        ("module_fork_last_cow_size", 0),
    ))
    if aof_enabled:  # Redis adds the AOF's sizes while it is on
        aof_file = persistence.aof_file if persistence is not None else None
        lines += _fields((
            ("aof_current_size", persistence.aof_current_size() if aof_file is not None else 0),
            ("aof_base_size", persistence.aof_base_size if persistence is not None else 0),
            ("aof_pending_rewrite", 0),
            ("aof_buffer_length", aof_buffered(server)),
            ("aof_pending_bio_fsync", 0),
            ("aof_delayed_fsync", 0),
        ))
    if loading_left is not None:
        # What Redis adds while loading; there is no file, so no bytes, and the ETA is the
        # window's remaining time (Redis estimates it from the bytes read).
        lines += _fields((
            ("loading_start_time", faults.loading_started),
            ("loading_total_bytes", 0),
            ("loading_rdb_used_mem", 0),
            ("loading_loaded_bytes", 0),
            ("loading_loaded_perc", "0.00"),
            ("loading_eta_seconds", math.ceil(loading_left)),
        ))
    elif loading_file:
        # The file is read whole before the keyspace is filled: no progress to show, and
        # Redis's ETA from it would be a guess (its 1 until bytes are read).
        lines += _fields((
            ("loading_start_time", persistence.loading_since),
            ("loading_total_bytes", persistence.loading_total),
            ("loading_rdb_used_mem", 0),
            ("loading_loaded_bytes", 0),
            ("loading_loaded_perc", "0.00"),
            ("loading_eta_seconds", 1),
        ))
    return lines


# --- Stats -------------------------------------------------------------------------------------

def _subscriptions(server) -> tuple[int, int, int]:
    """Channels, patterns and shard channels with at least one subscriber."""
    pubsub = server.features.pubsub
    if pubsub is not None:
        return len(pubsub.channels), len(pubsub.patterns), len(pubsub.shard_channels)
    channels: set = set()
    patterns: set = set()
    shard_channels: set = set()
    for client in server.clients.values():
        channels.update(client.channels)
        patterns.update(client.patterns)
        shard_channels.update(client.shard_channels)
    return len(channels), len(patterns), len(shard_channels)


def _stats_section(server) -> list[str]:
    stats = server.stats
    dbs = server.keyspace.dbs
    metrics = server.features.metrics
    ops, input_rate, output_rate = ((metrics.ops.mean(), metrics.input_bytes.mean(),
                                     metrics.output_bytes.mean()) if metrics else (0, 0, 0))
    channels, patterns, shard_channels = _subscriptions(server)
    tracking = server.tracking
    replication = server.features.replication
    return _fields((
        ("total_connections_received", stats.connections_received),
        ("total_commands_processed", calls_total(server)),
        ("instantaneous_ops_per_sec", ops),
        ("total_net_input_bytes", stats.net_input_bytes),
        ("total_net_output_bytes", stats.net_output_bytes),
        ("total_net_repl_input_bytes", 0),
        ("total_net_repl_output_bytes", 0),
        ("instantaneous_input_kbps", f"{input_rate / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{output_rate / 1024:.2f}"),
        ("instantaneous_input_repl_kbps", "0.00"),
        ("instantaneous_output_repl_kbps", "0.00"),
        ("rejected_connections", stats.rejected_connections),
        ("sync_full", replication.sync_full if replication is not None else 0),
        ("sync_partial_ok", replication.sync_partial_ok if replication is not None else 0),
        ("sync_partial_err", replication.sync_partial_err if replication is not None else 0),
        ("expired_keys", stats.expired_keys + sum(db.expired_lazily for db in dbs)),
        ("expired_stale_perc", "0.00"),
        ("expired_time_cap_reached_count", 0),
        ("expire_cycle_cpu_milliseconds", 0),
        ("evicted_keys", stats.evicted_keys),
        ("evicted_clients", server.hooks.client_eviction.evicted
                            if server.hooks.client_eviction is not None else 0),
        ("total_eviction_exceeded_time", 0),
        ("current_eviction_exceeded_time", 0),
        ("keyspace_hits", sum(db.keyspace_hits for db in dbs)),
        ("keyspace_misses", sum(db.keyspace_misses for db in dbs)),
        ("pubsub_channels", channels),
        ("pubsub_patterns", patterns),
        ("pubsubshard_channels", shard_channels),
        ("latest_fork_usec", 0),
        ("total_forks", server.features.persistence.forks if server.features.persistence is not None else 0),
        ("migrate_cached_sockets", migrate.cached_count(server)),
        ("slave_expires_tracked_keys", 0),
        ("active_defrag_hits", 0),
        ("active_defrag_misses", 0),
        ("active_defrag_key_hits", 0),
        ("active_defrag_key_misses", 0),
        ("total_active_defrag_time", 0),
        ("current_active_defrag_time", 0),
        ("tracking_total_keys", len(tracking.table) if tracking is not None else 0),
        ("tracking_total_items", tracking.items if tracking is not None else 0),
        ("tracking_total_prefixes", len(tracking.prefixes) if tracking is not None else 0),
        # Errors in replies to a master's commands (minired's AOF replay stops at the first
        # bad record instead).
        ("unexpected_error_replies",
         replication.unexpected_error_replies if replication is not None else 0),
        ("total_error_replies", sum(stats.error_replies.values())),
        ("dump_payload_sanitizations", stats.dump_payload_sanitizations),
        ("total_reads_processed", stats.reads_processed),
        ("total_writes_processed", stats.writes_processed),
        ("io_threaded_reads_processed", 0),
        ("io_threaded_writes_processed", 0),
        ("reply_buffer_shrinks", 0),
        ("reply_buffer_expands", 0),
    ))


# --- Replication, CPU, per-command and per-database sections ------------------------------------

def _replication_section(server) -> list[str]:
    state = server.features.replication  # (minired/features/replication.py, from the first replica)
    if state is not None:
        replicas = state.info_fields()
    else:
        replicas = [("connected_slaves", 0)]
        config = server.config
        if config.number("min-replicas-to-write") and config.number("min-replicas-max-lag"):
            replicas.append(("min_slaves_good_slaves", 0))
    replicating = state is not None and state.link is not None
    return _fields((
        ("role", "slave" if replicating else "master"),
        *replicas,
        ("master_failover_state", failover.state_name(server)),
        *(state.history_fields() if state is not None else (
            ("master_replid", server.run_id), ("master_replid2", "0" * 40),
            ("master_repl_offset", 0), ("second_repl_offset", -1), ("repl_backlog_active", 0),
            ("repl_backlog_size", server.config.number("repl-backlog-size")),
            ("repl_backlog_first_byte_offset", 0), ("repl_backlog_histlen", 0))),
    ))


def _cpu_section(server) -> list[str]:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [
        f"used_cpu_sys:{own.ru_stime:.6f}",
        f"used_cpu_user:{own.ru_utime:.6f}",
        f"used_cpu_sys_children:{children.ru_stime:.6f}",
        f"used_cpu_user_children:{children.ru_utime:.6f}",
    ]
    if hasattr(resource, "RUSAGE_THREAD"):  # INFO runs on the server's own thread
        thread = resource.getrusage(resource.RUSAGE_THREAD)
        lines += [f"used_cpu_sys_main_thread:{thread.ru_stime:.6f}",
                  f"used_cpu_user_main_thread:{thread.ru_utime:.6f}"]
    return lines


def _commandstats_section(server) -> list[str]:
    lines = []
    for spec in all_specs():
        stats = stats_of(server, spec)
        if stats.calls or stats.rejected_calls or stats.failed_calls:
            per_call = stats.nanoseconds / 1000 / stats.calls if stats.calls else 0.0
            lines.append(f"cmdstat_{spec.full_name}:calls={stats.calls},usec={stats.usec},"
                         f"usec_per_call={per_call:.2f},rejected_calls={stats.rejected_calls},"
                         f"failed_calls={stats.failed_calls}")
    return lines


def _latencystats_section(server) -> list[str]:
    return info_lines(server.config, ((spec.full_name, stats_of(server, spec))
                                      for spec in all_specs()))


def _errorstats_section(server) -> list[str]:
    # Redis keeps them in a radix tree: by name.
    return [f"errorstat_{code}:count={count}"
            for code, count in sorted(server.stats.error_replies.items())]


# Redis estimates avg_ttl from samples too; reading a bounded number of TTLs keeps INFO cheap.
_AVG_TTL_SAMPLE = 1000


def _keyspace_section(server) -> list[str]:
    lines = []
    now = server.clock.ms()
    for db in server.keyspace.dbs:
        if not db.data:
            continue
        ttls = [deadline - now
                for deadline in itertools.islice(db.expires.values(), _AVG_TTL_SAMPLE)]
        ttls = [ttl for ttl in ttls if ttl > 0]
        avg_ttl = sum(ttls) // len(ttls) if ttls else 0
        lines.append(f"db{db.index}:keys={len(db.data)},expires={len(db.expires)},"
                     f"avg_ttl={avg_ttl}")
    return lines


def _no_lines(server) -> list[str]:
    return []


# (section name, title, builder, in the default set), in Redis's order.
_SECTIONS = (
    ("server", "Server", _server_section, True),
    ("clients", "Clients", _clients_section, True),
    ("memory", "Memory", _memory_section, True),
    ("persistence", "Persistence", _persistence_section, True),
    ("stats", "Stats", _stats_section, True),
    ("replication", "Replication", _replication_section, True),
    ("cpu", "CPU", _cpu_section, True),
    ("modules", "Modules", _no_lines, True),
    ("commandstats", "Commandstats", _commandstats_section, False),
    ("errorstats", "Errorstats", _errorstats_section, True),
    ("latencystats", "Latencystats", _latencystats_section, False),
    ("cluster", "Cluster",
     lambda server: [f"cluster_enabled:{0 if server.cluster is None else 1}"], True),
    ("keyspace", "Keyspace", _keyspace_section, True),
)
_DEFAULT = frozenset(name for name, _, _, default in _SECTIONS if default)
_ALL = frozenset(name for name, _, _, _ in _SECTIONS)


def info_text(server, requested: list[bytes]) -> str:
    """The INFO report for the requested section names (none: the default sections)."""
    wanted: set[str] = set()
    for raw in requested or [b"default"]:
        name = raw.decode(errors="replace").lower()
        if name == "default":
            wanted |= _DEFAULT
        elif name in ("all", "everything"):
            wanted |= _ALL
        else:
            wanted.add(name)
    blocks = []
    for name, title, build, _ in _SECTIONS:
        if name in wanted:
            blocks.append("".join(f"{line}\r\n" for line in [f"# {title}", *build(server)]))
    return "\r\n".join(blocks)


@command("info", arity=-1, flags="loading stale", group=G)
def info(c, argv):
    """Get information and statistics about the server"""
    # (errorstats names the codes of error replies, which may hold any bytes: a script's
    # error table's text, kept as surrogate escapes)
    return Verbatim(info_text(c.server, argv[1:]).encode("utf-8", "surrogateescape"))
