"""The C library sorts whose tie order Redis's replies show, ported: Redis's pqsort (partial
quicksort, not stable) and glibc's qsort (a stable merge sort). Python's own sort is stable, so
it stands in for qsort wherever the comparison is consistent; merge_sort is for the cases
where it is not (a NaN compared as smaller both ways)."""
from __future__ import annotations

from typing import Any, Callable

Compare = Callable[[Any, Any], int]


def partial_sort(items: list, compare: Compare, first: int, last: int) -> None:
    """Redis's pqsort (Bentley-McIlroy quicksort from NetBSD, skipping the partitions outside
    positions first..last): those positions end up as a full sort would leave them; ties
    land where this algorithm puts them, which the replies show."""
    _pqsort(items, 0, len(items), compare, first, last)


def _median_of_three(items: list, a: int, b: int, c: int, compare: Compare) -> int:
    if compare(items[a], items[b]) < 0:
        if compare(items[b], items[c]) < 0:
            return b
        return c if compare(items[a], items[c]) < 0 else a
    if compare(items[b], items[c]) > 0:
        return b
    return a if compare(items[a], items[c]) < 0 else c


def _insertion_sort(items: list, base: int, count: int, compare: Compare) -> None:
    for moving in range(base + 1, base + count):
        position = moving
        while position > base and compare(items[position - 1], items[position]) > 0:
            items[position - 1], items[position] = items[position], items[position - 1]
            position -= 1


def _swap_runs(items: list, a: int, b: int, count: int) -> None:
    if count > 0:
        items[a:a + count], items[b:b + count] = items[b:b + count], items[a:a + count]


def _outside(base: int, count: int, first: int, last: int) -> bool:
    end = base + count
    return (first < base and last < base) or (first >= end and last >= end)


def _pqsort(items: list, base: int, count: int, compare: Compare, first: int,
            last: int) -> None:
    # The C code recurses into the left part and loops on the right one; the parts are
    # disjoint, so a stack of pending parts sorts them the same without Python's recursion.
    pending = [(base, count)]
    while pending:
        base, count = pending.pop()
        if count < 7:
            _insertion_sort(items, base, count, compare)
            continue
        left, right = _partition(items, base, count, compare)
        for part_base, part_count in (right, left):
            if part_count > 1 and not _outside(part_base, part_count, first, last):
                pending.append((part_base, part_count))


def _partition(items: list, base: int, count: int, compare: Compare):
    """One Bentley-McIlroy partitioning step: the (base, count) of the parts below and above
    the pivot. (Redis's copy has no switch to insertion sort when nothing moved, which NetBSD's
    qsort has: that would order ties differently.)"""
    middle = base + count // 2
    if count > 7:
        low, high = base, base + count - 1
        if count > 40:
            step = count // 8
            low = _median_of_three(items, low, low + step, low + 2 * step, compare)
            middle = _median_of_three(items, middle - step, middle, middle + step, compare)
            high = _median_of_three(items, high - 2 * step, high - step, high, compare)
        middle = _median_of_three(items, low, middle, high, compare)
    items[base], items[middle] = items[middle], items[base]
    pivot_run_end = scan_low = base + 1
    scan_high = pivot_run_start = base + count - 1
    while True:
        while scan_low <= scan_high:
            result = compare(items[scan_low], items[base])
            if result > 0:
                break
            if result == 0:
                items[pivot_run_end], items[scan_low] = items[scan_low], items[pivot_run_end]
                pivot_run_end += 1
            scan_low += 1
        while scan_low <= scan_high:
            result = compare(items[scan_high], items[base])
            if result < 0:
                break
            if result == 0:
                items[scan_high], items[pivot_run_start] = (items[pivot_run_start],
                                                            items[scan_high])
                pivot_run_start -= 1
            scan_high -= 1
        if scan_low > scan_high:
            break
        items[scan_low], items[scan_high] = items[scan_high], items[scan_low]
        scan_low += 1
        scan_high -= 1
    end = base + count
    run = min(pivot_run_end - base, scan_low - pivot_run_end)
    _swap_runs(items, base, scan_low - run, run)
    run = min(pivot_run_start - scan_high, end - pivot_run_start - 1)
    _swap_runs(items, scan_low, end - run, run)
    above = pivot_run_start - scan_high
    return (base, scan_low - pivot_run_end), (end - above, above)


def merge_sort(items: list, compare: Compare) -> list:
    """glibc's msort_with_tmp: top-down, the left half first, ties (compare <= 0) from the left."""
    if len(items) <= 1:
        return items
    half = len(items) // 2
    left = merge_sort(items[:half], compare)
    right = merge_sort(items[half:], compare)
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if compare(left[i], right[j]) <= 0:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged
