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

from redis.exceptions import ConnectionError, TimeoutError

from .active import HeldJob
from .checks import integer, to_json
from .errors import JobTimeoutError, UnreadableJobError, UnrecoverableError
from .flows import report_to_parent_steps
from .job import Job
from .keys import QueueKeys
from .options import (
    Candidates,
    Hooks,
    Outage,
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

# What a worker waits out (backing off, one log line per outage) instead of failing on.
UNREACHABLE = (ConnectionError, TimeoutError)


class WorkerCore:
    def __init__(self, keys: QueueKeys, options: WorkerOptions, hooks: Hooks,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.keys = keys
        self.options = options
        self.hooks = hooks
        self.events_cap = integer("events_cap", events_cap, 1)
        self.id = new_worker_id()
        self.stats = WorkerStats()
        self.candidates = Candidates()
        self.drained = False  # burst mode: the queue had nothing ready
        self.outage = Outage(self.id)
        self._tokens = 0

    def next_token(self) -> str:
        self._tokens += 1
        return f"{self.id}:{self._tokens}"

    # --- start ----------------------------------------------------------------------------
    def setup(self) -> Steps[None]:
        """Check the server answers (before the worker says it is ready). A worker given an
        explicit stall limit stores it with the queue, where every sweeper (other workers,
        ``Queue.sweep``, the CLI) reads it."""
        yield Command("ping")
        if self.options.max_stalled is not None:
            yield Command("hset", self.keys.meta, "maxStalled", self.options.max_stalled)
        yield from self.announce(0)

    def announce(self, running: int) -> Steps[None]:
        """List this worker in the queue's registry (``keys.workers``) for one lock TTL more:
        what dashboards show as the queue's live workers. Sent with every heartbeat."""
        yield worker_heartbeat(self.keys, self.id, self.options.lock_ttl_ms,
                               {"concurrency": self.options.concurrency, "running": running,
                                "lock_ttl_ms": self.options.lock_ttl_ms})

    def unreachable_at_start(self, exc: BaseException) -> None:
        """The server did not answer the setup: under ``fail_fast`` that is the caller's
        error; otherwise an outage to wait out (the caller backs off and tries again)."""
        if self.options.fail_fast:
            raise exc
        self.outage.lost(exc)

    def refused_at_start(self, exc: BaseException) -> None:
        """The server answered the setup with an error (OOM, READONLY, or a cluster client
        out of redirects mid-resharding: ClusterError). The setup writes (the stall limit,
        the worker registry's entry), so it can be refused as a fetch can: under
        ``fail_fast`` the caller's error; otherwise tried again, as the fetch loop does."""
        if self.options.fail_fast:
            raise exc
        log.warning("worker %s: the server refused the setup (%s); retrying", self.id, exc)

    # --- fetching -------------------------------------------------------------------------
    def fetch(self, stopping: Any) -> Steps[tuple[Job, str] | None]:
        """moveToActive until a job is taken (returns it and its token) or ``stopping()``.
        Between empty fetches it sleeps on the marker (and its own wake key)."""
        candidates = self.candidates
        first_try = True
        dedup_ids: dict[str, str] = {}  # of expired jobs the fetch script must fail (status 'dedup')
        while not stopping():
            token = self.next_token()
            fetch = yield move_to_active(self.keys, candidates.ids, token, self.options.lock_ttl_ms,
                                         candidates.width, dedup_ids, self.events_cap)
            due = delayed_job_due(fetch)
            if due:
                yield from promote_steps(self.keys)
            if fetch.status == "active":
                candidates.took(fetch, first_try)
                self.stats.bump("fetched")
                if fetch.job.unreadable is None:
                    return fetch.job, token
                yield from self._fail_unreadable(fetch.job, token)
                continue
            if fetch.status == "miss":
                candidates.missed(fetch)
                first_try = False
                continue
            if fetch.status == "expired":  # the next job expired: failed by the script, not a race
                candidates.ids = fetch.candidates
                continue
            if fetch.status == "dedup":
                job_id, dedup_id = fetch.expired_job
                dedup_ids[job_id] = dedup_id
                if job_id not in candidates.ids:
                    candidates.ids = (job_id, *candidates.ids)
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

    def _fail_unreadable(self, job: Job, token: str) -> Steps[None]:
        """Dead-letter a job whose record cannot be read, without running the handler: every
        worker it reached would otherwise fail on it in turn."""
        log.warning("job %s is unreadable (%s): failing it", job.id, job.unreadable)
        yield from self.record_failure(HeldJob(job, token, self.keys, None, self.events_cap),
                                       UnreadableJobError(f"unreadable job: {job.unreadable}"))

    # --- outcomes -------------------------------------------------------------------------
    def record_success(self, active: HeldJob, result: Any) -> Steps[None]:
        active.recording = True
        try:
            # A flow child is kept: the parent's sweep reads its outcome if the report below is lost.
            call = complete(self.keys, active.job, active.token, result,
                            self.options.remove_on_complete and not active.job.parent_id, self.events_cap)
        except ValueError as exc:  # a result that is not JSON fails the attempt, never stored as its str()
            yield from self.record_failure(active, exc)
            return
        if (yield call):
            self.stats.bump("completed")
            yield from report_to_parent_steps(self.keys, active.job, "completed",
                                              to_json("the handler's return value", result), self.events_cap)
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
        if outcome.status == "failed":
            yield from report_to_parent_steps(self.keys, active.job, "failed", reason, self.events_cap)
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


def attempt_timeout_s(active: HeldJob) -> float | None:
    """How long this attempt may run (the job's ``timeout_ms``), None for no limit."""
    return active.job.timeout_ms / 1000 if active.job.timeout_ms else None


def timed_out(active: HeldJob) -> JobTimeoutError:
    """The error an attempt past its timeout is failed with. The job is flagged lost first:
    the failure takes the lock, so whatever the handler still does is no longer its delivery's
    (its progress and outcome are refused)."""
    active.mark_lost()
    return JobTimeoutError(f"attempt timed out after {active.job.timeout_ms} ms")


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
