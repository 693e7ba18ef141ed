"""The finders minired puts on sys.meta_path (see __init__): a module's .py over the compiled
module beside it when that is stale, and minired._cython as `cython` where Cython is missing."""
from __future__ import annotations

import os
import sys


def pure_python_asked() -> bool:
    """Whether MINIRED_PURE_PYTHON asks for the uncompiled build: set to anything but empty,
    0, false, no or off (so that MINIRED_PURE_PYTHON=0 means what it says). One reading for
    the package, setup.py (which loads this file alone) and the suite."""
    return os.environ.get("MINIRED_PURE_PYTHON", "").strip().lower() not in ("", "0", "false",
                                                                             "no", "off")


class SourceOverStaleExtension:
    """Finds the modules in `stale` (name -> .py path) as source, ahead of the compiled files;
    a name mapped to None (a stale Cython module) is not found at all.

    A meta path finder needs only find_spec: importlib.abc.MetaPathFinder is not its base
    because importing importlib.abc loads importlib.resources and tempfile (Python 3.11), ~7 ms
    before the first reply (tests/core/test_startup.py)."""

    def __init__(self, stale: dict[str, str]) -> None:
        self.stale = stale
        if pure_python_asked():
            return  # asked for: nothing to warn about
        print(f"minired: {len(stale)} compiled module(s) older than their source, loaded from "
              f".py or, written in Cython, left out (reinstall to compile them again): "
              f"{', '.join(sorted(stale))}", file=sys.stderr)

    def find_spec(self, name, path=None, target=None):
        if name not in self.stale:
            return None
        source = self.stale[name]
        if source is None:
            raise ModuleNotFoundError(f"{name} is older than its source (reinstall to compile it)",
                                      name=name)
        import importlib.util

        return importlib.util.spec_from_file_location(name, source)


class CythonStandIn:
    """Finds `cython` as minired/_cython.py: the modules with C types say `import cython`, and
    run uncompiled where Cython is not installed (see _cython). It sits last on sys.meta_path,
    so Cython's own module wins where it is installed, and nothing is looked up before a
    module asks: compiled modules never do, so a compiled start loads neither (Cython's
    pure-Python module alone is ~3 ms and ~0.5 MB). Not importlib.abc's subclass, as above."""

    def find_spec(self, name, path=None, target=None):
        if name != "cython":
            return None
        import importlib.util

        return importlib.util.spec_from_file_location(
            "cython", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cython.py"))
