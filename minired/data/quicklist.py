"""The list type: a quicklist of packed nodes, as Redis holds a list.

A `collections.deque` of bytes costs ~64 bytes per 16-byte element (an 8-byte slot plus a
bytes object of 49 bytes rounded up); Redis's quicklist packs many elements into each listpack
node and pays ~18. Here too, elements away from the two ends live in packed nodes: one bytes
object with all the node's elements end to end, the struct format that splits it ("16s16s...",
one C call to unpack a node) and their count: `(blob, format, count)`, ~3.5 bytes of overhead
per element beyond its own bytes at 16 bytes each.

The ends stay cheap to push and pop: each end has an open buffer, a plain Python list of up
to NODE elements (the head's kept reversed, so that both ends push and pop at a list's tail).
A buffer that fills is packed into a node; an empty one being popped unpacks its neighbouring
node. A node whose elements add up to more than PACK_LIMIT bytes stays a plain list: packing
saves nothing on large elements and would copy them.

The methods are deque's where the list commands used deque's (append, appendleft, pop,
popleft, extend, extendleft, index, insert, clear, indexing, iteration both ways), plus
`slice_list` for LRANGE. OBJECT ENCODING is "quicklist" for every list in Redis 7.0.
"""
from __future__ import annotations

from itertools import chain, islice
from struct import unpack

NODE = 128  # elements per packed node (Redis fills 8 kB listpacks: ~128 × 16-byte elements)
PACK_LIMIT = 1 << 16  # bytes: a node whose elements add up to more stays unpacked

# struct formats of one element of each length below 256: a node's format is their join.
_FORMATS = ["%ds" % length for length in range(256)]


def _format(lengths: list) -> str:
    try:
        return "".join(map(_FORMATS.__getitem__, lengths))
    except IndexError:  # an element of 256 bytes or more
        return "".join(["%ds" % length for length in lengths])


def _pack(items: list):
    """A node of these elements: packed (blob, format, count) if they are small, else the
    list. The format is struct's ("16s16s..."): struct.unpack splits a node in one C call."""
    blob = b"".join(items)
    if len(blob) >= PACK_LIMIT:
        return items
    return (blob, _format(list(map(len, items))), len(items))


def _count(node) -> int:
    return node[2] if type(node) is tuple else len(node)


def _unpack(node, start: int = 0, stop: int = -1) -> list:
    """The node's elements [start:stop] (stop -1: to the end) as a new list."""
    if type(node) is not tuple:
        return node[start:] if stop < 0 else node[start:stop]
    items = unpack(node[1], node[0])
    if start == 0 and (stop < 0 or stop >= node[2]):
        return list(items)
    return list(items[start:] if stop < 0 else items[start:stop])


def _node_items(node):
    return iter(_unpack(node)) if type(node) is tuple else iter(node)


def _node_items_reversed(node):
    return reversed(_unpack(node)) if type(node) is tuple else reversed(node)


def _without(items: list, item: bytes, limit: int, from_tail: bool) -> tuple:
    """The items (head to tail) less the first `limit` equal to item, met from the head or from
    the tail; and how many went."""
    if item not in items:
        return items, 0
    kept = []
    removed = 0
    for element in (reversed(items) if from_tail else items):
        if removed < limit and element == item:
            removed += 1
        else:
            kept.append(element)
    if from_tail:
        kept.reverse()
    return kept, removed


class QuickList:
    """A Redis list: bytes elements, O(1) pushes and pops at both ends, packed in between."""

    __slots__ = ("left", "nodes", "right", "length")

    def __init__(self, items=()) -> None:
        self.left: list = []    # the first elements, reversed: left[-1] is element 0
        # Packed (blob, format, count) tuples, or plain lists. A list, not a deque: an empty deque
        # takes 760 bytes (a small list would pay that), and a list's memmove to push a node
        # at the head is paid once per NODE pushes.
        self.nodes: list = []
        self.right: list = []   # the last elements, in order
        self.length = 0
        if type(items) is tuple and len(items) < NODE:
            # (a small list made whole, as an unpacked snapshot value is: the tail buffer
            # appends would have filled, in one copy)
            self.right = list(items)
            self.length = len(items)
        elif items:
            self.extend(items)

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"QuickList({list(self)!r})"

    def __eq__(self, other) -> bool:
        if type(other) is not QuickList:
            return NotImplemented
        return self.length == other.length and all(a == b for a, b in zip(self, other))

    def __iter__(self):
        return chain(reversed(self.left), chain.from_iterable(map(_node_items, self.nodes)),
                     self.right)

    def __reversed__(self):
        return chain(reversed(self.right),
                     chain.from_iterable(map(_node_items_reversed, reversed(self.nodes))),
                     self.left)

    def copy(self) -> "QuickList":
        """An independent copy: packed nodes are immutable and shared, plain ones copied."""
        other = QuickList()
        other.left = self.left[:]
        other.right = self.right[:]
        other.nodes = [node if type(node) is tuple else node[:] for node in self.nodes]
        other.length = self.length
        return other

    # --- the ends ----------------------------------------------------------------------------

    def append(self, item: bytes) -> None:
        right = self.right
        right.append(item)
        self.length += 1
        if len(right) >= NODE:
            self.nodes.append(_pack(right))
            self.right = []

    def appendleft(self, item: bytes) -> None:
        left = self.left
        left.append(item)
        self.length += 1
        if len(left) >= NODE:
            left.reverse()
            self.nodes.insert(0, _pack(left))
            self.left = []

    def extend(self, items) -> None:
        for item in items:
            self.append(item)

    def extendleft(self, items) -> None:
        for item in items:
            self.appendleft(item)

    def pop(self) -> bytes:
        right = self.right
        if not right:
            if self.nodes:
                right = self.right = _unpack(self.nodes.pop())
            elif self.left:  # the last element is the head buffer's first
                self.length -= 1
                return self.left.pop(0)
            else:
                raise IndexError("pop from an empty list")
        self.length -= 1
        return right.pop()

    def popleft(self) -> bytes:
        left = self.left
        if not left:
            if self.nodes:
                left = _unpack(self.nodes.pop(0))
                left.reverse()
                self.left = left
            elif self.right:
                self.length -= 1
                return self.right.pop(0)
            else:
                raise IndexError("pop from an empty list")
        self.length -= 1
        return left.pop()

    def clear(self) -> None:
        self.left = []
        self.nodes = []
        self.right = []
        self.length = 0

    def remove_equal(self, item: bytes, count: int) -> int:
        """LREM: remove the first `count` elements equal to item met from the head (count > 0)
        or from the tail (count < 0), or all of them (0); how many went. As Redis's quicklist
        walk, it stops at the last one to remove, and only the parts that hold one change; a
        packed node whose bytes do not contain item's is not unpacked."""
        if count < 0:  # (-count may not fit an int64: LREM key -9223372036854775808 x)
            limit = self.length if count < -self.length else -count
        else:
            limit = count or self.length
        from_tail = count < 0
        parts = [-1, *range(len(self.nodes)), -2]  # (-1 is the head buffer, -2 the tail's)
        if from_tail:
            parts.reverse()
        removed = 0
        emptied = []
        for part in parts:
            if removed >= limit:
                break
            if part == -1:
                if item not in self.left:
                    continue
                items = self.left[::-1]  # (kept reversed)
            elif part == -2:
                if item not in self.right:
                    continue
                items = self.right
            else:
                node = self.nodes[part]
                if type(node) is tuple and item and item not in node[0]:
                    continue
                items = _unpack(node)
            kept, taken = _without(items, item, limit - removed, from_tail)
            if not taken:
                continue
            removed += taken
            if part == -1:
                kept.reverse()
                self.left = kept
            elif part == -2:
                self.right = kept
            elif kept:
                self.nodes[part] = _pack(kept)
            else:
                emptied.append(part)
        if emptied:
            for part in sorted(emptied, reverse=True):
                del self.nodes[part]
        self.length -= removed
        return removed

    # --- by index ----------------------------------------------------------------------------

    def _locate(self, index: int):
        """Where element `index` (0 <= index < length) is: (0, position in left), (2, position
        in right), or (1, node number, position in that node). Nodes are walked from the
        nearer end, as Redis's quicklistGetIteratorAtIdx does."""
        in_left = len(self.left)
        if index < in_left:
            return 0, in_left - 1 - index, 0
        index -= in_left
        in_nodes = self.length - in_left - len(self.right)
        if index >= in_nodes:
            return 2, index - in_nodes, 0
        if index < in_nodes // 2:
            number = 0
            for node in self.nodes:
                count = _count(node)
                if index < count:
                    return 1, number, index
                index -= count
                number += 1
        else:
            index = in_nodes - 1 - index  # from the tail now
            number = len(self.nodes) - 1
            for node in reversed(self.nodes):
                count = _count(node)
                if index < count:
                    return 1, number, count - 1 - index
                index -= count
                number -= 1
        raise IndexError("list index out of range")  # (the length disagrees with the nodes)

    def _index(self, index: int) -> int:
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("list index out of range")
        return index

    def __getitem__(self, index: int) -> bytes:
        where, number, position = self._locate(self._index(index))
        if where == 0:
            return self.left[number]
        if where == 2:
            return self.right[number]
        node = self.nodes[number]
        if type(node) is not tuple:
            return node[position]
        return unpack(node[1], node[0])[position]

    def __setitem__(self, index: int, item: bytes) -> None:
        where, number, position = self._locate(self._index(index))
        if where == 0:
            self.left[number] = item
        elif where == 2:
            self.right[number] = item
        else:
            items = _unpack(self.nodes[number])
            items[position] = item
            self.nodes[number] = _pack(items)

    def insert(self, index: int, item: bytes) -> None:
        """Insert before element `index` (0 <= index <= length), as deque.insert does."""
        if index >= self.length:
            self.append(item)
            return
        if index <= 0:
            self.appendleft(item)
            return
        where, number, position = self._locate(index)
        if where == 0:
            self.left.insert(number + 1, item)
        elif where == 2:
            self.right.insert(number, item)
        else:
            items = _unpack(self.nodes[number])
            items.insert(position, item)
            if len(items) > 2 * NODE:  # split a node that inserts have grown
                half = len(items) // 2
                self.nodes[number] = _pack(items[:half])
                self.nodes.insert(number + 1, _pack(items[half:]))
            else:
                self.nodes[number] = _pack(items)
        self.length += 1

    def index(self, item: bytes) -> int:
        for position, element in enumerate(self):
            if element == item:
                return position
        raise ValueError("element is not in the list")

    def slice_list(self, start: int, stop: int) -> list:
        """Elements [start:stop] as a list (0 <= start <= stop <= length), LRANGE's reply:
        whole nodes before the range are skipped by their counts, not unpacked."""
        out: list = []
        if start >= stop:
            return out
        left = self.left
        in_left = len(left)
        if start < in_left:
            out = left[in_left - min(stop, in_left):in_left - start]
            out.reverse()
        if stop <= in_left:
            return out
        start = max(start - in_left, 0)
        stop -= in_left
        in_nodes = self.length - in_left - len(self.right)
        if start < in_nodes:
            position = 0
            nodes = self.nodes
            if start >= in_nodes // 2:  # nearer the tail: find the first node from there
                first = len(nodes)
                position = in_nodes
                for node in reversed(nodes):
                    if position <= start:
                        break
                    first -= 1
                    position -= _count(node)
                nodes = islice(nodes, first, None)
            for node in nodes:
                if position >= stop:
                    break
                count = _count(node)
                if position + count > start:
                    out += _unpack(node, max(start - position, 0),
                                   min(stop - position, count))
                position += count
        if stop > in_nodes:
            out += self.right[max(start - in_nodes, 0):stop - in_nodes]
        return out
