"""The synchronous worker: one fetch loop, a handler thread per slot of concurrency, one
maintenance thread that renews locks and runs the recovery sweep.

Fetching never pops a job with a blocking list command (that would put it in active
without a lock). The worker sleeps in BZPOPMIN on the queue's marker (plus its own wake
key, so ``stop()`` can interrupt it), then takes work only through moveToActive.
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from queue import SimpleQueue
from typing import Any, Callable

from redis.exceptions import ConnectionError, TimeoutError

from .effects import EffectGuard
from .errors import UnrecoverableError
from .job import HeldJob, Job
from .keys import QueueKeys
from .options import (Candidates, Hooks, MaintenanceSchedule, Reconnect, WorkerOptions, WorkerStats,
                      block_timeout, delayed_job_due, describe_error, new_worker_id, wake_up)
from .sweeper import Sweeper
from .transitions import (RedisOp, complete, extend_lock, move_to_active, promote_delayed, release,
                          retry_or_fail)

log = logging.getLogger(__name__)


class ActiveJob(HeldJob):
    """What a handler receives: the job, plus the means to guard its side effects."""

    def __init__(self, job: Job, token: str, guard: EffectGuard) -> None:
        super().__init__(job, token, guard)
        self._lock_lost = threading.Event()

    @property
    def lock_lost(self) -> bool:
        """True once a heartbeat found the lock gone or taken: another worker may now own
        this job, and this worker's outcome for it will be refused."""
        return self._lock_lost.is_set()

    def apply_once(self, effect: str, *ops: RedisOp) -> bool:
        return self._guard.apply_once(self.id, effect, ops, self.token)

    def run_once(self, effect: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        return self._guard.run_once(self.id, effect, fn, self.token)


Handler = Callable[[ActiveJob], Any]


class Worker:
    def __init__(self, queue: str | QueueKeys, client: Any, handler: Handler,
                 options: WorkerOptions | None = None, hooks: Hooks | None = None,
                 guard: EffectGuard | None = None) -> None:
        self.keys = queue if isinstance(queue, QueueKeys) else QueueKeys(queue)
        self.client = client
        self.handler = handler
        self.options = options or WorkerOptions()
        self.hooks = hooks or Hooks()
        self.guard = guard or EffectGuard(client, self.keys)
        self.id = new_worker_id()
        self.stats = WorkerStats()
        self.sweeper = Sweeper(client, self.keys, self.options.max_stalled)
        self._tokens = 0
        self._candidates = Candidates()
        self._stopping = threading.Event()
        self._maintenance_done = threading.Event()
        self._slots = threading.BoundedSemaphore(self.options.concurrency)
        self._in_flight: dict[str, ActiveJob] = {}
        self._in_flight_changed = threading.Condition()
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Process jobs until ``stop()`` (or SIGTERM/SIGINT when run on the main thread)."""
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: self.stop())
        maintenance = threading.Thread(target=self._maintain, name=f"{self.id}-maintenance", daemon=True)
        maintenance.start()
        # One long-lived thread per slot: starting a thread for each job cost ~80 µs of CPU,
        # a third of what the worker spent on a trivial job.
        jobs: SimpleQueue[ActiveJob | None] = SimpleQueue()
        for n in range(self.options.concurrency):
            threading.Thread(target=self._handle, args=(jobs,), name=f"{self.id}-handler-{n}",
                             daemon=True).start()
        try:
            self._fetch_loop(jobs)
        finally:
            self._stopping.set()
            self._finish_in_flight()
            for _ in range(self.options.concurrency):
                jobs.put(None)  # a handler still running past the grace period ends after it
            self._maintenance_done.set()
            maintenance.join()
            self.client.delete(self.keys.wake(self.id))

    def start(self) -> "Worker":
        """Run in a background thread."""
        self._thread = threading.Thread(target=self.run, kwargs={"install_signal_handlers": False},
                                        name=self.id, daemon=True)
        self._thread.start()
        return self

    def stop(self, wait: bool = False, timeout: float | None = None) -> None:
        """Stop fetching; in-flight jobs get ``shutdown_grace_s`` to finish, then are released.
        Safe to call from a signal handler: the wake-up is sent from a fresh thread, never
        from the interrupted one (which may hold the connection pool's lock)."""
        self._stopping.set()
        threading.Thread(target=self._wake, daemon=True).start()
        if wait and self._thread is not None:
            self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            wake_up(self.client, self.keys.wake(self.id))
        except Exception:  # the blocking wait ends by its own timeout anyway
            log.exception("could not wake worker %s", self.id)

    # --- fetching -----------------------------------------------------------------------
    def _next_token(self) -> str:
        self._tokens += 1
        return f"{self.id}:{self._tokens}"

    def _fetch_loop(self, jobs: SimpleQueue) -> None:
        reconnect = Reconnect()
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=0.1):
                continue
            active = None
            try:
                active = self._fetch()
                reconnect.succeeded()
            except (ConnectionError, TimeoutError) as exc:
                self._candidates.forget()
                log.warning("worker %s cannot reach the server (%s); retrying", self.id, exc)
                self._stopping.wait(reconnect.failed())
            finally:
                if active is None:
                    self._slots.release()
            if active is not None:
                jobs.put(active)  # a slot is held for it, so a handler thread is free

    def _fetch(self) -> ActiveJob | None:
        candidates = self._candidates
        first_try = True
        while not self._stopping.is_set():
            token = self._next_token()
            fetch = move_to_active(self.keys, candidates.ids, token, self.options.lock_ttl_ms,
                                   candidates.width).run(self.client)
            if delayed_job_due(fetch):
                promote_delayed(self.keys).run(self.client)
            if fetch.status == "active":
                candidates.took(fetch, first_try)
                active = ActiveJob(fetch.job, token, self.guard)
                with self._in_flight_changed:
                    self._in_flight[active.id] = active
                self.stats.bump("fetched")
                return active
            if fetch.status == "miss":
                candidates.missed(fetch)
                first_try = False
                continue
            candidates.forget()
            first_try = True
            if not delayed_job_due(fetch):
                self.client.bzpopmin([self.keys.marker, self.keys.wake(self.id)],
                                     timeout=block_timeout(fetch, self.options.block_timeout_s))
        return None

    # --- processing ---------------------------------------------------------------------
    def _handle(self, jobs: SimpleQueue) -> None:
        while (active := jobs.get()) is not None:
            self._process(active)

    def _process(self, active: ActiveJob) -> None:
        try:
            try:
                result = self.handler(active)
            except Exception as exc:
                self._record_failure(active, exc)
            else:
                self._record_success(active, result)
        except Exception:
            # Recording the outcome failed (e.g. connection lost). The job stays active;
            # when its lock lapses the sweep sends it back to wait: delayed, not lost.
            log.exception("could not record the outcome of job %s", active.id)
        finally:
            with self._in_flight_changed:
                self._in_flight.pop(active.id, None)
                self._in_flight_changed.notify_all()
            self._slots.release()

    def _record_success(self, active: ActiveJob, result: Any) -> None:
        active.recording = True
        if complete(self.keys, active.job, active.token, result, self.options.remove_on_complete).run(self.client):
            self.stats.bump("completed")
            self._call_hook(self.hooks.on_completed, active.job, result)
        else:
            self._lost(active)

    def _record_failure(self, active: ActiveJob, exc: Exception) -> None:
        active.recording = True
        reason, trace = describe_error(exc)
        outcome = retry_or_fail(self.keys, active.job, active.token, reason, trace,
                                unrecoverable=isinstance(exc, UnrecoverableError)).run(self.client)
        if outcome.status == "lost":
            self._lost(active)
            return
        self.stats.bump("retried" if outcome.status == "retry" else "failed")
        self._call_hook(self.hooks.on_failed, active.job, exc, outcome.status)

    def _lost(self, active: ActiveJob) -> None:
        self.stats.bump("lost")
        log.warning("job %s: lock lost, outcome discarded (another delivery owns it)", active.id)
        self._call_hook(self.hooks.on_lock_lost, active.job)

    def _call_hook(self, hook: Callable | None, *args: Any) -> None:
        if hook is not None:
            try:
                hook(*args)
            except Exception:
                log.exception("hook %r raised", hook)

    # --- maintenance: heartbeat and sweep -------------------------------------------------
    def _maintain(self) -> None:
        """Runs until in-flight jobs are finished or released, so locks stay renewed
        through the shutdown grace period; sweeps stop as soon as stopping starts."""
        schedule = MaintenanceSchedule(self.options, time.monotonic())
        while True:
            try:
                if schedule.heartbeat_due(time.monotonic()):
                    self._renew_locks()
                if schedule.sweep_due(time.monotonic()) and not self._stopping.is_set():
                    self.sweep(throttle_ms=int(schedule.sweep_s * 1000))
            except Exception:
                log.exception("worker %s maintenance failed; retrying next beat", self.id)
            if self._maintenance_done.wait(schedule.tick_s):
                return

    def _renew_locks(self) -> None:
        with self._in_flight_changed:
            jobs = [job for job in self._in_flight.values() if not (job.lock_lost or job.recording)]
        for active in jobs:
            if not extend_lock(self.keys, active.id, active.token, self.options.lock_ttl_ms).run(self.client):
                if active.recording:
                    continue  # completed meanwhile: the lock went with the job
                active._lock_lost.set()
                log.warning("job %s: lock lost before it finished", active.id)

    def sweep(self, throttle_ms: int = 0):
        result = self.sweeper.sweep(throttle_ms)
        if result.recovered or result.failed:
            self.stats.bump("recovered", len(result.recovered))
            self._call_hook(self.hooks.on_stalled, result.recovered, result.failed)
        return result

    # --- shutdown -----------------------------------------------------------------------
    def _finish_in_flight(self) -> None:
        deadline = time.monotonic() + self.options.shutdown_grace_s
        with self._in_flight_changed:
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._in_flight_changed.wait(left)
            unfinished = list(self._in_flight.values())
        for active in unfinished:
            # The handler thread may still finish later; its outcome will then be refused.
            active._lock_lost.set()
            if release(self.keys, active.id, active.token).run(self.client):
                self.stats.bump("released")
        with self._in_flight_changed:
            for active in unfinished:
                self._in_flight.pop(active.id, None)
