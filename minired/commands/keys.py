"""Generic key commands: existence, type, expiry, renaming, copying between databases, KEYS and
SCAN. OBJECT lives in keys_object.py, DUMP/RESTORE in keys_dump.py."""
from __future__ import annotations

import copy
import random
from typing import Any

import cython

from minired.commands.collection_scan import page
from minired.commands.keys_object import LAZYFREE_THRESHOLD, free_effort
from minired.data.glob import matcher
from minired.data.keyspace import type_name
from minired.data.packed import live
from minired.data.quicklist import QuickList
from minired.engine.args import parse_c_int, parse_int
from minired.engine.blocking import Block
from minired.engine.client import Client
from minired.engine.table import command
from minired.features import eviction
from minired.features.notifications import GENERIC, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Status

G = "generic"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def watch_lazy_freeing(server) -> None:
    """Database.on_freed while lazyfree-lazy-expire or lazyfree-lazy-eviction is yes (start-up
    and CONFIG SET): a value the server deletes itself (expired, evicted) then goes to Redis's
    background thread, counted in INFO lazyfreed_objects, when its lazyfree-lazy-<why>
    setting is yes and freeing it takes many allocations. None while both are no, their
    default, so an expiry pays nothing for them (the hook cost one ~15%)."""
    values = server.config.values
    stats = server.stats

    def freed(value: Any, why: str) -> None:
        if values[f"lazyfree-lazy-{why}"] == "yes" and \
                free_effort(live(value), server) > LAZYFREE_THRESHOLD:
            stats.lazyfreed_objects += 1

    wanted = "yes" in (values["lazyfree-lazy-expire"], values["lazyfree-lazy-eviction"])
    for db in server.keyspace.dbs:
        db.on_freed = freed if wanted else None


def _lazy_user_del(c) -> bool:
    """lazyfree-lazy-user-del: DEL frees as UNLINK does (delCommand: delGenericCommand(c,
    lazyfree_lazy_user_del)). A typed helper reading a derived C field: the value looked up
    through the untyped handler's `c` cost a DEL ~800 instructions (a sixth of it)."""
    return c.config.lazy_user_del


@command("del", arity=-2, flags="write", keys=(1, -1, 1), group=G)
def del_(c, argv):
    if _lazy_user_del(c):
        return unlink(c, argv)
    db = c.db
    deleted = 0
    for key in argv[1:]:
        if db.delete(key):
            deleted += 1
            if db.notifier is not None:
                notify(db, GENERIC, b"del", key)
    c.changes = deleted  # Redis's server.dirty += numdel: a DEL of nothing is not propagated
    return deleted


@command("unlink", arity=-2, flags="write fast", keys=(1, -1, 1), group=G)
def unlink(c, argv):
    # DEL's, except that a value whose freeing takes many allocations goes to Redis's
    # background thread: counted in INFO lazyfreed_objects.
    db = c.db
    server = c.server
    deleted = 0
    for key in argv[1:]:
        value = db.pop(key)
        if value is None:
            continue
        deleted += 1
        if free_effort(value, server) > LAZYFREE_THRESHOLD:
            server.stats.lazyfreed_objects += 1
        if db.notifier is not None:
            notify(db, GENERIC, b"del", key)
    c.changes = deleted
    return deleted


@command("exists", arity=-2, flags="readonly fast", keys=(1, -1, 1), group=G)
def exists(c, argv):
    return _count_existing(c, argv, False)


@command("touch", arity=-2, flags="readonly fast", keys=(1, -1, 1), group=G)
def touch(c, argv):
    eviction.tracker(c.server, c.db)  # (access tracking starts, if nothing needed it yet)
    return _count_existing(c, argv, True)


def _count_existing(c, argv: list, touch: bool) -> int:
    """EXISTS looks the keys up without touching them (LOOKUP_NOTOUCH), TOUCH to touch them."""
    db = c.db
    count = 0
    for key in argv[1:]:
        if db.read(key, True, touch) is not None:
            count += 1
    return count


@command("type", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def type_(c, argv):
    value = c.db.read(argv[1], True, False)
    return Status(b"none" if value is None else type_name(value).encode())


# --- expiry ----------------------------------------------------------------------------------

_EXPIRE_NX, _EXPIRE_XX, _EXPIRE_GT, _EXPIRE_LT = 1, 2, 4, 8
_EXPIRE_OPTIONS = {b"NX": _EXPIRE_NX, b"XX": _EXPIRE_XX, b"GT": _EXPIRE_GT, b"LT": _EXPIRE_LT}


def _expire_options(argv: list) -> int:
    flags = 0
    for raw in argv[3:]:
        flag = _EXPIRE_OPTIONS.get(raw.upper())
        if flag is None:
            raise RedisError(errors.EXPIRE_UNSUPPORTED_OPTION.format(
                raw.split(b"\0", 1)[0].decode("utf-8", "replace")))
        flags |= flag
    if flags & _EXPIRE_NX and flags & (_EXPIRE_XX | _EXPIRE_GT | _EXPIRE_LT):
        raise RedisError(errors.EXPIRE_NX_CONFLICT)
    if flags & _EXPIRE_GT and flags & _EXPIRE_LT:
        raise RedisError(errors.EXPIRE_GT_LT_CONFLICT)
    return flags


def _expire_generic(c, argv: list, relative: bool, unit_ms: int) -> int:
    flags = _expire_options(argv)
    when = parse_int(argv[2])
    name = argv[0].decode("utf-8", "replace").lower()
    if unit_ms == 1000:
        # The bounds are C's LLONG_MAX / 1000 and LLONG_MIN / 1000 (truncated toward zero).
        if not -(INT64_MAX // 1000) <= when <= INT64_MAX // 1000:
            raise RedisError(errors.INVALID_EXPIRE.format(name))
        when *= 1000
    base = c.server.clock.ms() if relative else 0
    if when > INT64_MAX - base:
        raise RedisError(errors.INVALID_EXPIRE.format(name))
    when += base
    db = c.db
    key = argv[1]
    if db.get(key) is None:
        c.changes = 0
        return 0
    if flags:
        current = db.expiry(key)
        if flags & _EXPIRE_NX and current is not None:
            c.changes = 0
            return 0
        if flags & _EXPIRE_XX and current is None:
            c.changes = 0
            return 0
        if flags & _EXPIRE_GT and (current is None or when <= current):
            c.changes = 0
            return 0
        if flags & _EXPIRE_LT and current is not None and when >= current:
            c.changes = 0
            return 0
    set_deadline(db, key, when, db.clock.already_passed(when))
    return 1


def set_deadline(db, key: bytes, when: int, passed: bool) -> None:
    """Give key the deadline `when` (ms), or delete it when that deadline has already `passed`
    (Redis's checkAlreadyExpired: Clock.already_passed), with the event Redis sends for each
    (EXPIRE family, GETEX)."""
    if passed:
        db.delete(key)
        event = b"del"
    else:
        db.set_expiry(key, when)
        db.signal_modified(key)
        event = b"expire"
    if db.notifier is not None:
        notify(db, GENERIC, event, key)


@command("expire", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def expire(c, argv):
    return _expire_generic(c, argv, relative=True, unit_ms=1000)


@command("pexpire", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def pexpire(c, argv):
    return _expire_generic(c, argv, relative=True, unit_ms=1)


@command("expireat", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def expireat(c, argv):
    return _expire_generic(c, argv, relative=False, unit_ms=1000)


@command("pexpireat", arity=-3, flags="write fast", keys=(1, 1, 1), group=G)
def pexpireat(c, argv):
    return _expire_generic(c, argv, relative=False, unit_ms=1)


def _ttl_generic(c, key: bytes, in_ms: bool, absolute: bool) -> int:
    db = c.db
    if db.read(key, True, False) is None:
        return -2
    deadline = db.expiry(key)
    if deadline is None:
        return -1
    ttl = deadline if absolute else max(deadline - c.server.clock.ms(), 0)
    return ttl if in_ms else (ttl + 500) // 1000


@command("ttl", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def ttl(c, argv):
    return _ttl_generic(c, argv[1], in_ms=False, absolute=False)


@command("pttl", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
@cython.locals(c=Client, argv=list)
def pttl(c, argv):
    return _ttl_generic(c, argv[1], in_ms=True, absolute=False)


@command("expiretime", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def expiretime(c, argv):
    return _ttl_generic(c, argv[1], in_ms=False, absolute=True)


@command("pexpiretime", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def pexpiretime(c, argv):
    return _ttl_generic(c, argv[1], in_ms=True, absolute=True)


@command("persist", arity=2, flags="write fast", keys=(1, 1, 1), group=G)
def persist(c, argv):
    db = c.db
    key = argv[1]
    if db.get(key) is None or not db.persist(key):
        c.changes = 0
        return 0
    db.signal_modified(key)
    if db.notifier is not None:
        notify(db, GENERIC, b"persist", key)
    return 1


# --- enumeration -----------------------------------------------------------------------------

@command("keys", arity=2, flags="readonly", group=G)
def keys(c, argv):
    pattern = argv[1]
    if pattern == b"*":
        return list(c.db.keys())
    match = matcher(pattern)
    return [key for key in c.db.keys() if match(key)]


@command("randomkey", arity=1, flags="readonly", group=G)
def randomkey(c, argv):
    db = c.db
    candidates = list(db.data)
    # Draw without replacement so keys found expired on the way are never drawn twice.
    while candidates:
        index = random.randrange(len(candidates))
        key = candidates[index]
        if db.get(key) is not None:
            return key
        candidates[index] = candidates[-1]
        candidates.pop()
    return None


class _ScanSnapshot:
    """The keys of one database ordered by a 64-bit hash, shared by all SCANs of that database.

    The cursor names where to resume in that order (collection_scan.page), so it is stateless:
    a snapshot only saves re-sorting. Keys present for the whole scan are in any snapshot taken
    since it started, and every call moves past at least one bucket, so each such key is
    returned and the scan ends.
    """

    __slots__ = ("data_id", "hashes", "keys")

    def __init__(self, data: dict) -> None:
        ordered = sorted((hash(key) & 0xFFFF_FFFF_FFFF_FFFF, key) for key in data)
        self.data_id = id(data)
        self.hashes = [h for h, _ in ordered]
        self.keys = [key for _, key in ordered]

    def holds_exactly(self, data: dict) -> bool:
        """Whether data has exactly the snapshot's keys (same count, none missing): then a new
        scan may reuse it, a C-speed check instead of sorting the keyspace again."""
        return len(data) == len(self.keys) and all(map(data.__contains__, self.keys))


def parse_scan_cursor(raw: bytes) -> int:
    """A cursor as strtoul reads it: optional sign, decimal digits; '-1' wraps around."""
    text = raw.decode("latin-1")
    if not text:
        return 0
    if text[0].isspace() or not text.lstrip("+-").isdigit() or text[0] in "+-" and text[1:2] in "+-":
        raise RedisError(errors.INVALID_CURSOR)
    value = int(text)
    if abs(value) > 0xFFFF_FFFF_FFFF_FFFF:
        raise RedisError(errors.INVALID_CURSOR)
    return value & 0xFFFF_FFFF_FFFF_FFFF


def parse_scan_options(argv: list, start: int, allow_type: bool):
    """COUNT / MATCH / TYPE as scanGenericCommand reads them: (count, pattern, type)."""
    count = 10
    pattern = None
    wanted_type = None
    i = start
    while i < len(argv):
        opt = argv[i].upper()
        has_value = i + 1 < len(argv)
        if opt == b"COUNT" and has_value:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise RedisError(errors.SYNTAX)
        elif opt == b"MATCH" and has_value:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        elif opt == b"TYPE" and allow_type and has_value:
            wanted_type = argv[i + 1].decode("latin-1").lower()
        else:
            raise RedisError(errors.SYNTAX)
        i += 2
    return count, pattern, wanted_type


@command("scan", arity=-2, flags="readonly", group=G)
def scan(c, argv):
    cursor = parse_scan_cursor(argv[1])
    count, pattern, wanted_type = parse_scan_options(argv, 2, allow_type=True)
    db = c.db
    snapshots = c.server.scan_snapshots
    snapshot = snapshots.get(db.index)
    if (snapshot is None or snapshot.data_id != id(db.data)
            or cursor == 0 and not snapshot.holds_exactly(db.data)):
        snapshot = snapshots[db.index] = _ScanSnapshot(db.data)
    position, end, next_cursor = page(snapshot.hashes, cursor, count, len(db.data))
    match = matcher(pattern) if pattern is not None else None
    found = []
    for key in snapshot.keys[position:end]:
        if match is not None and not match(key):
            continue
        if wanted_type is not None:
            if key not in db.data:
                continue  # deleted since the snapshot: no longer in Redis's table either
            # Redis reads the key for its type as a lookup (lookupKeyReadWithFlags,
            # LOOKUP_NOTOUCH): one found expired is deleted, is a "keymiss", and has the type
            # "none"; its expiry check after that finds nothing left to expire, so TYPE none
            # lists it.
            value = db.read(key, True, False)
            if (type_name(value) if value is not None else "none") == wanted_type:
                found.append(key)
            continue
        if db.get(key) is not None:
            found.append(key)
    return [b"%d" % next_cursor, found]


# --- renaming, copying and moving ------------------------------------------------------------

@command("rename", arity=3, flags="write", keys=(1, 2, 1), group=G)
def rename(c, argv):
    return _rename(c, argv[1], argv[2], only_if_new=False)


@command("renamenx", arity=3, flags="write fast", keys=(1, 2, 1), group=G)
def renamenx(c, argv):
    return _rename(c, argv[1], argv[2], only_if_new=True)


def _rename(c, source: bytes, target: bytes, only_if_new: bool):
    db = c.db
    value = db.get(source)
    if value is None:
        raise RedisError(errors.NO_SUCH_KEY)
    if source == target:
        c.changes = 0
        return 0 if only_if_new else OK
    deadline = db.expiry(source)
    target_exists = db.get(target) is not None
    if target_exists and only_if_new:
        c.changes = 0
        return 0
    # The source is signalled first and then the target, as Redis does (in that order the
    # invalidation messages of client-side caching go out).
    db.delete(source)
    if target_exists:
        db.delete(target)
    db.set(target, value)
    if deadline is not None:
        db.set_expiry(target, deadline)
    if db.notifier is not None:
        notify(db, GENERIC, b"rename_from", source)
        notify(db, GENERIC, b"rename_to", target)
    return 1 if only_if_new else OK


def _select_index(c, raw: bytes) -> int:
    index = parse_c_int(raw)
    if not 0 <= index < len(c.server.keyspace):
        raise RedisError(errors.DB_INDEX_OUT_OF_RANGE)
    return index


def duplicate(value):
    """An independent copy of a value, as COPY needs it."""
    kind = type(value)
    if kind is bytes:
        return value
    if kind is QuickList:
        return value.copy()
    if kind is dict:
        return dict(value)
    if kind is set:
        return set(value)
    return copy.deepcopy(value)


@command("copy", arity=-3, flags="write denyoom", keys=(1, 2, 1), group=G)
def copy_(c, argv):
    target_db = c.db
    replace = False
    j = 3
    while j < len(argv):
        opt = argv[j].upper()
        if opt == b"REPLACE":
            replace = True
        elif opt == b"DB" and j + 1 < len(argv):
            target_db = c.server.keyspace[_select_index(c, argv[j + 1])]
            j += 1
        else:
            raise RedisError(errors.SYNTAX)
        j += 1
    if target_db.index != 0 and c.server.cluster is not None:
        raise RedisError(errors.COPY_DB_IN_CLUSTER)
    source, target = argv[1], argv[2]
    db = c.db
    if target_db is db and source == target:
        raise RedisError(errors.SAME_OBJECT)
    value = db.read(source)
    if value is None:
        c.changes = 0
        return 0
    deadline = db.expiry(source)
    if target_db.get(target) is not None:
        if not replace:
            c.changes = 0
            return 0
        target_db.delete(target)
    target_db.set(target, duplicate(value))
    if deadline is not None:
        target_db.set_expiry(target, deadline)
    if target_db.notifier is not None:
        notify(target_db, GENERIC, b"copy_to", target)
    return 1


@command("move", arity=3, flags="write fast", keys=(1, 1, 1), group=G)
def move(c, argv):
    if c.server.cluster is not None:
        raise RedisError(errors.MOVE_IN_CLUSTER)
    target_db = c.server.keyspace[_select_index(c, argv[2])]
    db = c.db
    if target_db is db:
        raise RedisError(errors.SAME_OBJECT)
    key = argv[1]
    value = db.get(key)
    if value is None:
        c.changes = 0
        return 0
    deadline = db.expiry(key)
    if target_db.get(key) is not None:
        c.changes = 0
        return 0
    target_db.set(key, value)
    if deadline is not None:
        target_db.set_expiry(key, deadline)
    db.delete(key)
    if db.notifier is not None:
        notify(db, GENERIC, b"move_from", key)
        notify(target_db, GENERIC, b"move_to", key)
    return 1


@command("swapdb", arity=3, flags="write fast", group="server")
def swapdb(c, argv):
    if c.server.cluster is not None:
        raise RedisError(errors.SWAPDB_IN_CLUSTER)
    first = parse_c_int(argv[1], errors.INVALID_FIRST_DB)
    second = parse_c_int(argv[2], errors.INVALID_SECOND_DB)
    keyspace = c.server.keyspace
    if not (0 <= first < len(keyspace) and 0 <= second < len(keyspace)):
        raise RedisError(errors.DB_INDEX_OUT_OF_RANGE)
    if first != second:
        keyspace.swap(first, second)
    return OK


@command("wait", arity=3, flags="noscript", group=G)
def wait(c, argv):
    """The replicas that acknowledged every write so far (minired/features/replication.py),
    once `numreplicas` did or the timeout passed; with none attached, 0 (at once for none). A
    replica refuses it: its replicas follow its master's stream, not its writes."""
    state = c.server.features.replication
    if state is not None and state.link is not None:
        raise RedisError(errors.WAIT_ON_REPLICA)
    wanted = parse_int(argv[1])
    timeout_ms = parse_int(argv[2], errors.TIMEOUT_NOT_INTEGER)
    if timeout_ms < 0:
        raise RedisError(errors.TIMEOUT_NEGATIVE)
    state = c.server.features.replication
    if state is not None:
        return state.wait(c, wanted, timeout_ms)
    if wanted <= 0 or not c.can_block:
        return 0
    return Block([], timeout_ms, lambda client, key: None, 0)
