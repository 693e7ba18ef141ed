"""Server configuration: every parameter CONFIG GET/SET knows, as strings, with Redis's defaults.

Parameters that mean something to minired are read through typed properties; the rest are
stored and echoed back so clients that set them (maxmemory-policy, notify-keyspace-events, ...)
keep working.
"""
from __future__ import annotations

DEFAULTS: dict[str, str] = {
    "bind": "127.0.0.1",
    "port": "6379",
    "unixsocket": "",
    "unixsocketperm": "0",
    "databases": "16",
    "requirepass": "",
    "protected-mode": "yes",
    "maxclients": "10000",
    "timeout": "0",
    "tcp-keepalive": "300",
    "proto-max-bulk-len": "536870912",
    "client-query-buffer-limit": "1073741824",
    "client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
    "busy-reply-threshold": "5000",
    "maxmemory": "0",
    "maxmemory-policy": "noeviction",
    "maxmemory-samples": "5",
    "appendonly": "no",
    "appendfsync": "everysec",
    "appendfilename": "appendonly.aof",
    "dir": ".",
    "dbfilename": "dump.rdb",
    "save": "",
    "loglevel": "notice",
    "logfile": "",
    "notify-keyspace-events": "",
    "hz": "10",
    "list-max-listpack-size": "-2",
    "list-compress-depth": "0",
    "hash-max-listpack-entries": "128",
    "hash-max-listpack-value": "64",
    "set-max-intset-entries": "512",
    "zset-max-listpack-entries": "128",
    "zset-max-listpack-value": "64",
    "stream-node-max-bytes": "4096",
    "stream-node-max-entries": "100",
    "lazyfree-lazy-eviction": "no",
    "lazyfree-lazy-expire": "no",
    "lazyfree-lazy-server-del": "no",
    "lazyfree-lazy-user-del": "no",
    "lazyfree-lazy-user-flush": "no",
    "slowlog-log-slower-than": "10000",
    "slowlog-max-len": "128",
    "latency-monitor-threshold": "0",
    "activerehashing": "yes",
    "lua-replicate-commands": "yes",
    "cluster-enabled": "no",
    "replica-read-only": "yes",
    "daemonize": "no",
    "io-threads": "1",
    "enable-debug-command": "no",
    # minired's own: opt-in clock control for tests (MINIRED ADVANCE).
    "time-control": "no",
}

# Old names Redis still accepts, mapped to the current one.
ALIASES = {
    "lua-time-limit": "busy-reply-threshold",
    "hash-max-ziplist-entries": "hash-max-listpack-entries",
    "hash-max-ziplist-value": "hash-max-listpack-value",
    "zset-max-ziplist-entries": "zset-max-listpack-entries",
    "zset-max-ziplist-value": "zset-max-listpack-value",
    "list-max-ziplist-size": "list-max-listpack-size",
    "slaveof": "replicaof",
}

# Set only at start-up (CONFIG SET answers that they cannot be changed at run time).
IMMUTABLE = frozenset({"databases", "daemonize", "io-threads", "cluster-enabled", "unixsocket",
                       "unixsocketperm", "logfile", "time-control", "enable-debug-command"})


class Config:
    def __init__(self, **overrides: object) -> None:
        self.values: dict[str, str] = dict(DEFAULTS)
        for name, value in overrides.items():
            self.values[self.canonical(name.replace("_", "-"))] = _to_text(value)

    @staticmethod
    def canonical(name: str) -> str:
        name = name.lower()
        return ALIASES.get(name, name)

    def get(self, name: str) -> str | None:
        return self.values.get(self.canonical(name))

    def set(self, name: str, value: object) -> None:
        self.values[self.canonical(name)] = _to_text(value)

    def _int(self, name: str) -> int:
        return parse_memory(self.values[name])

    @property
    def databases(self) -> int:
        return self._int("databases")

    @property
    def requirepass(self) -> str:
        return self.values["requirepass"]

    @property
    def proto_max_bulk_len(self) -> int:
        return self._int("proto-max-bulk-len")

    @property
    def client_query_buffer_limit(self) -> int:
        return self._int("client-query-buffer-limit")

    @property
    def maxclients(self) -> int:
        return self._int("maxclients")

    @property
    def maxmemory(self) -> int:
        return self._int("maxmemory")

    @property
    def busy_reply_threshold_ms(self) -> int:
        return self._int("busy-reply-threshold")

    @property
    def time_control(self) -> bool:
        return self.values["time-control"] == "yes"


_UNITS = {"k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3}


def parse_memory(text: str) -> int:
    """Parse '100', '1mb', '2gb' the way redis.conf does (k = 1000, kb = 1024)."""
    lowered = text.strip().lower()
    for suffix in ("kb", "mb", "gb", "k", "m", "g"):
        if lowered.endswith(suffix) and lowered[: -len(suffix)].lstrip("-").isdigit():
            return int(lowered[: -len(suffix)]) * _UNITS[suffix]
    return int(lowered)


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
