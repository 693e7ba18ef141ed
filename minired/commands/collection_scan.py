"""Cursor iteration inside one hash, set or sorted set: HSCAN, SSCAN and ZSCAN.

A collection Redis would hold in a compact encoding (listpack, intset: the one rule OBJECT
ENCODING reports, keys_object.encoding) comes back whole with cursor 0, whatever COUNT says,
as Redis answers. Others (hashtable, skiplist) are paged by COUNT, walked in the order of a
64-bit hash of each member, the cursor being the hash to resume from, as SCAN walks the
keyspace (keys.py): every member present for the whole iteration is returned, and the
iteration always ends. Sorting by hash is done once per iteration and kept in a small
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
    hashes = snapshot.hashes
    position = bisect.bisect_left(hashes, cursor)
    end = min(position + count, len(hashes))
    # Members sharing a hash are never split across calls: the cursor could not tell them apart.
    while 0 < end < len(hashes) and hashes[end] == hashes[end - 1]:
        end += 1
    found = [member for member in snapshot.members[position:end]
             if member in collection and (match is None or match(member))]
    if end >= len(hashes):
        del cache[cache_key]
        return b"0", found
    return b"%d" % hashes[end], found
