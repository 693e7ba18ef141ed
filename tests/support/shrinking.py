"""Shrinking a difference the fuzzers found: drop one item at a time while it still shows.

One rule for the generated sequences (grammar_diff), the blocking cases (blocking_diff) and
the generated scripts (lua_fuzz): an input is a list of items numbered 0..count-1; each pass
tries each item from the last to the first, keeping the input without it whenever the rerun
still shows the same difference, and passes repeat until one drops nothing. Going from the
last item down means a drop never renumbers an item the pass has still to try.
"""
from __future__ import annotations

from typing import Callable, TypeVar

M = TypeVar("M")


def drop_while_same(found: M, count: Callable[[M], int], without: Callable[[M, int], object],
                    rerun: Callable[[object], M | None], same: Callable[[M], bool]) -> M:
    """The smallest difference reached from `found`. `count(m)`: how many of m's items may be
    dropped (items 0..count-1); `without(m, i)`: m's input without item i, or None where it
    must stay; `rerun(input)`: the difference that input shows, or None; `same(new)`: whether
    `new` is the difference being shrunk."""
    best = found
    changed = True
    while changed:
        changed = False
        for i in range(count(best) - 1, -1, -1):
            if i >= count(best):
                continue
            smaller = without(best, i)
            if smaller is None:
                continue
            result = rerun(smaller)
            if result is not None and same(result):
                best, changed = result, True
    return best
