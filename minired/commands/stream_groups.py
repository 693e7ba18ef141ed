"""Stream consumer groups: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS
and XINFO CONSUMERS, with Redis 7.0's replies, errors and order of checks.

The group state lives in minired/data/stream_groups.py. As in Redis, these commands change a stream's
groups without counting as a change of the key for WATCH (only XGROUP CREATE MKSTREAM, which
creates the key, does); XGROUP DESTROY only tells blocked XREADGROUP clients to look again, so
that they get their NOGROUP error.
"""
from __future__ import annotations

from itertools import islice

from minired.commands.streams import (
    get_stream,
    incr_id,
    parse_id,
    parse_range_end,
    parse_range_start,
    parse_read_options,
    parse_strict_id,
    read_reply,
    streams_key_indexes,
)
from minired.data.stream import MAX_ID, MIN_ID, Stream, StreamID, format_id
from minired.data.stream_groups import Consumer, ConsumerGroup, PendingEntry, consumers_info, groups_info
from minired.engine.args import parse_int
from minired.engine.blocking import Block
from minired.engine.table import command, container_command, help_reply
from minired.features.notifications import STREAM, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY, OK

G = "stream"
_INT64_MAX = 2**63 - 1
# A blocked XREADGROUP without COUNT is served at most this many entries (Redis's
# XREAD_BLOCKED_DEFAULT_COUNT), so a low ID cannot make one wake-up send a whole stream.
_BLOCKED_DEFAULT_COUNT = 1000
# XAUTOCLAIM looks at up to COUNT * 10 pending entries, and refuses counts whose scratch array
# of 16-byte IDs cannot even be sized.
_AUTOCLAIM_ATTEMPTS_FACTOR = 10
_AUTOCLAIM_MAX_COUNT = _INT64_MAX // 16
# Redis allocates that array up front and reports failure when the allocator refuses; on a
# 64-bit Linux host that happens past ~2**45 bytes (a share of the 47-bit address space).
_AUTOCLAIM_ALLOCATION_LIMIT = 2**45


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _stream_and_group(c, key: bytes, group_name: bytes) -> tuple[Stream, ConsumerGroup]:
    """The stream and group XPENDING, XCLAIM and XAUTOCLAIM work on, or their NOGROUP error."""
    return _group_of(c.db.read(key), key, group_name)


def _group_of(stream, key: bytes, group_name: bytes) -> tuple[Stream, ConsumerGroup]:
    """_stream_and_group for a value already looked up: WRONGTYPE, or NOGROUP."""
    if stream is not None and type(stream) is not Stream:
        raise RedisError(errors.WRONGTYPE)
    group = stream.groups.get(group_name) if stream is not None else None
    if group is None:
        raise RedisError(errors.STREAM_NOGROUP.format(_text(key), _text(group_name)))
    return stream, group


def _consumer(db, key: bytes, group: ConsumerGroup, name: bytes, now_ms: int) -> Consumer:
    """The consumer a read or claim acts for; one created here is an event, as in Redis."""
    if db.notifier is not None and name not in group.consumers:
        consumer = group.consumer(name, now_ms)
        notify(db, STREAM, b"xgroup-createconsumer", key)
        return consumer
    return group.consumer(name, now_ms)


def _entry(stream_id: StreamID, fields: list) -> list:
    return [format_id(stream_id), fields]


# --- XGROUP --------------------------------------------------------------------------------------

container_command("xgroup", G, summary="A container for consumer groups commands.")


def _parse_entries_read(raw: bytes) -> int | None:
    """ENTRIESREAD: a count, or -1 for "unknown" (None)."""
    entries_read = parse_int(raw)
    if entries_read == -1:
        return None
    if entries_read < 0:
        raise RedisError(errors.STREAM_ENTRIES_READ_NEGATIVE)
    return entries_read


def _xgroup_target(c, argv, mkstream: bool = False) -> tuple[Stream | None, ConsumerGroup | None]:
    """The key and group of an XGROUP subcommand; the key must exist unless MKSTREAM."""
    stream = get_stream(c, argv[2])
    if stream is None:
        if not mkstream:
            raise RedisError(errors.STREAM_XGROUP_NEEDS_KEY)
        return None, None
    return stream, stream.groups.get(argv[3])


def _xgroup_existing(c, argv) -> tuple[Stream, ConsumerGroup]:
    stream, group = _xgroup_target(c, argv)
    if group is None:
        raise RedisError(errors.STREAM_NOGROUP_FOR_KEY.format(_text(argv[3]), _text(argv[2])))
    return stream, group


@command("create", arity=-5, flags="write denyoom", keys=(2, 2, 1), parent="xgroup", group=G)
def xgroup_create(c, argv):
    mkstream = False
    entries_read = None
    argc = len(argv)
    i = 5
    while i < argc:
        option = argv[i].lower()
        if option == b"mkstream":
            mkstream = True
            i += 1
        elif option == b"entriesread" and i + 1 < argc:
            entries_read = _parse_entries_read(argv[i + 1])
            i += 2
        else:
            raise errors.unknown_subcommand_or_arity(argv[1], "xgroup")
    stream, group = _xgroup_target(c, argv, mkstream)
    if argc > 8:
        raise errors.unknown_subcommand_or_arity(argv[1], "xgroup")
    if argv[4] == b"$":
        last_id = stream.last_id if stream is not None else MIN_ID
    else:
        last_id = parse_strict_id(argv[4])
    if stream is None:
        stream = Stream()
        c.db.set(argv[2], stream)
    elif group is not None:
        raise RedisError(errors.STREAM_BUSYGROUP)
    stream.groups[argv[3]] = ConsumerGroup(last_id, entries_read)
    if c.db.notifier is not None:
        notify(c.db, STREAM, b"xgroup-create", argv[2])
    return OK


@command("setid", arity=-5, flags="write", keys=(2, 2, 1), parent="xgroup", group=G)
def xgroup_setid(c, argv):
    # The arguments are checked before the key and the group are looked up, as in Redis.
    argc = len(argv)
    entries_read = None
    if argc >= 7 and argv[5].lower() == b"entriesread":
        entries_read = _parse_entries_read(argv[6])  # read before the count is checked
        if argc != 7:
            raise errors.unknown_subcommand_or_arity(argv[1], "xgroup")
    elif argc != 5:
        raise errors.unknown_subcommand_or_arity(argv[1], "xgroup")
    stream, group = _xgroup_existing(c, argv)
    # Unlike CREATE, SETID takes any ID, "-" and "+" included.
    last_id = stream.last_id if argv[4] == b"$" else parse_id(argv[4])[0]
    group.last_id = last_id
    group.entries_read = entries_read
    if c.db.notifier is not None:
        notify(c.db, STREAM, b"xgroup-setid", argv[2])
    return OK


@command("destroy", arity=4, flags="write", keys=(2, 2, 1), parent="xgroup", group=G)
def xgroup_destroy(c, argv):
    stream, group = _xgroup_target(c, argv)
    if group is None:
        c.changes = 0
        return 0
    del stream.groups[argv[3]]
    # Redis signals the key as ready (not as modified: WATCH holds) so that XREADGROUP clients
    # blocked on this group are answered with NOGROUP.
    db = c.db
    db.signal_ready(argv[2], Stream)
    if db.notifier is not None:
        notify(db, STREAM, b"xgroup-destroy", argv[2])
    return 1


@command("createconsumer", arity=5, flags="write denyoom", keys=(2, 2, 1), parent="xgroup",
         group=G)
def xgroup_createconsumer(c, argv):
    _, group = _xgroup_existing(c, argv)
    created = group.create_consumer(argv[4], c.server.clock.ms())
    if created and c.db.notifier is not None:
        notify(c.db, STREAM, b"xgroup-createconsumer", argv[2])
    c.changes = int(created)
    return int(created)


@command("delconsumer", arity=5, flags="write", keys=(2, 2, 1), parent="xgroup", group=G)
def xgroup_delconsumer(c, argv):
    _, group = _xgroup_existing(c, argv)
    existed = argv[4] in group.consumers
    pending = group.delete_consumer(argv[4])
    if existed and c.db.notifier is not None:
        notify(c.db, STREAM, b"xgroup-delconsumer", argv[2])
    c.changes = int(existed)
    return pending


_XGROUP_HELP = (
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",)


@command("help", arity=2, flags="loading stale", parent="xgroup", group=G)
def xgroup_help(c, argv):
    return help_reply("XGROUP", *_XGROUP_HELP)


# --- XREADGROUP ----------------------------------------------------------------------------------

def _read_new(stream: Stream, group: ConsumerGroup, consumer: Consumer, count: int,
              noack: bool, now: int) -> list:
    """Entries after the group's last delivered ID: the group moves past them and, unless
    NOACK, each becomes pending for `consumer`."""
    entries = []
    for stream_id, fields in stream.range(incr_id(group.last_id), MAX_ID, count):
        group.advance(stream, stream_id)
        if not noack:
            group.deliver(stream_id, consumer, now)
        entries.append(_entry(stream_id, fields))
    return entries


def _read_history(stream: Stream, consumer: Consumer, start: StreamID, count: int,
                  now: int) -> list:
    """The consumer's own pending entries from `start`, delivered once more. An entry deleted
    from the stream since shows as its ID with a null in place of the fields."""
    entries = []
    pending = consumer.pending
    for stream_id in islice(pending.irange(minimum=start), count or None):
        fields = stream.get(stream_id)
        if fields is None:
            entries.append([format_id(stream_id), NULL_ARRAY])
            continue
        entry = pending[stream_id]
        entry.delivery_time = now
        entry.count_delivery()
        entries.append(_entry(stream_id, fields))
    return entries


def _has_new_entries(stream: Stream, group: ConsumerGroup) -> bool:
    return bool(stream.length) and stream.last_live_id() > group.last_id


@command("xreadgroup", arity=-7, flags="write blocking", key_finder=streams_key_indexes, group=G)
def xreadgroup(c, argv):
    timeout, count, streams_at, group_name, consumer_name, noack = parse_read_options(
        c, argv, with_group=True)
    argc = len(argv)
    if group_name is None:
        raise RedisError(errors.STREAM_MISSING_GROUP)
    half = (argc - streams_at) // 2
    keys = argv[streams_at:streams_at + half]
    # Per stream: where to read from; MAX_ID stands for ">" (new entries), as in Redis, where
    # an explicit maximal ID therefore reads new entries too.
    targets: list[tuple[bytes, Stream, ConsumerGroup, StreamID]] = []
    for key, raw in zip(keys, argv[streams_at + half:]):
        stream = c.db.read_typed(key, Stream)
        group = stream.groups.get(group_name) if stream is not None else None
        if group is None:
            raise RedisError(errors.STREAM_NOGROUP_XREADGROUP.format(_text(key),
                                                                     _text(group_name)))
        if raw == b"$":
            raise RedisError(errors.STREAM_DOLLAR_IN_XREADGROUP)
        after = MAX_ID if raw == b">" else parse_strict_id(raw)
        targets.append((key, stream, group, after))

    now = c.server.clock.ms()
    results = []
    created = 0
    for key, stream, group, after in targets:
        if after != MAX_ID:
            created += consumer_name not in group.consumers
            consumer = _consumer(c.db, key, group, consumer_name, now)
            results.append((key, _read_history(stream, consumer, incr_id(after), count, now)))
        elif _has_new_entries(stream, group):
            created += consumer_name not in group.consumers
            consumer = _consumer(c.db, key, group, consumer_name, now)
            results.append((key, _read_new(stream, group, consumer, count, noack, now)))
    # Redis counts one change per stream served and one per consumer created.
    c.changes = created + len(results)
    if results:
        return read_reply(c, results)
    if timeout < 0 or not c.can_block:
        return NULL_ARRAY
    c.changes = -1  # (blocked: counted as Redis counts a blocked command, by dispatch)

    def serve_woken(client, key: bytes):
        stream = client.db.get(key)
        if type(stream) is not Stream:
            raise RedisError(errors.STREAM_BLOCKED_KEY_GONE)
        group = stream.groups.get(group_name)
        if group is None:
            raise RedisError(errors.STREAM_BLOCKED_GROUP_GONE)
        # Woken by an XADD (no other change to a stream wakes readers, Database.signal_ready),
        # Redis serves the reader if the stream's last ID is past the group's, even when the
        # entry is gone again (XADD ... MAXLEN 0, or XDEL in the same transaction): with an
        # empty list of entries.
        if stream.last_id <= group.last_id:
            return None
        served_at = client.server.clock.ms()
        consumer = _consumer(client.db, key, group, consumer_name, served_at)
        entries = _read_new(stream, group, consumer, count or _BLOCKED_DEFAULT_COUNT, noack,
                            served_at)
        return read_reply(client, [(key, entries)])

    return Block(list(keys), timeout, serve_woken, NULL_ARRAY, retry_when_deleted=True,
                 value_type=Stream)


# --- XACK / XPENDING -----------------------------------------------------------------------------

@command("xack", arity=-4, flags="write fast", keys=(1, 1, 1), group=G)
def xack(c, argv):
    stream = c.db.read_typed(argv[1], Stream)
    group = stream.groups.get(argv[2]) if stream is not None else None
    if group is None:
        c.changes = 0
        return 0
    # All IDs are checked first: an error must mean nothing was acknowledged.
    ids = [parse_strict_id(raw) for raw in argv[3:]]
    acknowledged = sum(1 for stream_id in ids if group.remove(stream_id))
    c.changes = acknowledged
    return acknowledged


@command("xpending", arity=-3, flags="readonly", keys=(1, 1, 1), group=G)
def xpending(c, argv):
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise RedisError(errors.SYNTAX)
    if argc == 3:
        _, group = _stream_and_group(c, argv[1], argv[2])
        return _pending_summary(group)
    min_idle = 0
    at = 3
    if argv[3].lower() == b"idle":
        min_idle = parse_int(argv[4])
        if argc < 8:
            raise RedisError(errors.SYNTAX)
        at = 5
    count = max(parse_int(argv[at + 2]), 0)
    start = parse_range_start(argv[at])
    end = parse_range_end(argv[at + 1])
    consumer_name = argv[at + 3] if at + 3 < argc else None
    _, group = _stream_and_group(c, argv[1], argv[2])
    pending = group.pending
    if consumer_name is not None:
        consumer = group.consumers.get(consumer_name)
        if consumer is None:
            return []
        pending = consumer.pending
    now = c.server.clock.ms()
    reply = []
    if not count:
        return reply
    for stream_id in pending.irange(start, end):
        entry = pending[stream_id]
        idle = now - entry.delivery_time
        if min_idle and idle < min_idle:
            continue
        reply.append([format_id(stream_id), entry.consumer.name, max(idle, 0),
                      entry.delivery_count])
        if len(reply) == count:
            break
    return reply


def _pending_summary(group: ConsumerGroup) -> list:
    pending = group.pending
    if not pending:
        return [0, None, None, NULL_ARRAY]
    owners = [[consumer.name, b"%d" % len(consumer.pending)]
              for consumer in group.sorted_consumers() if consumer.pending]
    return [len(pending), format_id(pending.peekitem(0)[0]), format_id(pending.peekitem(-1)[0]),
            owners]


# --- XCLAIM / XAUTOCLAIM -------------------------------------------------------------------------

def _try_parse_id(raw: bytes) -> StreamID | None:
    try:
        return parse_strict_id(raw)
    except RedisError:
        return None


class _Claims:
    """What XCLAIM and XAUTOCLAIM share: pending entries idle long enough are given to one
    consumer, created (an event, as in Redis) at the first entry actually claimed; `replies`
    holds each claimed entry as the reply shows it (its ID alone with JUSTID)."""

    __slots__ = ("c", "key", "group", "consumer_name", "consumer", "now", "min_idle", "justid",
                 "replies", "changes")

    def __init__(self, c, key: bytes, group: ConsumerGroup, consumer_name: bytes, now: int,
                 min_idle: int, justid: bool) -> None:
        self.c = c
        self.key = key
        self.group = group
        self.consumer_name = consumer_name
        self.consumer = None
        self.now = now
        self.min_idle = min_idle
        self.justid = justid
        self.replies = []
        # Redis's count: one per entry claimed or dropped from the PEL (deleted from the
        # stream), and one for the consumer if it is created.
        self.changes = 0

    def idle_enough(self, entry: PendingEntry) -> bool:
        return not self.min_idle or self.now - entry.delivery_time >= self.min_idle

    def claim(self, stream_id: StreamID, entry: PendingEntry, fields: list, delivery_time: int,
              retry_count: int = -1) -> None:
        """`entry` is now the consumer's, delivered at delivery_time; its delivery count is
        retry_count if given, else one more unless JUSTID (Redis's XCLAIM does not count those)."""
        if self.consumer is None:
            self.changes += self.consumer_name not in self.group.consumers
            self.consumer = _consumer(self.c.db, self.key, self.group, self.consumer_name, self.now)
        self.changes += 1
        self.group.claim(stream_id, entry, self.consumer)
        entry.delivery_time = delivery_time
        if retry_count >= 0:
            entry.delivery_count = retry_count
        elif not self.justid:
            entry.count_delivery()
        self.replies.append(format_id(stream_id) if self.justid else _entry(stream_id, fields))


@command("xclaim", arity=-6, flags="write fast", keys=(1, 1, 1), group=G)
def xclaim(c, argv):
    stream, group = _stream_and_group(c, argv[1], argv[2])
    min_idle = max(parse_int(argv[4], errors.STREAM_XCLAIM_MIN_IDLE), 0)
    argc = len(argv)
    # IDs come first; the first argument that is not one starts the options.
    ids = []
    j = 5
    while j < argc:
        stream_id = _try_parse_id(argv[j])
        if stream_id is None:
            break
        ids.append(stream_id)
        j += 1
    now = c.server.clock.ms()
    force = justid = False
    retry_count = -1
    delivery_time = -1
    last_id = MIN_ID
    while j < argc:
        more = argc - 1 - j
        option = argv[j].lower()
        if option == b"force":
            force = True
        elif option == b"justid":
            justid = True
        elif option == b"idle" and more:
            j += 1
            delivery_time = now - parse_int(argv[j], errors.STREAM_XCLAIM_IDLE)
        elif option == b"time" and more:
            j += 1
            delivery_time = parse_int(argv[j], errors.STREAM_XCLAIM_TIME)
        elif option == b"retrycount" and more:
            j += 1
            retry_count = parse_int(argv[j], errors.STREAM_XCLAIM_RETRYCOUNT)
        elif option == b"lastid" and more:
            j += 1
            last_id = parse_strict_id(argv[j])
        else:
            raise RedisError(errors.STREAM_XCLAIM_UNKNOWN_OPTION.format(_text(argv[j])))
        j += 1
    # A delivery time in the future or before the epoch is taken as now rather than refused:
    # clients compute it from their own clocks.
    if not 0 <= delivery_time <= now:
        delivery_time = now
    advanced = last_id > group.last_id
    if advanced:
        group.last_id = last_id

    claims = _Claims(c, argv[1], group, argv[3], now, min_idle, justid)
    for stream_id in ids:
        entry = group.pending.get(stream_id)
        fields = stream.get(stream_id)
        if fields is None:
            # Deleted from the stream: nothing to claim, and nothing left to acknowledge.
            if entry is not None:
                group.remove(stream_id)
                claims.changes += 1
            continue
        if entry is None:
            if not force:
                continue
            entry = group.pending[stream_id] = PendingEntry(None, now)
        elif not claims.idle_enough(entry):
            continue
        claims.claim(stream_id, entry, fields, delivery_time, retry_count)
    # A LASTID that moved the group on, with nothing claimed or dropped, is a change of its own
    # (Redis's propagate_last_id): the replicas and the AOF must get the new last ID.
    c.changes = claims.changes or int(advanced)
    return claims.replies


@command("xautoclaim", arity=-6, flags="write fast", keys=(1, 1, 1), group=G)
def xautoclaim(c, argv):
    # Redis looks the key up before it parses anything (only its type is checked after): a
    # missing key is a "keymiss", an expired one is deleted ("expired"), whatever the error.
    value = c.db.read(argv[1])
    min_idle = max(parse_int(argv[4], errors.STREAM_XAUTOCLAIM_MIN_IDLE), 0)
    start = parse_range_start(argv[5])
    count = 100
    justid = False
    argc = len(argv)
    j = 6
    while j < argc:
        option = argv[j].lower()
        if option == b"count" and argc - 1 - j:
            count = parse_int(argv[j + 1], errors.STREAM_COUNT_NOT_POSITIVE)
            if not 1 <= count <= _AUTOCLAIM_MAX_COUNT:
                raise RedisError(errors.STREAM_COUNT_NOT_POSITIVE)
            j += 2
        elif option == b"justid":
            justid = True
            j += 1
        else:
            raise RedisError(errors.SYNTAX)
    stream, group = _group_of(value, argv[1], argv[2])
    if count * 16 > _AUTOCLAIM_ALLOCATION_LIMIT:
        raise RedisError(errors.STREAM_XAUTOCLAIM_COUNT_TOO_HIGH)

    now = c.server.clock.ms()
    attempts = count * _AUTOCLAIM_ATTEMPTS_FACTOR
    # One more than can be examined: the entry after the last one examined is the cursor.
    candidates = list(islice(group.pending.irange(minimum=start), attempts + 1))
    claims = _Claims(c, argv[1], group, argv[3], now, min_idle, justid)
    deleted = []
    cursor = MIN_ID  # the whole rest of the PEL was examined
    for stream_id in candidates:
        if not attempts or not count:
            cursor = stream_id
            break
        attempts -= 1
        fields = stream.get(stream_id)
        if fields is None:
            group.remove(stream_id)
            deleted.append(format_id(stream_id))
            claims.changes += 1
            count -= 1
            continue
        entry = group.pending[stream_id]
        if not claims.idle_enough(entry):
            continue
        claims.claim(stream_id, entry, fields, now)
        count -= 1
    c.changes = claims.changes
    return [format_id(cursor), claims.replies, deleted]


# --- XINFO GROUPS / CONSUMERS --------------------------------------------------------------------

def _info_stream(c, key: bytes) -> Stream:
    stream = c.db.read_typed(key, Stream)
    if stream is None:
        raise RedisError(errors.NO_SUCH_KEY)
    return stream


@command("groups", arity=3, flags="readonly", keys=(2, 2, 1), parent="xinfo", group=G)
def xinfo_groups(c, argv):
    return groups_info(_info_stream(c, argv[2]))


@command("consumers", arity=4, flags="readonly", keys=(2, 2, 1), parent="xinfo", group=G)
def xinfo_consumers(c, argv):
    stream = _info_stream(c, argv[2])
    group = stream.groups.get(argv[3])
    if group is None:
        raise RedisError(errors.STREAM_NOGROUP_FOR_KEY.format(_text(argv[3]), _text(argv[2])))
    return consumers_info(group, c.server.clock.ms())
