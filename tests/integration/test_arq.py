"""arq: ArqRedis enqueues (immediate, deferred, deduplicated by job id), arq's Worker runs in
burst mode, results and failures are read back through arq's Job."""
from __future__ import annotations

import asyncio

import pytest
from arq import create_pool
from arq.connections import RedisSettings
from arq.jobs import JobStatus
from arq.worker import Worker, func

from tests.integration import async_jobs
from tests.integration.jobs import JobFailure

# arq 0.25 closes its pool with redis-py's deprecated close().
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning")

FUNCTIONS = [
    func(async_jobs.arq_add, name="add"),
    func(async_jobs.arq_fail, name="fail", max_tries=1),
    func(async_jobs.arq_retry_once, name="retry_once", max_tries=2),
]


def test_burst_worker_runs_jobs_results_failures_retries_and_deferrals(target):
    asyncio.run(_produce_consume_complete(RedisSettings(host=target.host, port=target.port)))


async def _produce_consume_complete(settings: RedisSettings) -> None:
    pool = await create_pool(settings)
    try:
        sums = [await pool.enqueue_job("add", n, 10) for n in range(5)]
        failing = await pool.enqueue_job("fail", "boom")
        retried = await pool.enqueue_job("retry_once")
        deferred = await pool.enqueue_job("add", 1, 1, _defer_by=0.3)
        unique = await pool.enqueue_job("add", 7, 7, _job_id="the-only-one")
        assert await pool.enqueue_job("add", 8, 8, _job_id="the-only-one") is None
        assert await deferred.status() == JobStatus.deferred
        assert await sums[0].status() == JobStatus.queued

        worker = Worker(functions=FUNCTIONS, redis_settings=settings, burst=True,
                        handle_signals=False, poll_delay=0.05, keep_result=60)
        try:
            await worker.async_run()
        finally:
            await worker.close()
        assert (worker.jobs_complete, worker.jobs_failed, worker.jobs_retried) == (8, 1, 1)

        assert [await job.result(timeout=5) for job in sums] == [10, 11, 12, 13, 14]
        assert await deferred.result(timeout=5) == 2
        assert await unique.result(timeout=5) == 14
        assert await retried.result(timeout=5) == "succeeded on try 2"
        with pytest.raises(JobFailure, match="boom"):
            await failing.result(timeout=5)

        failed_info = await failing.result_info()
        assert (failed_info.success, failed_info.job_try, failed_info.function) == (False, 1, "fail")
        assert await failing.status() == JobStatus.complete
        assert len(await pool.all_job_results()) == 9
        assert await pool.queued_jobs() == []
    finally:
        await pool.aclose()
