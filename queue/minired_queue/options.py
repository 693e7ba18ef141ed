"""Settings, counters and small decisions shared by the synchronous and asyncio workers."""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from .checks import boolean, duration_ms, integer, optional_integer, seconds
from .job import Job
from .transitions import Fetch

log = logging.getLogger(__name__)

MAX_STACKTRACE_CHARS = 4000


@dataclass
class WorkerOptions:
    """``lock_ttl_ms``: how long a job stays owned without a heartbeat; the time a crashed
    worker's jobs wait before the sweep may recover them. ``heartbeat_interval_s``
    defaults to a third of the TTL, so two heartbeats can be missed before a lock lapses.
    ``sweep_interval_s``: how often this worker offers to sweep, fire repeatable ticks and
    apply retention (None: never); throttled queue-wide to the same interval.
    ``max_stalled``: how many stalls a job is recovered from; the stall after that fails it
    (BullMQ's maxStalledCount). It is a setting of the queue, stored with it: None (default)
    uses the queue's (1 unless ``Queue.configure(max_stalled=...)`` set it); a number is
    stored with the queue when the worker starts. ``block_timeout_s``: longest single
    blocking wait. ``shutdown_grace_s``: how long a stop waits for in-flight jobs before
    releasing them back to wait. ``burst``: stop once nothing is ready (delayed jobs stay).
    ``remove_on_complete``: delete a job's record as it completes. ``fail_fast``: at start,
    raise the connection error when the server cannot be reached, instead of waiting
    for it (the worker checks the server before it is ready either way)."""

    concurrency: int = 1
    lock_ttl_ms: int = 30_000
    heartbeat_interval_s: float | None = None
    sweep_interval_s: float | None = 5.0
    max_stalled: int | None = None
    block_timeout_s: float = 5.0
    shutdown_grace_s: float = 10.0
    remove_on_complete: bool = False
    burst: bool = False
    fail_fast: bool = False

    def __post_init__(self) -> None:
        integer("concurrency", self.concurrency, 1)
        duration_ms("lock_ttl_ms", self.lock_ttl_ms, 10)  # (the server refuses PX past 2**63)
        optional_integer("max_stalled", self.max_stalled)
        if self.heartbeat_interval_s is None:
            self.heartbeat_interval_s = self.lock_ttl_ms / 3000
        seconds("heartbeat_interval_s", self.heartbeat_interval_s)
        if self.heartbeat_interval_s * 1000 >= self.lock_ttl_ms:
            raise ValueError("heartbeat_interval_s must be shorter than the lock TTL")
        if self.sweep_interval_s is not None:
            seconds("sweep_interval_s", self.sweep_interval_s)
        seconds("block_timeout_s", self.block_timeout_s)
        seconds("shutdown_grace_s", self.shutdown_grace_s, zero=True)
        for name in ("remove_on_complete", "burst", "fail_fast"):
            boolean(name, getattr(self, name))


@dataclass
class WorkerStats:
    """What one worker did; cheap enough to read from a dashboard thread at any time."""

    fetched: int = 0
    completed: int = 0
    retried: int = 0
    failed: int = 0
    refused: int = 0  # outcomes the queue refused: the lock had lapsed or passed to another delivery
    released: int = 0  # handed back to wait at shutdown (no attempt counted)
    recovered: int = 0  # stalled jobs this worker's sweeps sent back to wait
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def bump(self, name: str, by: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + by)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


@dataclass
class Hooks:
    """Callbacks run in the worker (sync worker: in the job's thread). A hook that raises is
    logged and ignored: it must not change the job's recorded outcome."""

    on_completed: Callable[[Job, Any], Any] | None = None
    on_failed: Callable[[Job, BaseException, str], Any] | None = None  # status: 'retry' | 'failed'
    on_stalled: Callable[[list[str], list[str]], Any] | None = None  # recovered ids, failed ids
    on_lock_lost: Callable[[Job], Any] | None = None
    on_ready: Callable[[], Any] | None = None  # the server answered; the worker starts fetching


class Outage:
    """Whether a worker can reach its server, told once per outage: one warning when it is
    lost, one when it is back. Every retry would otherwise log the same error (with its
    chained traceback) from the fetch loop and the maintenance loop alike."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self.failures = 0  # failed calls, all outages together
        self._since: float | None = None
        self._lock = threading.Lock()

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def lost(self, exc: BaseException) -> None:
        with self._lock:
            self.failures += 1
            if self._since is not None:
                return
            self._since = time.monotonic()
        log.warning("worker %s cannot reach the server (%s: %s); retrying, backing off up to %g s",
                    self.worker_id, type(exc).__name__, exc, Reconnect.MOST_S)

    def ended(self) -> None:
        with self._lock:
            if self._since is None:
                return
            lasted, self._since = time.monotonic() - self._since, None
        log.warning("worker %s reaches the server again (unreachable for %.1f s)", self.worker_id, lasted)


class Reconnect:
    """Capped exponential backoff between attempts while the server is unreachable: a
    worker outlives a restart or failover instead of exiting. A fetch whose reply was lost
    may have moved a job into active under this worker's token; that job is recovered by
    the sweep once its lock lapses, so nothing is lost."""

    FIRST_S, MOST_S = 0.05, 5.0

    def __init__(self) -> None:
        self.delay_s = self.FIRST_S

    def failed(self) -> float:
        delay, self.delay_s = self.delay_s, min(self.delay_s * 2, self.MOST_S)
        return delay

    def succeeded(self) -> None:
        self.delay_s = self.FIRST_S


class Candidates:
    """The jobs a fetch loop names to moveToActive, and how many it asks to be told of.

    One worker alone needs only the tail. Workers racing for the same tail miss, and each
    miss is a round trip, so the width doubles on a miss and halves again after a run of
    fetches that hit at the first try."""

    MOST = 16
    CALM_FETCHES = 32

    def __init__(self) -> None:
        self.ids: tuple[str, ...] = ()
        self.width = 1
        self._calm = 0

    def took(self, fetch: Fetch, first_try: bool) -> None:
        self.ids = fetch.candidates
        self._calm = self._calm + 1 if first_try else 0
        if self._calm >= self.CALM_FETCHES and self.width > 1:
            self.width //= 2
            self._calm = 0

    def missed(self, fetch: Fetch) -> None:
        if self.ids:  # naming nothing (the first fetch) cannot hit: no sign of a race
            self.width = min(self.width * 2, self.MOST)
        self.ids = fetch.candidates

    def forget(self) -> None:
        self.ids = ()


WAKE_KEY_TTL_MS = 60_000


def wake_up(client: Any, wake_key: str) -> Any:
    """Interrupt a worker's blocking wait. The key expires in case the worker had already
    stopped waiting (and so will never pop it). Works for sync and asyncio clients: the
    pipeline's execute() is returned for the caller to await when needed."""
    pipe = client.pipeline(transaction=False)
    pipe.zadd(wake_key, {"stop": 0})
    pipe.pexpire(wake_key, WAKE_KEY_TTL_MS)
    return pipe.execute()


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(one-line reason, stack trace) as recorded on the job."""
    reason = f"{type(exc).__name__}: {exc}".replace("\r", " ").replace("\n", " ")
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return reason, trace[-MAX_STACKTRACE_CHARS:]


def block_timeout(fetch: Fetch, longest_s: float) -> float:
    """How long to block on the marker: until the next delayed job is due, capped."""
    timeout = longest_s
    if fetch.next_due_ms >= 0:
        timeout = min(timeout, (fetch.next_due_ms - fetch.now_ms) / 1000)
    # BZPOPMIN treats 0 as forever; round up to the millisecond it understands.
    return max(round(timeout, 3), 0.001)


def delayed_job_due(fetch: Fetch) -> bool:
    return 0 <= fetch.next_due_ms <= fetch.now_ms


class MaintenanceSchedule:
    """When a worker's maintenance loop renews locks and when it offers to sweep. A worker
    sweeps as soon as it starts (a restarted fleet recovers its predecessors' jobs at once),
    then every ``sweep_interval_s``; it wakes often enough for both."""

    def __init__(self, options: WorkerOptions, now: float) -> None:
        self.heartbeat_s = options.heartbeat_interval_s
        self.sweep_s = options.sweep_interval_s
        self.tick_s = min(self.heartbeat_s, self.sweep_s) if self.sweep_s else self.heartbeat_s
        self.next_heartbeat = now + self.heartbeat_s
        self.next_sweep = now

    def heartbeat_due(self, now: float) -> bool:
        if now < self.next_heartbeat:
            return False
        self.next_heartbeat = now + self.heartbeat_s
        return True

    def sweep_due(self, now: float) -> bool:
        if self.sweep_s is None or now < self.next_sweep:
            return False
        self.next_sweep = now + self.sweep_s
        return True
