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

from redis.exceptions import RedisError

from .active import ActiveJob
from .core import UNREACHABLE, WorkerCore, attempt_timeout_s, is_async_handler, plain_result, timed_out
from .effects import EffectGuard
from .keys import QueueKeys
from .options import Hooks, MaintenanceSchedule, Reconnect, WorkerOptions, wake_up
from .steps import Hook, Outcome, drive
from .transitions import DEFAULT_EVENTS_CAP, SweepResult

log = logging.getLogger(__name__)

Handler = Callable[[ActiveJob], Any]


class Worker:
    def __init__(self, queue: str | QueueKeys, client: Any, handler: Handler,
                 options: WorkerOptions | None = None, hooks: Hooks | None = None,
                 guard: EffectGuard | None = None, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        if is_async_handler(handler):
            # It would return a coroutine nobody awaits: the job recorded done, its effects never run.
            raise TypeError(f"{handler!r} is a coroutine function: run it with minired_queue.aio.AsyncWorker "
                            "(minired-queue worker --asyncio)")
        self.keys = queue if isinstance(queue, QueueKeys) else QueueKeys(queue)
        self.client = client
        self.handler = handler
        self.guard = guard or EffectGuard(client, self.keys)
        self.core = WorkerCore(self.keys, options or WorkerOptions(), hooks or Hooks(), events_cap)
        self.options, self.hooks = self.core.options, self.core.hooks
        self.id, self.stats = self.core.id, self.core.stats
        self._stopping = threading.Event()
        self._maintenance_done = threading.Event()
        self._slots = threading.BoundedSemaphore(self.options.concurrency)
        self._in_flight: dict[str, ActiveJob] = {}
        self._in_flight_changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._wakers: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Process jobs until ``stop()`` (or SIGTERM/SIGINT when run on the main thread)."""
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: self.stop())
        if not self._wait_for_server():
            return
        Hook(self.hooks.on_ready, ()).run(self.client)
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
            for waker in list(self._wakers):  # done with the client before run() returns
                waker.join(5)
            try:
                self.client.delete(self.keys.wake(self.id))
            except UNREACHABLE:  # it expires by itself
                pass

    def _wait_for_server(self) -> bool:
        """Run the setup until the server answers (or raise under ``fail_fast``); False if
        stopped first."""
        reconnect = Reconnect()
        while not self._stopping.is_set():
            try:
                drive(self.core.setup(), self.client)
            except UNREACHABLE as exc:
                self.core.unreachable_at_start(exc)
                self._stopping.wait(reconnect.failed())
            except RedisError as exc:
                self.core.refused_at_start(exc)
                self._stopping.wait(reconnect.failed())
            else:
                self.core.outage.ended()
                return True
        return False

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
        waker = threading.Thread(target=self._wake, daemon=True)
        waker.start()  # before run() can see it: a thread not yet started cannot be joined
        self._wakers.append(waker)
        if wait and self._thread is not None:
            self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            wake_up(self.client, self.keys.wake(self.id))
        except UNREACHABLE:  # then there is no blocking wait to cut short
            pass
        except Exception:  # the blocking wait ends by its own timeout anyway
            log.exception("could not wake worker %s", self.id)

    # --- fetching -----------------------------------------------------------------------
    def _fetch_loop(self, jobs: SimpleQueue) -> None:
        reconnect = Reconnect()
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=0.1):
                continue
            active = None
            try:
                active = self._fetch()
                reconnect.succeeded()
                self.core.outage.ended()
            except UNREACHABLE as exc:
                self.core.candidates.forget()
                self.core.outage.lost(exc)
                self._stopping.wait(reconnect.failed())
            except RedisError as exc:  # refused (OOM, READONLY, ...), or a cluster client out of
                # redirects mid-resharding (ClusterError): the script moved nothing, or the sweep
                # takes back what it moved; either way the loop goes on
                self.core.candidates.forget()
                log.warning("worker %s: the server refused a fetch (%s); retrying", self.id, exc)
                self._stopping.wait(reconnect.failed())
            finally:
                if active is None:
                    self._slots.release()
            if active is not None:
                jobs.put(active)  # a slot is held for it, so a handler thread is free
            elif self.core.drained:
                self._stopping.set()

    def _fetch(self) -> ActiveJob | None:
        taken = drive(self.core.fetch(self._stopping.is_set), self.client)
        if taken is None:
            return None
        active = ActiveJob(*taken, self.guard, self.core.events_cap)
        with self._in_flight_changed:
            self._in_flight[active.id] = active
        return active

    # --- processing ---------------------------------------------------------------------
    def _handle(self, jobs: SimpleQueue) -> None:
        while (active := jobs.get()) is not None:
            self._process(active)

    def _process(self, active: ActiveJob) -> None:
        try:
            try:
                result = plain_result(self._run_handler(active))
            except Exception as exc:
                self._record_failure(active, exc)
            else:
                self._record_success(active, result)
        except UNREACHABLE as exc:
            # The job stays active; when its lock lapses the sweep sends it back to wait:
            # delayed, not lost. The outage itself is logged once.
            self.core.outage.lost(exc)
            log.info("could not record the outcome of job %s: the server is unreachable", active.id)
        except Exception:
            log.exception("could not record the outcome of job %s", active.id)
        finally:
            with self._in_flight_changed:
                self._in_flight.pop(active.id, None)
                self._in_flight_changed.notify_all()
            self._slots.release()

    def _run_handler(self, active: ActiveJob) -> Any:
        """The handler's result. Under a timeout it runs in a thread of its own, which this
        slot's thread waits for at most the timeout: then the attempt fails with
        ``JobTimeoutError`` and the slot takes the next job, while the handler's thread (a
        thread cannot be stopped) may run on, its outcome refused."""
        timeout = attempt_timeout_s(active)
        if timeout is None:
            return self.handler(active)
        outcome: list[Any] = []

        def target() -> None:
            try:
                outcome.append(Outcome(self.handler(active)))
            except BaseException as exc:  # handed to the slot's thread
                outcome.append(Outcome(error=exc))

        runner = threading.Thread(target=target, name=f"{self.id}-job-{active.id}", daemon=True)
        runner.start()
        runner.join(timeout)
        if not outcome:
            raise timed_out(active)
        if outcome[0].error is not None:
            raise outcome[0].error
        return outcome[0].result

    def _record_success(self, active: ActiveJob, result: Any) -> None:
        drive(self.core.record_success(active, result), self.client)

    def _record_failure(self, active: ActiveJob, exc: Exception) -> None:
        drive(self.core.record_failure(active, exc), self.client)

    # --- maintenance: heartbeat and sweep -------------------------------------------------
    def _maintain(self) -> None:
        """Runs until in-flight jobs are finished or released, so locks stay renewed
        through the shutdown grace period; sweeps stop as soon as stopping starts."""
        schedule = MaintenanceSchedule(self.options, time.monotonic())
        while True:
            try:
                if schedule.heartbeat_due(time.monotonic()):
                    with self._in_flight_changed:
                        held = list(self._in_flight.values())
                    drive(self.core.renew_locks(held), self.client)
                if schedule.sweep_due(time.monotonic()) and not self._stopping.is_set():
                    drive(self.core.housekeeping(int(schedule.sweep_s * 1000)), self.client)
                    self.core.outage.ended()
            except UNREACHABLE as exc:
                self.core.outage.lost(exc)
            except Exception:
                log.exception("worker %s maintenance failed; retrying next beat", self.id)
            if self._maintenance_done.wait(schedule.tick_s):
                return

    def sweep(self, throttle_ms: int = 0) -> SweepResult:
        return drive(self.core.sweep(throttle_ms), self.client) or SweepResult([], [])

    # --- shutdown -----------------------------------------------------------------------
    def _finish_in_flight(self) -> None:
        deadline = time.monotonic() + self.options.shutdown_grace_s
        with self._in_flight_changed:
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._in_flight_changed.wait(left)
            unfinished = list(self._in_flight.values())
        try:
            drive(self.core.release(unfinished), self.client)
        except UNREACHABLE as exc:  # their locks lapse and the sweep recovers them
            self.core.outage.lost(exc)
        with self._in_flight_changed:
            for active in unfinished:
                self._in_flight.pop(active.id, None)
