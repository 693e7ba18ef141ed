"""saq: its Redis queue (Lua enqueue/schedule/cleanup scripts, BLMOVE dequeue, pub/sub job
updates) with saq's Worker, first in burst mode, then running until a scheduled job is due."""
from __future__ import annotations

import asyncio
import time

import pytest
from saq import Queue, Worker
from saq.job import Status

from tests.integration import async_jobs

# saq still calls redis-py's setex, which redis-py 8 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated setex:DeprecationWarning")

FUNCTIONS = [
    ("add", async_jobs.saq_add),
    ("fail", async_jobs.saq_fail),
    ("fail_first_attempt", async_jobs.saq_fail_first_attempt),
]
WAIT_SECONDS = 10


def test_worker_runs_jobs_results_failures_retries_and_schedules(target):
    asyncio.run(_produce_consume_complete(target.url))


async def _produce_consume_complete(url: str) -> None:
    queue = Queue.from_url(url, name="integration")
    try:
        # A worker sweeps the active list when it starts, at most once per lock period (60 s):
        # a job it catches between BLMOVE and its ACTIVE update is aborted as "swept". Taking the
        # sweep now, on the empty queue, stands for the workers that are already running in
        # production and keeps this test deterministic.
        assert await queue.sweep() == []
        sums = [await queue.enqueue("add", a=n, b=10) for n in range(5)]
        failing = await queue.enqueue("fail", message="boom")
        retried = await queue.enqueue("fail_first_attempt", retries=2)
        assert await queue.count("queued") == 7

        burst = Worker(queue, FUNCTIONS, concurrency=2, burst=True, dequeue_timeout=0.2)
        await asyncio.wait_for(burst.start(), WAIT_SECONDS)

        for job in [*sums, failing, retried]:
            await job.refresh()
        assert [job.status for job in sums] == [Status.COMPLETE] * 5
        assert [job.result for job in sums] == [10, 11, 12, 13, 14]
        assert (retried.status, retried.result, retried.attempts) == \
            (Status.COMPLETE, "succeeded on attempt 2", 2)
        assert failing.status == Status.FAILED
        assert "JobFailure: boom" in failing.error

        scheduled = await queue.enqueue("add", a=2, b=3, scheduled=int(time.time()) + 1)
        assert scheduled.status == Status.QUEUED
        assert await queue.count("queued") == 0  # parked in the schedule until it is due

        worker = Worker(queue, FUNCTIONS, concurrency=2, dequeue_timeout=0.2)
        running = asyncio.create_task(worker.start())
        try:
            await scheduled.refresh(until_complete=WAIT_SECONDS)
        finally:
            await worker.stop()
            await running
        assert (scheduled.status, scheduled.result) == (Status.COMPLETE, 5)
        assert await queue.count("incomplete") == 0
    finally:
        await queue.disconnect()
