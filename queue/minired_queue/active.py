"""What a handler receives: the job it holds under a lock, and the calls it may make.

``ActiveJob`` (plain handlers, synchronous calls) and ``AsyncActiveJob`` (``async def``
handlers, awaitable calls) differ only in that. Both carry:

* ``id``, ``data``, and ``job``: the ``Job`` record as delivered (the same class
  ``Queue.get_job`` returns, read when the job was handed out); its fields are also
  readable on the active job itself (``job.attempts_started`` ...);
* ``keys`` (the queue's key names: build effect keys from ``keys.base``) and ``redis``
  (a client of the matching kind);
* ``lock_lost``: True once a heartbeat found the lock gone or taken;
* ``apply_once(effect, *RedisOp)``, ``run_once(effect, fn)``: the effect guard;
* ``update_progress(value)``: any JSON value, readable as ``Job.progress``;
* ``log(line)``: a line for the job's log, shown on its dashboard page;
* ``children_results()``, ``children_failures()``: a flow parent's children's outcomes.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from .admin import LOG_LINES_KEPT
from .effects import AsyncEffectGuard, EffectGuard
from .flows import children_failures_steps, children_results_steps
from .job import Job
from .keys import QueueKeys
from .steps import drive, drive_async
from .transitions import DEFAULT_EVENTS_CAP, RedisOp, add_log, update_progress


class HeldJob:
    """The part both kinds share: the job, its lock token, the lock-lost flag."""

    def __init__(self, job: Job, token: str, keys: QueueKeys, client: Any,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.job = job
        self.token = token
        self.keys = keys
        self.redis = client
        self.events_cap = events_cap
        self._lock_lost = threading.Event()
        # Set once the handler has returned: the outcome script, not the heartbeat, now decides
        # whether this worker still owns the job (it may complete while a renewal is in flight).
        self.recording = False

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def data(self) -> Any:
        return self.job.data

    @property
    def lock_lost(self) -> bool:
        """True once a heartbeat found the lock gone or taken: another worker may now own
        this job, and this worker's outcome for it will be refused."""
        return self._lock_lost.is_set()

    def mark_lost(self) -> None:
        self._lock_lost.set()

    def __getattr__(self, name: str) -> Any:
        # The record's fields (name, attempts_made, priority, ...) read through.
        if name.startswith("_") or name == "job":
            raise AttributeError(name)
        return getattr(self.job, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, token={self.token!r})"


class ActiveJob(HeldJob):
    """A held job with synchronous calls: what a plain (non-async) handler receives, from
    the threaded worker and from the asyncio worker alike."""

    def __init__(self, job: Job, token: str, guard: EffectGuard, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        super().__init__(job, token, guard.keys, guard.client, events_cap)
        self._guard = guard

    def apply_once(self, effect: str, *ops: RedisOp) -> bool:
        return self._guard.apply_once(self.id, effect, ops, self.token)

    def run_once(self, effect: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        return self._guard.run_once(self.id, effect, fn, self.token)

    def update_progress(self, progress: Any) -> bool:
        """Record progress; False when this delivery no longer owns the job."""
        return update_progress(self.keys, self.id, self.token, progress).run(self.redis)

    def log(self, line: str) -> int:
        """Add a line to the job's log (its newest 1000 lines are kept, shown on the job's
        dashboard page, deleted with the job); returns the lines kept."""
        return add_log(self.keys, self.id, str(line), LOG_LINES_KEPT).run(self.redis)

    def children_results(self) -> dict[str, Any]:
        """A flow parent's completed children: {child job key: return value}."""
        return drive(children_results_steps(self.keys, self.id), self.redis)

    def children_failures(self) -> dict[str, str]:
        """A flow parent's children that failed for good or were removed: {child job key: reason}."""
        return drive(children_failures_steps(self.keys, self.id), self.redis)


class AsyncActiveJob(HeldJob):
    """A held job with awaitable calls: what an ``async def`` handler receives."""

    def __init__(self, job: Job, token: str, guard: AsyncEffectGuard, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        super().__init__(job, token, guard.keys, guard.client, events_cap)
        self._guard = guard

    async def apply_once(self, effect: str, *ops: RedisOp) -> bool:
        return await self._guard.apply_once(self.id, effect, ops, self.token)

    async def run_once(self, effect: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        return await self._guard.run_once(self.id, effect, fn, self.token)

    async def update_progress(self, progress: Any) -> bool:
        return await update_progress(self.keys, self.id, self.token, progress).run_async(self.redis)

    async def log(self, line: str) -> int:
        return await add_log(self.keys, self.id, str(line), LOG_LINES_KEPT).run_async(self.redis)

    async def children_results(self) -> dict[str, Any]:
        return await drive_async(children_results_steps(self.keys, self.id), self.redis)

    async def children_failures(self) -> dict[str, str]:
        return await drive_async(children_failures_steps(self.keys, self.id), self.redis)
