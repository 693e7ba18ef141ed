"""Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD, XSETID, XINFO STREAM.

The data structure lives in minired/data/stream.py; this module parses arguments the way t_stream.c
does (including its ID parser's leniencies) and shapes the replies. The consumer group
commands are in stream_groups.py.
"""
from __future__ import annotations

from typing import NamedTuple

import cython

from minired.data.keyspace import Database
from minired.data.stream import MAX_ID, MIN_ID, U64_MAX, Stream, StreamID, format_id
from minired.data.stream_groups import full_groups_info
from minired.engine.args import parse_int
from minired.engine.blocking import Block
from minired.engine.client import Client
from minired.engine.table import command, container_command, help_reply
from minired.features.notifications import STREAM, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY, OK

G = "stream"
_INT64_MAX = 2**63 - 1
# About 285 million years: keeps event-loop timers in range for absurd BLOCK values.
_LONGEST_WAIT_MS = 2**53
_STRTOULL_SPACE = b" \t\n\v\f\r"


# --- IDs ---------------------------------------------------------------------------------------

def _parse_u64(raw: bytes) -> int | None:
    """Redis's string2ull: a canonical integer, or failing that whatever strtoull accepts
    (leading spaces, a sign, leading zeros; a '-' wraps around modulo 2**64)."""
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is not None and b"%d" % value == raw and -(2**63) <= value <= _INT64_MAX:
        return value if value >= 0 else None
    text = raw.lstrip(_STRTOULL_SPACE)
    negative = text[:1] == b"-"
    if text[:1] in (b"-", b"+"):
        text = text[1:]
    if not text or not text.isdigit():
        return None
    value = int(text)
    if value > U64_MAX:
        return None
    return (-value) & U64_MAX if negative else value


def _invalid_id() -> RedisError:
    return RedisError(errors.STREAM_ID_INVALID)


def parse_id(raw: bytes, missing_seq: int = 0, strict: bool = False,
             allow_auto_seq: bool = False) -> tuple[StreamID, bool]:
    """streamParseID: `ms-seq`, `ms` (seq = missing_seq), `-`/`+` unless strict, and `ms-*` when
    allow_auto_seq (then the second value is False: the sequence is to be generated)."""
    if len(raw) > 127:
        raise _invalid_id()
    if raw == b"-" or raw == b"+":
        if strict:
            raise _invalid_id()
        return (MIN_ID if raw == b"-" else MAX_ID), True
    dash = raw.find(b"-")
    ms = _parse_u64(raw if dash < 0 else raw[:dash])
    if ms is None:
        raise _invalid_id()
    if dash < 0:
        return (ms, missing_seq), True
    seq_text = raw[dash + 1:]
    if allow_auto_seq and seq_text == b"*":
        return (ms, 0), False
    seq = _parse_u64(seq_text)
    if seq is None:
        raise _invalid_id()
    return (ms, seq), True


def parse_strict_id(raw: bytes, missing_seq: int = 0) -> StreamID:
    return parse_id(raw, missing_seq, strict=True)[0]


def _parse_interval(raw: bytes, missing_seq: int) -> tuple[StreamID, bool]:
    """An XRANGE bound: `(` before an ID makes it exclusive."""
    if len(raw) > 1 and raw[:1] == b"(":
        return parse_strict_id(raw[1:], missing_seq), True
    return parse_id(raw, missing_seq)[0], False


def parse_range_start(raw: bytes) -> StreamID:
    """The first ID of an inclusive range given as an XRANGE start (`-`, `ms`, `(id` ...)."""
    start, exclusive = _parse_interval(raw, 0)
    if exclusive:
        start = incr_id(start)
        if start is None:
            raise RedisError(errors.STREAM_BAD_START)
    return start


def parse_range_end(raw: bytes) -> StreamID:
    """The last ID of an inclusive range given as an XRANGE end (`+`, `ms`, `(id` ...)."""
    end, exclusive = _parse_interval(raw, U64_MAX)
    if exclusive:
        end = decr_id(end)
        if end is None:
            raise RedisError(errors.STREAM_BAD_END)
    return end


def incr_id(stream_id: StreamID) -> StreamID | None:
    ms, seq = stream_id
    if seq < U64_MAX:
        return (ms, seq + 1)
    if ms < U64_MAX:
        return (ms + 1, 0)
    return None


def decr_id(stream_id: StreamID) -> StreamID | None:
    ms, seq = stream_id
    if seq > 0:
        return (ms, seq - 1)
    if ms > 0:
        return (ms - 1, U64_MAX)
    return None


def entries_reply(entries) -> list:
    return [[format_id(stream_id), pairs] for stream_id, pairs in entries]


def get_stream(c, key: bytes) -> Stream | None:
    return c.db.get_typed(key, Stream)


# --- XADD / XTRIM ------------------------------------------------------------------------------

class TrimArgs:
    """The options XADD and XTRIM share (streamAddTrimArgs)."""

    __slots__ = ("maxlen", "minid", "approx", "limit", "id", "id_given", "seq_given",
                 "no_mkstream")

    def __init__(self) -> None:
        self.maxlen: int | None = None
        self.minid: StreamID | None = None
        self.approx = False
        self.limit = 0
        self.id: StreamID = MIN_ID
        self.id_given = False
        self.seq_given = True
        self.no_mkstream = False

    @property
    def trims(self) -> bool:
        return self.maxlen is not None or self.minid is not None

    def apply(self, stream: Stream) -> int:
        return stream.trim(self.maxlen, self.minid, self.approx, self.limit)


def _parse_add_or_trim(c, argv: list, xadd: bool) -> tuple[TrimArgs, int]:
    """Parse the options from argv[2]; for XADD also the ID. Returns the args and the index of
    the ID argument (for XADD the fields follow it)."""
    args = TrimArgs()
    limit_given = False
    argc = len(argv)
    i = 2
    while i < argc:
        more = argc - 1 - i
        option = argv[i]
        lowered = option.lower()
        if xadd and option == b"*":
            break
        if lowered in (b"maxlen", b"minid") and more:
            if args.trims:
                raise RedisError(errors.STREAM_MAXLEN_MINID_TOGETHER)
            args.approx = False
            following = argv[i + 1]
            if more >= 2 and following in (b"~", b"="):
                args.approx = following == b"~"
                i += 1
            if lowered == b"maxlen":
                maxlen = parse_int(argv[i + 1])
                if maxlen < 0:
                    raise RedisError(errors.STREAM_MAXLEN_NEGATIVE)
                args.maxlen = maxlen
            else:
                args.minid = parse_strict_id(argv[i + 1])
            i += 2
            continue
        if lowered == b"limit" and more:
            limit = parse_int(argv[i + 1])
            if limit < 0:
                raise RedisError(errors.STREAM_LIMIT_NEGATIVE)
            args.limit = limit
            limit_given = True
            i += 2
            continue
        if xadd and lowered == b"nomkstream":
            args.no_mkstream = True
            i += 1
            continue
        if xadd:
            args.id, args.seq_given = parse_id(option, strict=True, allow_auto_seq=True)
            args.id_given = True
            break
        raise RedisError(errors.SYNTAX)
    if args.limit and not args.trims:
        raise RedisError(errors.STREAM_LIMIT_WITHOUT_STRATEGY)
    if not xadd and not args.trims:
        raise RedisError(errors.STREAM_XTRIM_WITHOUT_STRATEGY)
    if c.flags == "M":
        # From the master or the AOF (mustObeyClient): the trim was rewritten to the exact one
        # it came to, and a LIMIT left in it (`MAXLEN = 2 LIMIT 1`) is ignored, not refused.
        args.limit = 0
    elif limit_given:
        if not args.approx:
            raise RedisError(errors.STREAM_LIMIT_WITHOUT_APPROX)
    elif args.approx:
        # Bounds the work of one approximate trim, as Redis does: at most 100 nodes, and
        # between 10,000 and 1,000,000 entries (stream-node-max-entries may be 0 or huge).
        args.limit = min(100 * _node_max_entries(c) or 10_000, 1_000_000)
    return args, i


def _node_max_entries(c) -> int:
    return c.config.number("stream-node-max-entries")


def _node_max_bytes(c) -> int:
    return c.config.number("stream-node-max-bytes")


@command("xadd", arity=-5, flags="write denyoom fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list, db=Database, args=TrimArgs, stream=Stream)
def xadd(c, argv):
    args, id_index = _parse_add_or_trim(c, argv, True)
    field_count = len(argv) - id_index - 1
    if field_count < 2 or field_count % 2:
        raise errors.wrong_arity("xadd")
    if args.id_given and args.seq_given and args.id == MIN_ID:
        raise RedisError(errors.STREAM_XADD_ID_ZERO)
    key = argv[1]
    stream = get_stream(c, key)
    created = stream is None
    if created:
        if args.no_mkstream:
            c.changes = 0
            return None
        stream = Stream()
    if stream.last_id == MAX_ID:
        raise RedisError(errors.STREAM_EXHAUSTED)
    if not args.id_given:
        new_id = stream.next_id(c.db.clock.ms())  # the server's clock (every database shares it)
    elif args.seq_given:
        new_id = args.id
    elif args.id[0] == stream.last_id[0]:
        if stream.last_id[1] == U64_MAX:
            raise RedisError(errors.STREAM_ELEMENTS_TOO_LARGE)
        new_id = (args.id[0], stream.last_id[1] + 1)
    else:
        new_id = args.id
    if new_id <= stream.last_id:
        raise RedisError(errors.STREAM_ID_TOO_SMALL)
    stream.append(new_id, argv[id_index + 1:], _node_max_bytes(c), _node_max_entries(c))
    db = c.db
    if created:
        db.set(key, stream)
    else:
        db.signal_modified(key)
        db.signal_ready(key, Stream)  # the one change in place that wakes readers
    if db.notifier is not None:
        notify(db, STREAM, b"xadd", key)
    if args.trims and args.apply(stream) and db.notifier is not None:
        notify(db, STREAM, b"xtrim", key)
    return format_id(new_id)


@command("xtrim", arity=-4, flags="write", keys=(1, 1, 1), group=G)
def xtrim(c, argv):
    args, _ = _parse_add_or_trim(c, argv, False)
    stream = get_stream(c, argv[1])
    if stream is None:
        c.changes = 0
        return 0
    removed = args.apply(stream)
    if removed:
        c.db.signal_modified(argv[1])
        if c.db.notifier is not None:
            notify(c.db, STREAM, b"xtrim", argv[1])
    c.changes = removed
    return removed


# --- reading -----------------------------------------------------------------------------------

@command("xlen", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def xlen(c, argv):
    stream = c.db.read_typed(argv[1], Stream)
    return 0 if stream is None else stream.length


def _range(c, argv, reverse: bool):
    start_raw, end_raw = (argv[3], argv[2]) if reverse else (argv[2], argv[3])
    start = parse_range_start(start_raw)
    end = parse_range_end(end_raw)
    count = -1
    i = 4
    while i < len(argv):
        if argv[i].lower() == b"count" and i + 1 < len(argv):
            count = max(parse_int(argv[i + 1]), 0)
            i += 2
        else:
            raise RedisError(errors.SYNTAX)
    stream = c.db.read_typed(argv[1], Stream)
    if stream is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return entries_reply(stream.range(start, end, max(count, 0), reverse))


@command("xrange", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def xrange(c, argv):
    return _range(c, argv, reverse=False)


@command("xrevrange", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def xrevrange(c, argv):
    return _range(c, argv, reverse=True)


@command("xdel", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def xdel(c, argv):
    stream = get_stream(c, argv[1])
    if stream is None:
        c.changes = 0
        return 0
    # Every ID is checked before any is deleted, so a bad one changes nothing.
    ids = [parse_strict_id(raw) for raw in argv[2:]]
    deleted = sum(1 for stream_id in ids if stream.delete(stream_id))
    if deleted:
        c.db.signal_modified(argv[1])
        if c.db.notifier is not None:
            notify(c.db, STREAM, b"xdel", argv[1])
    c.changes = deleted
    return deleted


# --- XREAD -------------------------------------------------------------------------------------

def streams_key_indexes(argv: list) -> list[int]:
    """Key positions of XREAD / XREADGROUP: the first half of what follows STREAMS."""
    i = 1
    streams_at = -1
    while i < len(argv):
        arg = argv[i].lower()
        if arg in (b"block", b"count"):
            i += 2
        elif arg == b"group":
            i += 3
        elif arg == b"noack":
            i += 1
        elif arg == b"streams":
            streams_at = i
            break
        else:
            break
    remaining = len(argv) - streams_at - 1
    if streams_at < 0 or remaining == 0 or remaining % 2:
        return []
    return list(range(streams_at + 1, streams_at + 1 + remaining // 2))


def parse_block_timeout(raw: bytes) -> int:
    """BLOCK <milliseconds> as getTimeoutFromObjectOrReply reads it; 0 = forever. Redis 7.0
    accepts any int64 here, and so a huge timeout just waits (practically) forever."""
    timeout = parse_int(raw, errors.TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise RedisError(errors.TIMEOUT_NEGATIVE)
    return min(timeout, _LONGEST_WAIT_MS)


class RepeatedKeyMap(dict):
    """A map reply naming a key more than once, as Redis's RESP3 XREAD reply does for a stream
    given twice. Reply encoders and the Lua bridge read a map through len() and items() only."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple]) -> None:
        super().__init__()
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def items(self):
        return iter(self.pairs)


def read_reply(c, results: list[tuple[bytes, list]]):
    """XREAD's reply: one [key, entries] per stream under RESP2, a map under RESP3."""
    if c.protocol == 3:
        reply = {key: entries for key, entries in results}
        return reply if len(reply) == len(results) else RepeatedKeyMap(results)
    return [[key, entries] for key, entries in results]


class ReadOptions(NamedTuple):
    timeout: int
    count: int
    streams_at: int
    group: bytes | None
    consumer: bytes | None
    noack: bool


def parse_read_options(c, argv: list, with_group: bool) -> ReadOptions:
    """XREAD and XREADGROUP options, read as Redis's one xreadCommand reads both: the first
    error met, left to right, is the one reported."""
    timeout, count, streams_at = -1, 0, 0
    group = consumer = None
    noack = False
    argc = len(argv)
    i = 1
    while i < argc:
        more = argc - i - 1
        option = argv[i].lower()
        if option == b"block" and more:
            if c.in_script:
                raise RedisError(errors.STREAM_BLOCK_IN_SCRIPT.format(
                    argv[0].decode(errors="replace")))
            timeout = parse_block_timeout(argv[i + 1])
            i += 2
        elif option == b"count" and more:
            count = max(parse_int(argv[i + 1]), 0)
            i += 2
        elif option == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) % 2:
                raise RedisError(errors.STREAM_UNBALANCED)
            break
        elif option == b"group" and more >= 2:
            if not with_group:
                raise RedisError(errors.STREAM_GROUP_IN_XREAD)
            group, consumer = argv[i + 1], argv[i + 2]
            i += 3
        elif option == b"noack":
            if not with_group:
                raise RedisError(errors.STREAM_NOACK_IN_XREAD)
            noack = True
            i += 1
        else:
            raise RedisError(errors.SYNTAX)
    if not streams_at:
        raise RedisError(errors.SYNTAX)
    return ReadOptions(timeout, count, streams_at, group, consumer, noack)


@command("xread", arity=-4, flags="readonly blocking", key_finder=streams_key_indexes, group=G)
def xread(c, argv):
    timeout, count, streams_at = parse_read_options(c, argv, with_group=False)[:3]
    argc = len(argv)
    half = (argc - streams_at) // 2
    keys = argv[streams_at:streams_at + half]
    after: list[StreamID] = []
    for key, raw in zip(keys, argv[streams_at + half:]):
        stream = c.db.read_typed(key, Stream)
        if raw == b"$":
            after.append(stream.last_id if stream is not None else MIN_ID)
        elif raw == b">":
            raise RedisError(errors.STREAM_GT_ID_IN_XREAD)
        else:
            after.append(parse_strict_id(raw))

    def serve(client):
        results = []
        for key, since in zip(keys, after):
            stream = client.db.read(key)
            if type(stream) is Stream and stream.length and stream.last_live_id() > since:
                results.append((key, entries_reply(stream.range(incr_id(since), MAX_ID, count))))
        return read_reply(client, results) if results else None

    def serve_woken(client, key: bytes):
        # Redis serves a woken reader from the one stream that was written, comparing with
        # its last generated ID.
        since = after[keys.index(key)]
        stream = client.db.get(key)
        if type(stream) is not Stream or stream.last_id <= since:
            return None
        entries = entries_reply(stream.range(incr_id(since), MAX_ID, count))
        return read_reply(client, [(key, entries)])

    reply = serve(c)
    if reply is not None:
        return reply
    if timeout < 0 or not c.can_block:
        return NULL_ARRAY
    return Block(list(keys), timeout, serve_woken, NULL_ARRAY, value_type=Stream)


# --- XSETID ------------------------------------------------------------------------------------

@command("xsetid", arity=-3, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def xsetid(c, argv):
    new_last = parse_strict_id(argv[2])
    entries_added = -1
    max_deleted: StreamID | None = None
    i = 3
    while i < len(argv):
        option = argv[i].lower()
        if option == b"entriesadded" and i + 1 < len(argv):
            entries_added = parse_int(argv[i + 1])
            if entries_added < 0:
                raise RedisError(errors.STREAM_ENTRIES_ADDED_NEGATIVE)
            i += 2
        elif option == b"maxdeletedid" and i + 1 < len(argv):
            max_deleted = parse_strict_id(argv[i + 1])
            if new_last < max_deleted:
                raise RedisError(errors.STREAM_MAXDELETED_TOO_BIG)
            i += 2
        else:
            raise RedisError(errors.SYNTAX)
    stream = get_stream(c, argv[1])
    if stream is None:
        raise RedisError(errors.NO_SUCH_KEY)
    if stream.length:
        if new_last < stream.last_live_id():
            raise RedisError(errors.STREAM_SETID_TOO_SMALL)
        if entries_added != -1 and stream.length > entries_added:
            raise RedisError(errors.STREAM_ENTRIES_ADDED_TOO_SMALL)
    stream.last_id = new_last
    if entries_added != -1:
        stream.entries_added = entries_added
    if max_deleted is not None and max_deleted != MIN_ID:
        stream.max_deleted_id = max_deleted
    # Redis 7.0's XSETID does not signalModifiedKey: a WATCH of the key holds, and tracking
    # clients are not told.
    if c.db.notifier is not None:
        notify(c.db, STREAM, b"xsetid", argv[1])
    return OK


# --- XINFO -------------------------------------------------------------------------------------

# XINFO STREAM FULL shows this many entries unless told otherwise, so it cannot stall the server.
_FULL_DEFAULT_COUNT = 10

container_command("xinfo", G, summary="A container for stream introspection commands.")


def _stream_header(stream: Stream) -> dict:
    """The fields XINFO STREAM shows with and without FULL."""
    return {
        b"length": stream.length,
        b"radix-tree-keys": len(stream.nodes),
        b"radix-tree-nodes": _radix_tree_nodes(stream),
        b"last-generated-id": format_id(stream.last_id),
        b"max-deleted-entry-id": format_id(stream.max_deleted_id),
        b"entries-added": stream.entries_added,
        b"recorded-first-entry-id": format_id(stream.first_id),
    }


def stream_info(stream: Stream) -> dict:
    first = stream.first_entry()
    last = stream.last_entry()
    info = _stream_header(stream)
    info[b"groups"] = len(stream.groups)
    info[b"first-entry"] = entries_reply([first])[0] if first is not None else None
    info[b"last-entry"] = entries_reply([last])[0] if last is not None else None
    return info


def stream_full_info(stream: Stream, count: int) -> dict:
    """XINFO STREAM FULL: at most `count` entries and PEL entries of each kind (0: all)."""
    info = _stream_header(stream)
    info[b"entries"] = entries_reply(stream.range(MIN_ID, MAX_ID, count))
    info[b"groups"] = full_groups_info(stream, count)
    return info


def _radix_tree_nodes(stream: Stream) -> int:
    """The node count of the radix tree Redis would hold the macro nodes in.

    Its keys are the nodes' master IDs as 16 big-endian bytes. Redis keeps that tree
    compressed: a run of bytes the keys below share is one node, a byte where they diverge is
    one node with a child per distinct byte, and every key ends in a leaf.
    """
    keys = sorted(ms.to_bytes(8, "big") + seq.to_bytes(8, "big")
                  for ms, seq in (node.master_id for node in stream.nodes))
    return _rax_nodes(keys, 0) if keys else 1


def _rax_nodes(keys: list[bytes], depth: int) -> int:
    if depth == 16:
        return 1
    first, last = keys[0], keys[-1]
    shared = depth
    while shared < 16 and first[shared] == last[shared]:
        shared += 1
    if shared > depth:
        return 1 + _rax_nodes(keys, shared)
    total = 1
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i][depth] != keys[start][depth]:
            total += _rax_nodes(keys[start:i], depth + 1)
            start = i
    return total


@command("stream", arity=-3, flags="readonly", keys=(2, 2, 1), parent="xinfo", group=G)
def xinfo_stream(c, argv):
    stream = c.db.read_typed(argv[2], Stream)
    if stream is None:
        raise RedisError(errors.NO_SUCH_KEY)
    argc = len(argv)
    if argc == 3:
        return stream_info(stream)
    if (argv[3].lower() != b"full" or argc not in (4, 6)
            or (argc == 6 and argv[4].lower() != b"count")):
        raise errors.unknown_subcommand_or_arity(argv[1], "xinfo")
    count = _FULL_DEFAULT_COUNT
    if argc == 6:
        count = parse_int(argv[5])
        if count < 0:
            count = _FULL_DEFAULT_COUNT
    return stream_full_info(stream, count)


_XINFO_HELP = (
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",)


@command("help", arity=2, flags="loading stale", parent="xinfo", group=G)
def xinfo_help(c, argv):
    return help_reply("XINFO", *_XINFO_HELP)
