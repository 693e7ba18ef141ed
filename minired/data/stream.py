"""The stream type: entries ordered by ID, stored in macro nodes shaped like Redis's listpacks.

Redis keeps a stream as a radix tree of listpacks ("macro nodes"). A node is closed once it
holds `stream-node-max-entries` entries (deleted ones included) or would grow past
`stream-node-max-bytes`, and approximate trimming (`MAXLEN ~`, `MINID ~`) only ever removes
whole nodes. So the number of entries left after `XADD ... MAXLEN ~ 1000` depends on where the
node boundaries fall, and that in turn on the listpack's byte size. Each node here keeps the
byte size its listpack would have (`_int_size`/`_str_size` follow listpack.c's encodings)
so that the boundaries, and therefore every visible result, are the same as in Redis.

Deleted entries (XDEL, exact trimming inside a node) stay counted in their node, as the
tombstones Redis leaves in the listpack; a node whose entries are all deleted goes away.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterator

from minired.data.keyspace import register_type
from minired.protocol.resp import string2ll

StreamID = tuple  # (ms, seq), both unsigned 64-bit
U64_MAX = 2**64 - 1
MAX_ID: StreamID = (U64_MAX, U64_MAX)
MIN_ID: StreamID = (0, 0)
LISTPACK_MAX_SIZE = 1 << 30
_INT64_MAX = 2**63 - 1

# Bytes of a listpack header (total bytes + element count) and of its end marker.
_LISTPACK_OVERHEAD = 6 + 1
_FLAG_SAMEFIELDS_SIZE = 2  # flags are small integers: one encoding byte plus one backlen byte


def format_id(stream_id: StreamID) -> bytes:
    """An ID's text, "<ms>-<seq>": every entry of every stream reply makes one. (Compiled, the
    two parts are C integers and the f-string formats them in C, ~3x cheaper than %-formatting
    the tuple.)"""
    ms, seq = stream_id
    return f"{ms}-{seq}".encode()


def _backlen_size(encoded: int) -> int:
    if encoded <= 127:
        return 1
    if encoded < 16383:
        return 2
    if encoded < 2097151:
        return 3
    if encoded < 268435455:
        return 4
    return 5


def _int_size(value: int) -> int:
    """Bytes a listpack integer element takes, backlen included (all of these are < 128)."""
    if 0 <= value <= 127:
        return 2
    if -4096 <= value <= 4095:
        return 3
    if -32768 <= value <= 32767:
        return 4
    if -8388608 <= value <= 8388607:
        return 5
    if -2147483648 <= value <= 2147483647:
        return 6
    return 10


def _str_size(raw: bytes) -> int:
    """Bytes a listpack element holding `raw` takes: integers are stored as integers."""
    as_int = string2ll(raw)  # lpStringToInt64 reads integers as string2ll does
    if as_int is not None:
        return _int_size(as_int)
    length = len(raw)
    encoded = length + (1 if length < 64 else 2 if length < 4096 else 5)
    return encoded + _backlen_size(encoded)


def _as_signed(value: int) -> int:
    """ID deltas are unsigned in C but stored through int64: wrap them the same way."""
    if 0 <= value <= _INT64_MAX:
        return value
    value &= U64_MAX
    return value - 2**64 if value > _INT64_MAX else value


class StreamNode:
    """One macro node: the live entries of a listpack plus what its size depends on."""

    __slots__ = ("master_id", "master_fields", "ids", "values", "deleted", "last_id",
                 "_fixed_bytes", "_entries_bytes")

    def __init__(self, master_id: StreamID, fields: list[bytes]) -> None:
        self.master_id = master_id
        self.master_fields = fields
        self.ids: list[StreamID] = []
        self.values: list[list[bytes]] = []
        self.deleted = 0
        # Highest ID ever appended here, deleted or not (Redis reads it from the listpack tail).
        self.last_id = master_id
        # The master entry: num-fields, the fields, the zero terminator.
        fixed = _LISTPACK_OVERHEAD + _int_size(len(fields)) + 2
        for field in fields:
            fixed += _str_size(field)
        self._fixed_bytes = fixed
        self._entries_bytes = 0

    @property
    def count(self) -> int:
        return len(self.ids)

    def byte_size(self) -> int:
        """lpBytes() of the listpack this node stands for."""
        return (self._fixed_bytes + _int_size(len(self.ids)) + _int_size(self.deleted) +
                self._entries_bytes)

    def append(self, stream_id: StreamID, pairs: list[bytes]) -> None:
        numfields = len(pairs) // 2
        master_fields = self.master_fields
        same_fields = len(master_fields) == numfields
        if same_fields:
            for i in range(numfields):
                if pairs[2 * i] != master_fields[i]:
                    same_fields = False
                    break
        size = (_FLAG_SAMEFIELDS_SIZE + _int_size(_as_signed(stream_id[0] - self.master_id[0])) +
                _int_size(_as_signed(stream_id[1] - self.master_id[1])))
        # (Loops, not sum() over generators: this runs for every XADD.)
        if same_fields:
            for i in range(1, len(pairs), 2):
                size += _str_size(pairs[i])
            size += _int_size(numfields + 3)
        else:
            for item in pairs:
                size += _str_size(item)
            size += _int_size(numfields) + _int_size(2 * numfields + 4)
        self._entries_bytes += size
        self.ids.append(stream_id)
        self.values.append(pairs)
        self.last_id = stream_id

    def remove_at(self, index: int) -> None:
        del self.ids[index]
        del self.values[index]
        self.deleted += 1

    def remove_before(self, stop: int) -> None:
        del self.ids[:stop]
        del self.values[:stop]
        self.deleted += stop


class Stream:
    """A stream value: `length` live entries in ordered nodes, and its ID bookkeeping."""

    __slots__ = ("nodes", "length", "last_id", "first_id", "max_deleted_id", "entries_added",
                 "groups")

    def __init__(self) -> None:
        self.nodes: list[StreamNode] = []
        self.length = 0
        self.last_id: StreamID = MIN_ID
        self.first_id: StreamID = MIN_ID
        self.max_deleted_id: StreamID = MIN_ID
        self.entries_added = 0
        # Consumer groups by name (stream_groups.py).
        self.groups: dict = {}

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        # A stream key lives on when emptied (XDEL, XTRIM): it is never "an empty container".
        return True

    # --- adding --------------------------------------------------------------------------------

    def next_id(self, now_ms: int) -> StreamID | None:
        """The ID `XADD *` gives; None once the last possible ID is used."""
        ms, seq = self.last_id
        if now_ms > ms:
            return (now_ms, 0)
        if seq == U64_MAX:
            return None if ms == U64_MAX else (ms + 1, 0)
        return (ms, seq + 1)

    def append(self, stream_id: StreamID, pairs: list[bytes], node_max_bytes: int,
               node_max_entries: int) -> None:
        """Append an entry whose ID is already known to be above `last_id`."""
        if node_max_bytes <= 0 or node_max_bytes > LISTPACK_MAX_SIZE:
            node_max_bytes = LISTPACK_MAX_SIZE
        tail = self.nodes[-1] if self.nodes else None
        if tail is not None:
            payload = 0
            for item in pairs:
                payload += len(item)
            if tail.byte_size() + payload >= node_max_bytes:
                tail = None
            elif node_max_entries and len(tail.ids) + tail.deleted >= node_max_entries:
                tail = None
        if tail is None:
            tail = StreamNode(stream_id, pairs[0::2])
            self.nodes.append(tail)
        tail.append(stream_id, pairs)
        self.length += 1
        self.entries_added += 1
        self.last_id = stream_id
        if self.length == 1:
            self.first_id = stream_id

    # --- reading -------------------------------------------------------------------------------

    def _node_index(self, stream_id: StreamID) -> int:
        """Index of the node that would hold stream_id (its master ID is <= stream_id)."""
        index = bisect_right(self.nodes, stream_id, key=_master_id) - 1
        return index if index > 0 else 0

    def range(self, start: StreamID, end: StreamID, count: int = 0,
              reverse: bool = False) -> Iterator[tuple[StreamID, list[bytes]]]:
        """Live entries with start <= ID <= end, ascending (or descending), at most `count`.
        (The entries decide, not `length`: a loaded stream's length is what its file said.)"""
        if start > end or not self.nodes:
            return
        nodes = self.nodes
        emitted = 0
        if not reverse:
            first = self._node_index(start)
            for n in range(first, len(nodes)):
                node = nodes[n]
                ids = node.ids
                i = bisect_left(ids, start) if n == first else 0
                while i < len(ids):
                    if ids[i] > end:
                        return
                    yield ids[i], node.values[i]
                    emitted += 1
                    if emitted == count:
                        return
                    i += 1
        else:
            for n in range(self._node_index(end), -1, -1):
                node = nodes[n]
                ids = node.ids
                i = bisect_right(ids, end) - 1
                while i >= 0:
                    if ids[i] < start:
                        return
                    yield ids[i], node.values[i]
                    emitted += 1
                    if emitted == count:
                        return
                    i -= 1

    def first_entry(self) -> tuple[StreamID, list[bytes]] | None:
        for node in self.nodes:
            if node.ids:
                return node.ids[0], node.values[0]
        return None

    def last_entry(self) -> tuple[StreamID, list[bytes]] | None:
        for node in reversed(self.nodes):
            if node.ids:
                return node.ids[-1], node.values[-1]
        return None

    def last_live_id(self) -> StreamID:
        entry = self.last_entry()
        return entry[0] if entry is not None else MIN_ID

    def get(self, stream_id: StreamID) -> list[bytes] | None:
        if not self.nodes:
            return None
        node = self.nodes[self._node_index(stream_id)]
        i = bisect_left(node.ids, stream_id)
        if i < len(node.ids) and node.ids[i] == stream_id:
            return node.values[i]
        return None

    # --- removing ------------------------------------------------------------------------------

    def delete(self, stream_id: StreamID) -> bool:
        """XDEL one entry; True if it existed."""
        if not self.nodes:
            return False
        n = self._node_index(stream_id)
        node = self.nodes[n]
        i = bisect_left(node.ids, stream_id)
        if i >= len(node.ids) or node.ids[i] != stream_id:
            return False
        node.remove_at(i)
        if not node.ids:
            del self.nodes[n]
        self.length -= 1
        if stream_id > self.max_deleted_id:
            self.max_deleted_id = stream_id
        if not self.length:
            self.first_id = MIN_ID
        elif stream_id == self.first_id:
            self.first_id = self._first_live_id()
        return True

    def trim(self, maxlen: int | None = None, minid: StreamID | None = None,
             approx: bool = False, limit: int = 0) -> int:
        """XTRIM / XADD trimming, node by node as streamTrim does; returns entries removed.

        Whole nodes go first; with `approx` trimming stops at the first node that cannot go
        whole, otherwise that node loses its leading entries. `limit` (approx only) caps the
        entries removed, counted in whole nodes.
        """
        removed = 0
        nodes = self.nodes
        while nodes:
            if maxlen is not None and self.length <= maxlen:
                break
            node = nodes[0]
            entries = node.count
            if limit and removed + entries > limit:
                break
            if maxlen is not None:
                whole = self.length - entries >= maxlen
            else:
                whole = node.last_id < minid
            if whole:
                del nodes[0]
                self.length -= entries
                removed += entries
                continue
            if approx:
                break
            if maxlen is not None:
                stop = self.length - maxlen
            else:
                stop = bisect_left(node.ids, minid)
            node.remove_before(stop)
            self.length -= stop
            removed += stop
            break
        if not self.length:
            self.first_id = MIN_ID
        elif removed:
            self.first_id = self._first_live_id()
        return removed

    def _first_live_id(self) -> StreamID:
        """streamGetEdgeID for the first entry: the maximum ID when none is left, which only a
        loaded stream whose length disagrees with its entries can be (Redis takes it)."""
        entry = self.first_entry()
        return entry[0] if entry is not None else MAX_ID


def _master_id(node: StreamNode) -> StreamID:
    return node.master_id


register_type(Stream, "stream")
