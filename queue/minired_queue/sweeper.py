"""The recovery sweep (jobs whose owner stopped renewing their lock go back to wait) and
the queue's other periodic duties: due delayed jobs, retention of finished jobs.

Workers run the sweep on an interval (throttled by a shared ``stalled-check`` key so a
fleet of workers sweeps about once per interval, not once per worker); ``Queue.sweep()``
and ``minired-queue sweep`` run it on demand. Everything here is a step generator
(``steps.py``), so the threaded and the asyncio worker run the same code.

Reading active and the locks first is only a filter that keeps the script's key list
short; the decision (lock missing, job still in active) is taken again inside the one
moveStalledJobsToWait script, which is what makes overlapping sweeps safe. The stall
limit is read by that script from the queue's meta hash, so every sweeper applies the
queue's own setting.
"""
from __future__ import annotations

from typing import Any, Sequence

from .flows import resolve_waiting_parents_steps
from .groups import prune_groups_steps
from .job import text
from .keys import QueueKeys
from .steps import Command, Pipeline, Steps, drive, drive_async
from .transitions import (
    DEFAULT_EVENTS_CAP,
    Promotion,
    SweepResult,
    clean_jobs,
    move_stalled_to_wait,
    promote_delayed,
    record_depth,
)

SWEEP_BATCH = 100
PROMOTE_BATCH = 200
CLEAN_BATCH = 200

# Retention settings in the queue's meta hash: (state, keep-count field, max-age field).
RETENTION_FIELDS = (("completed", "keepCompleted", "keepCompletedAgeMs"),
                    ("failed", "keepFailed", "keepFailedAgeMs"))


def _candidates(active_ids: Sequence[str], replies: Sequence[Any]) -> list[tuple[str, str | None]]:
    """From a pipeline of (EXISTS lock, HGET dedupId) per active job, the unlocked ones."""
    found = []
    for index, job_id in enumerate(active_ids):
        lock_exists, dedup_id = replies[2 * index], replies[2 * index + 1]
        if not lock_exists:
            found.append((job_id, text(dedup_id) if dedup_id else None))
    return found


def sweep_steps(keys: QueueKeys, throttle_ms: int = 0,
                events_cap: int = DEFAULT_EVENTS_CAP) -> Steps[SweepResult | None]:
    """Recover stalled jobs, report finished flow children to their waiting parents
    (``flows.py``), prune the bookkeeping of idle groups (``groups.py``), and sample the ready line's depth into the history (the
    dashboard's chart: kept by the fleet whether or not anyone looks). With ``throttle_ms``
    > 0, do nothing (and return None) if any sweeper of this queue ran within that many
    (server clock) milliseconds."""
    if throttle_ms > 0 and not (yield Command("set", keys.stalled_check, "1", nx=True, px=throttle_ms)):
        return None
    yield record_depth(keys)
    yield from resolve_waiting_parents_steps(keys, events_cap)  # flow children finished unreported
    yield from prune_groups_steps(keys)  # bookkeeping of groups that may never come back
    active_ids = [text(i) for i in (yield Command("lrange", keys.active, 0, -1))]
    result = SweepResult([], [])
    if not active_ids:
        return result
    replies = yield Pipeline(tuple(command for job_id in active_ids for command in (
        Command("exists", keys.lock(job_id)), Command("hget", keys.job(job_id), "dedupId"))))
    candidates = _candidates(active_ids, replies)
    for start in range(0, len(candidates), SWEEP_BATCH):
        result += yield move_stalled_to_wait(keys, candidates[start:start + SWEEP_BATCH], events_cap)
    return result


def promote_steps(keys: QueueKeys) -> Steps[Promotion]:
    """Make the due delayed jobs among the first PROMOTE_BATCH ready."""
    ids = [text(i) for i in (yield Command("zrange", keys.delayed, 0, PROMOTE_BATCH - 1))]
    return (yield promote_delayed(keys, ids))


def retention_steps(keys: QueueKeys) -> Steps[int]:
    """Apply the queue's retention settings (meta ``keepCompleted``/``keepCompletedAgeMs``,
    ``keepFailed``/``keepFailedAgeMs``) to finished jobs; returns how many were deleted."""
    settings = yield Command("hmget", keys.meta, *(name for _, count, age in RETENTION_FIELDS for name in (count, age)))
    removed = 0
    for index, (state, _, _) in enumerate(RETENTION_FIELDS):
        keep, max_age = settings[2 * index], settings[2 * index + 1]
        if keep is None and max_age is None:
            continue
        while True:
            ids = [text(i) for i in (yield Command("zrange", getattr(keys, state), 0, CLEAN_BATCH - 1))]
            gone = (yield clean_jobs(keys, state, ids, None if keep is None else int(keep),
                                     None if max_age is None else int(max_age))) if ids else []
            removed += len(gone)
            if len(gone) < CLEAN_BATCH:
                break
    return removed


class Sweeper:
    """Stalled-job recovery for one queue, on a synchronous client."""

    def __init__(self, client: Any, keys: QueueKeys, *, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.client = client
        self.keys = keys
        self.events_cap = events_cap

    def sweep(self, throttle_ms: int = 0) -> SweepResult:
        result = drive(sweep_steps(self.keys, throttle_ms, self.events_cap), self.client)
        return result or SweepResult([], [])


class AsyncSweeper:
    """The same sweep on a redis.asyncio client."""

    def __init__(self, client: Any, keys: QueueKeys, *, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.client = client
        self.keys = keys
        self.events_cap = events_cap

    async def sweep(self, throttle_ms: int = 0) -> SweepResult:
        result = await drive_async(sweep_steps(self.keys, throttle_ms, self.events_cap), self.client)
        return result or SweepResult([], [])
