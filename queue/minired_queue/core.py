"""Everything a worker decides, written once for the threaded and the asyncio worker.

``WorkerCore`` holds a worker's identity, counters and options, and gives each of its
duties as a step generator (``steps.py``): fetching under the candidate protocol and
the marker wait, recording an outcome, renewing locks, releasing at shutdown, and the
periodic maintenance (sweep, repeatable ticks, retention). ``worker.Worker`` drives the
steps with threads, ``aio.AsyncWorker`` with tasks; neither repeats a decision.
"""
from __future__ import annotations

import inspect
import logging
from typing import Any, Iterable

from .active import HeldJob
from .errors import UnrecoverableError
from .job import Job
from .keys import QueueKeys
from .options import (
    Candidates,
    Hooks,
    WorkerOptions,
    WorkerStats,
    block_timeout,
    delayed_job_due,
    describe_error,
    new_worker_id,
)
from .repeat import fire_steps
from .steps import Command, Hook, Steps
from .sweeper import promote_steps, retention_steps, sweep_steps
from .transitions import (
    DEFAULT_EVENTS_CAP,
    SweepResult,
    complete,
    extend_lock,
    move_to_active,
    release,
    retry_or_fail,
    worker_heartbeat,
)

log = logging.getLogger(__name__)


class WorkerCore:
    def __init__(self, keys: QueueKeys, options: WorkerOptions, hooks: Hooks,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.keys = keys
        self.options = options
        self.hooks = hooks
        self.events_cap = events_cap
        self.id = new_worker_id()
        self.stats = WorkerStats()
        self.candidates = Candidates()
        self.drained = False  # burst mode: the queue had nothing ready
        self._tokens = 0

    def next_token(self) -> str:
        self._tokens += 1
        return f"{self.id}:{self._tokens}"

    # --- start ----------------------------------------------------------------------------
    def setup(self) -> Steps[None]:
        """A worker given an explicit stall limit stores it with the queue, where every
        sweeper (other workers, ``Queue.sweep``, the CLI) reads it."""
        if self.options.max_stalled is not None:
            yield Command("hset", self.keys.meta, "maxStalled", self.options.max_stalled)
        yield from self.announce(0)

    def announce(self, running: int) -> Steps[None]:
        """List this worker in the queue's registry (``keys.workers``) for one lock TTL more:
        what dashboards show as the queue's live workers. Sent with every heartbeat."""
        yield worker_heartbeat(self.keys, self.id, self.options.lock_ttl_ms,
                               {"concurrency": self.options.concurrency, "running": running,
                                "lock_ttl_ms": self.options.lock_ttl_ms})

    # --- fetching -------------------------------------------------------------------------
    def fetch(self, stopping: Any) -> Steps[tuple[Job, str] | None]:
        """moveToActive until a job is taken (returns it and its token) or ``stopping()``.
        Between empty fetches it sleeps on the marker (and its own wake key)."""
        candidates = self.candidates
        first_try = True
        while not stopping():
            token = self.next_token()
            fetch = yield move_to_active(self.keys, candidates.ids, token, self.options.lock_ttl_ms,
                                         candidates.width)
            due = delayed_job_due(fetch)
            if due:
                yield from promote_steps(self.keys)
            if fetch.status == "active":
                candidates.took(fetch, first_try)
                self.stats.bump("fetched")
                return fetch.job, token
            if fetch.status == "miss":
                candidates.missed(fetch)
                first_try = False
                continue
            candidates.forget()
            first_try = True
            if due:
                continue
            if fetch.status == "empty" and self.options.burst:
                self.drained = True
                return None
            wake = self.keys.wake(self.id)
            if fetch.status == "limited":
                # Only the wake key: the marker may stay set for others while the window lasts.
                timeout = min(fetch.retry_after_ms / 1000, self.options.block_timeout_s)
                yield Command("bzpopmin", [wake], timeout=max(round(timeout, 3), 0.001))
            else:
                yield Command("bzpopmin", [self.keys.marker, wake],
                              timeout=block_timeout(fetch, self.options.block_timeout_s))
        return None

    # --- outcomes -------------------------------------------------------------------------
    def record_success(self, active: HeldJob, result: Any) -> Steps[None]:
        active.recording = True
        if (yield complete(self.keys, active.job, active.token, result, self.options.remove_on_complete,
                           self.events_cap)):
            self.stats.bump("completed")
            yield Hook(self.hooks.on_completed, (active.job, result))
        else:
            yield from self._refused(active)

    def record_failure(self, active: HeldJob, exc: BaseException) -> Steps[None]:
        active.recording = True
        reason, trace = describe_error(exc)
        outcome = yield retry_or_fail(self.keys, active.job, active.token, reason, trace,
                                      unrecoverable=isinstance(exc, UnrecoverableError), events_cap=self.events_cap)
        if outcome.status == "lost":
            yield from self._refused(active)
            return
        self.stats.bump("retried" if outcome.status == "retry" else "failed")
        yield Hook(self.hooks.on_failed, (active.job, exc, outcome.status))

    def _refused(self, active: HeldJob) -> Steps[None]:
        self.stats.bump("refused")
        log.warning("job %s: lock lost, outcome discarded (another delivery owns it)", active.id)
        yield Hook(self.hooks.on_lock_lost, (active.job,))

    # --- maintenance ----------------------------------------------------------------------
    def renew_locks(self, held: Iterable[HeldJob]) -> Steps[None]:
        held = list(held)
        yield from self.announce(len(held))
        for active in held:
            if active.lock_lost or active.recording:
                continue
            if not (yield extend_lock(self.keys, active.id, active.token, self.options.lock_ttl_ms)):
                if active.recording:
                    continue  # completed meanwhile: the lock went with the job
                active.mark_lost()
                log.warning("job %s: lock lost before it finished", active.id)

    def sweep(self, throttle_ms: int = 0) -> Steps[SweepResult | None]:
        """The recovery sweep; None when another sweeper had the turn (throttled)."""
        result = yield from sweep_steps(self.keys, throttle_ms, self.events_cap)
        if result and (result.recovered or result.failed):
            self.stats.bump("recovered", len(result.recovered))
            yield Hook(self.hooks.on_stalled, (result.recovered, result.failed))
        return result

    def housekeeping(self, throttle_ms: int) -> Steps[None]:
        """One maintenance turn: sweep, then (if this worker had the fleet's turn) repeatable
        ticks and retention. Ticks are fired two intervals ahead, as delayed jobs."""
        if (yield from self.sweep(throttle_ms)) is None:
            return
        yield from fire_steps(self.keys, max(2 * throttle_ms, 1000), self.events_cap)
        yield from retention_steps(self.keys)

    # --- shutdown -------------------------------------------------------------------------
    def release(self, unfinished: Iterable[HeldJob]) -> Steps[None]:
        """Hand jobs still running after the grace period back to the front of their line,
        then leave the worker registry (the last step of every stop)."""
        for active in list(unfinished):
            # The handler may still finish later; its outcome will then be refused.
            active.mark_lost()
            if (yield release(self.keys, active.id, active.token)):
                self.stats.bump("released")
        yield Command("zrem", self.keys.workers, self.id)
        yield Command("delete", self.keys.worker(self.id))


def is_async_handler(handler: Any) -> bool:
    """``async def`` functions, and objects whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))


def plain_result(result: Any) -> Any:
    """A plain handler's result; an awaitable one means the handler is really async and
    its work would never run: fail the job loudly instead of recording it done."""
    if inspect.isawaitable(result):
        getattr(result, "close", lambda: None)()
        raise TypeError("the handler returned an awaitable; declare it `async def` so the asyncio worker awaits it")
    return result
