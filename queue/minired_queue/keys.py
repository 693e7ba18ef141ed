"""Key names of one queue.

Every key of a queue carries the queue's name as its hash tag (``emq:{name}:…``), so
all of them hash to one Redis Cluster slot and a Lua script may touch any set of them.
Scripts never build key names themselves: the client builds them here and passes them
in KEYS, which is what Redis Cluster (and any proxy that routes by declared keys)
requires.
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "emq"


@dataclass(frozen=True)
class QueueKeys:
    name: str
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "{}"):
            raise ValueError(f"queue name must be non-empty and free of braces: {self.name!r}")
        if any(c in self.prefix for c in "{}:"):
            raise ValueError(f"key prefix must be free of braces and colons: {self.prefix!r}")

    @property
    def base(self) -> str:
        return f"{self.prefix}:{{{self.name}}}"

    def _key(self, suffix: str) -> str:
        return f"{self.base}:{suffix}"

    # --- lists and sets that hold job ids, one per state -----------------------------
    @property
    def wait(self) -> str:
        """List; producers LPUSH, workers take from the tail (FIFO)."""
        return self._key("wait")

    @property
    def prioritized(self) -> str:
        """Sorted set of ready jobs with a priority, score = priority * 2**32 + a counter:
        lower priorities first, FIFO within one. Taken only when wait is empty."""
        return self._key("prioritized")

    @property
    def active(self) -> str:
        """List of jobs some worker holds a lock on (or held one until it expired)."""
        return self._key("active")

    @property
    def delayed(self) -> str:
        """Sorted set, score = server time (ms) at which the job becomes due."""
        return self._key("delayed")

    @property
    def completed(self) -> str:
        """Sorted set, score = server time (ms) of completion."""
        return self._key("completed")

    @property
    def failed(self) -> str:
        """Sorted set (the dead letter set), score = server time (ms) of final failure."""
        return self._key("failed")

    # --- queue-wide bookkeeping ----------------------------------------------------------
    @property
    def meta(self) -> str:
        """Hash of queue settings: ``paused`` (present while paused), ``maxStalled``,
        ``concurrency``, ``rateMax``/``rateDuration``, retention, and the priority counter."""
        return self._key("meta")

    @property
    def limiter(self) -> str:
        """The rate limiter's counter: jobs handed out in the current window (its PX)."""
        return self._key("limiter")

    @property
    def history(self) -> str:
        """Hash of per-minute counts and processing-time buckets, the last hour only."""
        return self._key("history")

    @property
    def repeat(self) -> str:
        """Sorted set of repeatable jobs: repeat key -> next tick (server ms)."""
        return self._key("repeat")

    def repeat_spec(self, repeat_key: str) -> str:
        """Hash describing one repeatable job: its schedule and the options of its instances."""
        return self._key(f"repeat:{repeat_key}")

    @property
    def marker(self) -> str:
        """Sorted set with at most one member; workers BZPOPMIN it to sleep until work arrives."""
        return self._key("marker")

    @property
    def metrics(self) -> str:
        """Hash of monotonically increasing counters (added, completed, failed, ...)."""
        return self._key("metrics")

    @property
    def events(self) -> str:
        """Stream of job events, capped (XADD MAXLEN ~)."""
        return self._key("events")

    @property
    def progress(self) -> str:
        """Stream of progress reports, capped on its own (XADD MAXLEN ~), so a chatty
        handler cannot push the job events out of the events stream."""
        return self._key("progress")

    @property
    def stalled_check(self) -> str:
        """Throttle key (SET NX PX) so many workers do not all sweep at once."""
        return self._key("stalled-check")

    @property
    def workers(self) -> str:
        """Sorted set of workers: worker id -> last heartbeat (server ms). A worker is alive
        while its ``worker`` hash exists (it expires a lock TTL after the last beat)."""
        return self._key("workers")

    def worker(self, worker_id: str) -> str:
        """Hash a live worker keeps (with a PX) saying what it is: concurrency, running, ..."""
        return self._key(f"worker:{worker_id}")

    def wake(self, worker_id: str) -> str:
        """A worker's private wake-up key, blocked on together with the marker."""
        return self._key(f"wake:{worker_id}")

    @property
    def waiting_children(self) -> str:
        """Sorted set of flow parents waiting for their children; score = when added (server ms)."""
        return self._key("waiting-children")

    # --- groups (lua/includes/pushReady.lua) --------------------------------------------
    @property
    def group_wait(self) -> str:
        """Sorted set of grouped ready jobs, all scores 0, members ``<group>\\0<seq>\\0<id>``
        (seq zero-padded to 16 digits): each group's line is one lexicographic range."""
        return self._key("group-wait")

    @property
    def groups(self) -> str:
        """Sorted set of the groups with ready jobs, score = their turn in the rotation."""
        return self._key("groups")

    @property
    def group_active(self) -> str:
        """Sorted set (scores 0) of ``<group>\\0<id>`` for grouped jobs handed out under a
        per-group concurrency limit; members whose job left active are pruned lazily."""
        return self._key("group-active")

    @property
    def group_rate(self) -> str:
        """Hash of per-group rate windows: ``c\\0<group>`` jobs started, ``e\\0<group>`` end (server ms)."""
        return self._key("group-rate")

    # --- per job ------------------------------------------------------------------------
    def own_keys(self) -> tuple[str, ...]:
        """Keys only a queue in use has: its state containers, settings, counters and
        schedules (not the marker, wake or stalled-check keys an idle worker may leave)."""
        return (self.wait, self.prioritized, self.active, self.delayed, self.completed, self.failed,
                self.meta, self.metrics, self.repeat)

    def job(self, job_id: str) -> str:
        """Hash with the job's payload, options and outcome."""
        return self._key(f"job:{job_id}")

    def lock(self, job_id: str) -> str:
        """String holding the owning worker's token, with a PX expiry. Its own namespace
        (not ``job:<id>:lock``), so no job id can make a job hash collide with a lock."""
        return self._key(f"lock:{job_id}")

    def logs(self, job_id: str) -> str:
        """List of the lines a handler logged for a job (``job.log``), capped; deleted with it."""
        return self._key(f"logs:{job_id}")

    def dedup(self, dedup_id: str) -> str:
        """Dedup marker (SET NX PX); its value is the job id that holds it."""
        return self._key(f"de:{dedup_id}")

    def effect(self, job_id: str, effect_name: str) -> str:
        """Effect-guard marker: a dedup marker whose id is ``<job id>:<effect name>``."""
        return self.dedup(f"{job_id}:{effect_name}")

    def effects(self, job_id: str) -> str:
        """Set of the names of the effect markers the guard took for a job (so the dashboard
        finds them without a SCAN); it expires with the longest-lived of them."""
        return self._key(f"effects:{job_id}")


    # --- per flow parent (all in the parent's queue, so in its slot) ----------------------
    def dependencies(self, parent_id: str) -> str:
        """Set of a flow parent's children not yet finished, each named by its job key."""
        return self._key(f"deps:{parent_id}")

    def children_results(self, parent_id: str) -> str:
        """Hash: child job key -> its return value (JSON), for each completed child."""
        return self._key(f"results:{parent_id}")

    def children_failures(self, parent_id: str) -> str:
        """Hash: child job key -> its failure reason, for each child that failed for good
        (or was removed)."""
        return self._key(f"failures:{parent_id}")


def job_key_parts(job_key: str) -> tuple[str, str, str]:
    """(prefix, queue name, job id) of a job key ``<prefix>:{<queue>}:job:<id>``: names are
    free of braces, so the braces delimit the queue name whatever else it holds."""
    prefix, _, rest = job_key.partition(":{")
    name, _, tail = rest.partition("}:job:")
    if not prefix or not name or not tail:
        raise ValueError(f"not a job key: {job_key!r}")
    return prefix, name, tail


def registry_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Set of known queue names (used by the CLI to list queues). Deliberately outside any
    queue's slot: it is only touched by plain SADD/SMEMBERS, never inside a script."""
    return f"{prefix}:queues"
