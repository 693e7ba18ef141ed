"""The asyncio worker: the same protocol as ``worker.Worker`` on redis.asyncio, with a task
per in-flight job. Handlers may be coroutine functions or plain functions (run in a
thread so they cannot stall the event loop and with it the heartbeats)."""
from __future__ import annotations

import asyncio
import inspect
import logging
import signal
import time
from typing import Any, Callable

from redis.exceptions import ConnectionError, TimeoutError

from .effects import AsyncEffectGuard
from .errors import UnrecoverableError
from .job import HeldJob, Job
from .keys import QueueKeys
from .options import (Candidates, Hooks, MaintenanceSchedule, Reconnect, WorkerOptions, WorkerStats,
                      block_timeout, delayed_job_due, describe_error, new_worker_id, wake_up)
from .sweeper import AsyncSweeper
from .transitions import (RedisOp, SweepResult, complete, extend_lock, move_to_active, promote_delayed, release,
                          retry_or_fail)

log = logging.getLogger(__name__)


class AsyncActiveJob(HeldJob):
    """What an async handler receives: the job, plus its effect guard."""

    def __init__(self, job: Job, token: str, guard: AsyncEffectGuard) -> None:
        super().__init__(job, token, guard)
        self.lock_lost = False  # set when a heartbeat finds the lock gone or taken

    async def apply_once(self, effect: str, *ops: RedisOp) -> bool:
        return await self._guard.apply_once(self.id, effect, ops, self.token)

    async def run_once(self, effect: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        return await self._guard.run_once(self.id, effect, fn, self.token)


class AsyncWorker:
    def __init__(self, queue: str | QueueKeys, client: Any, handler: Callable[[AsyncActiveJob], Any],
                 options: WorkerOptions | None = None, hooks: Hooks | None = None,
                 guard: AsyncEffectGuard | None = None) -> None:
        self.keys = queue if isinstance(queue, QueueKeys) else QueueKeys(queue)
        self.client = client
        self.handler = handler
        self.options = options or WorkerOptions()
        self.hooks = hooks or Hooks()
        self.guard = guard or AsyncEffectGuard(client, self.keys)
        self.id = new_worker_id()
        self.stats = WorkerStats()
        self.sweeper = AsyncSweeper(client, self.keys, self.options.max_stalled)
        self._tokens = 0
        self._candidates = Candidates()
        self._stopping = asyncio.Event()
        self._in_flight: dict[str, tuple[AsyncActiveJob, asyncio.Task]] = {}
        self._wake_task: asyncio.Task | None = None

    # --- lifecycle ----------------------------------------------------------------------
    async def run(self, install_signal_handlers: bool = False) -> None:
        """Process jobs until ``stop()`` (or SIGTERM/SIGINT if asked to install handlers)."""
        if install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self.stop)
        slots = asyncio.Semaphore(self.options.concurrency)
        maintenance_over = asyncio.Event()
        maintenance = asyncio.create_task(self._maintain(maintenance_over))
        reconnect = Reconnect()
        try:
            while not self._stopping.is_set():
                await slots.acquire()
                active = None
                try:
                    active = await self._fetch()
                    reconnect.succeeded()
                except (ConnectionError, TimeoutError) as exc:
                    self._candidates.forget()
                    log.warning("worker %s cannot reach the server (%s); retrying", self.id, exc)
                    await asyncio.sleep(reconnect.failed())
                finally:
                    if active is None:
                        slots.release()
                if active is not None:
                    task = asyncio.create_task(self._process(active, slots))
                    self._in_flight[active.id] = (active, task)
        finally:
            self._stopping.set()
            await self._finish_in_flight()
            # The flag, not the cancellation, is what ends the loop: Python 3.11's wait_for
            # (redis-py's when a socket timeout is set, as cluster clients have by default)
            # drops a cancellation that lands as the call completes. Cancelling only cuts
            # the current sleep or call short.
            maintenance_over.set()
            maintenance.cancel()
            await asyncio.gather(maintenance, *filter(None, [self._wake_task]), return_exceptions=True)
            await self.client.delete(self.keys.wake(self.id))

    def stop(self) -> None:
        """Stop fetching; in-flight jobs get ``shutdown_grace_s`` to finish, then are released."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._wake_task = asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        try:
            await wake_up(self.client, self.keys.wake(self.id))
        except Exception:
            log.exception("could not wake worker %s", self.id)

    # --- fetching -----------------------------------------------------------------------
    async def _fetch(self) -> AsyncActiveJob | None:
        candidates = self._candidates
        first_try = True
        while not self._stopping.is_set():
            self._tokens += 1
            token = f"{self.id}:{self._tokens}"
            fetch = await move_to_active(self.keys, candidates.ids, token, self.options.lock_ttl_ms,
                                         candidates.width).run_async(self.client)
            if delayed_job_due(fetch):
                await promote_delayed(self.keys).run_async(self.client)
            if fetch.status == "active":
                candidates.took(fetch, first_try)
                self.stats.bump("fetched")
                return AsyncActiveJob(fetch.job, token, self.guard)
            if fetch.status == "miss":
                candidates.missed(fetch)
                first_try = False
                continue
            candidates.forget()
            first_try = True
            if not delayed_job_due(fetch):
                await self.client.bzpopmin([self.keys.marker, self.keys.wake(self.id)],
                                           timeout=block_timeout(fetch, self.options.block_timeout_s))
        return None

    # --- processing ---------------------------------------------------------------------
    async def _process(self, active: AsyncActiveJob, slots: asyncio.Semaphore) -> None:
        try:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    result = await self.handler(active)
                else:
                    result = await asyncio.to_thread(self.handler, active)
            except Exception as exc:
                await self._record_failure(active, exc)
            else:
                await self._record_success(active, result)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not record the outcome of job %s", active.id)
        finally:
            self._in_flight.pop(active.id, None)
            slots.release()

    async def _record_success(self, active: AsyncActiveJob, result: Any) -> None:
        active.recording = True
        done = await complete(self.keys, active.job, active.token, result,
                              self.options.remove_on_complete).run_async(self.client)
        if done:
            self.stats.bump("completed")
            await self._call_hook(self.hooks.on_completed, active.job, result)
        else:
            await self._lost(active)

    async def _record_failure(self, active: AsyncActiveJob, exc: Exception) -> None:
        active.recording = True
        reason, trace = describe_error(exc)
        outcome = await retry_or_fail(self.keys, active.job, active.token, reason, trace,
                                      unrecoverable=isinstance(exc, UnrecoverableError)).run_async(self.client)
        if outcome.status == "lost":
            await self._lost(active)
            return
        self.stats.bump("retried" if outcome.status == "retry" else "failed")
        await self._call_hook(self.hooks.on_failed, active.job, exc, outcome.status)

    async def _lost(self, active: AsyncActiveJob) -> None:
        self.stats.bump("lost")
        log.warning("job %s: lock lost, outcome discarded (another delivery owns it)", active.id)
        await self._call_hook(self.hooks.on_lock_lost, active.job)

    async def _call_hook(self, hook: Callable | None, *args: Any) -> None:
        if hook is None:
            return
        try:
            result = hook(*args)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("hook %r raised", hook)

    # --- maintenance: heartbeat and sweep -------------------------------------------------
    async def _maintain(self, over: asyncio.Event) -> None:
        schedule = MaintenanceSchedule(self.options, time.monotonic())
        while not over.is_set():
            try:
                if schedule.heartbeat_due(time.monotonic()):
                    await self._renew_locks()
                if schedule.sweep_due(time.monotonic()) and not self._stopping.is_set():
                    await self.sweep(throttle_ms=int(schedule.sweep_s * 1000))
            except Exception:
                log.exception("worker %s maintenance failed; retrying next beat", self.id)
            await asyncio.sleep(schedule.tick_s)

    async def _renew_locks(self) -> None:
        for active, _ in list(self._in_flight.values()):
            if active.lock_lost or active.recording:
                continue
            if not await extend_lock(self.keys, active.id, active.token,
                                     self.options.lock_ttl_ms).run_async(self.client):
                if active.recording:
                    continue  # completed meanwhile: the lock went with the job
                active.lock_lost = True
                log.warning("job %s: lock lost before it finished", active.id)

    async def sweep(self, throttle_ms: int = 0) -> SweepResult:
        result = await self.sweeper.sweep(throttle_ms)
        if result.recovered or result.failed:
            self.stats.bump("recovered", len(result.recovered))
            await self._call_hook(self.hooks.on_stalled, result.recovered, result.failed)
        return result

    # --- shutdown -----------------------------------------------------------------------
    async def _finish_in_flight(self) -> None:
        tasks = [task for _, task in self._in_flight.values()]
        if tasks:
            await asyncio.wait(tasks, timeout=self.options.shutdown_grace_s)
        for active, task in list(self._in_flight.values()):
            # Release first (the job goes back to wait at once), then cancel the handler.
            active.lock_lost = True
            if await release(self.keys, active.id, active.token).run_async(self.client):
                self.stats.bump("released")
            task.cancel()
        self._in_flight.clear()
