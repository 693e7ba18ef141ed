"""The data: databases of typed values with millisecond expiry, and the one clock behind all time.

No sockets and no RESP here: this layer is usable on its own (tests, embedding, persistence).
Values are plain Python objects whose type is the Redis type:
  bytes -> string, QuickList -> list, dict -> hash, set -> set,
  and the classes registered with `register_type` (sorted sets, streams). A small collection
  loaded from a snapshot is a `Packed` until `get` first meets it (minired/data/packed.py).
Commands that change a value in place call `Database.signal_modified(key)` so that WATCH and
tracking clients learn of it, as Redis's signalModifiedKey does. Blocked clients hear of fewer
changes, those Redis's signalKeyAsReady is called for (`Database.signal_ready`).
"""
from __future__ import annotations

import sys
import time
from collections import deque
from heapq import heapify, heappop, heappush
from typing import Any, Callable, Iterator

from minired.data.packed import Packed
from minired.data.quicklist import QuickList
from minired.protocol.errors import WRONGTYPE, RedisError

# Module globals, not attribute lookups: read by the clock for every expiry check that needs
# the wall clock (at most once per command, see Clock.command_instant).
_now_ns = time.time_ns
_perf_ns = time.perf_counter_ns
# Whether the Clock reads _perf_ns's and _now_ns's clocks in C: monotonic_ns and realtime_ns
# (monotonic.pxd, cimported by keyspace.pxd, so the names exist only in the compiled build) are
# the clock_gettime (CLOCK_MONOTONIC, CLOCK_REALTIME) that perf_counter_ns and time_ns read on
# Linux. A plain global, so that a test that stops _perf_ns or _now_ns can switch the C reads
# off with it. Clock reads it as one expression, written
# out in enter, leave and command_instant: a helper function for it (cdef, even cdef inline)
# counted ~235 more instructions per PING under valgrind (bench/README, 2026-12-07, midday).
_C_CLOCK = not __file__.endswith(".py") and sys.platform == "linux"

TYPE_NAMES: dict[type, str] = {bytes: "string", QuickList: "list", dict: "hash", set: "set"}


def register_type(cls: type, name: str) -> None:
    TYPE_NAMES[cls] = name


def _is_stream(value: Any) -> bool:
    """Whether value is a stream (the type data/stream.py registers; not imported here): what
    XREADGROUP readers are woken for when it goes (signalDeletedKeyAsReady)."""
    return TYPE_NAMES.get(type(value)) == "stream"


def type_name(value: Any) -> str:
    return TYPE_NAMES[type(value)]


class Clock:
    """Unix time in milliseconds, plus an offset that tests may push forward (MINIRED ADVANCE),
    and the instant expiry compares deadlines with, as Redis keeps it.

    Expiry, lock TTLs, TIME, and blocking timeouts all read this one clock, so moving it moves
    everything time-based together.

    `ms()` is always the fresh time (Redis's mstime()): what new deadlines count from (SET PX,
    EXPIRE, TTL's remainder). Whether a key has expired is judged against `expiry_now()`
    instead, Redis's keyIsExpired: while loading nothing expires; inside a script, the instant
    the script started (scriptTimeSnapshot); inside a command, the instant the outermost one
    started (server.mstime, cached by call() while server.fixed_time_expire counts nested
    calls), so a whole EXEC or a multi-key command sees one instant; otherwise the fresh time.
    """

    __slots__ = ("offset_ms", "listeners", "depth", "command_start_ns", "command_ms",
                 "script_ms", "loading")

    def __init__(self) -> None:
        self.offset_ms = 0
        self.listeners: list[Callable[[], None]] = []
        # Commands running, nested (EXEC, scripts, a blocked client being served): Redis's
        # server.fixed_time_expire. See enter().
        self.depth = 0
        # perf_counter_ns() when the outermost of them started, and that instant on this clock
        # in ms, worked out from it the first time an expiry check needs it (-1 until then):
        # commands that meet no key with a TTL never read the wall clock for it.
        self.command_start_ns = 0
        self.command_ms = -1
        # The instant the running script started (scriptTimeSnapshot), -1 outside scripts.
        self.script_ms = -1
        # True while persistence replays a file into the keyspace (Redis's server.loading).
        self.loading = False

    def ms(self) -> int:
        # (a C integer in the compiled build: the arithmetic is C's)
        now_ns = realtime_ns() if _C_CLOCK else _now_ns()  # noqa: F821 (see _C_CLOCK)
        return now_ns // 1_000_000 + self.offset_ms

    def us(self) -> int:
        now_ns = realtime_ns() if _C_CLOCK else _now_ns()  # noqa: F821
        return now_ns // 1000 + self.offset_ms * 1000

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("the clock only moves forward")
        if self.depth:
            self.command_instant()  # a command already running keeps the instant it began at
        self.offset_ms += ms
        for listener in list(self.listeners):
            listener()
        return self.ms()

    # --- the instant of the running command -----------------------------------------------

    def enter(self) -> int:
        """A command starts (dispatch.call): the outermost one fixes the instant expiry sees
        until it returns (call()'s updateCachedTime). Returns the monotonic clock's reading in
        ns, which leave() answers in kind: every reading of a command's time is made here."""
        start_ns = monotonic_ns() if _C_CLOCK else _perf_ns()  # noqa: F821 (see _C_CLOCK)
        if self.depth == 0:
            self.command_start_ns = start_ns
            self.command_ms = -1
        self.depth += 1
        return start_ns

    def leave(self) -> int:
        """A command ends: the monotonic clock's reading in ns (its duration since enter())."""
        self.depth -= 1
        return monotonic_ns() if _C_CLOCK else _perf_ns()  # noqa: F821

    def command_instant(self) -> int:
        """The instant the outermost running command started, in ms on this clock."""
        if self.command_ms < 0:
            elapsed_ns = (monotonic_ns() if _C_CLOCK else _perf_ns()) - self.command_start_ns  # noqa: F821
            now_ns = realtime_ns() if _C_CLOCK else _now_ns()  # noqa: F821
            self.command_ms = (now_ns - elapsed_ns) // 1_000_000 + self.offset_ms
        return self.command_ms

    def expiry_now(self) -> int:
        """The time a deadline is compared with (keyIsExpired's `now`)."""
        if self.script_ms >= 0:
            return self.script_ms
        if self.depth:
            return self.command_instant()
        return self.ms()

    def passed(self, deadline_ms: int) -> bool:
        """Whether a key with this deadline has expired: Redis's keyIsExpired, `now > when`,
        so a key still lives during the millisecond of its deadline; never while loading."""
        if self.loading:
            return False
        return self.expiry_now() > deadline_ms

    def already_passed(self, deadline_ms: int) -> bool:
        """Whether a deadline just given to a key (EXPIRE, GETEX, RESTORE) means deleting it at
        once: Redis's checkAlreadyExpired, `when <= mstime()` on the fresh time; never while
        loading, when the key is kept and expires once the load is over."""
        return deadline_ms <= self.ms() and not self.loading

    def start_script(self) -> None:
        """A script or function starts: it runs at one instant, taken now (scriptPrepareForRun's
        snapshot_time = mstime()), for every key it and anyone served meanwhile look up."""
        self.script_ms = self.ms()

    def end_script(self) -> None:
        self.script_ms = -1


class Database:
    """One numbered database: key -> value, key -> absolute expiry in ms."""

    __slots__ = ("index", "data", "expires", "clock", "watchers", "blocking_keys",
                 "ready_keys", "blocked_types", "_expiry_heap", "avg_ttl_hint", "tracking",
                 "notifier", "keyspace_hits", "keyspace_misses", "expired_lazily", "keep_expired",
                 "dirty", "on_expired", "on_freed", "keytrack", "own_expires")

    def __init__(self, index: int, clock: Clock, ready_keys: list,
                 blocked_types: dict | None = None) -> None:
        self.index = index
        self.data: dict[bytes, Any] = {}
        self.expires: dict[bytes, int] = {}
        self.clock = clock
        # key -> set of watch records (clients' WATCH); see signal_modified.
        self.watchers: dict[bytes, set] = {}
        # key -> deque of blocked waiters; pushes to these keys queue them in ready_keys.
        self.blocking_keys: dict[bytes, deque] = {}
        self.ready_keys = ready_keys
        # Value type -> how many clients, on any key of any database, block for a value of it
        # (list waiters QuickList, BZPOPMIN's ZSet, XREAD's Stream): Redis's
        # blocked_clients_by_type, shared by the databases; see signal_ready.
        self.blocked_types: dict[type, int] = {} if blocked_types is None else blocked_types
        # (deadline, key) pairs; may hold stale entries, checked against `expires` when popped.
        self._expiry_heap: list[tuple[int, bytes]] = []
        # The server's client-side caching table, once a client uses it.
        self.tracking: Any = None
        # Keyspace notifications, while notify-keyspace-events is on.
        self.notifier: Any = None
        # Called with (db, key) as an expired key is deleted, lazily or by the active cycle:
        # the AOF logs it as a DEL, as Redis's propagateExpire.
        self.on_expired: Callable[["Database", bytes], None] | None = None
        # Called with (value, why) as the server itself deletes a key's value, why being the
        # lazyfree-lazy-<why> setting that decides whether Redis frees it in the background
        # (INFO lazyfreed_objects counts that): "expire" here, "eviction" by key eviction.
        self.on_freed: Callable[[Any, str], None] | None = None
        # INFO keyspace_hits/misses: counted by read() and read_typed() only (see there).
        self.keyspace_hits = 0
        self.keyspace_misses = 0
        # Keys a lookup found expired (INFO expired_keys adds those the active cycle removed).
        self.expired_lazily = 0
        # While CLIENT PAUSE is in force the dataset stays as it is: a key
        # whose time has passed reads as missing but is only deleted once the pause ends.
        self.keep_expired = False
        # Changes made by write commands here (Redis's server.dirty, summed over databases:
        # INFO rdb_changes_since_last_save); counted by dispatch.call.
        self.dirty = 0
        # Per-key access and size bookkeeping (for key eviction), None until
        # maxmemory or OBJECT IDLETIME/FREQ needs it: told of every key looked up (touch),
        # stored (created), removed (gone), of a flush (flushed) and SWAPDB (moved).
        self.keytrack: Any = None
        # While a replica: the keys its own clients (a writable replica's) gave a TTL, which
        # it expires itself (Redis's slaveKeysWithExpire); the master's wait for its DEL.
        self.own_expires: set | None = None

    # --- lookups -----------------------------------------------------------------------------

    def get(self, key: bytes, touch: bool = True) -> Any:
        """The live value at key, or None; an expired key is deleted on the way (lazy expiry:
        Redis's lookupKey with expireIfNeeded). The lookup counts as an access of the key
        (OBJECT IDLETIME/FREQ, LRU/LFU eviction) unless `touch` is false (LOOKUP_NOTOUCH:
        TTL, TYPE, EXISTS, OBJECT)."""
        expires = self.expires
        if expires:
            deadline = expires.get(key)
            if deadline is not None and self.clock.passed(deadline):
                self._expire_lazily(key)
                return None
        value = self.data.get(key)
        if type(value) is Packed:  # (the first lookup of a small collection loaded packed)
            value = self.data[key] = value.unpacked()
        if self.keytrack is not None and value is not None and touch:
            self.keytrack.touch(key)
        return value

    def _expire_lazily(self, key: bytes) -> None:
        """A lookup found key expired: delete it, unless a CLIENT PAUSE keeps the dataset
        still (it then only reads as missing)."""
        if not self.keep_expired:
            self._expire(key)
            self.expired_lazily += 1

    def get_typed(self, key: bytes, cls: type) -> Any:
        """The value at key if it is of type `cls`, None if missing; WRONGTYPE otherwise."""
        value = self.get(key)
        if value is not None and type(value) is not cls:
            raise RedisError(WRONGTYPE)
        return value

    def is_expired(self, key: bytes) -> bool:
        """Whether key is there but its time has passed (keyIsExpired: nothing is deleted)."""
        deadline = self.expires.get(key) if self.expires else None
        return deadline is not None and self.clock.passed(deadline)

    def exists(self, key: bytes) -> bool:
        return self.get(key, False) is not None

    # Redis counts hits and misses in lookupKeyRead only: commands that read a key (GET, EXISTS,
    # LRANGE, SUNIONSTORE's sources ...) look it up with these; writes use get()/get_typed(),
    # which count nothing. Each costs one integer increment over get().

    def read(self, key: bytes, notify: bool = True, touch: bool = True) -> Any:
        """get() for a read lookup, counted in INFO keyspace_hits/keyspace_misses; a miss is a
        "keymiss" notification unless `notify` is false (Redis's LOOKUP_NONOTIFY)."""
        value = self.get(key, touch)
        if value is None:
            self.keyspace_misses += 1
            if notify and self.notifier is not None:
                self.notifier.key_missed(self, key)
        else:
            self.keyspace_hits += 1
        return value

    def read_typed(self, key: bytes, cls: type) -> Any:
        """get_typed() for a read lookup, counted as read() counts (WRONGTYPE is a hit)."""
        value = self.read(key)
        if value is not None and type(value) is not cls:
            raise RedisError(WRONGTYPE)
        return value

    def __len__(self) -> int:
        return len(self.data)

    def keys(self) -> Iterator[bytes]:
        """Live keys. Expired ones are skipped but left in place, as KEYS does (it asks
        keyIsExpired, which deletes nothing): DBSIZE still counts them until a lookup or the
        expiry cycle removes them."""
        if not self.expires:
            yield from list(self.data)
            return
        expires = self.expires
        passed = self.clock.passed
        for key in list(self.data):
            deadline = expires.get(key)
            if deadline is None or not passed(deadline):
                yield key

    # --- changes -----------------------------------------------------------------------------

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store value at key; any previous TTL is cleared unless keep_ttl.

        Every write looks the key up first, as Redis's lookupKeyWrite does: one whose time has
        passed is deleted then (with its "expired" event), so what is written is a new key and
        inherits nothing from the dead one (KEEPTTL, INCR, APPEND ... keep only a live TTL),
        even where lookups keep expired keys."""
        if self.expires or self.notifier is not None:
            if self.get(key) is None:
                if self.keep_expired and key in self.data:
                    # Kept expired (a replica's, see keep_expired): a write deletes it first,
                    # as lookupKeyWrite does on a writable replica.
                    self._expire(key)
                    self.expired_lazily += 1
                if self.notifier is not None:
                    self.notifier.key_created(self, key)  # after "expired", as dbAdd
        if self.blocking_keys and key in self.blocking_keys:
            # Redis queues a key for its blocked clients when dbAdd adds it, for the new
            # value's type, and when dbOverwrite replaces a stream (XREADGROUP then ends with
            # an error); overwriting any other value does not. So a client blocked on a key
            # that holds a string, or a sorted set no one waits for, is not served when SORT
            # STORE or ZUNIONSTORE replaces it with a list or a sorted set (RENAME, COPY and
            # RESTORE delete first: the new value is added), and a string written there is not
            # looked up for them: SET k v PXAT <past> leaves k to expire on its next lookup.
            old = self.data.get(key)
            if old is None:
                self.signal_ready(key, type(value))
            elif _is_stream(old):
                self.signal_ready(key, type(old))
        self.data[key] = value
        if not keep_ttl and self.expires:
            self.expires.pop(key, None)
        if self.keytrack is not None:
            self.keytrack.created(key)
        if self.watchers or self.blocking_keys or self.tracking is not None:
            self.signal_modified(key)  # (the common case is nobody to tell)

    def delete(self, key: bytes) -> bool:
        """Remove key; True if it held a live value."""
        if self.get(key, False) is None:
            return False
        self._remove(key)
        return True

    def delete_without_lookup(self, key: bytes) -> bool:
        """Remove key if the database holds it, expired or not: Redis's dbDelete, which the
        commands that store an empty result (SINTERSTORE, ZUNIONSTORE, SORT STORE, BITOP,
        GEOSEARCHSTORE ...) and RESTORE REPLACE call on their destination without looking it
        up. True if it was there, even expired: an expired key then goes without an "expired"
        event, and the command's own "del" is the one Redis sends."""
        if key not in self.data:
            return False
        self._remove(key)
        return True

    def pop(self, key: bytes) -> Any:
        """Remove key and return its live value (None if missing)."""
        value = self.get(key, False)
        if value is None:
            return None
        self._remove(key)
        return value

    def _remove(self, key: bytes) -> None:
        """The removal a command makes (delete, delete_without_lookup, pop): the value and its
        deadline go, the key tracker hears of it, then the key's watchers and blocked readers."""
        del self.data[key]
        if self.expires:
            self.expires.pop(key, None)
        if self.keytrack is not None:
            self.keytrack.gone(key)
        self.signal_modified(key)

    def delete_if_empty(self, key: bytes, value: Any) -> None:
        """Containers never stay empty in Redis: drop the key once its last element is gone."""
        if not value:
            self.data.pop(key, None)
            if self.expires:
                self.expires.pop(key, None)
            if self.keytrack is not None:
                self.keytrack.gone(key)

    def signal_modified(self, key: bytes, expired: bool = False) -> None:
        """Tell the watchers and tracking clients of key that it changed, and its blocked
        readers if it is gone; `expired`: deleted by expiry, which no client did (NOLOOP
        spares nobody)."""
        watchers = self.watchers.get(key)
        if watchers:
            for record in watchers:
                if record.expired_at_watch:
                    # Watched when already expired (touchWatchedKey): its deletion is no change,
                    # and from then on the key is simply absent.
                    if key not in self.data:
                        record.expired_at_watch = False
                    continue
                record.dirty = True
        if key in self.blocking_keys and key not in self.data:
            # A key that is gone is queued: only XREADGROUP readers are retried on it
            # (Block.retry_when_deleted), and end with an error, as a deleted stream wakes them
            # in Redis. A change in place queues nothing (signalModifiedKey is not
            # signalKeyAsReady): a waiter could only be served from a value that arrived by an
            # overwrite that woke no one, and Redis leaves it waiting.
            self.ready_keys.append((self, key))
        if self.tracking is not None:
            self.tracking.key_modified(key, True, expired)

    def signal_ready(self, key: bytes, value_type: type) -> None:
        """Queue key for its blocked clients, as Redis's signalKeyAsReady: a value of
        `value_type` was added there (or XADD appended, or a stream went). Only if some client
        blocks on the key, and some client on any key blocks for that type: a key queued for
        a sorted set no one waits for is not looked at again, even if by the time the waiters
        are served an overwrite made it a list."""
        if key in self.blocking_keys and self.blocked_types.get(value_type):
            self.ready_keys.append((self, key))

    def flush(self) -> None:
        touch_watched_keys(self, None)
        # Blocked readers hear of it too: XREADGROUP ends with an error when its stream goes.
        for key in [*self.watchers, *self.blocking_keys]:
            if key in self.data:
                if key in self.blocking_keys:
                    self.ready_keys.append((self, key))
                if self.tracking is not None:
                    self.tracking.key_modified(key)
        self.data = {}
        self.expires = {}
        self._expiry_heap = []
        if self.keytrack is not None:
            self.keytrack.flushed()

    # --- expiry ------------------------------------------------------------------------------

    def set_expiry(self, key: bytes, deadline_ms: int) -> None:
        """Expire key at the absolute time deadline_ms (the key must exist)."""
        self.expires[key] = deadline_ms
        if self.own_expires is not None:
            self.own_expires.add(key)
        heappush(self._expiry_heap, (deadline_ms, key))
        if len(self._expiry_heap) > 2 * len(self.expires) + 1024:
            self._expiry_heap = [(when, k) for k, when in self.expires.items()]
            heapify(self._expiry_heap)

    def expiry(self, key: bytes) -> int | None:
        return self.expires.get(key)

    def persist(self, key: bytes) -> bool:
        return self.expires.pop(key, None) is not None

    def _expire(self, key: bytes) -> None:
        value = self.data.pop(key)
        del self.expires[key]
        if self.on_freed is not None:
            self.on_freed(value, "expire")
        if self.keytrack is not None:
            self.keytrack.gone(key)
        if self.on_expired is not None:
            self.on_expired(self, key)
        if self.notifier is not None:
            self.notifier.key_expired(self, key)
        self.signal_modified(key, True)

    def active_expire(self, now_ms: int | None = None, limit: int = 10_000) -> int:
        """Delete up to `limit` keys whose deadline passed, so memory is freed for keys no
        client reads again. Returns how many were deleted."""
        if self.clock.loading:
            return 0
        now = self.clock.ms() if now_ms is None else now_ms
        if self.keep_expired:
            return self._expire_own_keys(now) if self.own_expires else 0
        heap = self._expiry_heap
        expires = self.expires
        removed = 0
        # Redis's activeExpireCycleTryExpire: expired once `now > when`, as a lookup judges.
        while heap and heap[0][0] < now and removed < limit:
            deadline, key = heappop(heap)
            if expires.get(key) == deadline:
                self._expire(key)
                removed += 1
        return removed


    def _expire_own_keys(self, now: int) -> int:
        """A replica's expiry cycle (expireSlaveKeys): the keys its own clients gave a TTL,
        forgotten once they have none."""
        own = self.own_expires
        expires = self.expires
        removed = 0
        for key in list(own):
            deadline = expires.get(key)
            if deadline is None:
                own.discard(key)
            elif now > deadline:
                own.discard(key)
                self._expire(key)
                removed += 1
        return removed


def touch_watched_keys(emptied: Database, replaced_with: Database | None) -> None:
    """FLUSHDB/FLUSHALL (replaced_with None) or SWAPDB empties `emptied` of what its watchers
    saw: Redis's touchAllWatchedKeysInDb. A watched key present on either side changes, except
    that an expired key is no key: one watched when already expired that is now gone, or
    replaced by another expired one, is no change, and a missing key replaced by an expired
    one is remembered as watched expired."""
    for key, records in emptied.watchers.items():
        exists_in_emptied = key in emptied.data
        replacement = replaced_with is not None and key in replaced_with.data
        if not (exists_in_emptied or replacement):
            continue
        replacement_expired = replacement and replaced_with.is_expired(key)
        for record in records:
            if record.expired_at_watch:
                if not replacement:
                    record.expired_at_watch = False
                    continue
                if replacement_expired:
                    continue
            elif not exists_in_emptied and replacement_expired:
                record.expired_at_watch = True
                continue
            record.dirty = True


class Keyspace:
    """All databases and the clock they share."""

    __slots__ = ("clock", "ready_keys", "blocked_types", "dbs")

    def __init__(self, databases: int = 16, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        # (Database, key) pairs touched while clients were blocked on them; drained by the server.
        self.ready_keys: list[tuple[Database, bytes]] = []
        # Value type -> clients blocked for it (Database.blocked_types), counted by the
        # blocking manager.
        self.blocked_types: dict[type, int] = {}
        self.dbs = [Database(i, self.clock, self.ready_keys, self.blocked_types)
                    for i in range(databases)]

    def __getitem__(self, index: int) -> Database:
        return self.dbs[index]

    def __len__(self) -> int:
        return len(self.dbs)

    def flushall(self) -> None:
        for db in self.dbs:
            db.flush()

    def changes(self) -> int:
        """Redis's server.dirty: the changes write commands made since start, every database's
        (dispatch.call counts them as the commands report them)."""
        return sum(db.dirty for db in self.dbs)

    def swap(self, a: int, b: int) -> None:
        """SWAPDB: exchange contents; watchers and waiters stay with the database number."""
        da, dbb = self.dbs[a], self.dbs[b]
        touch_watched_keys(da, dbb)
        touch_watched_keys(dbb, da)
        # The streams that clients wait on in each, by key (scanDatabaseForDeletedStreams):
        # those that are no stream after the swap end their XREADGROUP readers with an error.
        streams: list[dict] = []
        for db in (da, dbb):
            waited: dict = {}
            for key in db.blocking_keys:
                value = db.data.get(key)
                if _is_stream(value):
                    waited[key] = type(value)
            streams.append(waited)
        da.data, dbb.data = dbb.data, da.data
        da.expires, dbb.expires = dbb.expires, da.expires
        da._expiry_heap, dbb._expiry_heap = dbb._expiry_heap, da._expiry_heap
        da.own_expires, dbb.own_expires = dbb.own_expires, da.own_expires
        da.keytrack, dbb.keytrack = dbb.keytrack, da.keytrack  # (it describes the data)
        for db in (da, dbb):
            if db.keytrack is not None:
                db.keytrack.moved(db)
        for db, waited_streams in zip((da, dbb), streams):
            for key, stream_type in waited_streams.items():
                if not _is_stream(db.data.get(key)):
                    db.signal_ready(key, stream_type)
        for db in (da, dbb):
            # Then every waited key that holds a value, for that value's type
            # (scanDatabaseForReadyKeys): one of a type nobody blocks for is not queued, so not
            # looked up, nor expired; one that vanished is queued only if it was a stream.
            for key in db.blocking_keys:
                value = db.data.get(key)
                if value is not None:
                    db.signal_ready(key, type(value))

    def active_expire(self, limit: int = 10_000) -> int:
        now = self.clock.ms()
        return sum(db.active_expire(now, limit) for db in self.dbs if db.expires)
