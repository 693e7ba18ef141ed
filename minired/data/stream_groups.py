"""Consumer groups of a stream: groups, consumers, pending entries lists, and Redis 7.0's
entries-read / lag bookkeeping.

Every entry delivered to a consumer and not yet acknowledged has one `PendingEntry` (Redis's
NACK), held both by the group's PEL and by its owner's PEL, as Redis shares one NACK between the
two radix trees. PELs are sorted by ID, as the radix trees are, because XPENDING, XAUTOCLAIM and
history reads walk them in ID order. Groups and consumers are plain dicts: Redis lists them in
name order, which the few commands that list them sort for.

A group's `entries_read` counts how far its last delivered ID is from the first entry ever added
to the stream; it is None when that cannot be known (Redis's SCG_INVALID_ENTRIES_READ, -1).
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from minired.data.stream import MAX_ID, MIN_ID, Stream, StreamID, format_id

_INT64_MAX = 2**63 - 1


class PendingEntry:
    """One delivered, unacknowledged entry: who has it, since when, and how often it was sent.
    `consumer` is None only for an instant, while XCLAIM FORCE creates the entry."""

    __slots__ = ("consumer", "delivery_time", "delivery_count")

    def __init__(self, consumer: "Consumer | None", now_ms: int) -> None:
        self.consumer = consumer
        self.delivery_time = now_ms
        self.delivery_count = 1

    def count_delivery(self) -> None:
        # Redis's counter is a uint64 sent as a signed integer: past INT64_MAX it shows negative.
        count = self.delivery_count + 1
        self.delivery_count = count - 2**64 if count > _INT64_MAX else count


class Consumer:
    __slots__ = ("name", "seen_time", "pending")

    def __init__(self, name: bytes, now_ms: int) -> None:
        self.name = name
        self.seen_time = now_ms
        self.pending: SortedDict = SortedDict()  # StreamID -> PendingEntry


class ConsumerGroup:
    __slots__ = ("last_id", "entries_read", "pending", "consumers")

    def __init__(self, last_id: StreamID, entries_read: int | None) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pending: SortedDict = SortedDict()  # StreamID -> PendingEntry
        self.consumers: dict[bytes, Consumer] = {}

    # --- consumers -----------------------------------------------------------------------------

    def consumer(self, name: bytes, now_ms: int) -> Consumer:
        """The consumer a read or claim acts for, created on first use; either way it was seen
        now (Redis's lookup with SLC_DEFAULT refreshes seen-time)."""
        consumer = self.consumers.get(name)
        if consumer is None:
            consumer = self.consumers[name] = Consumer(name, now_ms)
        else:
            consumer.seen_time = now_ms
        return consumer

    def create_consumer(self, name: bytes, now_ms: int) -> bool:
        """XGROUP CREATECONSUMER: False (and nothing refreshed) if it exists already."""
        if name in self.consumers:
            return False
        self.consumers[name] = Consumer(name, now_ms)
        return True

    def delete_consumer(self, name: bytes) -> int:
        """XGROUP DELCONSUMER: its pending entries leave the group too; returns their count."""
        consumer = self.consumers.pop(name, None)
        if consumer is None:
            return 0
        group_pending = self.pending
        for stream_id in consumer.pending:
            del group_pending[stream_id]
        return len(consumer.pending)

    def sorted_consumers(self) -> list[Consumer]:
        return [self.consumers[name] for name in sorted(self.consumers)]

    # --- the pending entries list ----------------------------------------------------------------

    def deliver(self, stream_id: StreamID, consumer: Consumer, now_ms: int) -> None:
        """A first delivery by XREADGROUP. The entry may be pending already (XGROUP SETID moved
        the group back): it then goes to this consumer and its delivery count starts over."""
        entry = self.pending.get(stream_id)
        if entry is None:
            entry = self.pending[stream_id] = PendingEntry(consumer, now_ms)
            consumer.pending[stream_id] = entry
            return
        if entry.consumer is not consumer:
            del entry.consumer.pending[stream_id]
            entry.consumer = consumer
            consumer.pending[stream_id] = entry
        entry.delivery_time = now_ms
        entry.delivery_count = 1

    def claim(self, stream_id: StreamID, entry: PendingEntry, consumer: Consumer) -> None:
        """Move a pending entry (new from XCLAIM FORCE, or another consumer's) to `consumer`."""
        if entry.consumer is consumer:
            return
        if entry.consumer is not None:
            del entry.consumer.pending[stream_id]
        entry.consumer = consumer
        consumer.pending[stream_id] = entry

    def remove(self, stream_id: StreamID) -> bool:
        """XACK one ID, or drop an entry the stream no longer holds; True if it was pending."""
        entry = self.pending.pop(stream_id, None)
        if entry is None:
            return False
        del entry.consumer.pending[stream_id]
        return True

    # --- reading position ----------------------------------------------------------------------

    def advance(self, stream: Stream, stream_id: StreamID) -> None:
        """The group delivered `stream_id` for the first time (streamReplyWithRange): move its
        last ID and keep the entries-read counter exact while it can be."""
        if self.entries_read is not None and not range_has_tombstones(stream, stream_id):
            self.entries_read += 1
        elif stream.entries_added:
            self.entries_read = estimate_entries_read(stream, stream_id)
        self.last_id = stream_id


# --- entries-read arithmetic (t_stream.c, Redis 7.0) ---------------------------------------------

def range_has_tombstones(stream: Stream, start: StreamID, end: StreamID = MAX_ID) -> bool:
    """Whether a deleted entry may lie in [start, end]: only the highest deleted ID is known."""
    deleted = stream.max_deleted_id
    if not stream.length or deleted == MIN_ID or stream.first_id > deleted:
        return False
    return start <= deleted <= end


def estimate_entries_read(stream: Stream, stream_id: StreamID) -> int | None:
    """How many entries, counted from the first ever added, lie at or before `stream_id`; None
    where deletions make that unknowable (streamEstimateDistanceFromFirstEverEntry)."""
    added = stream.entries_added
    if not added:
        return 0
    if not stream.length and stream_id <= stream.last_id:
        return added
    if stream_id == stream.last_id:
        return added
    if stream_id > stream.last_id:
        return None
    deleted = stream.max_deleted_id
    if deleted == MIN_ID or deleted < stream.first_id:
        if stream_id < stream.first_id:
            return added - stream.length
        if stream_id == stream.first_id:
            return added - stream.length + 1
    return None


def group_lag(stream: Stream, group: ConsumerGroup) -> int | None:
    """Entries added but not yet delivered to the group, or None when that cannot be known."""
    added = stream.entries_added
    if not added:
        return 0
    if group.entries_read is not None and not range_has_tombstones(stream, group.last_id):
        return added - group.entries_read
    entries_read = estimate_entries_read(stream, group.last_id)
    return None if entries_read is None else added - entries_read


# --- XINFO views ---------------------------------------------------------------------------------

def groups_info(stream: Stream) -> list[dict]:
    """XINFO GROUPS: one map per group, by name."""
    return [{
        b"name": name,
        b"consumers": len(group.consumers),
        b"pending": len(group.pending),
        b"last-delivered-id": format_id(group.last_id),
        b"entries-read": group.entries_read,
        b"lag": group_lag(stream, group),
    } for name, group in sorted(stream.groups.items())]


def consumers_info(group: ConsumerGroup, now_ms: int) -> list[dict]:
    """XINFO CONSUMERS: one map per consumer, by name; idle is time since it was last seen."""
    return [{
        b"name": consumer.name,
        b"pending": len(consumer.pending),
        b"idle": max(now_ms - consumer.seen_time, 0),
    } for consumer in group.sorted_consumers()]


def full_groups_info(stream: Stream, count: int) -> list[dict]:
    """The groups part of XINFO STREAM FULL: each PEL shows at most `count` entries (0: all),
    with absolute delivery times."""
    limit = count or None
    groups = []
    for name, group in sorted(stream.groups.items()):
        pending = [[format_id(stream_id), entry.consumer.name, entry.delivery_time,
                    entry.delivery_count]
                   for stream_id, entry in group.pending.items()[:limit]]
        consumers = [{
            b"name": consumer.name,
            b"seen-time": consumer.seen_time,
            b"pel-count": len(consumer.pending),
            b"pending": [[format_id(stream_id), entry.delivery_time, entry.delivery_count]
                         for stream_id, entry in consumer.pending.items()[:limit]],
        } for consumer in group.sorted_consumers()]
        groups.append({
            b"name": name,
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": group.entries_read,
            b"lag": group_lag(stream, group),
            b"pel-count": len(group.pending),
            b"pending": pending,
            b"consumers": consumers,
        })
    return groups
