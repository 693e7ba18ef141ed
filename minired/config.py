"""Server configuration: every parameter CONFIG GET/SET knows, with Redis's defaults, types,
ranges and error texts.

Values are kept as the strings CONFIG GET answers. Parameters that mean something to minired
are read through typed properties (read on use, so CONFIG SET takes effect for the next
connection or command); the rest are validated, stored and echoed back so clients that set
them (maxmemory-policy, notify-keyspace-events, ...) keep working.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_UINT_MAX = 2**32 - 1
_LLONG_MAX = 2**63 - 1
_ULLONG_MAX = 2**64 - 1


class ConfigError(ValueError):
    """A value CONFIG SET (or the command line) refuses; the text is Redis's reason."""


Normalizer = Callable[[str], str]


@dataclass(frozen=True)
class Param:
    name: str
    default: str
    # Checks a new value and returns the text CONFIG GET will show; raises ConfigError.
    normalize: Normalizer
    # "mutable", "immutable" (start-up only) or "protected" (Redis's enable-protected-configs).
    mode: str = "mutable"


# --- value types -------------------------------------------------------------------------------

def _string(value: str) -> str:
    return value


def _bool(value: str) -> str:
    lowered = value.lower()
    if lowered not in ("yes", "no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    return lowered


def _enum(*choices: str) -> Normalizer:
    def normalize(value: str) -> str:
        lowered = value.lower()
        if lowered not in choices:
            raise ConfigError(f"argument(s) must be one of the following: {', '.join(choices)}")
        return lowered
    return normalize


def _parse_integer(value: str) -> int:
    # Redis's string2ll: optional '-', digits, no '+', no spaces, no leading zeros.
    try:
        number = int(value)
    except ValueError:
        raise ConfigError("argument couldn't be parsed into an integer") from None
    if str(number) != value or not -(2**63) <= number <= _LLONG_MAX:
        raise ConfigError("argument couldn't be parsed into an integer")
    return number


def _check_range(number: int, low: int, high: int) -> None:
    if not low <= number <= high:
        raise ConfigError(f"argument must be between {low} and {high} inclusive")


def _integer(low: int, high: int, clamp: tuple[int, int] | None = None) -> Normalizer:
    def normalize(value: str) -> str:
        number = _parse_integer(value)
        _check_range(number, low, high)
        if clamp is not None:  # Redis keeps e.g. hz within what the event loop can honour
            number = min(max(number, clamp[0]), clamp[1])
        return str(number)
    return normalize


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
          "g": 1000**3, "gb": 1024**3}


def parse_memory(text: str) -> int:
    """A size as redis.conf writes it: '100', '1k' (1000), '1kb' (1024), '2gb'; ConfigError if
    it is not one. Values past 64 bits saturate, as strtoull does, for the range check to see."""
    lowered = text.lower()
    digits = lowered.rstrip("bkmg")
    unit = lowered[len(digits):]
    if not digits.isdigit() or not digits.isascii() or unit not in _UNITS:
        raise ConfigError("argument must be a memory value")
    return min(int(digits) * _UNITS[unit], _ULLONG_MAX)


def _memory(low: int, high: int) -> Normalizer:
    def normalize(value: str) -> str:
        number = parse_memory(value)
        _check_range(number, low, high)
        return str(number)
    return normalize


# notify-keyspace-events: the classes in the order Redis prints them; 'A' is all of g$lshzxetd.
_EVENT_CLASSES = "g$lshzxetd"
_EVENT_FLAGS = _EVENT_CLASSES + "nKEm"


def _keyspace_events(value: str) -> str:
    chosen = set()
    for ch in value:
        if ch == "A":
            chosen.update(_EVENT_CLASSES)
        elif ch in _EVENT_FLAGS:
            chosen.add(ch)
        else:
            raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    if chosen.issuperset(_EVENT_CLASSES):
        text = "A"
    else:
        text = "".join(ch for ch in _EVENT_CLASSES + "n" if ch in chosen)
    return text + "".join(ch for ch in "KEm" if ch in chosen)


def _save_points(value: str) -> str:
    if value == "":
        return ""
    parts = value.split(" ")
    if len(parts) % 2:
        raise ConfigError("Invalid save parameters")
    for part in parts:
        try:
            number = _parse_integer(part)
        except ConfigError:
            raise ConfigError("Invalid save parameters") from None
        if number < 0:
            raise ConfigError("Invalid save parameters")
    return value


_OUTPUT_BUFFER_CLASSES = {"normal": "normal", "slave": "slave", "replica": "slave",
                          "pubsub": "pubsub"}


def _output_buffer_limits(value: str, current: str) -> str:
    parts = value.split()
    if len(parts) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits = {}
    current_parts = current.split()
    for i in range(0, len(current_parts), 4):
        limits[current_parts[i]] = current_parts[i + 1:i + 4]
    for i in range(0, len(parts), 4):
        cls = _OUTPUT_BUFFER_CLASSES.get(parts[i].lower())
        if cls is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(parts[i + 1]), parse_memory(parts[i + 2])
            seconds = _parse_integer(parts[i + 3])
        except ConfigError:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit "
                              "configuration.") from None
        if seconds < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit "
                              "configuration.")
        limits[cls] = [str(hard), str(soft), str(seconds)]
    return " ".join(f"{cls} {' '.join(limits[cls])}" for cls in ("normal", "slave", "pubsub"))


# --- the parameters ----------------------------------------------------------------------------

_EVICTION_POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                      "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")


def _params(*params: Param) -> dict[str, Param]:
    return {p.name: p for p in params}


PARAMS: dict[str, Param] = _params(
    # The listeners are opened once at start-up; minired does not rebind on CONFIG SET.
    Param("bind", "127.0.0.1", _string, "immutable"),
    Param("port", "6379", _integer(0, 65535), "immutable"),
    Param("unixsocket", "", _string, "immutable"),
    Param("unixsocketperm", "0", _string, "immutable"),
    Param("databases", "16", _integer(1, _INT_MAX), "immutable"),
    Param("requirepass", "", _string),
    Param("protected-mode", "yes", _bool),
    Param("maxclients", "10000", _integer(1, _UINT_MAX)),
    Param("timeout", "0", _integer(0, _INT_MAX)),
    Param("tcp-keepalive", "300", _integer(0, _INT_MAX)),
    Param("proto-max-bulk-len", "536870912", _memory(1024 * 1024, _LLONG_MAX)),
    Param("client-query-buffer-limit", "1073741824", _memory(1024 * 1024, _LLONG_MAX)),
    Param("client-output-buffer-limit",
          "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", _string),
    Param("busy-reply-threshold", "5000", _integer(0, _LLONG_MAX)),
    Param("maxmemory", "0", _memory(0, _ULLONG_MAX)),
    Param("maxmemory-policy", "noeviction", _enum(*_EVICTION_POLICIES)),
    Param("maxmemory-samples", "5", _integer(1, _INT_MAX)),
    Param("maxmemory-eviction-tenacity", "10", _integer(0, 100)),
    Param("maxmemory-clients", "0", _memory(0, _LLONG_MAX)),
    Param("appendonly", "no", _bool),
    Param("appendfsync", "everysec", _enum("everysec", "always", "no")),
    Param("appendfilename", "appendonly.aof", _string, "immutable"),
    Param("dir", ".", _string, "protected"),
    Param("dbfilename", "dump.rdb", _string, "protected"),
    Param("save", "", _save_points),
    Param("loglevel", "notice", _enum("debug", "verbose", "notice", "warning")),
    Param("logfile", "", _string, "immutable"),
    Param("notify-keyspace-events", "", _keyspace_events),
    Param("hz", "10", _integer(0, _INT_MAX, clamp=(1, 500))),
    Param("list-max-listpack-size", "-2", _integer(_INT_MIN, _INT_MAX)),
    Param("list-compress-depth", "0", _integer(0, _INT_MAX)),
    Param("hash-max-listpack-entries", "512", _integer(0, _LLONG_MAX)),
    Param("hash-max-listpack-value", "64", _memory(0, _LLONG_MAX)),
    Param("set-max-intset-entries", "512", _integer(0, _LLONG_MAX)),
    Param("zset-max-listpack-entries", "128", _integer(0, _LLONG_MAX)),
    Param("zset-max-listpack-value", "64", _memory(0, _LLONG_MAX)),
    Param("stream-node-max-bytes", "4096", _memory(0, _LLONG_MAX)),
    Param("stream-node-max-entries", "100", _integer(0, _LLONG_MAX)),
    Param("hll-sparse-max-bytes", "3000", _memory(0, _LLONG_MAX)),
    Param("tracking-table-max-keys", "1000000", _integer(0, _LLONG_MAX)),
    Param("lazyfree-lazy-eviction", "no", _bool),
    Param("lazyfree-lazy-expire", "no", _bool),
    Param("lazyfree-lazy-server-del", "no", _bool),
    Param("lazyfree-lazy-user-del", "no", _bool),
    Param("lazyfree-lazy-user-flush", "no", _bool),
    Param("slowlog-log-slower-than", "10000", _integer(-1, _LLONG_MAX)),
    Param("slowlog-max-len", "128", _integer(0, _LLONG_MAX)),
    Param("latency-monitor-threshold", "0", _integer(0, _LLONG_MAX)),
    Param("activerehashing", "yes", _bool),
    Param("cluster-enabled", "no", _bool, "immutable"),
    Param("replica-read-only", "yes", _bool),
    # minired never replicates: shown (empty) for clients that read it, never settable.
    Param("replicaof", "", _string, "immutable"),
    Param("daemonize", "no", _bool, "immutable"),
    Param("io-threads", "1", _integer(1, 128), "immutable"),
    Param("enable-debug-command", "no", _string, "immutable"),
    # minired's own: opt-in clock control for tests (MINIRED ADVANCE).
    Param("time-control", "no", _bool, "immutable"),
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
}

IMMUTABLE = frozenset(name for name, param in PARAMS.items() if param.mode == "immutable")


class Config:
    __slots__ = ("values", "_numbers", "databases", "requirepass", "proto_max_bulk_len",
                 "client_query_buffer_limit", "maxclients", "maxmemory",
                 "busy_reply_threshold_ms", "time_control")

    def __init__(self, **overrides: object) -> None:
        """Defaults plus start-up values (keyword names may use '_' for '-'); a value the
        parameter's type refuses raises ConfigError naming the parameter."""
        self.values: dict[str, str] = dict(DEFAULTS)
        self._numbers: dict[str, int] = {}
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

    def set(self, name: str, value: object) -> None:
        """Store a value as given (start-up, the server itself); no validation."""
        self.values[self.canonical(name)] = _to_text(value)
        self._derive()

    def validated(self, name: str, value: str) -> str:
        """The text `value` would be stored as by CONFIG SET name value; ConfigError if refused."""
        param = PARAMS[self.canonical(name)]
        if param.mode == "immutable":
            raise ConfigError("can't set immutable config")
        if param.mode == "protected":
            raise ConfigError("can't set protected config")
        if param.name == "client-output-buffer-limit":
            return _output_buffer_limits(value, self.values[param.name])
        return param.normalize(value)

    def names(self) -> Iterator[str]:
        """Every name CONFIG GET patterns are matched against, aliases included."""
        yield from PARAMS
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
        self.busy_reply_threshold_ms = self.number("busy-reply-threshold")
        self.time_control = self.values["time-control"] == "yes"


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
