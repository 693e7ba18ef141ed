"""huey: RedisHuey (list queue, Lua schedule pop) and PriorityRedisHuey (sorted-set queue with
BZPOPMIN), driven by huey's own thread consumer."""
from __future__ import annotations

import contextlib

import pytest
from huey import PriorityRedisHuey, RedisHuey
from huey.exceptions import TaskException

from tests.integration import jobs
from tests.integration.support import signal_handlers_restored

RESULT_TIMEOUT = 10


@contextlib.contextmanager
def running_consumer(huey, workers):
    consumer = huey.create_consumer(workers=workers, worker_type="thread", periodic=False,
                                    initial_delay=0.01, max_delay=0.1, check_worker_health=False)
    with signal_handlers_restored():
        consumer.start()
        try:
            yield consumer
        finally:
            consumer.stop(graceful=True)


def test_consumer_runs_tasks_results_failures_retries_and_schedules(target, tmp_path):
    # Without store_intermediate_errors=False a get() racing the retry may read the first
    # attempt's error, which the retry then overwrites.
    huey = RedisHuey("integration", url=target.url, utc=True, read_timeout=0.1,
                     store_intermediate_errors=False)
    add = huey.task(name="add")(jobs.add)
    fail = huey.task(name="fail")(jobs.fail)
    flaky = huey.task(name="flaky", retries=1, retry_delay=0)(jobs.fail_first_attempt)

    sums = [add(n, 10) for n in range(5)]
    failing = fail("boom")
    retried = flaky(str(tmp_path / "flaky"))
    scheduled = add.schedule(args=(2, 3), delay=1)
    revoked = add(1, 1)
    revoked.revoke()
    # A scheduled task is enqueued like the others; the consumer parks it until its eta.
    assert huey.pending_count() == 9

    with running_consumer(huey, workers=2):
        assert [result.get(blocking=True, timeout=RESULT_TIMEOUT) for result in sums] == \
            [10, 11, 12, 13, 14]
        assert retried.get(blocking=True, timeout=RESULT_TIMEOUT) == "recovered"
        assert scheduled.get(blocking=True, timeout=RESULT_TIMEOUT) == 5
        with pytest.raises(TaskException) as failure:
            failing.get(blocking=True, timeout=RESULT_TIMEOUT)
        assert failure.value.metadata["error"] == "JobFailure('boom')"
        assert failure.value.metadata["retries"] == 0
        # The consumer took the revoked task off the queue without running it or storing a result.
        assert revoked.get() is None
        assert not revoked.is_revoked()  # revoke_once: the flag is consumed with the task

    assert huey.pending_count() == 0
    assert huey.scheduled_count() == 0
    huey.storage.conn.close()


def test_priority_queue_runs_higher_priorities_first(target, tmp_path):
    huey = PriorityRedisHuey("integration-priority", url=target.url, utc=True, read_timeout=0.1)
    record = huey.task(name="record")(jobs.record_order)
    order_file = str(tmp_path / "order")

    results = [record(order_file, "low", priority=1), record(order_file, "default"),
               record(order_file, "high", priority=10), record(order_file, "middle", priority=5)]
    assert huey.pending_count() == 4

    with running_consumer(huey, workers=1):
        for result in results:
            result.get(blocking=True, timeout=RESULT_TIMEOUT)

    assert jobs.read_order(order_file) == ["high", "middle", "low", "default"]
    huey.storage.conn.close()
