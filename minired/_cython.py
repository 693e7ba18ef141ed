"""Stands in for Cython's `cython` module where Cython is not installed (the uncompiled build).

The modules with C types in their `@cython.locals` say a plain `import cython`: the compiled
build reads it (and the decorators) at compile time, and it must stay that plain for Cython to
see it. Without Cython, the same line imports this file (minired._sources.CythonStandIn, last on
sys.meta_path, finds it under that name), and the decorators are hints that change nothing. Only the names minired
uses are here: code elsewhere that probes for Cython sees `compiled` false, as with Cython's own
pure-Python module.
"""
from __future__ import annotations

from typing import Any, Callable

compiled = False


def locals(**types: Any) -> Callable[[Callable], Callable]:
    return lambda function: function


# The C type names the decorators give: nothing at run time.
int = longlong = bint = double = None
