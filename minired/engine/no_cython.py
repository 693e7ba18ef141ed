"""Stands in for Cython's `cython` module where Cython is not installed (the uncompiled build):
the compiled build reads `@cython.locals` as C types; here they are hints that change nothing."""
from __future__ import annotations

from typing import Any, Callable


def locals(**types: Any) -> Callable[[Callable], Callable]:
    return lambda function: function


def __getattr__(name: str) -> None:
    """cython.longlong, cython.bint, ...: C type names, nothing at run time."""
    return None
