"""BullMQ for Python: its Lua scripts (addStandardJob, addDelayedJob, addPrioritizedJob,
moveToActive, moveToFinished, retry via the delayed set) run by BullMQ's own Worker, with
results, failures, retries with backoff, delays and priorities read back through BullMQ."""
from __future__ import annotations

import asyncio
import time

from bullmq import Job, Queue, Worker

from tests.integration import async_jobs

QUEUE = "integration"
WAIT_SECONDS = 15


def test_worker_runs_jobs_failures_retries_delays_and_priorities(target):
    asyncio.run(_produce_consume_complete(target.url))


async def _wait_for_counts(queue: Queue, **expected: int) -> dict:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        counts = await queue.getJobCounts(*expected)
        if counts == expected or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.05)


async def _produce_consume_complete(url: str) -> None:
    queue = Queue(QUEUE, {"connection": url})
    worker = None
    try:
        sums = [await queue.add("add", {"a": n, "b": 10}) for n in range(5)]
        failing = await queue.add("fail", {"message": "boom"}, {"attempts": 1})
        retried = await queue.add("fail_first_attempt", {},
                                  {"attempts": 2, "backoff": {"type": "fixed", "delay": 50}})
        delayed = await queue.add("add", {"a": 1, "b": 1}, {"delay": 300})
        # Added lowest priority first: the worker must still take them highest first.
        prioritized = [await queue.add("label", {"label": label}, {"priority": priority})
                       for label, priority in [("low", 30), ("high", 10), ("middle", 20)]]
        assert await queue.getJobCounts("waiting", "delayed", "prioritized") == \
            {"waiting": 7, "delayed": 1, "prioritized": 3}

        processed: list[str] = []

        async def process(job, token):
            processed.append(job.data.get("label", job.name))
            return await async_jobs.bullmq_process(job, token)

        worker = Worker(QUEUE, process, {"connection": url, "concurrency": 1})
        counts = await _wait_for_counts(queue, completed=10, failed=1)
        assert counts == {"completed": 10, "failed": 1}

        finished = {job.id: await Job.fromId(queue, job.id)
                    for job in [*sums, failing, retried, delayed, *prioritized]}
        assert [finished[job.id].returnvalue for job in sums] == [10, 11, 12, 13, 14]
        assert finished[delayed.id].returnvalue == 2
        assert finished[retried.id].returnvalue == "succeeded after 1 failed attempt"
        assert finished[retried.id].attemptsMade == 2
        assert finished[failing.id].failedReason == "boom"
        assert finished[failing.id].attemptsMade == 1
        assert await finished[failing.id].getState() == "failed"
        assert await finished[sums[0].id].getState() == "completed"

        labels = [name for name in processed if name in ("low", "high", "middle")]
        assert labels == ["high", "middle", "low"]
        assert [job.id for job in await queue.getJobs(["failed"])] == [failing.id]
    finally:
        if worker is not None:
            await worker.close()
        await queue.close()


def test_job_schedulers_deduplication_progress_logs_and_obliterate(target):
    asyncio.run(_schedulers_and_bookkeeping(target.url, target))


async def _schedulers_and_bookkeeping(url: str, target) -> None:
    queue = Queue("bookkeeping", {"connection": url})
    worker = None
    try:
        await queue.upsertJobScheduler("tick", {"every": 100, "limit": 3}, "add", {"a": 1, "b": 2})
        first = await queue.add("add", {"a": 5, "b": 5}, {"deduplication": {"id": "once"}})
        duplicate = await queue.add("add", {"a": 6, "b": 6}, {"deduplication": {"id": "once"}})
        assert duplicate.id == first.id
        assert await queue.getDeduplicationJobId("once") == first.id
        report = await queue.add("report", {})

        worker = Worker("bookkeeping", async_jobs.bullmq_process,
                        {"connection": url, "concurrency": 2})
        # The deduplicated job, the report, and the scheduler's three iterations.
        assert await _wait_for_counts(queue, completed=5, failed=0) == {"completed": 5, "failed": 0}

        assert (await Job.fromId(queue, first.id)).returnvalue == 10
        reported = await Job.fromId(queue, report.id)
        assert (reported.returnvalue, reported.progress) == ("reported", 50)
        assert await queue.getJobLogs(report.id) == {"logs": ["halfway"], "count": 1}
        ticks = [job for job in await queue.getJobs(["completed"]) if job.name == "add"
                 and job.id != first.id]
        assert [job.returnvalue for job in ticks] == [3, 3, 3]
        assert (await queue.getJobScheduler("tick"))["iterationCount"] == 3

        await worker.close()
        worker = None
        await queue.obliterate(force=True)
        with target.client() as client:
            assert client.keys("bull:bookkeeping:*") == []
    finally:
        if worker is not None:
            await worker.close()
        await queue.close()

