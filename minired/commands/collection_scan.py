"""Cursor iteration inside one hash, set or sorted set: HSCAN, SSCAN and ZSCAN.

A collection Redis would hold in a compact encoding (listpack, intset: the one rule OBJECT
ENCODING reports, keys_object.encoding) comes back whole with cursor 0, whatever COUNT says,
as Redis answers. Others (hashtable, skiplist) are paged by COUNT (`page`, which SCAN's walk
of the keyspace uses too, keys.py): every member present for the whole iteration is returned,
and the iteration always ends. Sorting by hash is done once per iteration and kept in a small
per-server cache, so each call costs O(COUNT + log n) rather than a sort.
"""
from __future__ import annotations

import bisect
from typing import Collection, Iterable

from minired.commands.keys_object import is_compact
from minired.data.glob import matcher

_CACHED_SNAPSHOTS = 32
_HASH_MASK = 0xFFFF_FFFF_FFFF_FFFF


class _Snapshot:
    __slots__ = ("collection", "hashes", "members")

    def __init__(self, collection: Collection[bytes]) -> None:
        ordered = sorted((hash(member) & _HASH_MASK, member) for member in collection)
        # Held so the id of a dropped collection cannot be reused by a new one while cached.
        self.collection = collection
        self.hashes = [h for h, _ in ordered]
        self.members = [member for _, member in ordered]

    def holds_exactly(self, collection: Collection[bytes]) -> bool:
        """Whether the collection has exactly the snapshot's members: a new iteration may then
        reuse it (a C-speed check instead of a sort)."""
        return (len(collection) == len(self.members)
                and all(map(collection.__contains__, self.members)))


def table_bits(size: int) -> int:
    """log2 of the hash table Redis holds `size` entries in: a power of two that holds them,
    4 at least (_dictExpandIfNeeded)."""
    return max(2, (size - 1).bit_length())


def _reversed(value: int, bits: int) -> int:
    return int(format(value, f"0{bits}b")[::-1], 2)


def page(hashes: list[int], cursor: int, count: int, size: int) -> tuple[int, int, int]:
    """One step of a cursor walk over entries sorted by their 64-bit hash: (start, end, next
    cursor, 0 at the end) of the entries to return.

    The walk is Redis's dictScan: a table of 2**bits buckets (table_bits of the entries held
    now), the cursor a bucket number, buckets visited in the order of their bits reversed, each
    returned whole. Here a bucket is the top `bits` bits of the hash, so the walk's order is the
    hashes' own, and the cursor is the next bucket's bits reversed: as in Redis, its low bits
    are the hash's top ones whatever the table's size, so a cursor made before the table grew or
    shrank resumes where it should (a shrink may return some entries again, never miss one),
    and it stays below the table's size (small, as Redis's: Lua numbers and JavaScript keep it
    exact)."""
    bits = table_bits(size)
    shift = 64 - bits
    start = bisect.bisect_left(hashes, _reversed(cursor & ((1 << bits) - 1), bits) << shift)
    end = min(start + count, len(hashes))
    # A bucket is never split across calls: the cursor could not tell its entries apart.
    while 0 < end < len(hashes) and hashes[end] >> shift == hashes[end - 1] >> shift:
        end += 1
    return start, end, 0 if end >= len(hashes) else _reversed(hashes[end] >> shift, bits)


def scan_members(c, key: bytes, value, collection: Collection[bytes], in_order: Iterable[bytes],
                 cursor: int, count: int, pattern: bytes | None) -> tuple[bytes, list[bytes]]:
    """One step of an iteration over `value`: (next cursor, members found), MATCH applied.

    `collection` answers membership (a dict's keys, a set); `in_order` lists the members in
    the order a collection returned whole comes (its compact encoding's order).
    """
    match = matcher(pattern) if pattern is not None else None
    # A hashtable walk asked for more than it holds covers every bucket in one call.
    if len(collection) < count or is_compact(value, c.server.config):
        found = list(in_order)
        if match is not None:
            found = [member for member in found if match(member)]
        return b"0", found
    cache = c.server.collection_scan_snapshots
    cache_key = (c.db.index, key)
    snapshot = cache.get(cache_key)
    if (snapshot is None or snapshot.collection is not collection
            or cursor == 0 and not snapshot.holds_exactly(collection)):
        snapshot = _Snapshot(collection)
        cache.pop(cache_key, None)
        if len(cache) >= _CACHED_SNAPSHOTS:
            del cache[next(iter(cache))]
        cache[cache_key] = snapshot
    position, end, next_cursor = page(snapshot.hashes, cursor, count, len(collection))
    found = [member for member in snapshot.members[position:end]
             if member in collection and (match is None or match(member))]
    if not next_cursor:
        del cache[cache_key]
    return b"%d" % next_cursor, found
