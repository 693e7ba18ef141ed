"""Redis 7.0's RDB encoding of values (format version 10), one encoder and one decoder per type,
shared by DUMP/RESTORE payloads, FUNCTION DUMP/RESTORE and the dump.rdb file (rdb_file.py).

Written: strings (with the integer encodings and LZF compression, as rdbSaveRawString does),
lists, sets and hashes as plain element sequences, sorted sets as RDB_TYPE_ZSET_2 and streams
as RDB_TYPE_STREAM_LISTPACKS_2 (listpacks, consumer groups, PELs, consumers): all loaded by
Redis 7.0, which picks its compact encodings again as it loads. Read: all of that plus every
encoding Redis 7.0 itself loads (quicklists of listpacks or ziplists, intsets, listpack and
ziplist hashes and sorted sets, zipmaps, the old string-scored sorted sets, version 1 streams).
The format's primitives are in rdb_format.py, its compact containers in rdb_containers.py,
streams in rdb_streams.py.
"""
from __future__ import annotations

import struct
from typing import Any, Callable

from minired.data.compact import hash_fits_listpack, intset_numbers
from minired.data.keyspace import type_name
from minired.data.packed import Packed, live, pack, register_unpacking, small
from minired.data.quicklist import QuickList
from minired.data.stream import Stream
from minired.data.zset import ZSet, pack_scores, scores_view
from minired.features.rdb_containers import (
    check_intset,
    check_listpack,
    int_text,
    intset_members,
    listpack,
    listpack_element,
    listpack_entries,
    listpack_items,
    listpack_of,
    pairs_of,
    read_packed,
    read_ziplist,
    ziplist_entries,
    zipmap_pairs,
    zset_score,
)
from minired.features.rdb_format import (
    COMPRESS_AS_REDIS,
    TYPE_HASH,
    TYPE_HASH_LISTPACK,
    TYPE_HASH_ZIPLIST,
    TYPE_HASH_ZIPMAP,
    TYPE_LIST,
    TYPE_LIST_QUICKLIST,
    TYPE_LIST_QUICKLIST_2,
    TYPE_LIST_ZIPLIST,
    TYPE_MODULE,
    TYPE_MODULE_2,
    TYPE_SET,
    TYPE_SET_INTSET,
    TYPE_STREAM_LISTPACKS,
    TYPE_STREAM_LISTPACKS_2,
    TYPE_STRING,
    TYPE_ZSET,
    TYPE_ZSET_2,
    TYPE_ZSET_LISTPACK,
    TYPE_ZSET_ZIPLIST,
    BadData,
    EmptyKey,
    ModuleData,
    Reader,
    encode_length,
    encode_string,
)
from minired.features.rdb_streams import decode_stream, encode_stream

_QUICKLIST_PLAIN, _QUICKLIST_PACKED = 1, 2


# --- values --------------------------------------------------------------------------------------

def _encode_elements(rdb_type: int, items, compress_from: int) -> bytes:
    items = list(items)
    return (bytes((rdb_type,)) + encode_length(len(items))
            + b"".join([encode_string(item, compress_from) for item in items]))


class Compact:
    """Up to which sizes Redis 7.0 keeps a value in a compact encoding (its config): values
    within them are written in that encoding, as Redis writes them, so DUMP payloads are
    Redis's bytes and files load with the same encodings."""

    __slots__ = ("hash_entries", "hash_value", "zset_entries", "zset_value", "intset_entries",
                 "list_fill")

    def __init__(self, hash_entries: int = 512, hash_value: int = 64, zset_entries: int = 128,
                 zset_value: int = 64, intset_entries: int = 512, list_fill: int = -2) -> None:
        self.hash_entries = hash_entries
        self.hash_value = hash_value
        self.zset_entries = zset_entries
        self.zset_value = zset_value
        self.intset_entries = intset_entries
        self.list_fill = list_fill

    @classmethod
    def from_config(cls, get: Callable[[str], Any]) -> "Compact":
        return cls(int(get("hash-max-listpack-entries")), int(get("hash-max-listpack-value")),
                   int(get("zset-max-listpack-entries")), int(get("zset-max-listpack-value")),
                   int(get("set-max-intset-entries")), int(get("list-max-listpack-size")))


# quicklist.c: optimization_level, the node sizes of list-max-listpack-size -1 .. -5.
_QUICKLIST_NODE_BYTES = (4096, 8192, 16384, 32768, 65536)
_QUICKLIST_SAFETY_LIMIT = 8192
_QUICKLIST_SIZE_ESTIMATE_OVERHEAD = 8
_QUICKLIST_LARGE_ELEMENT = 1 << 30


def d2string(value: float) -> bytes:
    """A score as Redis 7.0's d2string spells it (listpack sorted sets store this text)."""
    if value != value:
        return b"nan"
    if value in (float("inf"), float("-inf")):
        return b"inf" if value > 0 else b"-inf"
    if value == 0:
        return b"-0" if struct.pack("<d", value)[7] & 0x80 else b"0"
    if -4503599627370495 < value < 4503599627370496 and value == int(value):
        return b"%d" % int(value)
    return b"%.17g" % value


def _intset_blob(numbers: list) -> bytes:
    """The intset of these integers (a set's, intset_numbers gave them), sorted in place."""
    numbers.sort()
    low, high = numbers[0], numbers[-1]
    if low >= -(1 << 15) and high < 1 << 15:
        width, code = 2, "h"
    elif low >= -(1 << 31) and high < 1 << 31:
        width, code = 4, "i"
    else:
        width, code = 8, "q"
    return struct.pack("<II", width, len(numbers)) + struct.pack("<%d%s" % (len(numbers), code),
                                                                  *numbers)


def quicklist_nodes(items, fill: int,
                    large_element: int = _QUICKLIST_LARGE_ELEMENT) -> list[list[bytes]]:
    """The nodes a quicklist built by tail pushes holds (_quicklistNodeAllowInsert); elements
    of `large_element` bytes or more are plain nodes of their own (packed_threshold)."""
    return [node for node, _ in _quicklist_layout(items, fill, large_element)]


def _quicklist_node_limit(fill: int) -> int | None:
    """A node's most bytes for list-max-listpack-size `fill` (negative), None for a count."""
    return _QUICKLIST_NODE_BYTES[min(-fill, 5) - 1] if fill < 0 else None


def _quicklist_layout(items, fill: int,
                      large_element: int) -> list[tuple[list[bytes], list[bytes]]]:
    """quicklist_nodes, each node with its elements' listpack encodings (the sizes that decide
    the layout are theirs, so a save reuses them instead of encoding every element twice)."""
    nodes: list[tuple[list[bytes], list[bytes]]] = []
    node: list[bytes] | None = None
    encoded: list[bytes] = []
    node_bytes = 0
    limit = _quicklist_node_limit(fill)
    for item in items:
        size = len(item)
        allowed = False
        if node is not None and size < large_element:
            new_size = node_bytes + size + _QUICKLIST_SIZE_ESTIMATE_OVERHEAD
            if limit is not None and new_size <= limit:
                allowed = True
            elif new_size > _QUICKLIST_SAFETY_LIMIT:
                allowed = False
            else:
                allowed = fill >= 0 and len(node) < fill
        if not allowed:
            node = []
            encoded = []
            nodes.append((node, encoded))
            node_bytes = 7  # an empty listpack
        element = listpack_element(item)
        node.append(item)
        encoded.append(element)
        node_bytes += len(element)
        if size >= large_element:
            node = None  # a plain node holds its one element only
    return nodes


def _written_as_loaded(packed: Packed, compress_from: int, compact: Compact | None) -> bytes | None:
    """encode_value of a value still held as its file's listpack, where that is the encoding
    encode_value chooses for the value (the same limits decide): the listpack as loaded, as
    Redis writes a value it loaded and kept, without unpacking it (minired's own listpacks are
    Redis's bytes). None where the live value must decide."""
    if compact is None:
        return None
    kind = packed.kind
    blob = packed.blob
    if kind is HashListpack:
        texts = listpack_items(blob, True)
        if len(texts) // 2 > compact.hash_entries or max(map(len, texts)) > compact.hash_value:
            return None
        return bytes((TYPE_HASH_LISTPACK,)) + encode_string(blob, compress_from)
    if kind is ZSetListpack:
        members = listpack_items(blob, False, True)
        if (not compact.zset_entries or len(members) > compact.zset_entries
                or max(map(len, members)) > compact.zset_value):
            return None
        return bytes((TYPE_ZSET_LISTPACK,)) + encode_string(blob, compress_from)
    if kind is ListListpack:
        texts = listpack_items(blob, True)
        fill = compact.list_fill
        limit = _quicklist_node_limit(fill) or _QUICKLIST_SAFETY_LIMIT
        # One node, as _quicklist_layout lays the elements out: its test for the last element
        # (the node then holds all but that one: less than the whole listpack) holds.
        longest = max(map(len, texts))
        if (fill >= 0 and len(texts) > fill) or \
                len(blob) + longest + _QUICKLIST_SIZE_ESTIMATE_OVERHEAD > limit:
            return None
        return (bytes((TYPE_LIST_QUICKLIST_2,)) + encode_length(1)
                + encode_length(_QUICKLIST_PACKED) + encode_string(blob, compress_from))
    return None


def encode_value(value: Any, compress_from: int = COMPRESS_AS_REDIS,
                 compact: Compact | None = None) -> bytes:
    """The type byte and the RDB encoding of a value; TypeError for a type RDB cannot hold.
    With `compact`, values within its sizes are written in Redis's compact encodings."""
    kind = type(value)
    if kind is bytes:
        return bytes((TYPE_STRING,)) + encode_string(value, compress_from)
    if kind is Packed:  # (SAVE of a small collection nobody has looked up since the load)
        written = _written_as_loaded(value, compress_from, compact)
        if written is not None:
            return written
        value = live(value)
        kind = type(value)
    if kind is QuickList:
        if compact is None:
            return _encode_elements(TYPE_LIST, value, compress_from)
        nodes = _quicklist_layout(value, compact.list_fill, _QUICKLIST_LARGE_ELEMENT)
        out = [bytes((TYPE_LIST_QUICKLIST_2,)), encode_length(len(nodes))]
        for _, encoded in nodes:
            out.append(encode_length(_QUICKLIST_PACKED))
            out.append(encode_string(listpack_of(encoded), compress_from))
        return b"".join(out)
    if kind is set:
        numbers = None if compact is None else intset_numbers(value, compact.intset_entries)
        if numbers is not None:
            return bytes((TYPE_SET_INTSET,)) + encode_string(_intset_blob(numbers), compress_from)
        return _encode_elements(TYPE_SET, value, compress_from)
    if kind is dict:
        if compact is not None and hash_fits_listpack(value, compact.hash_entries,
                                                      compact.hash_value):
            items = [item for pair in value.items() for item in pair]
            return bytes((TYPE_HASH_LISTPACK,)) + encode_string(listpack(items), compress_from)
        out = [bytes((TYPE_HASH,)), encode_length(len(value))]
        for field, item in value.items():
            out.append(encode_string(field, compress_from))
            out.append(encode_string(item, compress_from))
        return b"".join(out)
    if kind is ZSet:
        if compact is not None and value.fits_listpack(compact.zset_entries, compact.zset_value):
            items = []
            for score, member in value.order:
                items.append(member)
                items.append(d2string(score))
            return bytes((TYPE_ZSET_LISTPACK,)) + encode_string(listpack(items), compress_from)
        # Greatest first, as Redis saves a skiplist (its loader then always inserts at the head).
        out = [bytes((TYPE_ZSET_2,)), encode_length(len(value))]
        pack = struct.Struct("<d").pack
        for score, member in reversed(value.order):
            out.append(encode_string(member, compress_from))
            out.append(pack(score))
        return b"".join(out)
    if kind is Stream:
        return bytes((TYPE_STREAM_LISTPACKS_2,)) + encode_stream(value, compress_from)
    raise TypeError(type_name(value))


def _zset(pairs: list[tuple[bytes, float]]) -> dict:
    """A sorted set's scores by member, checked (decode_object makes the ZSet of them)."""
    scores = {member: score + 0.0 for member, score in pairs}  # -0.0 as ZSet.add stores it
    if len(scores) != len(pairs):
        raise BadData("Duplicate zset fields detected")
    for score in scores.values():
        if score != score:
            raise BadData("Zset with NAN score detected")
    return scores


def _zset_listpack(blob: bytes) -> dict:
    """A listpack of member, score, member, score...: integers read as numbers, not as text
    that is then parsed (most scores are integers). The scores by member, as _zset."""
    items = listpack_items(blob)
    count = len(items)
    if count % 2:
        raise BadData("Listpack integrity check failed")
    scores = {}
    for i in range(0, count, 2):
        member = items[i]
        score = items[i + 1]
        if type(member) is not bytes:
            member = int_text(member)
        # (-0.0 as ZSet.add stores it)
        scores[member] = float(score) if type(score) is int else zset_score(score) + 0.0
    if len(scores) != count // 2:
        raise BadData("Duplicate zset fields detected")
    return scores


def _hash(pairs: list[tuple[bytes, bytes]]) -> dict:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise BadData("Duplicate hash fields detected")
    return value


def _hash_of(items: list[bytes]) -> dict:
    """A hash from its fields and values in turn, as listpacks and ziplists hold them."""
    if len(items) % 2:
        raise BadData("Listpack integrity check failed")
    it = iter(items)
    value = dict(zip(it, it))
    if 2 * len(value) != len(items):
        raise BadData("Duplicate hash fields detected")
    return value


def _read_quicklist(reader: Reader, version_2: bool) -> QuickList:
    items = []  # (made a QuickList whole at the end: most lists loaded are small)
    for _ in range(reader.count()):
        container = reader.count() if version_2 else _QUICKLIST_PACKED
        if container == _QUICKLIST_PLAIN:
            element = reader.string()
            if element:  # (an empty node is skipped, as below: an empty list is an empty key)
                items.append(element)
        elif container == _QUICKLIST_PACKED:
            blob = read_packed(reader, check_listpack) if version_2 else read_ziplist(reader)
            # An empty node is skipped, as Redis does (an empty list is then an empty key).
            items.extend(listpack_entries(blob) if version_2 else ziplist_entries(blob))
        else:
            raise BadData("Quicklist integrity check failed")
    return QuickList(tuple(items))


def _set(reader: Reader) -> set:
    count = reader.count()
    value = {reader.string() for _ in range(count)}
    if len(value) != count:
        raise BadData("Duplicate set members detected")
    return value


def _decode_hash(reader: Reader) -> dict:
    count = reader.count()
    return _hash([(reader.string(), reader.string()) for _ in range(count)])


_DECODERS: dict[int, Callable[[Reader], Any]] = {
    TYPE_LIST: lambda r: QuickList([r.string() for _ in range(r.count())]),
    TYPE_SET: _set,
    TYPE_ZSET: lambda r: _zset([(r.string(), r.string_double()) for _ in range(r.count())]),
    TYPE_HASH: _decode_hash,
    TYPE_ZSET_2: lambda r: _zset([(r.string(), r.double()) for _ in range(r.count())]),
    TYPE_HASH_ZIPMAP: lambda r: _hash(zipmap_pairs(r.string())),
    TYPE_LIST_ZIPLIST: lambda r: QuickList(ziplist_entries(read_ziplist(r))),
    TYPE_SET_INTSET: lambda r: intset_members(read_packed(r, check_intset)),
    TYPE_ZSET_ZIPLIST: lambda r: _zset([(m, zset_score(s)) for m, s in
                                        pairs_of(ziplist_entries(read_ziplist(r)))]),
    TYPE_HASH_ZIPLIST: lambda r: _hash_of(ziplist_entries(read_ziplist(r))),
    TYPE_LIST_QUICKLIST: lambda r: _read_quicklist(r, False),
    TYPE_STREAM_LISTPACKS: lambda r: decode_stream(r, False),
    TYPE_HASH_LISTPACK: lambda r: _hash_of(listpack_entries(read_packed(r, check_listpack))),
    TYPE_ZSET_LISTPACK: lambda r: _zset_listpack(read_packed(r, check_listpack)),
    TYPE_LIST_QUICKLIST_2: lambda r: _read_quicklist(r, True),
    TYPE_STREAM_LISTPACKS_2: lambda r: decode_stream(r, True),
}


# A load that packs (packed.py) keeps a small listpack or intset as the file has it: checked
# exactly as the decoders above check it, it is already one compact bytes object (smaller than
# its value marshaled), and a key nobody looks up then costs neither its elements nor a marshal.
# The formats, as Packed kinds:
class HashListpack:
    """A small hash held as its listpack (the fields and values in turn)."""


class ZSetListpack:
    """A small sorted set held as its listpack (the members and scores in turn)."""


class SetIntset:
    """A small set of integers held as its intset."""


class ListListpack:
    """A small list held as the one listpack node of its quicklist."""


def _hash_listpack_packed(reader: Reader) -> Any:
    """TYPE_HASH_LISTPACK as _hash_of checks it (the walk makes the fields only, to find
    duplicates), kept as its listpack when small."""
    blob = read_packed(reader, check_listpack)
    fields = listpack_items(blob, False, True)
    count = len(fields)
    if not small(count):
        return _hash_of(listpack_entries(blob))
    if len(set(fields)) != count:
        raise BadData("Duplicate hash fields detected")
    if not count:
        raise EmptyKey("Empty key")
    return Packed(HashListpack, blob)


def _zset_listpack_packed(reader: Reader) -> Any:
    """TYPE_ZSET_LISTPACK, read as _zset_listpack reads it, kept as its listpack when small."""
    blob = read_packed(reader, check_listpack)
    scores = _zset_listpack(blob)
    if not scores or not small(len(scores)):
        return scores  # (decode_object refuses an empty one, makes a big one its ZSet)
    return Packed(ZSetListpack, blob)


def _intset_packed(reader: Reader) -> Any:
    """TYPE_SET_INTSET, read as intset_members reads it, kept as its intset when small."""
    blob = read_packed(reader, check_intset)
    members = intset_members(blob)
    if not members or not small(len(members)):
        return members
    return Packed(SetIntset, blob)


def _quicklist_packed(reader: Reader) -> Any:
    """TYPE_LIST_QUICKLIST_2 as _read_quicklist reads it; a list of one listpack node, when
    small, kept as that listpack."""
    start = reader.pos
    if reader.count() != 1 or reader.count() != _QUICKLIST_PACKED:
        reader.pos = start
        return _read_quicklist(reader, True)
    blob = read_packed(reader, check_listpack)
    items = listpack_entries(blob)
    if not items or not small(len(items)):
        return QuickList(tuple(items))
    return Packed(ListListpack, blob)


_PACKED_DECODERS: dict[int, Callable[[Reader], Any]] = {
    TYPE_HASH_LISTPACK: _hash_listpack_packed,
    TYPE_ZSET_LISTPACK: _zset_listpack_packed,
    TYPE_SET_INTSET: _intset_packed,
    TYPE_LIST_QUICKLIST_2: _quicklist_packed,
}


def _zset_of_listpack(blob: bytes) -> ZSet:
    return ZSet.from_scores(_zset_listpack(blob))


def _zset_view_of_listpack(blob: bytes) -> ZSet:
    return scores_view(_zset_listpack(blob))


def _list_of_listpack(blob: bytes) -> QuickList:
    return QuickList(tuple(listpack_entries(blob)))


def _hash_of_listpack(blob: bytes) -> dict:
    return _hash_of(listpack_entries(blob))


register_unpacking(HashListpack, _hash_of_listpack)
register_unpacking(ZSetListpack, _zset_of_listpack, _zset_view_of_listpack)
register_unpacking(SetIntset, intset_members)
register_unpacking(ListListpack, _list_of_listpack)


# rdbLoadObject's reason for a compact encoding it refuses whole (its checks of the encoding
# and of duplicates are one validation there): the log line names the type.
_INTEGRITY_FAILURES = {
    TYPE_HASH_ZIPMAP: "Zipmap integrity check failed.",
    TYPE_HASH_ZIPLIST: "Hash ziplist integrity check failed.",
    TYPE_ZSET_ZIPLIST: "Zset ziplist integrity check failed.",
    TYPE_HASH_LISTPACK: "Hash listpack integrity check failed.",
    TYPE_ZSET_LISTPACK: "Zset listpack integrity check failed.",
}


# The types whose decoders give a sorted set's scores (decode_object makes the ZSet).
_ZSET_TYPES = frozenset((TYPE_ZSET, TYPE_ZSET_2, TYPE_ZSET_ZIPLIST, TYPE_ZSET_LISTPACK))


def decode_object(rdb_type: int, reader: Reader, packing: bool = False) -> Any:
    """The value of the given RDB type at the reader (rdbLoadObject); with `packing`, a small
    collection as a Packed (minired/data/packed.py), as a loaded file keeps it."""
    if rdb_type == TYPE_STRING:
        return reader.string()
    decoder = _PACKED_DECODERS.get(rdb_type) if packing else None
    if decoder is None:
        decoder = _DECODERS.get(rdb_type)
    if decoder is None:
        if rdb_type in (TYPE_MODULE, TYPE_MODULE_2):
            raise ModuleData("The RDB file contains module data I can't load: no matching module")
        raise BadData("Unknown RDB encoding type %d" % rdb_type)
    try:
        value = decoder(reader)
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise BadData(_INTEGRITY_FAILURES.get(rdb_type)
                      or f"Bad data format: {exc.__class__.__name__}") from None
    except BadData as exc:
        failure = _INTEGRITY_FAILURES.get(rdb_type)
        if (failure is None and rdb_type in (TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2)
                and exc.args and exc.args[0] == "Listpack integrity check failed"):
            failure = "Stream listpack integrity check failed."
        if failure is None or isinstance(exc, EmptyKey):
            raise
        raise BadData(failure) from None
    if type(value) is Packed:
        return value
    if type(value) is not Stream and not value:
        if rdb_type == TYPE_HASH_ZIPMAP:  # (zipmapValidateIntegrity refuses an empty one)
            raise BadData(_INTEGRITY_FAILURES[rdb_type])
        raise EmptyKey("Empty key")
    if rdb_type in _ZSET_TYPES:
        # A small one packed is its scores: its order (a sort of the members) is made when a
        # command first looks it up, not for every one loaded.
        return pack_scores(value) if packing else ZSet.from_scores(value)
    return pack(value) if packing else value


def decode_value(reader: Reader) -> Any:
    """A type byte, then the value (a DUMP payload's body)."""
    return decode_object(reader.byte(), reader)

