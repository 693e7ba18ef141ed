"""RQ: enqueue, run its own burst workers (in-process SimpleWorker and the forking Worker), read
results, failures, retries and dependencies back through RQ's API."""
from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from redis.client import PubSub
from rq import Queue, Retry, SimpleWorker, Worker
from rq.job import JobStatus

from tests.integration import jobs
from tests.integration.support import signal_handlers_restored


@pytest.fixture(autouse=True)
def _pubsub_thread_that_stops_promptly(monkeypatch):
    """RQ 3.0 runs its worker's pubsub thread with `sleep_time=60`, and redis-py 8.2's
    `PubSubWorkerThread.stop()` waits for the thread, which, once unsubscribed, sleeps out
    those 60 s: every worker's teardown took a minute, on Redis as on minired. A short poll
    keeps the thread and what RQ does with it, without the minute."""
    run_in_thread = PubSub.run_in_thread

    def polling_briefly(self, sleep_time=0.0, *args, **kwargs):
        return run_in_thread(self, min(sleep_time, 0.1), *args, **kwargs)

    monkeypatch.setattr(PubSub, "run_in_thread", polling_briefly)


def test_simple_worker_runs_results_failures_retries_and_dependencies(target, tmp_path):
    connection = target.client()
    queue = Queue("integration", connection=connection)

    sums = [queue.enqueue(jobs.add, n, 10) for n in range(5)]
    failing = queue.enqueue(jobs.fail, "boom")
    flaky = queue.enqueue(jobs.fail_first_attempt, str(tmp_path / "flaky"), retry=Retry(max=1))
    dependent = queue.enqueue(jobs.add, 100, 1, depends_on=sums[0])
    assert queue.count == 7  # the dependent job waits outside the queue until sums[0] is done

    with signal_handlers_restored():
        assert SimpleWorker([queue], connection=connection).work(burst=True)

    assert [job.get_status() for job in sums] == [JobStatus.FINISHED] * 5
    assert [job.return_value() for job in sums] == [10, 11, 12, 13, 14]
    assert dependent.get_status() == JobStatus.FINISHED
    assert dependent.return_value() == 101

    assert failing.get_status() == JobStatus.FAILED
    assert failing.id in queue.failed_job_registry.get_job_ids()
    assert "JobFailure: boom" in failing.latest_result().exc_string

    assert flaky.get_status() == JobStatus.FINISHED
    assert flaky.return_value() == "recovered"
    flaky.refresh()
    assert flaky.retries_left == 0  # the one retry was used
    assert flaky.id not in queue.failed_job_registry.get_job_ids()

    assert queue.count == 0
    assert sorted(queue.finished_job_registry.get_job_ids()) == sorted(
        job.id for job in [*sums, dependent, flaky])
    connection.close()


def test_forking_worker_runs_each_job_in_a_work_horse(target):
    connection = target.client()
    queue = Queue("forked", connection=connection)
    enqueued = [queue.enqueue(jobs.add, n, n) for n in range(3)]
    failing = queue.enqueue(jobs.fail, "in the horse")

    with signal_handlers_restored():
        assert Worker([queue], connection=connection).work(burst=True)

    assert [job.return_value() for job in enqueued] == [0, 2, 4]
    assert failing.get_status() == JobStatus.FAILED
    assert "JobFailure: in the horse" in failing.latest_result().exc_string
    connection.close()


def test_burst_worker_with_scheduler_enqueues_due_scheduled_jobs(target):
    connection = target.client()
    queue = Queue("scheduled", connection=connection)
    due = queue.enqueue_at(datetime.now(timezone.utc) - timedelta(seconds=1), jobs.add, 3, 4)
    later = queue.enqueue_in(timedelta(hours=1), jobs.add, 5, 6)
    assert due.get_status() == later.get_status() == JobStatus.SCHEDULED
    assert queue.count == 0

    # In burst mode the worker takes the scheduler lock (a Lua script), moves due jobs from the
    # scheduled registry to the queue, and runs them.
    with signal_handlers_restored():
        assert SimpleWorker([queue], connection=connection).work(burst=True, with_scheduler=True)

    assert (due.get_status(), due.return_value()) == (JobStatus.FINISHED, 7)
    assert later.get_status() == JobStatus.SCHEDULED
    assert queue.scheduled_job_registry.get_job_ids() == [later.id]
    connection.close()


def test_idle_worker_blocks_until_jobs_arrive(target):
    connection = target.client()
    queue = Queue("idle", connection=connection)
    producer_connection = target.client()
    producer_queue = Queue("idle", connection=producer_connection)
    enqueued = []

    def produce_later():
        # Arrives while the worker is blocked in BLPOP on the empty queue.
        time.sleep(0.3)
        enqueued.extend(producer_queue.enqueue(jobs.add, n, 1) for n in range(2))

    producer = threading.Thread(target=produce_later)
    producer.start()
    with signal_handlers_restored():
        assert SimpleWorker([queue], connection=connection).work(max_jobs=2)
    producer.join()

    assert [job.return_value() for job in enqueued] == [1, 2]
    connection.close()
    producer_connection.close()
