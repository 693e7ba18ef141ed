"""Loading a module from its .py when the compiled module beside it is stale (see __init__)."""
from __future__ import annotations

import importlib.util
import sys
from importlib.abc import MetaPathFinder


class SourceOverStaleExtension(MetaPathFinder):
    """Finds the modules in `stale` (name -> .py path) as source, ahead of the compiled files."""

    def __init__(self, stale: dict[str, str]) -> None:
        self.stale = stale
        print(f"minired: {len(stale)} compiled module(s) older than their source, loaded from "
              f".py (reinstall to compile them again): {', '.join(sorted(stale))}", file=sys.stderr)

    def find_spec(self, name, path=None, target=None):
        source = self.stale.get(name)
        return None if source is None else importlib.util.spec_from_file_location(name, source)
