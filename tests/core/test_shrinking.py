"""The fuzzers' shrinking rule (tests/support/shrinking.py) on inputs whose difference is known."""
from __future__ import annotations

from dataclasses import dataclass

from tests.support.shrinking import drop_while_same


@dataclass
class Found:
    items: list[int]
    signature: str


def _shrink(items: list[int], shows, keep_last: bool = False, must_stay=()) -> list[int]:
    def rerun(smaller: list[int]) -> Found | None:
        return Found(smaller, shows(smaller)) if shows(smaller) else None

    def without(found: Found, i: int) -> list[int] | None:
        if found.items[i] in must_stay:
            return None
        return found.items[:i] + found.items[i + 1:]

    start = Found(items, shows(items))
    count = (lambda f: len(f.items) - 1) if keep_last else (lambda f: len(f.items))
    return drop_while_same(start, count, without, rerun,
                           lambda f: f.signature == start.signature).items


def test_only_what_the_difference_needs_is_left():
    assert _shrink(list(range(10)), lambda xs: "both" if 3 in xs and 7 in xs else None) == [3, 7]


def test_a_different_difference_is_not_taken():
    # Without 5 the input still differs, but otherwise: 5 stays.
    def shows(xs):
        return "needs 2" if 2 in xs and 5 in xs else ("other" if 2 in xs else None)
    assert _shrink(list(range(8)), shows) == [2, 5]


def test_the_last_item_and_those_that_must_stay_stay():
    def shows(xs):
        return "one" if 1 in xs else None
    assert _shrink(list(range(6)), shows, keep_last=True) == [1, 5]
    assert _shrink(list(range(6)), shows, must_stay=(4,)) == [1, 4]


def test_items_are_dropped_in_any_order_of_need():
    # A difference that needs an item late in the list and one early, each tried once per pass.
    def shows(xs):
        return "x" if xs and xs[0] == 0 and xs[-1] == 9 else None
    assert _shrink(list(range(10)), shows) == [0, 9]
