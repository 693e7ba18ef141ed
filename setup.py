"""Build hook: minired's hot modules, compiled with Cython when this machine can.

Every module in COMPILED is ordinary Python and works as it is; Cython compiles the same file
(pure-Python mode: no Cython syntax, annotations not used as C types, so behaviour does not
change) into an extension module that runs the per-request path - parsing, dispatch,
keyspace, the commands scripts call most, the Lua bridge - about a third faster. The one
exception is scripting/luabridge.pyx, Cython proper (redis.call as a Lua C function): it
exists only compiled, and scripts do without it otherwise. Without a C compiler, or with
MINIRED_PURE_PYTHON=1 at install time, the package installs uncompiled.

Each build records a checksum of every source it compiled (minired/_compiled.txt); minired's
__init__ loads a module from its .py instead of a compiled one that no longer matches it (and
leaves a stale luabridge out), so editing a file of an editable install takes effect without
rebuilding.
"""
from __future__ import annotations

import os
import sys
import zlib

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED = [
    "minired/protocol/resp.py",
    "minired/data/keyspace.py", "minired/data/stream.py", "minired/data/zset.py",
    "minired/data/quicklist.py",
    "minired/engine/server.py", "minired/engine/dispatch.py", "minired/engine/config.py",
    "minired/engine/client.py", "minired/engine/blocking.py", "minired/engine/args.py",
    "minired/engine/table.py",
    "minired/commands/keys.py", "minired/commands/strings.py", "minired/commands/lists.py",
    "minired/commands/hashes.py", "minired/commands/sets.py", "minired/commands/zsets.py",
    "minired/commands/streams.py", "minired/commands/server.py", "minired/commands/connection.py",
    "minired/scripting/engine.py", "minired/scripting/sandbox.py", "minired/scripting/commands.py",
    # dump.rdb loads and saves: LZF and the reader's byte loops in C (their .pxd files).
    "minired/features/lzf.py", "minired/features/rdb_format.py",
    "minired/features/rdb_containers.py", "minired/features/rdb_streams.py",
    "minired/features/rdb.py", "minired/features/rdb_file.py",
    "minired/data/packed.py",
    # The write path's logging, per write once the AOF is on or a replica attached.
    "minired/features/propagation.py", "minired/features/aof_effects.py",
    "minired/features/aof_records.py",
    # Cython proper (it is C glue to lupa's Lua): compiled or absent, never loaded as source.
    "minired/scripting/luabridge.pyx",
    # cjson's and cmsgpack's encoders and decoders in C (their Lua versions stay for the rest)
    "minired/scripting/lualibs/native_json.pyx", "minired/scripting/lualibs/native_msgpack.pyx",
]
RECORD = "_compiled.txt"
# Every source's checksum as it was when Cython read it: the record must name what was compiled,
# not what the file holds when the (minutes long) build ends, or a source edited meanwhile would
# pass for compiled and its stale extension be loaded.
_TRANSLATED: dict[str, int] = {}


def source_checksum(path: str) -> int:
    with open(path, "rb") as f:
        return zlib.crc32(f.read())


def pxd_checksums() -> list[tuple[str, int]]:
    found = []
    for root, _, files in sorted(os.walk("minired")):
        for name in sorted(f for f in files if f.endswith(".pxd")):
            path = os.path.join(root, name)
            found.append((path.replace(os.sep, "/"), source_checksum(path)))
    return found


def types_changed_since_last_build() -> bool:
    """Cython rebuilds a module when its own .pxd changes, not when one it cimports does, so
    after any .pxd edit everything is compiled again."""
    try:
        with open(os.path.join("minired", RECORD)) as f:
            recorded = [tuple(line.split()) for line in f if line.split()[0].endswith(".pxd")]
    except OSError:
        return True
    return recorded != [(path, str(checksum)) for path, checksum in pxd_checksums()]


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: a module that does not compile stays Python."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        if not self.extensions:
            # Nothing is compiled this time (no Cython here, or MINIRED_PURE_PYTHON): the
            # modules compiled earlier are still beside their sources, and the record of what
            # they were compiled from must stay, or they would pass for up to date.
            return
        try:
            super().run()
        except Exception as exc:  # no compiler at all
            self._skip(f"compiled modules are not available ({exc})")
        self._record()

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skip(f"{ext.name} stays pure Python ({exc})")

    def _skip(self, why: str) -> None:
        print(f"minired: {why}; everything works uncompiled, only slower", file=sys.stderr)

    def _record(self) -> None:
        """Which modules were compiled from which source, next to the built modules."""
        lines = []
        for ext in self.extensions:
            if os.path.exists(self.get_ext_fullpath(ext.name)):
                [source] = [s for s in ext.sources if s.endswith(".c")]
                source = source[:-2] + ".py"
                if not os.path.exists(source):
                    source += "x"
                checksum = _TRANSLATED.get(source)
                if checksum is None:
                    checksum = source_checksum(source)
                lines.append(f"{ext.name} {checksum}\n")
        # The compiled modules are built against each other's types: an edited .pxd makes
        # them all stale (minired/__init__.py) until the next build.
        lines.extend(f"{path} {_TRANSLATED.get(path, checksum)}\n"
                     for path, checksum in pxd_checksums())
        # (beside minired/__init__.py, which reads it: two folders up from engine/server's)
        package = os.path.dirname(os.path.dirname(self.get_ext_fullpath("minired.engine.server")))
        target = os.path.join(package, RECORD)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.writelines(lines)


def _pure_python_asked() -> bool:
    """minired/_sources.py's reading of MINIRED_PURE_PYTHON, loaded alone (not the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_minired_sources", os.path.join(os.path.dirname(os.path.abspath(__file__)), "minired",
                                         "_sources.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pure_python_asked()


def extensions() -> list:
    if _pure_python_asked():
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("minired: Cython is not installed; installing uncompiled", file=sys.stderr)
        return []
    for source in COMPILED:
        _TRANSLATED[source] = source_checksum(source)
    _TRANSLATED.update(pxd_checksums())
    return cythonize(COMPILED, quiet=True, nthreads=os.cpu_count() or 1,
                     force=types_changed_since_last_build(), compiler_directives={
        "language_level": 3,
        "binding": True,            # functions keep __doc__, attributes and introspection
        "annotation_typing": False,  # annotations stay documentation, as in CPython
        "nonecheck": True,           # None where a .pxd declares a type raises, as in CPython
    })


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
