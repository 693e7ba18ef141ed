"""maxmemory: the memory figure eviction compares with maxmemory, key access tracking (OBJECT
IDLETIME/FREQ, LRU/LFU) and key eviction by maxmemory-policy, as Redis's evict.c does it.

The memory figure. Redis counts what its allocator hands out (zmalloc_used_memory); a Python
process's resident size follows its dataset in arena-sized steps and never shrinks when keys
go, so it cannot drive eviction. `used_memory` is instead modelled as Redis would count it: a
start-up base, each key's estimated allocation (its dict entry, key, value; a TTL's entry), and
the clients' query and output buffers. With maxmemory 0 nothing is kept: INFO walks the
keyspace when asked. With maxmemory set, each database keeps its keys' sizes, re-measuring
the keys commands looked up (Database.keytrack), so the figure is current before every
command at the cost of the keys each command touches.

Key access. A database's KeyTrack, once installed, hears of every lookup and write of a key
(Database.get/set) and records Redis's per-object `lru` field: the access time in seconds
(LRU) or the LFU log counter and its last decrement time in minutes (an LFU policy), with
Redis's algorithm (lfu-log-factor, lfu-decay-time). It is installed when maxmemory is set, or
the first time OBJECT IDLETIME/FREQ, RESTORE IDLETIME/FREQ or DEBUG OBJECT asks, so until then
lookups cost nothing; a key not seen since counts as accessed when the server started.

Eviction (performEvictions): before each command while maxmemory is set (the engine's
memory admission hook), and from a loop callback after CONFIG SET maxmemory (evictionTimeProc),
keys are deleted until the figure is under maxmemory: the best of an eviction pool of 16
(evictionPoolPopulate: maxmemory-samples keys sampled per database per round) for the LRU,
LFU and volatile-ttl policies, a random key per database in turn for the random ones; within
the time maxmemory-eviction-tenacity allows, the rest left to the callback. Each eviction is
an "evicted" keyspace event, a change for WATCH and client tracking, and a DEL in the AOF and
the replication stream; INFO counts it in evicted_keys.
"""
from __future__ import annotations

import random
import time
from itertools import islice
from typing import TYPE_CHECKING, Any

from minired.data.keyspace import Database
from minired.data.packed import live
from minired.data.quicklist import QuickList
from minired.features.notifications import EVICTED

if TYPE_CHECKING:
    from minired.engine.server import Server

# Redis's constants (evict.c, server.h).
EVPOOL_SIZE = 16
LFU_INIT_VAL = 5
_LRU_CLOCK_MAX = (1 << 24) - 1

# The model's allocations, as jemalloc would round Redis's (bytes).
STARTUP_MEMORY = 880 * 1024  # used_memory of a redis-server just started
_KEY_ENTRY = 24 + 16 + 8  # dictEntry, robj, a bucket of the keys' table
_EXPIRE_ENTRY = 24 + 8  # dictEntry and bucket in the expires table
_ELEMENT = 16  # per member of a collection (listpack/quicklist/dict entries, amortised)
_SAMPLED = 8  # members measured to estimate a collection
# Keys INFO measures one by one with maxmemory 0 (dataset_size); past them it extrapolates. A
# key costs 1-8 us to measure (a packed collection is unpacked to be sampled): at 20,000 an
# INFO on a big dataset took ~100 ms, and clients (BullMQ on each connection, monitoring every
# few seconds) call it. Redis's answer is an allocator counter read.
EXACT_KEYS = 1_000
CLIENTS_INTERVAL = 0.005  # seconds a clients_memory figure is reused


def _sds(length: int) -> int:
    """An sds string's allocation: header, bytes and terminator, in 8-byte classes."""
    return (length + 3 + 1 + 7) & ~7


def _member(item: Any) -> int:
    if type(item) is bytes:
        return len(item)
    if type(item) is tuple:
        return sum(_member(part) for part in item)
    return 8


def value_size(value: Any) -> int:
    """The estimated allocation of one value: exact for a string, from a sample of its first
    members for a collection (as MEMORY USAGE samples)."""
    if type(value) is bytes:
        return _sds(len(value))
    value = live(value)  # (the size Redis's encoding of it takes, whatever minired holds)
    count = len(value)
    if not count:
        return 64
    if type(value) is dict:
        sample = list(islice(value.items(), _SAMPLED))
    elif type(value) in (QuickList, set):
        sample = [item for _, item in zip(range(_SAMPLED), value)]
    else:  # sorted sets iterate (score, member); streams by their node list
        try:
            sample = [item for _, item in zip(range(_SAMPLED), value)]
        except TypeError:
            sample = []
    average = sum(_member(item) for item in sample) // len(sample) if sample else 32
    return 64 + count * (average + _ELEMENT)


def key_size(key: bytes, value: Any) -> int:
    return _KEY_ENTRY + _sds(len(key)) + value_size(value)


def dataset_size(data: dict) -> int:
    """The keys' sizes summed while maxmemory is 0 (nothing kept; INFO asks): exact up to
    EXACT_KEYS keys, beyond that the average of the first EXACT_KEYS times the count, so
    that INFO stays cheap on a big dataset."""
    if len(data) <= EXACT_KEYS:
        return sum(key_size(key, value) for key, value in data.items())
    measured = sum(key_size(key, value) for key, value in islice(data.items(), EXACT_KEYS))
    return measured * len(data) // EXACT_KEYS


class Dataset:
    """The keys' sizes summed over every database while maxmemory is set, and the KeyTracks
    with keys to measure again: the figure read before each command costs what changed."""

    __slots__ = ("total", "pending")

    def __init__(self) -> None:
        self.total = 0
        self.pending: list[KeyTrack] = []


class KeyTrack:
    """One database's per-key bookkeeping (Database.keytrack): access times or LFU counters,
    and while maxmemory is set each key's estimated size (its TTL's entry included)."""

    __slots__ = ("clock", "db", "dataset", "lfu", "log_factor", "decay_time", "epoch",
                 "access", "sizes", "total", "dirty")

    def __init__(self, clock: Any, db: Database, dataset: Dataset, epoch_s: int) -> None:
        self.clock = clock
        self.db = db  # the database whose data this describes (SWAPDB moves it: moved())
        self.dataset = dataset
        self.lfu = False
        self.log_factor = 10
        self.decay_time = 1
        # A key never seen counts as accessed then (seconds on the server clock).
        self.epoch = epoch_s
        # key -> seconds of its last access (LRU), or minutes << 8 | counter (LFU).
        self.access: dict[bytes, int] = {}
        # key -> estimated size, their sum, and keys to measure again; None while maxmemory
        # is 0.
        self.sizes: dict[bytes, int] | None = None
        self.total = 0
        self.dirty: set[bytes] | None = None

    # --- Database's calls ------------------------------------------------------------------

    def touch(self, key: bytes) -> None:
        self._accessed(key, self._lfu_accessed(key) if self.lfu else None)

    def created(self, key: bytes) -> None:
        """A value stored at key: a new object's field (createObject)."""
        self._accessed(key, (self._minutes() << 8) | LFU_INIT_VAL if self.lfu else None)

    def _accessed(self, key: bytes, lfu: int | None) -> None:
        """Record the key's access (its LFU field, or now for LRU) and mark its size for
        re-measuring."""
        self.access[key] = lfu if lfu is not None else self.clock.expiry_now() // 1000
        dirty = self.dirty
        if dirty is not None:
            if not dirty:
                self.dataset.pending.append(self)
            dirty.add(key)

    def gone(self, key: bytes) -> None:
        self.access.pop(key, None)
        if self.sizes is not None:
            size = self.sizes.pop(key, 0)
            self.total -= size
            self.dataset.total -= size
            self.dirty.discard(key)

    def flushed(self) -> None:
        self.access.clear()
        if self.sizes is not None:
            self.sizes.clear()
            self.dirty.clear()
            self.dataset.total -= self.total
            self.total = 0

    def moved(self, db: Database) -> None:
        """SWAPDB: the data this describes is db's now."""
        self.db = db

    # --- sizes -------------------------------------------------------------------------------

    def keep_sizes(self) -> None:
        """Keep sizes (maxmemory set), every key measured now."""
        self.drop_sizes()
        expires = self.db.expires
        self.sizes = {key: key_size(key, value) + (_EXPIRE_ENTRY if key in expires else 0)
                      for key, value in self.db.data.items()}
        self.total = sum(self.sizes.values())
        self.dataset.total += self.total
        self.dirty = set()

    def drop_sizes(self) -> None:
        if self.sizes is not None:
            self.dataset.total -= self.total
        self.sizes = self.dirty = None
        self.total = 0

    def measure(self) -> None:
        """Measure again the keys looked up or written since the last time."""
        sizes = self.sizes
        data = self.db.data
        expires = self.db.expires
        change = 0
        for key in self.dirty:
            value = data.get(key)
            before = sizes.get(key, 0)
            if value is None:
                sizes.pop(key, None)
                change -= before
            else:
                if type(value) is bytes:  # (key_size inlined for the commonest value)
                    size = _KEY_ENTRY + ((len(key) + 11) & ~7) + ((len(value) + 11) & ~7)
                else:
                    size = key_size(key, value)
                if key in expires:
                    size += _EXPIRE_ENTRY
                sizes[key] = size
                change += size - before
        self.total += change
        self.dataset.total += change
        self.dirty.clear()

    # --- LRU / LFU (evict.c, object.c) -------------------------------------------------------

    def idle_ms(self, key: bytes) -> int:
        """estimateObjectIdleTime: ms since the key's last access, in whole seconds."""
        now = (self.clock.expiry_now() // 1000) & _LRU_CLOCK_MAX
        last = self.access.get(key, self.epoch) & _LRU_CLOCK_MAX
        idle = now - last if now >= last else now + (_LRU_CLOCK_MAX - last)
        return idle * 1000

    def lru_field(self, key: bytes) -> int:
        """The object's 24-bit lru field, as DEBUG OBJECT prints it."""
        if self.lfu:
            return self._packed(key)
        return self.access.get(key, self.epoch) & _LRU_CLOCK_MAX

    def _minutes(self) -> int:
        return (self.clock.expiry_now() // 60_000) & 65535

    def _packed(self, key: bytes) -> int:
        packed = self.access.get(key)
        if packed is None:  # never seen: as a new object's counter
            return (self._minutes() << 8) | LFU_INIT_VAL
        return packed

    def frequency(self, key: bytes) -> int:
        """LFUDecrAndReturn: the counter, less one per lfu-decay-time minutes since its last
        decrement (nothing is stored: OBJECT FREQ and sampling only read it)."""
        packed = self._packed(key)
        ldt, counter = packed >> 8, packed & 255
        now = self._minutes()
        elapsed = now - ldt if now >= ldt else 65535 - ldt + now
        periods = elapsed // self.decay_time if self.decay_time else 0
        if periods:
            counter = 0 if periods > counter else counter - periods
        return counter

    def _lfu_accessed(self, key: bytes) -> int:
        """updateLFU: decay, then LFULogIncr (the higher the counter, the less likely a step)."""
        counter = self.frequency(key)
        if counter < 255:
            base = max(counter - LFU_INIT_VAL, 0)
            if random.random() < 1.0 / (base * self.log_factor + 1):
                counter += 1
        return (self._minutes() << 8) | counter

    def set_idle(self, key: bytes, idle_s: int) -> None:
        """RESTORE ... IDLETIME (objectSetLRUOrLFU)."""
        now = self.clock.expiry_now() // 1000
        self.access[key] = max(now - idle_s, 0)

    def set_frequency(self, key: bytes, counter: int) -> None:
        """RESTORE ... FREQ."""
        self.access[key] = (self._minutes() << 8) | counter


class Eviction:
    """One server's memory figure (Server.memory) and eviction."""

    __slots__ = ("server", "epoch", "pool", "next_db", "samples_of", "evicting",
                 "_policy", "startup", "peak", "clients_value", "clients_taken", "dataset",
                 "clients_evicted")

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.epoch = server.clock.ms() // 1000
        # [score, db index, key], ascending: the best candidate last (EvictionPoolLRU).
        self.pool: list[list] = []
        self.next_db = 0  # the random policies' turn over databases
        # id of a sampled dict -> (that dict, its keys as a list, draws left before renewal)
        self.samples_of: dict[int, tuple[dict, list, int]] = {}
        self.evicting = False  # the evictionTimeProc callback is scheduled
        self._policy = ""
        self.startup = STARTUP_MEMORY  # INFO used_memory_startup
        self.peak = STARTUP_MEMORY  # INFO used_memory_peak: the largest figure reported
        self.clients_value = 0
        self.clients_taken = float("-inf")
        self.clients_evicted = 0  # client eviction's count when clients_value was taken
        self.dataset = Dataset()

    # --- the memory figure -------------------------------------------------------------------

    def used(self) -> int:
        """used_memory: the start-up base, the keys, the clients' buffers."""
        dataset = self.dataset
        if dataset.pending:
            pending, dataset.pending = dataset.pending, []
            for track in pending:
                if track.dirty:
                    track.measure()
        now = time.monotonic()
        if now - self.clients_taken >= CLIENTS_INTERVAL:
            # (visits every connection and database: at most every CLIENTS_INTERVAL)
            self.clients_value = clients_memory(self.server)
            self.clients_taken = now
            self._reconcile()
        total = STARTUP_MEMORY + self.clients_value
        if self.server.config.maxmemory:
            total += dataset.total
        else:
            for db in self.server.keyspace.dbs:
                if db.data:
                    total += dataset_size(db.data) + len(db.expires) * _EXPIRE_ENTRY
        if total > self.peak:
            self.peak = total
        return total

    def client_left(self, client) -> None:
        """A client left: the next figure counts the clients afresh. Its buffers were in the
        figure, which Redis frees at once (freeClient): reused for CLIENTS_INTERVAL, they would
        evict keys written right after, as unit/maxmemory's next test does under load."""
        self.clients_taken = float("-inf")

    def _reconcile(self) -> None:
        """Keys stored behind the trackers' backs (an RDB load) are measured afresh."""
        for db in self.server.keyspace.dbs:
            track = db.keytrack
            if track is not None and track.sizes is not None and \
                    len(track.sizes) != len(db.data):
                if track.dirty:
                    track.measure()
                if len(track.sizes) != len(db.data):
                    track.keep_sizes()

    def not_counted(self) -> int:
        """freeMemoryGetNotCountedMemory: the AOF buffer (DELs of evicted keys land there)."""
        persistence = self.server.features.persistence
        if persistence is None:
            return 0
        return sum(map(len, persistence.aof_buffer))

    # --- configuration -----------------------------------------------------------------------

    def configure(self) -> None:
        """maxmemory, maxmemory-policy or the LFU parameters changed (or start-up)."""
        config = self.server.config
        policy = config.get("maxmemory-policy") or "noeviction"
        lfu = policy.endswith("-lfu")
        if policy != self._policy:
            self.pool.clear()
        self._policy = policy
        for db in self.server.keyspace.dbs:
            track = db.keytrack
            if track is None:
                if not config.maxmemory:
                    continue
                track = self.track(db)
            self._tune(track, lfu)
            if config.maxmemory and track.sizes is None:
                track.keep_sizes()
            elif not config.maxmemory and track.sizes is not None:
                track.drop_sizes()
        if config.maxmemory:
            self.kick()

    def _tune(self, track: KeyTrack, lfu: bool) -> None:
        config = self.server.config
        if track.lfu != lfu:
            # The other field's meaning: what was recorded says nothing now (Redis would
            # read its bits as the other kind); keys count as seen now.
            track.access.clear()
            track.epoch = self.server.clock.ms() // 1000
        track.lfu = lfu
        track.log_factor = int(config.get("lfu-log-factor") or 10)
        track.decay_time = int(config.get("lfu-decay-time") or 1)

    def track(self, db: Database) -> KeyTrack:
        """db's KeyTrack, installed on first need."""
        track = db.keytrack
        if track is None:
            track = db.keytrack = KeyTrack(self.server.clock, db, self.dataset, self.epoch)
            self._tune(track, (self.server.config.get("maxmemory-policy") or "").endswith("-lfu"))
        return track

    # --- performEvictions --------------------------------------------------------------------

    def admit(self) -> bool:
        """The memory admission hook (hooks.MemoryAdmission): evict as the policy allows; True if still over maxmemory
        with nothing left to evict (EVICT_FAIL). (Under maxmemory, the usual case, it costs
        the figure and one comparison.)"""
        clients = self.server.hooks.client_eviction
        if clients is not None and clients.evicted != self.clients_evicted:
            # evictClients came first (dispatch asks it before this, as processCommand does):
            # the clients' buffers over maxmemory-clients went before any key may, and the
            # clients' figure is taken again without them.
            self.clients_evicted = clients.evicted
            self.clients_taken = float("-inf")
        if self.used() <= self.server.config.maxmemory:
            return False
        return self.perform() == _FAIL

    def perform(self) -> int:
        server = self.server
        maxmemory = server.config.maxmemory
        if not maxmemory or server.clock.loading or server.keyspace.dbs[0].keep_expired:
            return _OK  # (isSafeToPerformEvictions: loading, or CLIENT PAUSE holds the data)
        if server.config.replicating and server.config.get("replica-ignore-maxmemory") == "yes":
            return _OK
        used = self.used()
        if used <= maxmemory:
            return _OK
        used -= self.not_counted()
        if used <= maxmemory:
            return _OK
        policy = self._policy
        if policy == "noeviction":
            return _FAIL
        to_free = used - maxmemory
        freed = 0
        limit_us = _time_limit_us(int(server.config.get("maxmemory-eviction-tenacity") or 0))
        started = time.perf_counter()
        evicted = 0
        result = _OK
        while freed < to_free:
            picked = self._pick(policy)
            if picked is None:
                result = _FAIL
                break
            freed += self._evict(*picked)
            evicted += 1
            if evicted % 16 == 0 and (time.perf_counter() - started) * 1e6 > limit_us:
                if self.used() - self.not_counted() > maxmemory:
                    self.kick()
                    result = _RUNNING
                break
        if evicted:
            persistence = server.features.persistence
            if persistence is not None:
                persistence.flush_aof(False)  # the DELs go out before the command's writes
            if server.tracking is not None:
                server.tracking.send_pending()  # invalidations before the command's reply
        return result

    def kick(self) -> None:
        """startEvictionTimeProc: keep evicting from the loop until under maxmemory."""
        loop = self.server.loop
        if self.evicting or loop is None:
            return
        self.evicting = True
        loop.call_soon(self._time_proc)

    def _time_proc(self) -> None:
        self.evicting = False
        if self.perform() == _RUNNING:
            self.kick()

    def _pick(self, policy: str) -> tuple[Database, bytes] | None:
        dbs = self.server.keyspace.dbs
        allkeys = policy.startswith("allkeys")
        if policy.endswith("random"):
            count = len(dbs)
            for _ in range(count):
                self.next_db = (self.next_db + 1) % count
                db = dbs[self.next_db]
                candidates = db.data if allkeys else db.expires
                if candidates:
                    return db, self._sample(candidates, 1)[0]
            return None
        pool = self.pool
        while True:
            total = 0
            for db in dbs:
                candidates = db.data if allkeys else db.expires
                if candidates:
                    self._populate(db, candidates, policy)
                    total += len(candidates)
            if not total:
                return None
            while pool:
                _, index, key = pool.pop()
                db = dbs[index]
                if key in (db.data if allkeys else db.expires):
                    return db, key
            # (every entry was a ghost: sample again)

    def _populate(self, db: Database, candidates: dict, policy: str) -> None:
        """evictionPoolPopulate: score maxmemory-samples keys, keep the best EVPOOL_SIZE."""
        samples = int(self.server.config.get("maxmemory-samples") or 5)
        track = self.track(db) if not policy.endswith("ttl") else None
        pool = self.pool
        for key in self._sample(candidates, samples):
            if track is None:
                score = -db.expires[key]  # the sooner it expires, the better
            elif track.lfu:
                score = 255 - track.frequency(key)
            else:
                score = track.idle_ms(key)
            if any(entry[2] == key and entry[1] == db.index for entry in pool):
                continue
            if len(pool) >= EVPOOL_SIZE:
                if score <= pool[0][0]:
                    continue
                pool.pop(0)  # the worst candidate makes room
            position = len(pool)
            while position and pool[position - 1][0] >= score:
                position -= 1
            pool.insert(position, [score, db.index, key])

    def _sample(self, candidates: dict, count: int) -> list:
        """dictGetSomeKeys: `count` keys drawn at random. A dict has no random access: the
        draws come from a list of its keys, renewed once it has served about as many draws
        as it has keys (keys deleted since are ghosts, skipped by the caller)."""
        if len(candidates) <= count:
            return list(candidates)
        entry = self.samples_of.get(id(candidates))
        if entry is None or entry[0] is not candidates or entry[2] <= 0:
            keys = list(candidates)
            entry = (candidates, keys, len(keys))
        source, keys, left = entry
        self.samples_of[id(candidates)] = (source, keys, left - count)
        drawn = [key for key in random.sample(keys, count) if key in candidates]
        return drawn or list(candidates)[:count]

    def _evict(self, db: Database, key: bytes) -> int:
        """Delete one key for memory (dbGenericDelete with DB_FLAG_KEY_EVICTED): what it
        frees, its evicted event, and its DEL for the AOF and replicas."""
        track = self.track(db)
        if track.sizes is not None:
            if key in track.dirty:
                track.measure()
            freed = track.sizes.get(key, 0)
        else:
            freed = key_size(key, db.data[key]) + (_EXPIRE_ENTRY if key in db.expires else 0)
        value = db.data.pop(key)
        if db.expires:
            db.expires.pop(key, None)
        if db.on_freed is not None:
            db.on_freed(value, "eviction")
        track.gone(key)
        server = self.server
        server.stats.evicted_keys += 1
        db.signal_modified(key)  # WATCH, blocked clients, tracking invalidation
        if db.notifier is not None:
            db.notifier.emit(EVICTED, b"evicted", key, db.index)
        if db.on_expired is not None:
            db.on_expired(db, key)  # logged as the DEL propagateDeletion sends
        return freed


_OK, _RUNNING, _FAIL = 0, 1, 2


def _time_limit_us(tenacity: int) -> float:
    """evictionTimeLimitUs: how long one performEvictions may run."""
    if tenacity <= 10:
        return 50.0 * tenacity
    if tenacity < 100:
        return 500.0 * 1.15 ** (tenacity - 10)
    return float("inf")


def clients_memory(server: "Server") -> int:
    """The normal clients' query buffers and the replies waiting in their output."""
    total = 0
    for client in server.clients.values():
        conn = client.connection
        if conn is None or client.flags in ("S", "M"):  # replicas' buffers are not counted
            continue
        total += conn.qb_alloc
        buffered = conn._transport_buffered
        if buffered is not None:
            try:
                total += buffered()
            except Exception:  # a transport closing under us
                pass
        if conn.outbox:
            total += sum(len(chunk) for chunk in conn.outbox if type(chunk) is bytes)
    return total


# --- what the commands ask -------------------------------------------------------------------

def of(server: "Server") -> Eviction:
    memory = server.memory
    if type(memory) is not Eviction:
        memory = attach(server)
    return memory


def tracker(server: "Server", db: Database) -> KeyTrack:
    """db's access tracking, started now if nothing needed it yet (OBJECT IDLETIME ...)."""
    return of(server).track(db)


def attach(server: "Server") -> Eviction:
    """Make the server's memory figure the modelled one and evict before commands."""
    memory = server.memory
    if type(memory) is Eviction:
        return memory
    eviction = Eviction(server)
    server.memory = eviction
    server.hooks.add(server.hooks.disconnect, eviction.client_left)
    server.memory_admission = eviction.admit
    eviction.configure()
    return eviction


def configure(server: "Server") -> None:
    """CONFIG SET of maxmemory, maxmemory-policy, lfu-log-factor or lfu-decay-time."""
    of(server).configure()
