"""CONFIG's value types: how each kind of parameter is read and shown back, with Redis's
ranges, units and error texts (config.py declares the parameters with them)."""
from __future__ import annotations

import errno
import math
import os
import re
import stat
from dataclasses import dataclass
from typing import Callable

from minired.protocol.resp import string2ll

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
UINT_MAX = 2**32 - 1
LLONG_MAX = 2**63 - 1
ULLONG_MAX = 2**64 - 1


class ConfigError(ValueError):
    """A value CONFIG SET (or the command line) refuses; the text is Redis's reason."""


class ConfigApplyError(ConfigError):
    """A valid value Redis refuses only when it applies the whole CONFIG SET, after checking
    every other value (TLS settings): other pairs' errors are reported first."""


Normalizer = Callable[[str], str]


@dataclass(frozen=True)
class Param:
    name: str
    default: str
    # Checks a new value and returns the text CONFIG GET will show; raises ConfigError.
    normalize: Normalizer
    # "mutable", "immutable" (start-up only) or "protected" (Redis's enable-protected-configs).
    mode: str = "mutable"
    # Redis's HIDDEN_CONFIG (debugging knobs): CONFIG GET answers them by exact name only.
    hidden: bool = False


# --- value types -------------------------------------------------------------------------------

def text(value: str) -> str:
    return value


def base_name(name: str, kind: str = "filename", empty: bool = True) -> Normalizer:
    """A file or directory name of `dir` (isValidDBfilename, isValidAOFfilename,
    isValidAOFdirname): no '/', and (for the AOF's) not empty."""
    def normalize(value: str) -> str:
        if not empty and not value:
            raise ConfigError(f"{name} can't be empty")
        if "/" in value:
            raise ConfigError(f"{name} can't be a path, just a {kind}")
        return value
    return normalize


BIND_ADDRESSES_MAX = 16  # CONFIG_BINDADDR_MAX


def bind_addresses(value: str) -> str:
    """bind: its addresses, split on each space as CONFIG SET splits a multi-argument value
    (two spaces make an empty address, which cannot be bound); "" is none at all."""
    if len(_words(value)) > BIND_ADDRESSES_MAX:
        raise ConfigError("Too many bind addresses specified.")
    return value


def master_address(value: str) -> str:
    """replicaof/slaveof <host> <port> (or NO ONE: "") as setConfigReplicaOfOption reads it;
    the port as strtol takes it, whole."""
    words = value.split()
    if len(words) != 2:
        raise ConfigError("wrong number of arguments")
    host, port = words
    if host.lower() == "no" and port.lower() == "one":
        return ""
    match = re.fullmatch(r"\s*([+-]?\d*)", port)
    digits = match.group(1) if match else None
    number = int(digits) if digits and digits not in ("+", "-") else 0
    if digits is None or not 0 <= number <= 65535:
        raise ConfigError("Invalid master port")
    return f"{host} {number}"


def boolean(value: str) -> str:
    lowered = value.lower()
    if lowered not in ("yes", "no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    return lowered


def _one_of(choices: tuple[str, ...]) -> str:
    return f"argument(s) must be one of the following: {', '.join(choices)}"


def enum(*choices: str, shown_as: dict[str, str] | None = None) -> Normalizer:
    """One of `choices` in any case; `shown_as` maps a synonym to the name CONFIG GET shows."""
    def normalize(value: str) -> str:
        lowered = value.lower()
        if lowered not in choices:
            raise ConfigError(_one_of(choices))
        return (shown_as or {}).get(lowered, lowered)
    return normalize


def _words(value: str) -> list[str]:
    # Redis splits multi-word values on every single space: "a  b" holds an empty word.
    return value.split(" ") if value else []


def _parse_integer(value: str) -> int:
    # Redis's string2ll: optional '-', digits, no '+', no spaces, no leading zeros.
    number = string2ll(value.encode()) if value.isascii() else None
    if number is None:
        raise ConfigError("argument couldn't be parsed into an integer")
    return number


_C_INTEGER = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _strtoll(text: str, base: int = 10) -> int | None:
    """What C's strtoll reads of all of `text` (leading blanks and a sign allowed, "" is 0),
    before saturation to 64 bits; None if characters are left over."""
    match = _C_INTEGER.fullmatch(text or "0")
    if match is None or (base == 8 and not set(match[1]) <= set("+-01234567")):
        return None
    return int(match[1], base)


def _saturate(number: int) -> int:
    return min(max(number, -(2**63)), LLONG_MAX)


def _c_int(number: int) -> int:
    """What a C int keeps of a long long (Redis keeps save changes and soft seconds in one)."""
    return (number + 2**31) % 2**32 - 2**31


def _check_range(number: int, low: int, high: int, spec: str = "") -> None:
    if not low <= number <= high:
        raise ConfigError(f"argument must be between {low:{spec}} and {high:{spec}} inclusive")


def integer(low: int, high: int, clamp: tuple[int, int] | None = None) -> Normalizer:
    def normalize(value: str) -> str:
        number = _parse_integer(value)
        _check_range(number, low, high)
        if clamp is not None:  # Redis keeps e.g. hz within what the event loop can honour
            number = min(max(number, clamp[0]), clamp[1])
        return str(number)
    return normalize


def octal(value: str) -> str:
    """unixsocketperm: an unsigned octal number up to 777, shown in octal."""
    number = _strtoll(value, 8)
    if number is None or number != _saturate(number):  # strtoll's overflow is refused here
        raise ConfigError("argument couldn't be parsed as an octal number")
    _check_range(number % 2**64, 0, 0o777, "o")
    return f"{number:o}"


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
          "g": 1000**3, "gb": 1024**3}


def parse_memory(text: str) -> int:
    """A size as redis.conf writes it: '100', '1k' (1000), '1kb' (1024), '2gb'; ConfigError if
    it is not one. As Redis's memtoull reads it: '' is 0, digits past 64 bits saturate (as
    strtoull does, for the range check to see) and the unit then multiplies modulo 2**64."""
    lowered = text.lower()
    digits = lowered.rstrip("bkmg")
    unit = lowered[len(digits):]
    if (unit not in _UNITS or len(digits) >= 128
            or (digits and not (digits.isdigit() and digits.isascii()))):
        raise ConfigError("argument must be a memory value")
    return min(int(digits or "0"), ULLONG_MAX) * _UNITS[unit] % 2**64


def memory(low: int, high: int, floor: int = 0) -> Normalizer:
    def normalize(value: str) -> str:
        number = parse_memory(value)
        _check_range(number, low, high)
        return str(max(number, floor))  # a floor: Redis raises repl-backlog-size to 16kb
    return normalize


def memory_or_percent(value: str) -> str:
    """maxmemory-clients: a size or 'N%' of maxmemory. Redis keeps a percentage as a negative
    size, so a size past 2**63 reads back as a percentage (or is refused as one)."""
    try:
        number = parse_memory(value)
    except ConfigError:
        try:  # Redis's string2ll before the '%', not negative
            number = -_parse_integer(value[:-1]) if len(value) > 1 and value[-1] == "%" else 1
        except ConfigError:
            number = 1
        if number > 0:
            raise ConfigError("argument must be a memory or percent value") from None
    if number > LLONG_MAX:
        number -= 2**64
    if number < -100:
        raise ConfigError("percentage argument must be less or equal to 100")
    return f"{-number}%" if number < 0 else str(number)


def only(normalize: Normalizer, allowed: str, reason: str,
         refusal: type[ConfigError] = ConfigError) -> Normalizer:
    """A parameter minired cannot act on: any valid value but `allowed` is refused with the
    error Redis gives when it cannot apply it either (no TLS, no active defragmentation)."""
    def refuse(value: str) -> str:
        text = normalize(value)
        if text != allowed:
            raise refusal(reason)
        return text
    return refuse


NO_TLS = "Unable to update TLS configuration. Check server logs."
NO_DEFRAG = ("Active defragmentation cannot be enabled: it requires a Redis server compiled "
              "with a modified Jemalloc like the one shipped by default with the Redis source "
              "distribution")

# notify-keyspace-events: the classes in the order Redis prints them; 'A' is all of g$lshzxetd.
_EVENT_CLASSES = "g$lshzxetd"
_EVENT_FLAGS = _EVENT_CLASSES + "nKEm"


def keyspace_events(value: str) -> str:
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


def save_points(value: str) -> str:
    """Pairs of seconds (>= 1) and changes (>= 0, kept in a C int), read by strtoll."""
    words = _words(value)
    numbers = [_strtoll(word) for word in words]
    if len(words) % 2 or any(n is None or n < 1 - i % 2 for i, n in enumerate(numbers)):
        raise ConfigError("Invalid save parameters")
    return " ".join(str(_c_int(_saturate(n)) if i % 2 else _saturate(n))
                    for i, n in enumerate(numbers))


_OUTPUT_BUFFER_CLASSES = {"normal": "normal", "slave": "slave", "replica": "slave",
                          "pubsub": "pubsub"}
_BAD_BUFFER_LIMIT = "Error in hard, soft or soft_seconds setting in buffer limit configuration."


def output_buffer_limits(value: str, current: str) -> str:
    words = _words(value)
    if len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits = {}
    current_words = current.split()
    for i in range(0, len(current_words), 4):
        limits[current_words[i]] = current_words[i + 1:i + 4]
    for i in range(0, len(words), 4):
        cls = _OUTPUT_BUFFER_CLASSES.get(words[i].lower())
        if cls is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(words[i + 1]), parse_memory(words[i + 2])
        except ConfigError:
            raise ConfigError(_BAD_BUFFER_LIMIT) from None
        seconds = _strtoll(words[i + 3])
        if seconds is None or _c_int(_saturate(seconds)) < 0:
            raise ConfigError(_BAD_BUFFER_LIMIT)
        limits[cls] = [str(hard), str(soft), str(_c_int(_saturate(seconds)))]
    return " ".join(f"{cls} {' '.join(limits[cls])}" for cls in ("normal", "slave", "pubsub"))


def working_directory(value: str, current: str) -> str:
    """CONFIG SET dir as Redis's setConfigDirOption: chdir there (relative to the current
    `dir`) and show what getcwd then answers, the absolute path with its symbolic links
    resolved; a path chdir refuses is refused with its strerror. minired does not move the
    process (an embedded server shares it): every file it writes is joined to `dir`."""
    target = os.path.join(os.path.abspath(current), value) if value else ""
    try:
        mode = os.stat(target).st_mode
        if not stat.S_ISDIR(mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        if not os.access(target, os.X_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise ConfigError(exc.strerror or str(exc)) from None
    return os.path.realpath(target)


def shown_directory(value: str) -> str:
    """`dir` as CONFIG GET and CONFIG REWRITE show it: Redis answers getcwd(), the absolute
    path with its symbolic links resolved, even when no `dir` was given. minired does not move
    the process (see working_directory), so a relative `dir`, the default ".", names where its
    files go from the process's directory. Where the working directory is gone (removed while
    the server runs) getcwd() fails and Redis answers an empty string; so does minired."""
    try:
        return os.path.realpath(value)
    except OSError:  # (a relative path is resolved against the working directory)
        return ""


OUTPUT_BUFFER_DEFAULTS = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


def startup_output_buffer_limits(value: str) -> str:
    # At start-up the classes not named keep Redis's defaults; CONFIG SET keeps current ones.
    return output_buffer_limits(value, OUTPUT_BUFFER_DEFAULTS)


def oom_score_adj_values(value: str) -> str:
    numbers = [_strtoll(word) for word in _words(value)]
    if len(numbers) != 3:
        raise ConfigError("wrong number of arguments")
    if any(n is None or not -2000 <= n <= 2000 for n in numbers):
        raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
    return " ".join(map(str, numbers))


_SHUTDOWN_FLAGS = ("default", "save", "nosave", "now", "force")


def shutdown_flags(value: str) -> str:
    """shutdown-on-sigint/sigterm: words of _SHUTDOWN_FLAGS, shown in that order ('default'
    means none of the others)."""
    chosen = {word.lower() for word in _words(value) or [""]}
    if not chosen <= set(_SHUTDOWN_FLAGS):
        raise ConfigError(_one_of(_SHUTDOWN_FLAGS))
    if {"save", "nosave"} <= chosen:
        raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")
    return " ".join(flag for flag in _SHUTDOWN_FLAGS[1:] if flag in chosen) or "default"


# Redis's string2d: what strtod reads of a whole word (decimal, hexadecimal, inf), not NaN.
_C_DOUBLE = re.compile(r"[+-]?(?:(\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?"
                       r"|0x([0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?|inf(?:inity)?)",
                       re.IGNORECASE)


def _c_double(word: str) -> float | None:
    """Redis's string2d: all of `word` read by strtod, refusing NaN and strtod's ERANGE (a
    value that overflowed to infinity or underflowed to zero)."""
    match = _C_DOUBLE.fullmatch(word)
    if match is None:
        return None
    try:
        number = float.fromhex(word) if match[2] else float(word)
    except OverflowError:
        return None
    mantissa = match[1] or match[2]  # None for the 'inf' words
    if (math.isinf(number) and mantissa) or (number == 0 and mantissa.strip("0.")):
        return None
    return number


def percentiles(value: str) -> str:
    shown = []
    for word in _words(value):
        number = _c_double(word)
        if number is None:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        if not 0.0 <= number <= 100.0:
            raise ConfigError(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        shown.append(f"{number:f}".rstrip("0").rstrip("."))  # %f, then trimDoubleString
    return " ".join(shown)


# A proc-title-template names known variables and does not expand to blanks only; these ones
# are empty when Redis 7.0 checks a template (standalone, no Unix socket).
_EMPTY_TITLE_VARIABLES = {"title", "server-mode", "unixsocket"}
_TITLE_VARIABLES = _EMPTY_TITLE_VARIABLES | {"listen-addr", "port", "tls-port", "config-file"}
_BAD_TITLE = "template format is invalid or contains unknown variables"


def proc_title_template(value: str) -> str:
    def expand(match: re.Match) -> str:  # '{{' is a literal brace
        if match[1] is not None and match[1] not in _TITLE_VARIABLES:
            raise ConfigError(_BAD_TITLE)
        return "" if match[1] in _EMPTY_TITLE_VARIABLES else "x"
    expanded = re.sub(r"\{\{|\{([^}]*)\}", expand, value)
    if "{" in expanded or not expanded.strip(" "):  # an unclosed '{'
        raise ConfigError(_BAD_TITLE)
    return value


def hostname(value: str) -> str:
    if len(value.encode()) >= 256:
        raise ConfigError("Hostnames must be less than 256 characters")
    if not all(ch.isascii() and (ch.isalnum() or ch in "-.") for ch in value):
        raise ConfigError("Hostnames may only contain alphanumeric characters, hyphens or dots")
    return value
