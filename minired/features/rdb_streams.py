"""Streams in the RDB format (RDB_TYPE_STREAM_LISTPACKS and _2): the macro nodes' listpacks
as streamAppendItem lays them out, the consumer groups, their PELs and consumers; read back
and checked as rdbLoadObject and streamValidateListpackIntegrity do.
"""
from __future__ import annotations

import struct

from minired.data.stream import Stream, StreamNode
from minired.data.stream_groups import Consumer, ConsumerGroup, PendingEntry, estimate_entries_read
from minired.features.rdb_containers import check_listpack, element_text, listpack, listpack_items
from minired.features.rdb_format import U64, BadData, Reader, encode_length, encode_string

_INT64_MAX = 2**63 - 1
_STREAM_DELETED, _STREAM_SAMEFIELDS = 1, 2


def _encode_ms(ms: int) -> bytes:
    return struct.pack("<q", ms)


def _encode_id(stream_id: tuple) -> bytes:
    return struct.pack(">QQ", *stream_id)


def _signed64(value: int) -> int:
    value &= U64
    return value - 2**64 if value > _INT64_MAX else value


def _node_listpack(node: StreamNode) -> bytes:
    """The listpack of one macro node, laid out as streamAppendItem builds it. The entries a
    deletion left in Redis's listpack are gone here; as many tombstones stand in for them, at the
    node's last ID, so the node's counts and its last ID load back as they were."""
    master_ms, master_seq = node.master_id
    fields = node.master_fields
    nfields = len(fields)
    items: list = [len(node.ids), node.deleted, nfields, *fields, 0]
    for (ms, seq), pairs in zip(node.ids, node.values):
        ms_diff, seq_diff = _signed64(ms - master_ms), _signed64(seq - master_seq)
        if len(pairs) == 2 * nfields and pairs[0::2] == fields:
            items += (_STREAM_SAMEFIELDS, ms_diff, seq_diff, *pairs[1::2], nfields + 3)
        else:
            n = len(pairs) // 2
            items += (0, ms_diff, seq_diff, n, *pairs, 2 * n + 4)
    if node.deleted:
        ms_diff = _signed64(node.last_id[0] - master_ms)
        seq_diff = _signed64(node.last_id[1] - master_seq)
        tombstone = (_STREAM_DELETED | _STREAM_SAMEFIELDS, ms_diff, seq_diff,
                     *([b""] * nfields), nfields + 3)
        for _ in range(node.deleted):
            items += tombstone
    return listpack(items)


def encode_stream(stream: Stream, compress_from: int) -> bytes:
    out = [encode_length(len(stream.nodes))]
    for node in stream.nodes:
        out.append(encode_string(_encode_id(node.master_id), compress_from))
        out.append(encode_string(_node_listpack(node), compress_from))
    out.append(encode_length(stream.length))
    for stream_id in (stream.last_id, stream.first_id, stream.max_deleted_id):
        out.append(encode_length(stream_id[0]))
        out.append(encode_length(stream_id[1]))
    out.append(encode_length(stream.entries_added))
    groups = sorted(stream.groups.items())  # Redis walks its radix tree: by name
    out.append(encode_length(len(groups)))
    for name, group in groups:
        out.append(encode_string(name, compress_from))
        out.append(encode_length(group.last_id[0]))
        out.append(encode_length(group.last_id[1]))
        out.append(encode_length(U64 if group.entries_read is None else group.entries_read))
        out.append(encode_length(len(group.pending)))
        for stream_id, entry in group.pending.items():
            out.append(_encode_id(stream_id) + _encode_ms(entry.delivery_time)
                       + encode_length(entry.delivery_count & U64))
        consumers = group.sorted_consumers()
        out.append(encode_length(len(consumers)))
        for consumer in consumers:
            out.append(encode_string(consumer.name, compress_from))
            out.append(_encode_ms(consumer.seen_time))
            out.append(encode_length(len(consumer.pending)))
            out.extend(_encode_id(stream_id) for stream_id in consumer.pending)
    return b"".join(out)


def _decode_node(master_id: tuple, blob: bytes, deep: bool = False) -> StreamNode:
    """A stream node's listpack; with deep, checked as streamValidateListpackIntegrity does: its
    entries one by one (not their count in the header), then that the entries (live and
    deleted) are as many as the master entry says, each with its lp-count right."""
    if deep:
        check_listpack(blob, count_in_header=False)
    items = listpack_items(blob)
    if not items:
        raise BadData("Empty listpack inside stream")
    if deep:
        _check_node_layout(items)
    try:
        it = iter(items)
        next(it)  # live count: the entries themselves say
        next(it)  # deleted count: likewise
        nfields = next(it)
        fields = [element_text(next(it)) for _ in range(nfields)]
        next(it)  # the master entry's terminator
        node = StreamNode(master_id, fields)
        ids = node.ids
        values = node.values
        master_ms, master_seq = master_id
        last_id = master_id
        for flags in it:
            stream_id = ((master_ms + next(it)) & U64, (master_seq + next(it)) & U64)
            if flags & _STREAM_SAMEFIELDS:
                pairs = []
                for field in fields:
                    pairs.append(field)
                    pairs.append(element_text(next(it)))
            else:
                pairs = [element_text(next(it)) for _ in range(2 * next(it))]
            next(it)  # lp-count
            if flags & _STREAM_DELETED:
                node.deleted += 1
            else:
                # Taken in the listpack's order, as Redis takes them, even out of order: a
                # stream's reads then walk them in that order as Redis's iterator does.
                # (not node.append: it sizes each entry, and the listpack's size says it all)
                ids.append(stream_id)
                values.append(pairs)
            last_id = stream_id
    except (StopIteration, TypeError):
        raise BadData("Stream listpack integrity check failed") from None
    node.last_id = last_id
    # Sizes as the listpack has them (tombstones included), so nodes fill up as in Redis: the
    # entries take what the listpack holds beyond the node's fixed part and counts.
    node._entries_bytes = len(blob) - node.byte_size()  # (byte_size counts no entry yet)
    return node


def _check_node_layout(items: list) -> None:
    try:
        live, deleted, master_fields = items[0], items[1], items[2]
        pos = 3 + master_fields
        if items[pos] != 0:  # the master entry's terminator
            raise BadData("Stream listpack integrity check failed")
        pos += 1
        for _ in range(live + deleted):
            flags = items[pos]
            fields, extra = master_fields, 3
            int(items[pos + 1]) + int(items[pos + 2])  # the ID's two parts are integers
            pos += 3
            if not flags & _STREAM_SAMEFIELDS:
                fields = items[pos]
                pos += 1 + fields
                extra += fields + 1
            pos += fields
            if items[pos] != fields + extra:  # lp-count
                raise BadData("Stream listpack integrity check failed")
            pos += 1
    except (IndexError, TypeError, ValueError):
        raise BadData("Stream listpack integrity check failed") from None
    if pos != len(items):
        raise BadData("Stream listpack integrity check failed")


def _node_key(node: StreamNode) -> tuple:
    return node.master_id


def decode_stream(reader: Reader, version_2: bool) -> Stream:
    stream = Stream()
    # Redis's rax orders the nodes by key whatever the file's order, refuses a key twice, and
    # keeps a node whose entries are all deleted (minired drops it).
    node_keys: set = set()
    for _ in range(reader.count()):
        key = reader.string()
        if len(key) != 16:
            raise BadData("Stream node key entry is not the size of a stream ID")
        if reader.deep:
            reader.sanitized += 1
        node = _decode_node(struct.unpack(">QQ", key), reader.string(), reader.deep)
        if node.ids or node.deleted:
            if node.master_id in node_keys:
                raise BadData("Listpack re-added with existing key")
            node_keys.add(node.master_id)
            if node.ids:
                stream.nodes.append(node)
    stream.nodes.sort(key=_node_key)
    # The length is taken as the file says, as Redis takes it, even where it is not the
    # number of entries (stream.py does not count on it to find them).
    stream.length = reader.unchecked_count()
    stream.last_id = (reader.unchecked_count(), reader.unchecked_count())
    if version_2:
        stream.first_id = (reader.unchecked_count(), reader.unchecked_count())
        stream.max_deleted_id = (reader.unchecked_count(), reader.unchecked_count())
        stream.entries_added = reader.unchecked_count()
    else:
        first = stream.first_entry()
        stream.first_id = first[0] if first is not None else (0, 0)
        stream.entries_added = stream.length
    if stream.length and not node_keys:
        raise BadData("Stream length inconsistent with rax entries")
    for _ in range(reader.count()):
        name = reader.string()
        last_id = (reader.count(), reader.count())
        if version_2:
            entries_read = reader.count()
            entries_read = None if entries_read > _INT64_MAX else entries_read
        else:
            entries_read = estimate_entries_read(stream, last_id)
        group = ConsumerGroup(last_id, entries_read)
        if name in stream.groups:
            raise BadData("Duplicated consumer group name")
        stream.groups[name] = group
        for _ in range(reader.count()):
            stream_id = reader.stream_id()
            entry = PendingEntry(None, reader.ms())
            count = reader.count()
            entry.delivery_count = count - 2**64 if count > _INT64_MAX else count
            if stream_id in group.pending:
                raise BadData("Duplicated global PEL entry loading stream consumer group")
            group.pending[stream_id] = entry
        for _ in range(reader.count()):
            consumer = Consumer(reader.string(), 0)
            consumer.seen_time = reader.ms()
            if consumer.name in group.consumers:
                raise BadData("Duplicate stream consumer detected")
            group.consumers[consumer.name] = consumer
            for _ in range(reader.count()):
                stream_id = reader.stream_id()
                entry = group.pending.get(stream_id)
                if entry is None or entry.consumer is not None:
                    raise BadData("Consumer entry not found in group global PEL")
                entry.consumer = consumer
                consumer.pending[stream_id] = entry
        for entry in group.pending.values():
            if entry.consumer is None:
                raise BadData("Stream CG PEL entry without consumer")
    return stream
