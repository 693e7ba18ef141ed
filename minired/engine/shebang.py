"""The flags a script declares in its shebang line (`#!lua flags=no-writes,...`), as Redis 7.0's
evalExtractShebangFlags reads them: the script engine runs by them, and a WRITE pause (CLIENT
PAUSE) lets a script through by them before the script engine exists."""
from __future__ import annotations

from minired.protocol import errors
from minired.protocol.errors import RedisError

SCRIPT_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")


def parse_shebang(body: bytes) -> tuple[frozenset | None, int]:
    """(flags, shebang length) of an EVAL script, like evalExtractShebangFlags."""
    if not body.startswith(b"#!"):
        return None, 0
    end = body.find(b"\n")
    if end < 0:
        raise RedisError(errors.SHEBANG_INVALID)
    parts = body[:end].split()
    if not parts:
        raise RedisError(errors.SHEBANG_NO_ENGINE)
    if parts[0] != b"#!lua":
        raise RedisError(errors.SHEBANG_ENGINE.format(_text(parts[0])))
    flags = set()
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise RedisError(errors.SHEBANG_OPTION.format(_text(part)))
        value = part[6:]
        for flag in value.split(b",") if value else ():
            name = flag.decode("utf-8", "replace")
            if name not in SCRIPT_FLAGS:
                raise RedisError(errors.SHEBANG_FLAG.format(name))
            flags.add(name)
    return frozenset(flags), end


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def declared_flags(body: bytes) -> frozenset | None:
    """The flags an EVAL body declares, None without a shebang or with one EVAL would refuse
    (Redis then judges the command by its own flags)."""
    try:
        return parse_shebang(body)[0]
    except RedisError:
        return None
