"""An AOF base written as commands, as Redis 7.0 writes one with `aof-use-rdb-preamble no`.

rewriteAppendOnlyFileRio: a `#TS:` line first when aof-timestamp-enabled is on, FUNCTION LOAD
for each library, then per database a SELECT and, per key, the commands that rebuild it (SET;
RPUSH, SADD, ZADD, HMSET by 64 items; a stream's XADDs, XSETID, its groups and their pending
entries as XCLAIM ... FORCE) followed by PEXPIREAT for a key with a TTL. Redis and minired
replay such a file to the same data, and redis-check-aof accepts it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from minired.data.packed import live
from minired.data.quicklist import QuickList
from minired.data.stream import Stream, format_id
from minired.data.zset import ZSet
from minired.features.aof_records import timestamp_annotation
from minired.protocol.resp import encode_command

if TYPE_CHECKING:
    from minired.data.keyspace import Keyspace

ITEMS_PER_COMMAND = 64  # AOF_REWRITE_ITEMS_PER_CMD
_CHUNK = 64 * 1024
_INVALID_ENTRIES_READ = b"-1"  # SCG_INVALID_ENTRIES_READ: a group whose lag is unknown


def command_chunks(keyspace: "Keyspace", functions: list[bytes],
                   timestamp: int | None,
                   on_key: Callable[[], object] | None = None) -> Iterator[bytes]:
    """The dataset as commands, in pieces of ~64 KB. Values are read as they are: the caller
    holds the keyspace still (a forked child, or the event loop itself). on_key is called
    after each key (the save delay, a child's progress: child_info.py)."""
    out: list[bytes] = []
    size = 0
    if timestamp is not None:
        out.append(timestamp_annotation(timestamp))
    for code in functions:
        out.append(encode_command([b"FUNCTION", b"LOAD", code]))
    for db in keyspace.dbs:
        if not db.data:
            continue
        out.append(encode_command([b"SELECT", b"%d" % db.index]))
        expires = db.expires
        for key, value in db.data.items():
            for argv in _commands_of(key, value):
                record = encode_command(argv)
                out.append(record)
                size += len(record)
            deadline = expires.get(key) if expires else None
            if deadline is not None:
                out.append(encode_command([b"PEXPIREAT", key, b"%d" % deadline]))
            if on_key is not None:
                on_key()
            if size >= _CHUNK:
                yield b"".join(out)
                out.clear()
                size = 0
    yield b"".join(out)


def _batches(command: bytes, key: bytes, items: list[bytes], width: int) -> Iterator[list]:
    """`command key item...` with at most ITEMS_PER_COMMAND items (of `width` arguments) each."""
    step = ITEMS_PER_COMMAND * width
    for start in range(0, len(items), step):
        yield [command, key, *items[start:start + step]]


def _score(score: float) -> bytes:
    # rioWriteBulkDouble: "%.17g" (inf and -inf as C prints them, which ZADD reads back)
    return b"%.17g" % score


def _commands_of(key: bytes, value: object) -> Iterator[list]:
    value = live(value)
    kind = type(value)
    if kind is bytes:
        yield [b"SET", key, value]
    elif kind is QuickList:
        yield from _batches(b"RPUSH", key, list(value), 1)
    elif kind is set:
        yield from _batches(b"SADD", key, list(value), 1)
    elif kind is dict:
        yield from _batches(b"HMSET", key, [item for pair in value.items() for item in pair], 2)
    elif kind is ZSet:
        items = []
        for score, member in value.order:
            items.append(_score(score))
            items.append(member)
        yield from _batches(b"ZADD", key, items, 2)
    elif kind is Stream:
        yield from _stream_commands(key, value)
    else:
        raise TypeError(f"no AOF rewrite for {kind.__name__}")


def _stream_commands(key: bytes, stream: Stream) -> Iterator[list]:
    """rewriteStreamObject: the entries, the IDs (XSETID), the groups, their consumers."""
    if stream.length:
        for stream_id, pairs in stream.range((0, 0), (2**64 - 1, 2**64 - 1)):
            yield [b"XADD", key, format_id(stream_id), *pairs]
    else:  # an empty stream: XADD MAXLEN 0 makes the key
        yield [b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]
    yield [b"XSETID", key, format_id(stream.last_id), b"ENTRIESADDED",
           b"%d" % stream.entries_added, b"MAXDELETEDID", format_id(stream.max_deleted_id)]
    for name, group in sorted(stream.groups.items()):  # (Redis walks its radix tree: by name)
        entries_read = (_INVALID_ENTRIES_READ if group.entries_read is None
                        else b"%d" % group.entries_read)
        yield [b"XGROUP", b"CREATE", key, name, format_id(group.last_id), b"ENTRIESREAD",
               entries_read]
        for consumer in group.sorted_consumers():
            if not consumer.pending:
                yield [b"XGROUP", b"CREATECONSUMER", key, name, consumer.name]
                continue
            for stream_id, entry in consumer.pending.items():
                yield [b"XCLAIM", key, name, consumer.name, b"0", format_id(stream_id),
                       b"TIME", b"%d" % entry.delivery_time, b"RETRYCOUNT",
                       b"%d" % entry.delivery_count, b"JUSTID", b"FORCE"]
