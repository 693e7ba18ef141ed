"""What a write command is logged as in the append-only file: its effects, as Redis 7.0
propagates them (rewriteClientCommandVector, rewriteClientCommandArgument, alsoPropagate), so
that replaying the file, in minired or in a real Redis, at any later time, rebuilds the same
data.

A command whose effect depends on the clock or on chance is logged as what it did: relative
TTLs become absolute ones (`SET ... PXAT`, `PEXPIREAT`, `RESTORE ... ABSTTL`) and a TTL already
past becomes `DEL`; SPOP becomes SREM (or DEL once the set is gone), INCRBYFLOAT and
HINCRBYFLOAT the SET/HSET of their result, GETDEL a DEL, GETSET a SET and SET ... GET a SET
without its GET; a blocking command is logged as its non-blocking
form (BLPOP as LPOP of the key it popped, BLMOVE as LMOVE, BZMPOP as ZPOPMIN/ZPOPMAX with the
count it popped ...); XADD `*` with the ID it generated and an approximate trim (`~`) as the
exact trim it came to; XREADGROUP, XCLAIM and XAUTOCLAIM as one `XCLAIM ... TIME RETRYCOUNT
FORCE JUSTID LASTID` per entry they delivered or claimed. Every other write is logged as sent.

Two places go further than Redis 7.0, so that the replayed data is the data minired holds (each
record is one Redis also accepts): a history read (XREADGROUP with an ID) is logged as the
XCLAIMs of the deliveries it counted, a `>` read also as `XGROUP SETID ... ENTRIESREAD` (Redis
logs that for NOACK reads only, and its replica's entries-read falls behind), and a consumer
that a read or claim creates without a pending entry to show for it as `XGROUP CREATECONSUMER`.
"""
from __future__ import annotations

from typing import Any, Callable

from minired.data.stream import Stream, format_id

Effects = list  # of argv lists, in the order they apply

_DEL = b"DEL"
# (SET ... PXAT too is logged as `SET key value PXAT ms`, its options dropped, as Redis does)
_TTL_OPTIONS = frozenset({b"ex", b"px", b"exat", b"pxat"})


def effects(db: Any, argv: list, reply: Any, config: Any = None) -> Effects:
    """The records that replay what argv did to db (run, with this reply, a moment ago); with
    the server's config, a deletion is UNLINK where Redis's lazyfree settings make it so."""
    name = argv[0].lower()
    rewrite = _REWRITES.get(name)
    if rewrite is None:
        return [argv]
    records = rewrite(db, argv, reply)
    if records and records[0][0] is _DEL and config is not None:
        lazy = _LAZYFREE_SETTING.get(name)
        if lazy is not None and config.get(lazy) == "yes":
            records = [[b"UNLINK", records[0][1]]]
    return records


def deletion_of_expired(config: Any) -> bytes:
    """How a key deleted for its TTL is logged (propagateExpire)."""
    return b"UNLINK" if config.get("lazyfree-lazy-expire") == "yes" else _DEL


# --- TTLs ----------------------------------------------------------------------------------------

def _gone_or(db: Any, key: bytes, records: Effects) -> Effects:
    """DEL when key is gone (its new TTL had already passed: checkAlreadyExpired), else records."""
    return [[_DEL, key]] if key not in db.data else records


def _string_as_it_is(db: Any, key: bytes) -> Effects:
    """SET of the string key holds now, with its deadline: right whether the SET took effect
    or was called off (NX, XX: the key is as it was, and the record changes nothing)."""
    value = db.data.get(key)
    if value is None:
        return [[_DEL, key]]
    if type(value) is not bytes:
        return []  # (a SET NX called off on a key of another type)
    deadline = db.expires.get(key)
    if deadline is None:
        return [[b"SET", key, value]]
    return [[b"SET", key, value, b"PXAT", b"%d" % deadline]]


def _set(db: Any, argv: list, reply: Any) -> Effects:
    if len(argv) == 3:
        return [argv]
    for arg in argv[3:]:
        if arg.lower() in _TTL_OPTIONS:
            return _string_as_it_is(db, argv[1])
    # Without its GET, the rest as sent (setGenericCommand; GET comes at most once)
    return [[arg for i, arg in enumerate(argv) if i < 3 or arg.lower() != b"get"]]


def _getset(db: Any, argv: list, reply: Any) -> Effects:
    return [[b"SET", argv[1], argv[2]]]  # (getsetCommand: rewriteClientCommandArgument)


def _setex(db: Any, argv: list, reply: Any) -> Effects:  # SETEX/PSETEX key ttl value
    return _string_as_it_is(db, argv[1])


def _pexpireat(db: Any, key: bytes) -> Effects:
    deadline = db.expires.get(key)
    if deadline is None:
        return _gone_or(db, key, [])
    return [[b"PEXPIREAT", key, b"%d" % deadline]]


def _expire(db: Any, argv: list, reply: Any) -> Effects:
    return _pexpireat(db, argv[1]) if reply == 1 else []


def _getex(db: Any, argv: list, reply: Any) -> Effects:
    if reply is None:
        return []
    options = {arg.lower() for arg in argv[2:]}
    if b"persist" in options:
        return [[b"PERSIST", argv[1]]]
    if options & _TTL_OPTIONS:
        return _pexpireat(db, argv[1])
    return []


def _restore(db: Any, argv: list, reply: Any) -> Effects:
    key = argv[1]
    deadline = db.expires.get(key)
    if deadline is None:
        return _gone_or(db, key, [argv])
    record = list(argv)
    record[2] = b"%d" % deadline
    if not any(arg.lower() == b"absttl" for arg in argv[4:]):
        record.append(b"ABSTTL")
    return [record]


# --- chance and floating point -------------------------------------------------------------------

def _spop(db: Any, argv: list, reply: Any) -> Effects:
    key = argv[1]
    if len(argv) == 2:
        return [] if reply is None else [[b"SREM", key, reply]]
    members = list(reply or ())
    if not members:
        return []
    return _gone_or(db, key, [[b"SREM", key, member] for member in members])


def _getdel(db: Any, argv: list, reply: Any) -> Effects:
    return [] if reply is None else [[_DEL, argv[1]]]  # (UNLINK with lazyfree-lazy-user-del)


def _incrbyfloat(db: Any, argv: list, reply: Any) -> Effects:
    return [[b"SET", argv[1], reply, b"KEEPTTL"]]


def _hincrbyfloat(db: Any, argv: list, reply: Any) -> Effects:
    return [[b"HSET", argv[1], argv[2], reply]]


# --- blocking commands as their non-blocking forms -----------------------------------------------

def _popped(reply: Any) -> bool:
    return type(reply) is list and bool(reply)


def _pop_as(name: bytes) -> Callable:
    """BLPOP/BRPOP/BZPOPMIN/BZPOPMAX: the pop of one element from the key it came from."""
    def rewrite(db: Any, argv: list, reply: Any) -> Effects:
        return [[name, reply[0]]] if _popped(reply) else []
    return rewrite


def _mpop_as(numkeys_at: int, first: bytes, pop_first: bytes, pop_last: bytes) -> Callable:
    """[B]LMPOP/[B]ZMPOP: a pop with the count it popped from the key it popped from."""
    def rewrite(db: Any, argv: list, reply: Any) -> Effects:
        if not _popped(reply):
            return []
        where = argv[numkeys_at + 1 + int(argv[numkeys_at])].lower()
        key, elements = reply
        return [[pop_first if where == first else pop_last, key, b"%d" % len(elements)]]
    return rewrite


def _blmove(db: Any, argv: list, reply: Any) -> Effects:
    return [] if reply is None else [[b"LMOVE", *argv[1:5]]]


def _brpoplpush(db: Any, argv: list, reply: Any) -> Effects:
    return [] if reply is None else [[b"RPOPLPUSH", argv[1], argv[2]]]


# --- streams -------------------------------------------------------------------------------------

def _parse_id(raw: bytes) -> tuple:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq or 0)


def _trim_clause(argv: list, at: int) -> tuple[int, int] | None:
    """Where an XADD/XTRIM trim's MAXLEN|MINID stands and where its clause ends, from `at`."""
    i = at
    while i < len(argv):
        option = argv[i].lower()
        if option in (b"maxlen", b"minid"):
            end = i + 2 + (argv[i + 1] in (b"=", b"~"))
            if end < len(argv) and argv[end].lower() == b"limit":
                end += 2
            return i, end
        if option != b"nomkstream":
            return None
        i += 1
    return None


def _exact_trim(db: Any, argv: list) -> list:
    """An approximate trim (`~`, LIMIT) as the exact trim it came to: MAXLEN = the length left,
    MINID = the first ID left (streamRewriteTrimArgument), so a replay trims the same entries.
    LIMIT goes: it is refused without `~`."""
    clause = _trim_clause(argv, 2)
    if clause is None:
        return argv
    at, end = clause
    if argv[at + 1] != b"~":
        return argv
    stream = db.data.get(argv[1])
    if type(stream) is not Stream:
        return argv
    if argv[at].lower() == b"maxlen":
        threshold = b"%d" % stream.length
    else:
        first = stream.first_entry()
        threshold = format_id(first[0]) if first is not None else argv[at + 2]
    return [*argv[:at], argv[at], b"=", threshold, *argv[end:]]


def _xadd(db: Any, argv: list, reply: Any) -> Effects:
    if type(reply) is not bytes:
        return []  # NOMKSTREAM and no stream
    clause = _trim_clause(argv, 2)
    id_at = clause[1] if clause is not None else 2
    while id_at < len(argv) and argv[id_at].lower() == b"nomkstream":
        id_at += 1
    record = list(argv)
    if record[id_at].endswith(b"*"):
        record[id_at] = reply
    return [_exact_trim(db, record)]


def _xtrim(db: Any, argv: list, reply: Any) -> Effects:
    return [_exact_trim(db, argv)] if reply else []


def _group(db: Any, key: bytes, group_name: bytes) -> tuple[Any, Any]:
    stream = db.data.get(key)
    if type(stream) is not Stream:
        return None, None
    return stream, stream.groups.get(group_name)


def _claims(key: bytes, group_name: bytes, consumer_name: bytes, stream: Stream, group: Any,
            raw_ids: list) -> Effects:
    """One XCLAIM per ID that pins its pending entry as it is now (owner, delivery time and
    count: streamPropagateXCLAIM), or, for an ID the stream no longer holds, drops it from the
    group's PEL on replay (XCLAIM removes such an entry). A pending entry whose stream entry
    is gone (a history read shows it as a null) is left out: XCLAIM would drop it."""
    last_id = format_id(group.last_id)
    records = []
    for raw in raw_ids:
        stream_id = _parse_id(raw)
        entry = group.pending.get(stream_id)
        in_stream = stream.get(stream_id) is not None
        if entry is not None and in_stream:
            records.append([b"XCLAIM", key, group_name, entry.consumer.name, b"0", raw,
                            b"TIME", b"%d" % entry.delivery_time,
                            b"RETRYCOUNT", b"%d" % entry.delivery_count,
                            b"FORCE", b"JUSTID", b"LASTID", last_id])
        elif entry is None and not in_stream:
            records.append([b"XCLAIM", key, group_name, consumer_name, b"0", raw,
                            b"FORCE", b"JUSTID", b"LASTID", last_id])
    return records


def _consumer_kept(key: bytes, group_name: bytes, consumer_name: bytes, group: Any,
                   records: Effects) -> Effects:
    """records, preceded by the consumer's creation when none of them names it (a consumer
    with nothing pending, created by a read or a claim, exists after replay too)."""
    if consumer_name in group.consumers and not any(
            record[0] == b"XCLAIM" and record[3] == consumer_name for record in records):
        return [[b"XGROUP", b"CREATECONSUMER", key, group_name, consumer_name], *records]
    return records


def _xreadgroup(db: Any, argv: list, reply: Any) -> Effects:
    group_name = consumer_name = None
    noack = False
    i = 1
    while i < len(argv):
        option = argv[i].lower()
        if option == b"group":
            group_name, consumer_name = argv[i + 1], argv[i + 2]
            i += 3
            continue
        if option == b"streams":
            break
        noack = noack or option == b"noack"
        i += 2 if option in (b"count", b"block") else 1
    half = (len(argv) - i - 1) // 2
    # A key named twice (STREAMS s s > 0) is read twice: its records cover both reads.
    starts: dict = {}
    for key, start in zip(argv[i + 1:i + 1 + half], argv[i + 1 + half:]):
        starts.setdefault(key, []).append(start)
    delivered = {}
    if type(reply) is list or isinstance(reply, dict):  # (RESP3: a map)
        for key, entries in (reply.items() if isinstance(reply, dict) else reply):
            delivered.setdefault(key, []).extend(entry[0] for entry in entries)
    records: Effects = []
    for key, key_starts in starts.items():
        stream, group = _group(db, key, group_name)
        if group is None:
            continue
        ids = list(dict.fromkeys(delivered.get(key, [])))
        # A history read counts its deliveries, NOACK or not; a `>` read with NOACK leaves
        # nothing pending.
        counted = not noack or any(start != b">" for start in key_starts)
        these = _claims(key, group_name, consumer_name, stream, group, ids) if counted else []
        if b">" in key_starts and ids:
            these.append([b"XGROUP", b"SETID", key, group_name, format_id(group.last_id),
                          b"ENTRIESREAD", b"%d" % (-1 if group.entries_read is None
                                                   else group.entries_read)])
        consumer = group.consumers.get(consumer_name)
        if consumer is not None and not consumer.pending:
            these = _consumer_kept(key, group_name, consumer_name, group, these)
        records.extend(these)
    return records


def _xclaim(db: Any, argv: list, reply: Any) -> Effects:
    key, group_name, consumer_name = argv[1], argv[2], argv[3]
    stream, group = _group(db, key, group_name)
    if group is None:
        return []
    ids = []
    for raw in argv[5:]:
        try:
            _parse_id(raw)
        except ValueError:
            break
        ids.append(raw if b"-" in raw else raw + b"-0")
    records = _claims(key, group_name, consumer_name, stream, group, ids)
    if not records and any(arg.lower() == b"lastid" for arg in argv[5:]):
        records = [[b"XGROUP", b"SETID", key, group_name, format_id(group.last_id),
                    b"ENTRIESREAD", b"%d" % (-1 if group.entries_read is None
                                             else group.entries_read)]]
    return records


def _xautoclaim(db: Any, argv: list, reply: Any) -> Effects:
    key, group_name, consumer_name = argv[1], argv[2], argv[3]
    stream, group = _group(db, key, group_name)
    if group is None or type(reply) is not list:
        return []
    _, claimed, deleted = reply
    ids = [entry if type(entry) is bytes else entry[0] for entry in claimed]
    return _claims(key, group_name, consumer_name, stream, group, [*ids, *deleted])


# The setting that makes a command's DEL an UNLINK: a TTL already past (expireGenericCommand,
# GETEX), GETDEL (getdelCommand). (A set popped whole is a DEL whatever
# lazyfree-lazy-server-del says, in 7.0.15.)
_LAZYFREE_SETTING = {**dict.fromkeys((b"expire", b"pexpire", b"expireat", b"pexpireat", b"getex"),
                                     "lazyfree-lazy-expire"),
                     b"getdel": "lazyfree-lazy-user-del"}

_REWRITES: dict[bytes, Callable[[Any, list, Any], Effects]] = {
    b"set": _set, b"getset": _getset, b"setex": _setex, b"psetex": _setex, b"getex": _getex,
    b"expire": _expire, b"pexpire": _expire, b"expireat": _expire, b"pexpireat": _expire,
    b"restore": _restore, b"getdel": _getdel,
    b"spop": _spop, b"incrbyfloat": _incrbyfloat, b"hincrbyfloat": _hincrbyfloat,
    b"blpop": _pop_as(b"LPOP"), b"brpop": _pop_as(b"RPOP"),
    b"bzpopmin": _pop_as(b"ZPOPMIN"), b"bzpopmax": _pop_as(b"ZPOPMAX"),
    b"lmpop": _mpop_as(1, b"left", b"LPOP", b"RPOP"),
    b"blmpop": _mpop_as(2, b"left", b"LPOP", b"RPOP"),
    b"zmpop": _mpop_as(1, b"min", b"ZPOPMIN", b"ZPOPMAX"),
    b"bzmpop": _mpop_as(2, b"min", b"ZPOPMIN", b"ZPOPMAX"),
    b"blmove": _blmove, b"brpoplpush": _brpoplpush,
    b"xadd": _xadd, b"xtrim": _xtrim,
    b"xreadgroup": _xreadgroup, b"xclaim": _xclaim, b"xautoclaim": _xautoclaim,
}
