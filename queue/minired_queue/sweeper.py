"""The recovery sweep: jobs whose owner stopped renewing their lock go back to wait.

Workers run it on an interval (throttled by a shared ``stalled-check`` key so a fleet of
workers sweeps about once per interval, not once per worker); ``Sweeper.sweep()`` and
``minired-queue sweep`` run it on demand.

Reading active and the locks first is only a filter that keeps the script's key list
short; the decision (lock missing, job still in active) is taken again inside the one
moveStalledJobsToWait script, which is what makes overlapping sweeps safe.
"""
from __future__ import annotations

from typing import Any, Sequence

from .job import text
from .keys import QueueKeys
from .transitions import DEFAULT_EVENTS_CAP, SweepResult, move_stalled_to_wait

SWEEP_BATCH = 100


def _candidates(active_ids: Sequence[str], replies: Sequence[Any]) -> list[tuple[str, str | None]]:
    """From a pipeline of (EXISTS lock, HGET dedupId) per active job, the unlocked ones."""
    found = []
    for index, job_id in enumerate(active_ids):
        lock_exists, dedup_id = replies[2 * index], replies[2 * index + 1]
        if not lock_exists:
            found.append((job_id, text(dedup_id) if dedup_id else None))
    return found


def _batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


class Sweeper:
    """Stalled-job recovery for one queue, on a synchronous client."""

    def __init__(self, client: Any, keys: QueueKeys, max_stalled: int = 1,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.client = client
        self.keys = keys
        self.max_stalled = max_stalled
        self.events_cap = events_cap

    def sweep(self, throttle_ms: int = 0) -> SweepResult:
        """Recover stalled jobs. With ``throttle_ms`` > 0, do nothing if any sweeper of this
        queue ran within that many (server clock) milliseconds."""
        if throttle_ms > 0 and not self.client.set(self.keys.stalled_check, "1", nx=True, px=throttle_ms):
            return SweepResult([], [])
        active_ids = [text(i) for i in self.client.lrange(self.keys.active, 0, -1)]
        if not active_ids:
            return SweepResult([], [])
        pipe = self.client.pipeline(transaction=False)
        for job_id in active_ids:
            pipe.exists(self.keys.lock(job_id))
            pipe.hget(self.keys.job(job_id), "dedupId")
        candidates = _candidates(active_ids, pipe.execute())
        result = SweepResult([], [])
        for batch in _batches(candidates, SWEEP_BATCH):
            result += move_stalled_to_wait(self.keys, batch, self.max_stalled, self.events_cap).run(self.client)
        return result


class AsyncSweeper:
    """The same sweep on a redis.asyncio client."""

    def __init__(self, client: Any, keys: QueueKeys, max_stalled: int = 1,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.client = client
        self.keys = keys
        self.max_stalled = max_stalled
        self.events_cap = events_cap

    async def sweep(self, throttle_ms: int = 0) -> SweepResult:
        if throttle_ms > 0 and not await self.client.set(self.keys.stalled_check, "1", nx=True, px=throttle_ms):
            return SweepResult([], [])
        active_ids = [text(i) for i in await self.client.lrange(self.keys.active, 0, -1)]
        if not active_ids:
            return SweepResult([], [])
        pipe = self.client.pipeline(transaction=False)
        for job_id in active_ids:
            pipe.exists(self.keys.lock(job_id))
            pipe.hget(self.keys.job(job_id), "dedupId")
        candidates = _candidates(active_ids, await pipe.execute())
        result = SweepResult([], [])
        for batch in _batches(candidates, SWEEP_BATCH):
            result += await move_stalled_to_wait(self.keys, batch, self.max_stalled,
                                                 self.events_cap).run_async(self.client)
        return result
