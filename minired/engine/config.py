"""Server configuration: every parameter CONFIG GET/SET knows, with Redis's defaults, types,
ranges and error texts.

Values are kept as the strings CONFIG GET answers. Parameters that mean something to minired
are read through typed properties (read on use, so CONFIG SET takes effect for the next
connection or command); the rest are validated, stored and echoed back so clients that set
them (maxmemory-policy, notify-keyspace-events, ...) keep working.
"""
from __future__ import annotations

from typing import Iterator

from minired.engine.config_values import (
    INT_MAX,
    INT_MIN,
    LLONG_MAX,
    NO_DEFRAG,
    NO_TLS,
    OUTPUT_BUFFER_DEFAULTS,
    UINT_MAX,
    ULLONG_MAX,
    ConfigApplyError,
    ConfigError,
    Normalizer,
    Param,
    base_name,
    bind_addresses,
    boolean,
    enum,
    hostname,
    integer,
    keyspace_events,
    master_address,
    memory,
    memory_or_percent,
    octal,
    only,
    oom_score_adj_values,
    output_buffer_limits,
    parse_memory,
    percentiles,
    proc_title_template,
    save_points,
    shown_directory,
    shutdown_flags,
    startup_output_buffer_limits,
    text,
    working_directory,
)
from minired.protocol import errors

# --- the parameters ----------------------------------------------------------------------------

_EVICTION_POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                      "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")
_PROTECTED_ACTION = enum("no", "yes", "local")
_INT, _LONG = integer(0, INT_MAX), integer(0, LLONG_MAX)
_PORT = integer(0, 65535)


def _each(normalize: Normalizer, *entries: tuple[str, str], mode: str = "mutable",
          hidden: bool = False) -> list[Param]:
    """Parameters of one type: (name, default) pairs."""
    return [Param(name, default, normalize, mode, hidden) for name, default in entries]


def _blank(*names: str) -> list[tuple[str, str]]:
    return [(name, "") for name in names]


def _params(*params: Param) -> dict[str, Param]:
    return {p.name: p for p in params}


# minired keeps most of these only to answer CONFIG GET/SET as Redis does (it has no
# replication, cluster, TLS, AOF rewrite, defragmentation, syslog, ...): what it acts on is
# read through Config's attributes, number() and get() by the subsystems concerned.
PARAMS: dict[str, Param] = _params(
    # The listeners are opened once at start-up; minired does not rebind on CONFIG SET.
    Param("bind", "127.0.0.1", bind_addresses),
    Param("port", "6379", _PORT),
    Param("unixsocket", "", text, "immutable"),
    Param("unixsocketperm", "0", octal, "immutable"),
    Param("databases", "16", integer(1, INT_MAX), "immutable"),
    Param("requirepass", "", text),
    Param("protected-mode", "yes", boolean),
    Param("maxclients", "10000", integer(1, UINT_MAX)),
    Param("timeout", "0", _INT),
    Param("tcp-keepalive", "300", _INT),
    Param("proto-max-bulk-len", "536870912", memory(1024 * 1024, LLONG_MAX)),
    Param("client-query-buffer-limit", "1073741824", memory(1024 * 1024, LLONG_MAX)),
    Param("client-output-buffer-limit", OUTPUT_BUFFER_DEFAULTS, startup_output_buffer_limits),
    Param("busy-reply-threshold", "5000", _LONG),
    Param("maxmemory", "0", memory(0, ULLONG_MAX)),
    Param("maxmemory-policy", "noeviction", enum(*_EVICTION_POLICIES)),
    Param("maxmemory-samples", "5", integer(1, INT_MAX)),
    Param("maxmemory-eviction-tenacity", "10", integer(0, 100)),
    Param("maxmemory-clients", "0", memory_or_percent),
    Param("appendonly", "no", boolean),
    Param("appendfsync", "everysec", enum("everysec", "always", "no")),
    Param("appendfilename", "appendonly.aof", base_name("appendfilename", empty=False),
          "immutable"),
    Param("dir", ".", text, "protected"),
    Param("dbfilename", "dump.rdb", base_name("dbfilename"), "protected"),
    Param("save", "", save_points),
    Param("loglevel", "notice", enum("debug", "verbose", "notice", "warning")),
    Param("logfile", "", text, "immutable"),
    Param("notify-keyspace-events", "", keyspace_events),
    Param("hz", "10", integer(0, INT_MAX, clamp=(1, 500))),
    Param("list-max-listpack-size", "-2", integer(INT_MIN, INT_MAX)),
    Param("list-compress-depth", "0", _INT),
    Param("hash-max-listpack-entries", "512", _LONG),
    Param("hash-max-listpack-value", "64", memory(0, LLONG_MAX)),
    Param("set-max-intset-entries", "512", _LONG),
    Param("zset-max-listpack-entries", "128", _LONG),
    Param("zset-max-listpack-value", "64", memory(0, LLONG_MAX)),
    Param("stream-node-max-bytes", "4096", memory(0, LLONG_MAX)),
    Param("stream-node-max-entries", "100", _LONG),
    Param("hll-sparse-max-bytes", "3000", memory(0, LLONG_MAX)),
    Param("tracking-table-max-keys", "1000000", _LONG),
    *_each(boolean, *((f"lazyfree-lazy-{kind}", "no")
                    for kind in ("eviction", "expire", "server-del", "user-del", "user-flush"))),
    Param("slowlog-log-slower-than", "10000", integer(-1, LLONG_MAX)),
    Param("slowlog-max-len", "128", _LONG),
    Param("latency-monitor-threshold", "0", _LONG),
    Param("activerehashing", "yes", boolean),
    Param("cluster-enabled", "no", boolean, "immutable"),
    Param("replica-read-only", "yes", boolean),
    # Read at start (config file, command line): the server starts as a replica of it.
    Param("replicaof", "", master_address, "immutable"),
    Param("daemonize", "no", boolean, "immutable"),
    Param("io-threads", "1", integer(1, 128), "immutable"),
    Param("enable-debug-command", "no", _PROTECTED_ACTION, "immutable"),
    # minired's own: opt-in clock control for tests (MINIRED ADVANCE).
    Param("time-control", "no", boolean, "immutable", hidden=True),
    # minired's own: opt-in fault injection for tests (MINIRED FAULT).
    Param("fault-injection", "no", boolean, "immutable", hidden=True),
    # minired's own: `dir` is a directory made for this server and removed when it stops (an
    # EmbeddedServer's), where nothing is kept for a restart (a cluster node's layout).
    Param("temporary-dir", "no", boolean, "immutable", hidden=True),
    # Only stored and echoed from here on.
    *_each(boolean, ("rdbcompression", "yes"), ("rdb-del-sync-files", "no"),
           ("stop-writes-on-bgsave-error", "yes"), ("dynamic-hz", "yes"),
           ("repl-disable-tcp-nodelay", "no"), ("repl-diskless-sync", "yes"),
           ("aof-rewrite-incremental-fsync", "yes"), ("no-appendfsync-on-rewrite", "no"),
           ("cluster-require-full-coverage", "yes"), ("rdb-save-incremental-fsync", "yes"),
           ("aof-load-truncated", "yes"), ("aof-use-rdb-preamble", "yes"),
           ("aof-timestamp-enabled", "no"), ("cluster-replica-no-failover", "no"),
           ("replica-lazy-flush", "no"), ("replica-serve-stale-data", "yes"),
           ("replica-ignore-maxmemory", "yes"), ("jemalloc-bg-thread", "yes"),
           ("cluster-allow-reads-when-down", "no"), ("cluster-allow-pubsubshard-when-down", "yes"),
           ("crash-log-enabled", "yes"), ("crash-memcheck-enabled", "yes"),
           ("cluster-allow-replica-migration", "yes"), ("replica-announced", "yes"),
           ("latency-tracking", "yes"), ("aof-disable-auto-gc", "no"),
           ("replica-ignore-disk-write-errors", "no"), ("tls-prefer-server-ciphers", "no"),
           ("tls-session-caching", "yes")),
    *_each(boolean, ("rdbchecksum", "yes"), ("io-threads-do-reads", "no"),
           ("always-show-logo", "no"), ("set-proc-title", "yes"), ("syslog-enabled", "no"),
           ("disable-thp", "yes"), mode="immutable"),
    Param("activedefrag", "no", only(boolean, "no", NO_DEFRAG)),
    *_each(text, *_blank("replica-announce-ip", "masteruser", "masterauth",
                            "cluster-announce-ip", "ignore-warnings", "bind-source-addr",
                            "tls-cert-file", "tls-key-file", "tls-key-file-pass",
                            "tls-client-cert-file", "tls-client-key-file",
                            "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file",
                            "tls-ca-cert-dir", "tls-protocols", "tls-ciphers", "tls-ciphersuites")),
    *_each(text, ("cluster-config-file", "nodes.conf"), ("syslog-ident", "redis"),
           *_blank("aclfile", "pidfile", "server_cpulist", "bio_cpulist", "aof_rewrite_cpulist",
                   "bgsave_cpulist"), mode="immutable"),
    Param("appenddirname", "appendonlydir", base_name("appenddirname", "dirname", empty=False),
          "immutable"),
    Param("cluster-announce-hostname", "", hostname),
    Param("proc-title-template", "{title} {listen-addr} {server-mode}", proc_title_template),
    Param("supervised", "no", enum("upstart", "systemd", "auto", "no"), "immutable"),
    Param("syslog-facility", "local0", enum("user", *(f"local{i}" for i in range(8))),
          "immutable"),
    Param("repl-diskless-load", "disabled", enum("disabled", "on-empty-db", "swapdb")),
    Param("oom-score-adj", "no",
          enum("no", "yes", "relative", "absolute", shown_as={"relative": "yes"})),
    Param("oom-score-adj-values", "0 200 800", oom_score_adj_values),
    Param("acl-pubsub-default", "resetchannels", enum("allchannels", "resetchannels")),
    Param("sanitize-dump-payload", "no", enum("no", "yes", "clients")),
    *_each(_PROTECTED_ACTION, ("enable-protected-configs", "no"),
           ("enable-module-command", "no"), mode="immutable"),
    Param("cluster-preferred-endpoint-type", "ip", enum("ip", "hostname", "unknown-endpoint")),
    Param("propagation-error-behavior", "ignore", enum("ignore", "panic", "panic-on-replicas")),
    *_each(shutdown_flags, ("shutdown-on-sigint", "default"), ("shutdown-on-sigterm", "default")),
    Param("latency-tracking-info-percentiles", "50 99 99.9", percentiles),
    *_each(_INT, ("auto-aof-rewrite-percentage", "100"), ("cluster-replica-validity-factor", "10"),
           ("cluster-migration-barrier", "1"), ("lfu-log-factor", "10"), ("lfu-decay-time", "1"),
           ("replica-priority", "100"), ("repl-diskless-sync-delay", "5"),
           ("min-replicas-to-write", "0"), ("min-replicas-max-lag", "10"),
           ("shutdown-timeout", "10"), ("repl-diskless-sync-max-replicas", "0"),
           ("tls-session-cache-size", "20480"), ("tls-session-cache-timeout", "300")),
    Param("tcp-backlog", "511", _INT, "immutable"),
    *_each(_PORT, ("replica-announce-port", "0"), ("cluster-announce-bus-port", "0"),
           ("cluster-announce-port", "0"), ("cluster-announce-tls-port", "0")),
    Param("cluster-port", "0", _PORT, "immutable"),
    Param("tls-port", "0", only(_PORT, "0", NO_TLS, ConfigApplyError)),
    *_each(only(boolean, "no", NO_TLS, ConfigApplyError), ("tls-cluster", "no"),
           ("tls-replication", "no")),
    Param("tls-auth-clients", "yes", enum("no", "yes", "optional")),
    *_each(integer(1, 99), ("active-defrag-cycle-min", "1"), ("active-defrag-cycle-max", "25")),
    *_each(integer(0, 1000), ("active-defrag-threshold-lower", "10"),
           ("active-defrag-threshold-upper", "100")),
    Param("active-defrag-max-scan-fields", "1000", integer(1, LLONG_MAX)),
    Param("active-defrag-ignore-bytes", "104857600", memory(1, LLONG_MAX)),
    Param("active-expire-effort", "1", integer(1, 10)),
    *_each(integer(1, INT_MAX), ("repl-timeout", "60"), ("repl-ping-replica-period", "10")),
    *_each(_LONG, ("acllog-max-len", "128"), ("cluster-node-timeout", "15000"),
           ("repl-backlog-ttl", "3600")),
    Param("repl-backlog-size", "1048576", memory(1, LLONG_MAX, floor=16384)),
    Param("auto-aof-rewrite-min-size", "67108864", memory(0, LLONG_MAX)),
    Param("cluster-link-sendbuf-limit", "0", memory(0, ULLONG_MAX)),
    Param("socket-mark-id", "0", integer(0, UINT_MAX), "immutable"),
    # Redis's debugging knobs, which CONFIG GET patterns do not list.
    Param("use-exit-on-panic", "no", boolean, hidden=True),
    *_each(integer(INT_MIN, INT_MAX), ("rdb-key-save-delay", "0"), ("key-load-delay", "0"),
           hidden=True),
    Param("watchdog-period", "0", _INT, hidden=True),
    Param("loading-process-events-interval-bytes", "2097152", integer(1024, INT_MAX),
          hidden=True),
)

DEFAULTS: dict[str, str] = {name: param.default for name, param in PARAMS.items()}

# Old names Redis still accepts, mapped to the current one (CONFIG GET '*' lists both).
ALIASES = {
    "lua-time-limit": "busy-reply-threshold",
    "hash-max-ziplist-entries": "hash-max-listpack-entries",
    "hash-max-ziplist-value": "hash-max-listpack-value",
    "zset-max-ziplist-entries": "zset-max-listpack-entries",
    "zset-max-ziplist-value": "zset-max-listpack-value",
    "list-max-ziplist-size": "list-max-listpack-size",
    "slaveof": "replicaof",
    **{name.replace("replica", "slave"): name for name in (
        "replica-read-only", "replica-serve-stale-data", "replica-lazy-flush",
        "replica-ignore-maxmemory", "replica-announce-ip", "replica-announce-port",
        "replica-priority", "repl-ping-replica-period", "min-replicas-to-write",
        "min-replicas-max-lag", "cluster-replica-no-failover", "cluster-replica-validity-factor")},
}

IMMUTABLE = frozenset(name for name, param in PARAMS.items() if param.mode == "immutable")


class Config:
    __slots__ = ("values", "_numbers", "databases", "requirepass", "proto_max_bulk_len",
                 "client_query_buffer_limit", "maxclients", "maxmemory",
                 "busy_reply_threshold_ms", "time_control", "slowlog_threshold_ns", "latency_threshold_ns",
                 "writes_need_replicas", "bgsave_failed", "aof_write_error", "writes_refused_on_disk",
                 "writes_refused", "replicating", "writes_refused_on_replica", "master_link_up",
                 "stale_refused", "good_replicas", "lazy_user_del", "memory_checks",
                 "clients_limited")

    def __init__(self, **overrides: object) -> None:
        """Defaults plus start-up values (keyword names may use '_' for '-'); a value the
        parameter's type refuses raises ConfigError naming the parameter."""
        self.values: dict[str, str] = dict(DEFAULTS)
        self._numbers: dict[str, int] = {}
        self.bgsave_failed = False  # the last background save failed (note_bgsave)
        self.aof_write_error = ""  # strerror of the AOF's failing write while on (note_aof_write)
        self.replicating = False  # a replica of another server (REPLICAOF)
        self.master_link_up = False
        # Replicas that acknowledged within min-replicas-max-lag (replication counts them).
        self.good_replicas = 0
        for name, value in overrides.items():
            canonical = self.canonical(name.replace("_", "-"))
            param = PARAMS.get(canonical)
            if param is None:
                raise ConfigError(f"unknown configuration parameter '{name}'")
            try:
                self.values[canonical] = param.normalize(_to_text(value))
            except ConfigError as exc:
                raise ConfigError(f"'{name}': {exc}") from None
        self._derive()

    @staticmethod
    def canonical(name: str) -> str:
        name = name.lower()
        return ALIASES.get(name, name)

    @staticmethod
    def known(name: str) -> bool:
        return Config.canonical(name) in PARAMS

    def get(self, name: str) -> str | None:
        return self.values.get(self.canonical(name))

    def shown(self, name: str) -> str | None:
        """The value CONFIG GET answers: the stored one, `dir` as Redis's getcwd() shows it."""
        name = self.canonical(name)
        value = self.values.get(name)
        return shown_directory(value) if name == "dir" and value is not None else value

    def set(self, name: str, value: object) -> None:
        """Store a value as given (start-up, the server itself); no validation."""
        self.values[self.canonical(name)] = _to_text(value)
        self._derive()

    def settable(self, name: str, protected_allowed: bool = False) -> str:
        """Why CONFIG SET may not change this parameter at all ('' if it may); protected ones
        only when enable-protected-configs allows the client (`protected_allowed`)."""
        mode = PARAMS[self.canonical(name)].mode
        refused = mode == "immutable" or mode == "protected" and not protected_allowed
        return f"can't set {mode} config" if refused else ""

    def validated(self, name: str, value: str, protected_allowed: bool = False) -> str:
        """The text `value` would be stored as by CONFIG SET name value; ConfigError if refused."""
        param = PARAMS[self.canonical(name)]
        refusal = self.settable(name, protected_allowed)
        if refusal:
            raise ConfigError(refusal)
        if param.name == "client-output-buffer-limit":
            return output_buffer_limits(value, self.values[param.name])
        if param.name == "dir":
            return working_directory(value, self.values[param.name])
        return param.normalize(value)

    def names(self) -> Iterator[str]:
        """Every name CONFIG GET patterns are matched against, aliases included."""
        yield from (name for name, param in PARAMS.items() if not param.hidden)
        yield from ALIASES

    def number(self, name: str) -> int:
        """A numeric parameter (memory units allowed), parsed once per value: some are read on
        every socket read or every XADD."""
        number = self._numbers.get(name)
        if number is None:
            number = self._numbers[name] = parse_memory(self.values[name])
        return number

    def _derive(self) -> None:
        """Plain attributes for the parameters read on every request, recomputed whenever a
        value changes (values are only ever stored by __init__ and set)."""
        self._numbers.clear()
        self.databases = self.number("databases")
        self.requirepass = self.values["requirepass"]
        self.proto_max_bulk_len = self.number("proto-max-bulk-len")
        self.client_query_buffer_limit = self.number("client-query-buffer-limit")
        self.maxclients = self.number("maxclients")
        self.maxmemory = self.number("maxmemory")
        # maxmemory-clients set (a size, or a percentage even of no maxmemory): client eviction
        # runs before every command, as Redis's processCommand calls evictClients whenever its
        # buckets exist. One flag with maxmemory, so that dispatch tests a single C value per
        # command when both are off (the default).
        self.clients_limited = self.values["maxmemory-clients"] not in ("0", "0%")
        self.memory_checks = bool(self.maxmemory) or self.clients_limited
        self.busy_reply_threshold_ms = self.number("busy-reply-threshold")
        self.time_control = self.values["time-control"] == "yes"
        self.lazy_user_del = self.values["lazyfree-lazy-user-del"] == "yes"  # (per DEL)
        # dispatch.call compares every command's duration with it; -1: the slow log is off.
        slower_than = int(self.values["slowlog-log-slower-than"])
        # (a C long long in compiled dispatch: capped)
        self.slowlog_threshold_ns = (min(slower_than * 1000, (1 << 63) - 1)
                                     if slower_than >= 0 else -1)
        # latency-monitor-threshold (ms), for the latency monitor's events; 0: off.
        self.latency_threshold_ns = min(max(self.number("latency-monitor-threshold"), 0)
                                        * 1_000_000, (1 << 63) - 1)
        # Whether writes are refused for want of good replicas (Redis's checkGoodReplicasStatus:
        # a master with fewer than min-replicas-to-write acknowledging within the lag).
        wanted = self.number("min-replicas-to-write")
        self.writes_need_replicas = (wanted > 0 and self.number("min-replicas-max-lag") > 0
                                     and not self.replicating and self.good_replicas < wanted)
        # Whether writes and PING are refused for a failed background save or AOF write (Redis's
        # writeCommandsDeniedByDiskError), and whether writes are refused for either reason:
        # dispatch tests the latter on every write, write_refusal() says why.
        self.writes_refused_on_disk = self._bgsave_refuses() or bool(self.aof_write_error)
        # A read-only replica refuses its clients' writes (only its master's are applied).
        self.writes_refused_on_replica = (self.replicating
                                          and self.values["replica-read-only"] == "yes")
        self.writes_refused = (self.writes_need_replicas or self.writes_refused_on_disk
                               or self.writes_refused_on_replica)
        # A replica whose link is down, with replica-serve-stale-data no, answers MASTERDOWN to
        # the commands not flagged stale (dispatch checks it once a replica: use_extras).
        self.stale_refused = (self.replicating and not self.master_link_up
                              and self.values["replica-serve-stale-data"] == "no")

    def note_replicating(self, replicating: bool, link_up: bool = False) -> None:
        """REPLICAOF host port / NO ONE, and the master link going up or down: writes are
        refused while a read-only replica, most commands while its link is down (as set)."""
        self.replicating = replicating
        self.master_link_up = link_up
        self._derive()

    def note_good_replicas(self, count: int) -> None:
        """The replicas within min-replicas-max-lag, as replication counted them just now."""
        if count != self.good_replicas:
            self.good_replicas = count
            self._derive()

    def note_bgsave(self, ok: bool) -> None:
        """A background save ended (or a SAVE succeeded): writes are refused from a failure on
        until the next success, as stop-writes-on-bgsave-error asks."""
        self.bgsave_failed = not ok
        self._derive()

    def _bgsave_refuses(self) -> bool:
        """stop-writes-on-bgsave-error applies: a background save failed, save points are set."""
        return (self.bgsave_failed and bool(self.values["save"])
                and self.values["stop-writes-on-bgsave-error"] == "yes")

    def note_aof_write(self, error: str) -> None:
        """The AOF's last write failed (error: its strerror) or, with "", succeeded or the AOF
        was turned off: writes are refused in between, as Redis's aof_last_write_status."""
        self.aof_write_error = error
        self._derive()

    def write_refusal(self) -> str:
        """The error a write gets while writes_refused (MISCONF first, as processCommand; the
        snapshot's before the AOF's, as writeCommandsDeniedByDiskError)."""
        if self.writes_refused_on_disk:
            if self._bgsave_refuses():
                return errors.MISCONF_BGSAVE
            return errors.MISCONF_AOF.format(self.aof_write_error)
        return errors.READONLY_REPLICA if self.writes_refused_on_replica else errors.NOREPLICAS


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
