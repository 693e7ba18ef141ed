"""Server commands: DBSIZE, FLUSHDB/FLUSHALL, TIME, SAVE/BGSAVE/LASTSAVE, SHUTDOWN, CONFIG,
MONITOR, ROLE, LOLWUT, SLOWLOG. INFO lives in info.py, COMMAND in introspection.py, ACL in
acl.py, MEMORY, LATENCY and DEBUG in diagnostics.py.

Persistence is optional: a persistence subsystem (see startup.SUBSYSTEMS) that wants to serve
SAVE, BGSAVE and SHUTDOWN SAVE sets `server.features.saver` to an object with
`save(shutting_down=False)` (write a snapshot now, raise RedisError on failure; update
`server.last_save`), `background_save(schedule: bool) -> str` and `rewrite_aof(in_exec) -> str` (the
status texts to reply). Without one, minired keeps
data in memory only and says so instead of pretending a snapshot was written.
"""
from __future__ import annotations

import logging

import cython

from minired import REDIS_VERSION
from minired.data.glob import glob_match, has_wildcard
from minired.engine import dispatch, latency
from minired.engine.args import int_text, parse_int
from minired.engine.client import PROPAGATED_UNCHANGED, Client
from minired.engine.config import Config, ConfigApplyError, ConfigError
from minired.engine.table import command, container_command, help_reply
from minired.features import (
    client_eviction,
    eviction,
    notifications,
    open_files,
    shutdown_wait,
)
from minired.features.oom_score import apply_oom_score
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Encoded, Status, Verbatim

G = "server"
log = logging.getLogger("minired")


# --- keyspace-wide -------------------------------------------------------------------------------

def _flush_mode(c, argv, dbs) -> int:
    """SYNC or ASYNC (lazyfree-lazy-user-flush without either): an ASYNC flush frees every key
    in the background, as INFO lazyfreed_objects counts (emptyDbAsync). Sets the changes the
    flush counts, its keys (emptyData's count); a flush of nothing is propagated all the same
    (forceCommandPropagation), and returns them."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        raise RedisError(errors.SYNTAX)
    keys = sum(len(db.data) for db in dbs)
    if (argv[1].lower() == b"async" if len(argv) == 2
            else c.server.config.get("lazyfree-lazy-user-flush") == "yes"):
        c.server.stats.lazyfreed_objects += keys
    c.changes = keys or PROPAGATED_UNCHANGED
    return keys


@command("flushall", arity=-1, flags="write", group=G)
def flushall(c, argv):
    """Remove all keys from all databases"""
    keys = _flush_mode(c, argv, c.server.keyspace.dbs)
    _tell_trackers(c)
    c.server.keyspace.flushall()
    persistence = c.server.features.saver
    if persistence is not None:
        persistence.flushed_all(keys)  # with save points, an empty dump.rdb at once, as in Redis
    return OK


@command("flushdb", arity=-1, flags="write", group=G)
def flushdb(c, argv):
    """Remove all keys from the current database"""
    _flush_mode(c, argv, (c.db,))
    _tell_trackers(c)
    c.db.flush()
    return OK


def _tell_trackers(c) -> None:
    """Every client-side cache is dropped on a flush, FLUSHDB included: the tracking table
    does not know databases apart."""
    if c.server.tracking is not None:
        c.server.tracking.flushed()


@command("dbsize", arity=1, flags="readonly fast", group=G)
def dbsize(c, argv):
    """Return the number of keys in the selected database"""
    return len(c.db)


@command("time", arity=1, flags="loading stale fast", group=G)
@cython.locals(c=Client, argv=list, now=cython.longlong, seconds=cython.longlong, micros=cython.longlong)
def time_(c, argv):
    """Return the current server time"""
    now = c.db.clock.us()  # every database reads the server's clock
    seconds = now // 1_000_000
    micros = now - seconds * 1_000_000
    return [int_text(seconds), int_text(micros)]


# --- persistence ---------------------------------------------------------------------------------

def persistence_of(c):
    persistence = c.server.features.saver
    if persistence is None:
        raise RedisError(errors.NO_PERSISTENCE)
    return persistence


@command("lastsave", arity=1, flags="loading stale fast", group=G)
def lastsave(c, argv):
    """Get the UNIX time stamp of the last successful save to disk"""
    return c.server.last_save


@command("save", arity=1, flags="admin noscript no_async_loading no_multi", group=G)
def save(c, argv):
    """Synchronously save the dataset to disk"""
    persistence_of(c).save()
    return OK


@command("bgsave", arity=-1, flags="admin noscript no_async_loading", group=G)
def bgsave(c, argv):
    """Asynchronously save the dataset to disk"""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() != b"schedule"):
        raise RedisError(errors.SYNTAX)
    return Status(persistence_of(c).background_save(len(argv) == 2).encode())


@command("bgrewriteaof", arity=1, flags="admin noscript no_async_loading", group=G)
def bgrewriteaof(c, argv):
    """Asynchronously rewrite the append-only file"""
    return Status(persistence_of(c).rewrite_aof(c.in_exec).encode())


@command("shutdown", arity=-1, flags="admin noscript loading stale no_multi allow_busy", group=G)
def shutdown(c, argv):
    """Synchronously save the dataset to disk and then shut down the server"""
    options = set()
    for raw in argv[1:]:
        option = raw.lower()
        if option not in (b"nosave", b"save", b"now", b"force", b"abort"):
            raise RedisError(errors.SYNTAX)
        options.add(option)
    if {b"nosave", b"save"} <= options or (b"abort" in options and len(options) > 1):
        raise RedisError(errors.SYNTAX)
    server = c.server
    if b"abort" in options:
        if not shutdown_wait.abort(server):
            raise RedisError(errors.SHUTDOWN_NOT_IN_PROGRESS)
        return OK
    if b"now" not in options and not c.can_block:
        raise RedisError(errors.SHUTDOWN_DENY_BLOCKING)
    busy = dispatch.busy_error(server)
    if busy is not None and b"nosave" not in options:
        raise RedisError(busy)  # under a busy script, only SHUTDOWN NOSAVE may stop the server
    if b"save" in options and server.features.saver is None:
        raise RedisError(errors.NO_PERSISTENCE)
    if shutdown_wait.current(server) is not None:
        return shutdown_wait.block(server, c)  # one under way: this client waits for it too
    log.warning("User requested shutdown...")
    done = shutdown_wait.begin(server, lambda: _finish_shutdown(server, options),
                               now=b"now" in options, force=b"force" in options)
    if done is None:
        return shutdown_wait.block(server, c)  # waiting for the replicas to catch up
    if not done:
        raise RedisError(errors.SHUTDOWN_FAILED)
    return None  # every connection, this one included, is closed: like Redis, no reply


def _finish_shutdown(server, options: set) -> bool:
    """finishShutdown for SHUTDOWN: the final save its options ask for, then the stop."""
    wants_save = b"save" in options or (b"nosave" not in options and bool(server.config.get("save")))
    if dispatch.is_loading(server):
        wants_save = False  # Redis never saves a half-loaded dataset (SHUTDOWN_NOSAVE)
    persistence = server.features.saver
    if wants_save and persistence is not None:
        try:
            persistence.save(shutting_down=True)
        except RedisError:
            if b"force" not in options:
                log.warning("Error trying to save the DB, can't exit.")
                return False
    server.features.shutdown_by_command = True  # saving is settled: persistence must not redo it
    server.request_shutdown()
    return True


# --- CONFIG --------------------------------------------------------------------------------------

container_command("config", G, summary="A container for server configuration commands")


@command("get", arity=-3, flags="admin noscript loading stale", parent="config", group=G)
def config_get(c, argv):
    """Get the values of configuration parameters"""
    config = c.server.config
    found: dict[bytes, bytes] = {}
    for raw in argv[2:]:
        if not has_wildcard(raw):
            name = raw.decode(errors="replace")
            if Config.known(name):
                # A literal name is echoed as asked (case and alias kept), as Redis does.
                found.setdefault(raw, config.shown(name).encode())
            continue
        pattern = raw.split(b"\0", 1)[0]  # stringmatch: the C string, up to its first NUL
        for name in config.names():
            if glob_match(pattern, name.encode(), nocase=True):
                found.setdefault(name.encode(), config.shown(name).encode())
    return found


# What the memory figure, access tracking and eviction depend on (eviction.configure).
# Redis's reasons when it cannot listen on what CONFIG SET asked for.
_LISTEN_FAILURE = {"bind": "Failed to bind to specified addresses.",
                   "port": "Unable to listen on this port. Check server logs."}


# The parameters CONFIG SET refuses while the data loads (Redis's DENY_LOADING_CONFIG).
_DENY_LOADING = frozenset(("dir", "appendonly", "repl-diskless-load"))


def _apply_listeners(c, before: dict, name: str) -> str:
    """applyBind and updatePort: listen on the new addresses (the old ones bound again if
    they cannot be)."""
    server, config = c.server, c.server.config
    bind, port = config.get("bind"), int(config.get("port"))
    if server.listen_on(bind, port, before.get("bind", bind), int(before.get("port", port))):
        return ""
    return _LISTEN_FAILURE[name]


def _apply_appendonly(c, before: dict, name: str) -> str:
    """updateAppendonly: the AOF started (startAppendOnly) or stopped at once."""
    persistence = c.server.features.persistence
    wanted = c.server.config.get("appendonly") == "yes"  # (a failed start sets it back to no)
    if persistence is None or persistence.turn_on_aof(c.in_exec) or not wanted:
        return ""
    return errors.CONFIG_SET_AOF_FAILED


def _apply_oom_score(c, before: dict, name: str) -> str:
    """updateOOMScoreAdj, for oom-score-adj and oom-score-adj-values alike."""
    return "" if apply_oom_score(c.server.config) else errors.CONFIG_SET_OOM_FAILED


def _apply_maxclients(c, before: dict, name: str) -> str:
    """updateMaxclients: the open files limit raised to what maxclients needs, if it can be."""
    fitting = open_files.adjust_limit(c.server.config)
    if fitting != c.server.config.maxclients:
        return errors.CONFIG_SET_MAXCLIENTS.format(fitting)
    return ""


def _apply_good_replicas(c, before: dict, name: str) -> str:
    """updateGoodSlaves: the replicas within min-replicas-max-lag counted again at once (the
    next write is refused or allowed by the new setting, not after the next second's count)."""
    replication = c.server.features.replication
    if replication is not None:
        replication.refresh_good()
    return ""


def _apply_backlog_ttl(c, before: dict, name: str) -> str:
    """repl-backlog-ttl: the backlog's deadline moved (Redis's cron reads it every second)."""
    replication = c.server.features.replication
    if replication is not None:
        replication.arm_backlog_ttl()
    return ""


# Redis's apply functions: what a new value needs done at once (the first four may fail). One
# function may serve several parameters (it runs once per CONFIG SET). What only refreshes
# minired's own copies of a value is _REFRESH's, once every apply step has succeeded.
_APPLY = {"bind": _apply_listeners, "port": _apply_listeners, "appendonly": _apply_appendonly,
          "oom-score-adj": _apply_oom_score, "oom-score-adj-values": _apply_oom_score,
          "maxclients": _apply_maxclients, "min-replicas-to-write": _apply_good_replicas,
          "min-replicas-max-lag": _apply_good_replicas, "repl-backlog-ttl": _apply_backlog_ttl}


def _each_once(steps: list[tuple]) -> list[tuple]:
    """(function, argument) pairs without None and without a function a pair before had:
    what one CONFIG SET runs, in the order its parameters came."""
    kept: list[tuple] = []
    for function, argument in steps:
        if function is not None and all(function is not taken for taken, _ in kept):
            kept.append((function, argument))
    return kept


def _apply(c, changed: list[str], before: dict) -> None:
    """CONFIG SET's apply step, as Redis's configSetCommand: the apply function of each
    parameter whose value changed, once, in the order the parameters came. The first failure
    restores every value, runs the same functions again on them (the listeners bound again,
    the AOF stopped...) and is the reply, naming the parameter that brought the function."""
    config = c.server.config
    steps = _each_once([(_APPLY.get(Config.canonical(name)), name) for name in changed])
    for apply, name in steps:
        failure = apply(c, before, Config.canonical(name))
        if failure:
            after = {canonical: config.get(canonical) for canonical in before}
            for canonical, value in before.items():
                config.set(canonical, value)
            for again, again_name in steps:
                again(c, after, Config.canonical(again_name))
            raise RedisError(errors.CONFIG_SET_FAILED.format(name.lower(), failure))


def _refresh_client_eviction(c, given: str) -> None:
    client_eviction.configure(c.server)  # (a percentage limit is of maxmemory)


def _refresh_key_eviction(c, given: str) -> None:
    eviction.configure(c.server)


def _refresh_notifications(c, given: str) -> None:
    # From the value as given: the stored text shows no 'n' next to 'A', as in Redis, though
    # the class stays on.
    notifications.configure(c.server, given)


def _refresh_latency_tracking(c, given: str) -> None:
    latency.set_tracking(c.server, c.server.config.get("latency-tracking") == "yes")


def _refresh_tracking_table(c, given: str) -> None:
    if c.server.tracking is not None:
        c.server.tracking.limit_table(from_cron=True)


def _refresh_lazy_freeing(c, given: str) -> None:
    # (imported here: the command modules load in the command table's order)
    from minired.commands.keys import watch_lazy_freeing

    watch_lazy_freeing(c.server)


def _refresh_idle_clients(c, given: str) -> None:
    if c.server.config.get("timeout") != "0":
        from minired.features import idle_clients  # (first set: imported now)

        idle_clients.configure(c.server)


def _refresh_output_limits(c, given: str) -> None:
    if c.server.output_buffer_guard is not None:
        c.server.output_buffer_guard.limits()  # (its threshold is read on every write)


# What refreshes minired's own copies of a value once every apply step has succeeded: each
# parameter's refreshes, each run once per CONFIG SET (from the value given for the first
# parameter that brings it). A parameter may bring several: maxmemory is both evictions' limit.
_REFRESH = {
    "maxmemory": (_refresh_client_eviction, _refresh_key_eviction),
    "maxmemory-clients": (_refresh_client_eviction,),
    **{name: (_refresh_key_eviction,)
       for name in ("maxmemory-policy", "lfu-log-factor", "lfu-decay-time")},
    "notify-keyspace-events": (_refresh_notifications,),
    "latency-tracking": (_refresh_latency_tracking,),
    "tracking-table-max-keys": (_refresh_tracking_table,),
    "lazyfree-lazy-expire": (_refresh_lazy_freeing,),
    "lazyfree-lazy-eviction": (_refresh_lazy_freeing,),
    "timeout": (_refresh_idle_clients,),
    "client-output-buffer-limit": (_refresh_output_limits,),
}


def _refresh(c, given: list[tuple[str, str]]) -> None:
    for refresh, value in _each_once([(refresh, value) for name, value in given
                                      for refresh in _REFRESH.get(name, ())]):
        refresh(c, value)


@command("set", arity=-4, flags="admin noscript loading stale", parent="config", group=G)
def config_set(c, argv):
    """Set configuration parameters to the given values"""
    if len(argv) % 2:
        raise RedisError(errors.SYNTAX)
    config = c.server.config
    names = [argv[i].decode(errors="replace") for i in range(2, len(argv), 2)]
    # First every name (unknown, not settable, repeated), then every value, as Redis checks
    # them: the first failure is the one reported.
    seen: set[str] = set()
    protected_allowed = dispatch.protected_action_allowed(c, "enable-protected-configs")
    for raw_name in names:
        if not Config.known(raw_name):
            raise RedisError(errors.CONFIG_SET_UNKNOWN.format(raw_name))
        refusal = config.settable(raw_name, protected_allowed)
        if refusal:
            raise RedisError(errors.CONFIG_SET_FAILED.format(raw_name, refusal))
        if Config.canonical(raw_name) in _DENY_LOADING and dispatch.is_loading(c.server):
            raise RedisError(errors.LOADING)
        # Duplicates are spotted by the name as written: an alias and its target may both appear.
        if raw_name.lower() in seen:
            raise RedisError(errors.CONFIG_SET_FAILED.format(raw_name, "duplicate parameter"))
        seen.add(raw_name.lower())
    changes: list[tuple[str, str]] = []
    refused_on_apply: RedisError | None = None
    for raw_name, i in zip(names, range(3, len(argv), 2)):
        # Redis names each parameter by its own entry (aliases have theirs): in lowercase.
        try:
            changes.append((raw_name, config.validated(raw_name, argv[i].decode(errors="replace"),
                                                       protected_allowed)))
        except ConfigApplyError as exc:
            refused_on_apply = refused_on_apply or RedisError(
                errors.CONFIG_SET_FAILED.format(raw_name.lower(), exc))
        except ConfigError as exc:
            raise RedisError(errors.CONFIG_SET_FAILED.format(raw_name.lower(), exc)) from None
    if refused_on_apply is not None:
        raise refused_on_apply
    # All or nothing: nothing is stored until every pair has been checked.
    before = {Config.canonical(name): config.get(name) for name, _ in changes}
    for name, value in changes:
        config.set(name, value)
    _apply(c, [name for name, value in changes if before[Config.canonical(name)] != value],
           before)
    _refresh(c, [(Config.canonical(argv[i].decode(errors="replace")),
                  argv[i + 1].decode(errors="replace")) for i in range(2, len(argv), 2)])
    persistence = c.server.features.persistence
    if persistence is not None:  # appendfsync, aof-disable-auto-gc no ...: at once, as in Redis
        persistence.reconcile()
    return OK


@command("resetstat", arity=2, flags="admin noscript loading stale", parent="config", group=G)
def config_resetstat(c, argv):
    """Reset the stats returned by INFO"""
    server = c.server
    server.stats.reset()
    for db in server.keyspace.dbs:  # INFO's keyspace_hits/misses and lazy expiries, per database
        db.keyspace_hits = db.keyspace_misses = db.expired_lazily = 0
    for stats in server.command_stats:
        stats.calls = stats.nanoseconds = stats.failed_calls = stats.rejected_calls = 0
    latency.reset(server)
    if server.hooks.client_eviction is not None:
        server.hooks.client_eviction.evicted = 0  # INFO evicted_clients
    replication = server.features.replication
    if replication is not None:  # INFO sync_*, unexpected_error_replies
        replication.sync_full = replication.sync_partial_ok = replication.sync_partial_err = 0
        replication.unexpected_error_replies = 0
    return OK


@command("rewrite", arity=2, flags="admin noscript loading stale", parent="config", group=G)
def config_rewrite(c, argv):
    """Rewrite the configuration file with the in memory configuration"""
    rewrite = c.server.hooks.rewrite_config
    if rewrite is None:
        raise RedisError(errors.NO_CONFIG_FILE)
    try:
        rewrite()
    except OSError as exc:
        log.warning("CONFIG REWRITE failed: %s", exc.strerror)
        raise RedisError(errors.REWRITE_FAILED.format(exc.strerror)) from None
    log.warning("CONFIG REWRITE executed with success.")
    return OK


@command("help", arity=2, flags="loading stale", parent="config", group=G)
def config_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "CONFIG",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
    )


# --- replication, fun ----------------------------------------------------------------------------

@command("monitor", arity=1, flags="admin noscript loading stale", group=G)
def monitor_(c, argv):
    """Listen for all requests received by the server in real time"""
    if c.in_exec:  # a transaction's client expects one reply per command (CLIENT_DENY_BLOCKING)
        raise RedisError(errors.MONITOR_DENY_BLOCKING)
    from minired.features import monitor  # minired/features/monitor.py: loaded by the first MONITOR

    if not monitor.start(c):
        return Encoded(b"")  # as Redis: a second MONITOR is ignored, with no reply at all
    return OK


@command("role", arity=1, flags="noscript loading stale fast", group=G)
def role(c, argv):
    """Return the role of the instance in the context of replication"""
    state = c.server.features.replication
    return [b"master", 0, []] if state is None else state.role()


@command("lolwut", arity=-1, flags="readonly fast", group=G)
def lolwut(c, argv):
    """Display some computer art and the Redis version"""
    i = 1
    while i < len(argv):
        if argv[i].lower() == b"version" and i + 1 < len(argv):
            parse_int(argv[i + 1])
            i += 2
        else:
            i += 1
    return Verbatim(f"Redis ver. {REDIS_VERSION}\n".encode())


# --- SLOWLOG (the log itself is minired/engine/slowlog.py, fed by dispatch.call) -----------------------

container_command("slowlog", G, summary="A container for slow log commands")


@command("get", arity=-2, flags="admin loading stale", parent="slowlog", group=G)
def slowlog_get(c, argv):
    """Get the slow log's entries"""
    if len(argv) > 3:
        raise errors.unknown_subcommand_or_arity(argv[1], "SLOWLOG")
    count = 10
    if len(argv) == 3:
        count = parse_int(argv[2], errors.SLOWLOG_COUNT_RANGE)
        if count < -1:
            raise RedisError(errors.SLOWLOG_COUNT_RANGE)
    entries = c.server.slowlog.entries
    return c.server.slowlog.get(len(entries) if count == -1 else count)


@command("len", arity=2, flags="admin loading stale", parent="slowlog", group=G)
def slowlog_len(c, argv):
    """Get the slow log's length"""
    return len(c.server.slowlog.entries)


@command("reset", arity=2, flags="admin loading stale", parent="slowlog", group=G)
def slowlog_reset(c, argv):
    """Clear all entries from the slow log"""
    c.server.slowlog.reset()
    return OK


@command("help", arity=2, flags="loading stale", parent="slowlog", group=G)
def slowlog_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "SLOWLOG",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
    )
