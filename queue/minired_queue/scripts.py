"""The Lua transitions: loaded from ``lua/`` once, called by EVALSHA with a NOSCRIPT fallback.

File names follow BullMQ's ``verbNoun-<numkeys>.lua``; a script without the suffix takes
a variable number of keys (a fixed header plus a group per job). The suffix is checked on
every call, so a caller that passes the wrong keys fails here instead of inside Lua.

Code several scripts share lives once in ``lua/includes/<name>.lua``; a script names it
with a line ``--- @include "<name>"`` (BullMQ's syntax), replaced here by the snippet
(each snippet once per script, its own includes first). The SHA is that of the assembled
source, which is what a port must load too.

The fallback on NOSCRIPT is EVAL of the source, routed by the same KEYS: it runs the
script and caches it on the node that owns the slot, which is exactly where the next
EVALSHA for this queue will go (plain Redis, minired, or one Redis Cluster master).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, Sequence

from redis.exceptions import NoScriptError

_NAME = re.compile(r"^(?P<name>[A-Za-z]+)(?:-(?P<numkeys>\d+))?\.lua$")
_INCLUDE = re.compile(r'^--- @include "(?P<name>[A-Za-z]+)"[ \t]*$', re.M)


@dataclass(frozen=True)
class LuaScript:
    name: str
    source: str
    sha: str
    numkeys: int | None  # None: variable

    def check_keys(self, keys: Sequence[str]) -> None:
        if self.numkeys is not None and len(keys) != self.numkeys:
            raise ValueError(f"{self.name} takes {self.numkeys} keys, got {len(keys)}")

    def run(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run on a synchronous redis-py client (Redis or RedisCluster)."""
        self.check_keys(keys)
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return client.eval(self.source, len(keys), *keys, *args)

    async def run_async(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run on a redis.asyncio client (Redis or RedisCluster)."""
        self.check_keys(keys)
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await client.eval(self.source, len(keys), *keys, *args)


def assemble(source: str, read_include: Callable[[str], str]) -> str:
    """Replace each ``--- @include "name"`` line by the snippet, once per script."""
    seen: set[str] = set()

    def expand(text: str) -> str:
        def replace(match: re.Match) -> str:
            name = match.group("name")
            if name in seen:
                return ""
            seen.add(name)
            return expand(read_include(name)).rstrip("\n")

        return _INCLUDE.sub(replace, text)

    return expand(source)


def _load_all() -> dict[str, LuaScript]:
    found: dict[str, LuaScript] = {}
    lua = resources.files(__package__).joinpath("lua")
    includes = lua.joinpath("includes")

    def read_include(name: str) -> str:
        return includes.joinpath(f"{name}.lua").read_text(encoding="utf-8")

    for entry in lua.iterdir():
        match = _NAME.match(entry.name)
        if not match:
            continue
        source = assemble(entry.read_text(encoding="utf-8"), read_include)
        numkeys = match.group("numkeys")
        found[match.group("name")] = LuaScript(
            name=match.group("name"),
            source=source,
            sha=hashlib.sha1(source.encode("utf-8")).hexdigest(),
            numkeys=int(numkeys) if numkeys is not None else None,
        )
    return found


SCRIPTS: dict[str, LuaScript] = _load_all()


def script(name: str) -> LuaScript:
    return SCRIPTS[name]
