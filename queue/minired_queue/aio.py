"""The asyncio worker: the same protocol as ``worker.Worker`` (the same ``WorkerCore``
steps) on redis.asyncio, with a task per in-flight job.

Handlers may be ``async def`` functions (they get an ``AsyncActiveJob``: awaitable
calls) or plain functions. A plain handler runs in a thread, so it cannot stall the event
loop and with it the heartbeats, and gets an ``ActiveJob`` whose calls are synchronous,
on a synchronous client (``sync_client``). A plain handler must never be handed
awaitable calls: ``job.apply_once(...)`` would return a coroutine nobody awaits, and the
job would be recorded done with its effect never applied.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import signal
import threading
import time
from typing import Any, Callable

from redis.exceptions import RedisError

from .active import ActiveJob, AsyncActiveJob, HeldJob
from .core import UNREACHABLE, WorkerCore, attempt_timeout_s, is_async_handler, plain_result, timed_out
from .effects import AsyncEffectGuard, EffectGuard
from .keys import QueueKeys
from .options import Hooks, MaintenanceSchedule, Reconnect, WorkerOptions, wake_up
from .steps import Hook, drive_async
from .transitions import DEFAULT_EVENTS_CAP, SweepResult

log = logging.getLogger(__name__)

__all__ = ["AsyncActiveJob", "AsyncWorker"]


def _in_daemon_thread(fn: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":
    """Run ``fn`` in a daemon thread of its own. Not the loop's default executor: a plain
    handler still running after its job was released at shutdown must not keep the
    process alive (asyncio.run waits for the executor's threads), as the threaded
    worker's daemon threads do not."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def target() -> None:
        try:
            outcome = functools.partial(future.set_result, fn(*args))
        except BaseException as exc:  # handed to the awaiting task, as to_thread would
            outcome = functools.partial(future.set_exception, exc)
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the loop is gone: the worker stopped and released the job
            pass

    threading.Thread(target=target, name=f"handler-{getattr(args[0], 'id', '')}", daemon=True).start()
    return future


class AsyncWorker:
    def __init__(self, queue: str | QueueKeys, client: Any, handler: Callable[..., Any],
                 options: WorkerOptions | None = None, hooks: Hooks | None = None,
                 guard: AsyncEffectGuard | None = None, *, sync_client: Any = None,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.keys = queue if isinstance(queue, QueueKeys) else QueueKeys(queue)
        self.client = client
        self.handler = handler
        self.handler_is_async = is_async_handler(handler)
        if not self.handler_is_async and sync_client is None:
            raise TypeError(
                f"{handler!r} is a plain function: under the asyncio worker it runs in a thread and needs "
                "synchronous Redis calls. Pass sync_client= (a redis.Redis or RedisCluster on the same "
                "server), or make the handler `async def`.")
        self.sync_client = sync_client
        self.guard = guard or AsyncEffectGuard(client, self.keys)
        self.sync_guard = EffectGuard(sync_client, self.keys) if sync_client is not None else None
        self.core = WorkerCore(self.keys, options or WorkerOptions(), hooks or Hooks(), events_cap)
        self.options, self.hooks = self.core.options, self.core.hooks
        self.id, self.stats = self.core.id, self.core.stats
        self._stopping = asyncio.Event()
        self._in_flight: dict[str, tuple[HeldJob, asyncio.Task]] = {}
        self._wake_task: asyncio.Task | None = None

    # --- lifecycle ----------------------------------------------------------------------
    async def run(self, install_signal_handlers: bool = False) -> None:
        """Process jobs until ``stop()`` (or SIGTERM/SIGINT if asked to install handlers)."""
        if install_signal_handlers:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self.stop)
        if not await self._wait_for_server():
            return
        await Hook(self.hooks.on_ready, ()).run_async(self.client)
        slots = asyncio.Semaphore(self.options.concurrency)
        maintenance_over = asyncio.Event()
        maintenance = asyncio.create_task(self._maintain(maintenance_over))
        reconnect = Reconnect()
        try:
            while not self._stopping.is_set():
                if not await self._slot_or_stop(slots):
                    break
                active = None
                try:
                    active = await self._fetch()
                    reconnect.succeeded()
                    self.core.outage.ended()
                except UNREACHABLE as exc:
                    self.core.candidates.forget()
                    self.core.outage.lost(exc)
                    await asyncio.sleep(reconnect.failed())
                except RedisError as exc:  # refused (OOM, READONLY, ...), or a cluster client out of
                # redirects mid-resharding (ClusterError): the script moved nothing, or the sweep
                # takes back what it moved; either way the loop goes on
                    self.core.candidates.forget()
                    log.warning("worker %s: the server refused a fetch (%s); retrying", self.id, exc)
                    await asyncio.sleep(reconnect.failed())
                finally:
                    if active is None:
                        slots.release()
                if active is not None:
                    task = asyncio.create_task(self._process(active, slots))
                    self._in_flight[active.id] = (active, task)
                elif self.core.drained:
                    self._stopping.set()
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
            try:
                await self.client.delete(self.keys.wake(self.id))
            except UNREACHABLE:  # it expires by itself
                pass

    async def _wait_for_server(self) -> bool:
        """Run the setup until the server answers (or raise under ``fail_fast``); False if
        stopped first."""
        reconnect = Reconnect()
        while not self._stopping.is_set():
            try:
                await drive_async(self.core.setup(), self.client)
            except (*UNREACHABLE, RedisError) as exc:
                if isinstance(exc, UNREACHABLE):
                    self.core.unreachable_at_start(exc)
                else:
                    self.core.refused_at_start(exc)
                try:
                    await asyncio.wait_for(self._stopping.wait(), reconnect.failed())
                except asyncio.TimeoutError:
                    pass
            else:
                self.core.outage.ended()
                return True
        return False

    async def _slot_or_stop(self, slots: asyncio.Semaphore) -> bool:
        """Wait for a free slot; False if stopping came first (with every slot busy, the
        loop must still notice a stop, or a SIGTERM would wait for a job to end)."""
        acquire = asyncio.ensure_future(slots.acquire())
        stopped = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({acquire, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not acquire.done():
            acquire.cancel()
        try:
            await acquire
        except asyncio.CancelledError:
            return False
        if self._stopping.is_set():
            slots.release()
            return False
        return True

    def stop(self) -> None:
        """Stop fetching; in-flight jobs get ``shutdown_grace_s`` to finish, then are released."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._wake_task = asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        try:
            await wake_up(self.client, self.keys.wake(self.id))
        except UNREACHABLE:  # then there is no blocking wait to cut short
            pass
        except Exception:
            log.exception("could not wake worker %s", self.id)

    # --- fetching -----------------------------------------------------------------------
    async def _fetch(self) -> HeldJob | None:
        taken = await drive_async(self.core.fetch(self._stopping.is_set), self.client)
        if taken is None:
            return None
        if self.handler_is_async:
            return AsyncActiveJob(*taken, self.guard, self.core.events_cap)
        return ActiveJob(*taken, self.sync_guard, self.core.events_cap)

    # --- processing ---------------------------------------------------------------------
    async def _process(self, active: HeldJob, slots: asyncio.Semaphore) -> None:
        try:
            try:
                result = await self._run_handler(active)
            except Exception as exc:
                await drive_async(self.core.record_failure(active, exc), self.client)
            else:
                await drive_async(self.core.record_success(active, result), self.client)
        except asyncio.CancelledError:
            raise
        except UNREACHABLE as exc:  # the sweep recovers the job once its lock lapses
            self.core.outage.lost(exc)
            log.info("could not record the outcome of job %s: the server is unreachable", active.id)
        except Exception:
            log.exception("could not record the outcome of job %s", active.id)
        finally:
            self._in_flight.pop(active.id, None)
            slots.release()

    async def _run_handler(self, active: HeldJob) -> Any:
        """The handler's result; past the job's timeout, ``JobTimeoutError``: an ``async def``
        handler is cancelled, a plain one's thread runs on (it cannot be stopped) with its
        outcome refused."""
        if self.handler_is_async:
            running = asyncio.ensure_future(self.handler(active))
        else:
            running = _in_daemon_thread(self.handler, active)
        try:
            done, _ = await asyncio.wait({running}, timeout=attempt_timeout_s(active))
            if not done:
                raise timed_out(active)
            result = running.result()
        finally:
            if not running.done():
                running.cancel()  # timed out, or the worker's task cancelled at shutdown
        return result if self.handler_is_async else plain_result(result)

    # --- maintenance: heartbeat and sweep -------------------------------------------------
    async def _maintain(self, over: asyncio.Event) -> None:
        schedule = MaintenanceSchedule(self.options, time.monotonic())
        while not over.is_set():
            try:
                if schedule.heartbeat_due(time.monotonic()):
                    held = [active for active, _ in self._in_flight.values()]
                    await drive_async(self.core.renew_locks(held), self.client)
                if schedule.sweep_due(time.monotonic()) and not self._stopping.is_set():
                    await self.housekeeping(int(schedule.sweep_s * 1000))
                    self.core.outage.ended()
            except UNREACHABLE as exc:
                self.core.outage.lost(exc)
            except Exception:
                log.exception("worker %s maintenance failed; retrying next beat", self.id)
            await asyncio.sleep(schedule.tick_s)

    async def housekeeping(self, throttle_ms: int) -> None:
        await drive_async(self.core.housekeeping(throttle_ms), self.client)

    async def sweep(self, throttle_ms: int = 0) -> SweepResult:
        return await drive_async(self.core.sweep(throttle_ms), self.client) or SweepResult([], [])

    # --- shutdown -----------------------------------------------------------------------
    async def _finish_in_flight(self) -> None:
        tasks = [task for _, task in self._in_flight.values()]
        if tasks:
            await asyncio.wait(tasks, timeout=self.options.shutdown_grace_s)
        unfinished = list(self._in_flight.values())
        # Release first (the job goes back to wait at once), then cancel the handler.
        try:
            await drive_async(self.core.release([active for active, _ in unfinished]), self.client)
        except UNREACHABLE as exc:  # their locks lapse and the sweep recovers them
            self.core.outage.lost(exc)
        for _, task in unfinished:
            task.cancel()
        self._in_flight.clear()
