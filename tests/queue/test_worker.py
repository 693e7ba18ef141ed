"""The synchronous worker: processing, concurrency, wake-up, retries, dead letters,
heartbeats, its own sweeps, and graceful stop."""
from __future__ import annotations

import threading
import time

import pytest

from minired_queue import Backoff
from minired_queue.errors import UnrecoverableError
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.worker import Worker

from .helpers import take, wait_until


@pytest.fixture
def start_worker(backend, queue):
    started: list[Worker] = []

    def start(handler, hooks: Hooks | None = None, client=None, **options) -> Worker:
        options = {"block_timeout_s": 1.0, **options}
        worker = Worker(queue.keys, client or backend.client(), handler, WorkerOptions(**options),
                        hooks)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        worker.stop(wait=True, timeout=15)
        worker.client.close()


def _completed(queue, n: int):
    return lambda: queue.counts()["completed"] == n


def test_processes_jobs_and_records_results(queue, start_worker):
    seen = []
    hooks = Hooks(on_completed=lambda job, result: seen.append((job.id, result)))
    ids = [queue.add({"n": n}) for n in range(20)]
    worker = start_worker(lambda job: job.data["n"] * 2, hooks, concurrency=2)
    wait_until(_completed(queue, 20))
    assert [queue.get_job(i).return_value for i in ids] == [n * 2 for n in range(20)]
    wait_until(lambda: len(seen) == 20)
    assert sorted(seen) == sorted((i, n * 2) for n, i in enumerate(ids))
    assert worker.stats.completed == 20 and worker.stats.fetched == 20


def test_concurrency_runs_that_many_jobs_at_once(queue, start_worker):
    together = threading.Barrier(4)

    def handler(job):
        together.wait(10)  # breaks (and the job fails) unless 4 handlers run at the same time
        return "ok"

    for n in range(8):
        queue.add({"n": n})
    start_worker(handler, concurrency=4)
    wait_until(_completed(queue, 8))
    assert queue.counts()["failed"] == 0


def test_handlers_run_on_one_thread_per_slot_for_the_worker_s_life(queue, start_worker):
    threads = set()

    def handler(job):
        threads.add(threading.get_ident())
        time.sleep(0.002)

    for n in range(30):
        queue.add({"n": n})
    worker = start_worker(handler, concurrency=3)
    wait_until(_completed(queue, 30))
    assert len(threads) <= 3
    handlers = [t for t in threading.enumerate() if t.name.startswith(f"{worker.id}-handler-")]
    assert len(handlers) == 3
    worker.stop(wait=True, timeout=15)
    wait_until(lambda: not any(t.is_alive() for t in handlers))


def test_an_idle_worker_sleeps_without_polling_and_wakes_at_once(backend, queue, start_worker):
    started_at = []
    calls = []  # (thread, command), as the worker's threads send them
    sleeping = threading.Event()  # the fetching thread is inside BZPOPMIN
    client = backend.client()
    original = client.execute_command

    def recorded(*args, **kw):
        calls.append((threading.get_ident(), args[0]))
        if args[0] != "BZPOPMIN":
            return original(*args, **kw)
        sleeping.set()
        try:
            return original(*args, **kw)
        finally:
            sleeping.clear()

    client.execute_command = recorded
    start_worker(lambda job: started_at.append(time.monotonic()), client=client,
                 block_timeout_s=30.0)
    assert sleeping.wait(30)
    fetcher = next(thread for thread, name in reversed(calls) if name == "BZPOPMIN")

    def fetches() -> int:
        return sum(thread == fetcher for thread, _ in calls)

    asleep = fetches()
    time.sleep(0.5)
    assert fetches() == asleep  # asleep in BZPOPMIN, not polling (the sweeper has its own pace)
    latencies = []
    for _ in range(5):
        added_at = time.monotonic()
        queue.add({"n": 1})
        wait_until(lambda: len(started_at) and started_at[-1] > added_at, interval=0.001)
        latencies.append((started_at[-1] - added_at) * 1000)
        started_at.clear()
    latencies.sort()
    print(f"\nwake-up latency, median of 5: {latencies[2]:.1f} ms (max {latencies[-1]:.1f} ms)")
    # Woken by the push, not by the 30 s block timeout (milliseconds, as printed above, on a
    # machine that is not loaded).
    assert latencies[-1] < 10_000


def test_failed_attempts_retry_with_backoff_then_complete(queue, start_worker):
    statuses = []
    attempts = []

    def flaky(job):
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ConnectionError("upstream down")
        return "finally"

    job_id = queue.add({"n": 1}, attempts=3, backoff=Backoff.fixed(50))
    start_worker(flaky, Hooks(on_failed=lambda job, exc, status: statuses.append(status)))
    wait_until(_completed(queue, 1))
    job = queue.get_job(job_id)
    assert (job.attempts_made, job.attempts_started, job.return_value) == (2, 3, "finally")
    assert statuses == ["retry", "retry"]
    assert all(b - a >= 0.04 for a, b in zip(attempts, attempts[1:]))  # the backoff was honoured
    assert queue.metrics()["retried"] == 2


def test_dead_letter_after_max_attempts_records_the_error(queue, start_worker):
    statuses = []

    def broken(job):
        raise ValueError("cannot parse invoice")

    job_id = queue.add({"n": 1}, attempts=2, backoff=Backoff.exponential(10))
    worker = start_worker(broken, Hooks(on_failed=lambda job, exc, status: statuses.append(status)))
    wait_until(lambda: queue.counts()["failed"] == 1)
    job = queue.get_job(job_id)
    assert job.failed_reason == "ValueError: cannot parse invoice"
    assert "ValueError" in job.stacktrace and "broken" in job.stacktrace
    assert job.attempts_made == 2
    wait_until(lambda: statuses == ["retry", "failed"])
    assert (worker.stats.retried, worker.stats.failed) == (1, 1)
    assert [j.id for j in queue.failed_jobs()] == [job_id]


def test_unrecoverable_error_skips_the_remaining_attempts(queue, start_worker):
    def refuse(job):
        raise UnrecoverableError("account closed")

    job_id = queue.add({"n": 1}, attempts=5)
    start_worker(refuse)
    wait_until(lambda: queue.counts()["failed"] == 1)
    assert queue.get_job(job_id).attempts_made == 1


def test_heartbeats_keep_a_job_longer_than_its_lock_ttl(queue, start_worker):
    job_id = queue.add({"n": 1})
    # The worker sweeps every 20 ms itself: any lapse of the lock would be reclaimed.
    # Thirty beats per TTL: only a stall of the whole process for 1.45 s could lose the lock
    # (500 ms did happen, on a machine running two test suites and a compiler at once).
    start_worker(lambda job: time.sleep(3.2) or "slow", lock_ttl_ms=1500, heartbeat_interval_s=0.05,
                 sweep_interval_s=0.02)
    wait_until(_completed(queue, 1))
    job = queue.get_job(job_id)
    assert (job.attempts_started, job.stalled_counter) == (1, 0)


def test_workers_sweep_up_the_jobs_of_a_dead_worker(queue, start_worker):
    job_id = queue.add({"n": 1})
    assert take(queue, token="crashed:1", lock_ttl_ms=50).status == "active"
    recovered = []
    start_worker(lambda job: "rescued", Hooks(on_stalled=lambda ids, failed: recovered.extend(ids)),
                 sweep_interval_s=0.05, lock_ttl_ms=1000)
    wait_until(_completed(queue, 1))
    job = queue.get_job(job_id)
    assert (job.return_value, job.stalled_counter, job.attempts_started) == ("rescued", 1, 2)
    assert recovered == [job_id]


def test_delayed_jobs_are_picked_up_when_due(queue, start_worker):
    started = []
    start_worker(lambda job: started.append(time.monotonic()), block_timeout_s=30.0)
    added_at = time.monotonic()
    queue.add({"n": 1}, delay_ms=150)
    wait_until(_completed(queue, 1))
    # Woke for the due time, not the 30 s block timeout.
    assert 0.1 <= started[0] - added_at < 10.0


def test_stop_lets_in_flight_jobs_finish(queue, start_worker):
    running = threading.Event()
    job_id = queue.add({"n": 1})
    worker = start_worker(lambda job: running.set() or time.sleep(0.3) or "done", shutdown_grace_s=5)
    assert running.wait(5)
    worker.stop(wait=True, timeout=10)
    assert not worker._thread.is_alive()
    assert queue.get_job(job_id).state == "completed"
    queue.add({"n": 2})
    time.sleep(0.2)
    assert queue.counts()["wait"] == 1  # a stopped worker fetches nothing more


def test_stop_past_the_grace_period_releases_in_flight_jobs(queue, start_worker):
    running, finish = threading.Event(), threading.Event()

    def stuck(job):
        running.set()
        finish.wait(10)
        return "too late"

    job_id = queue.add({"n": 1})
    worker = start_worker(stuck, shutdown_grace_s=0.1)
    assert running.wait(5)
    worker.stop(wait=True, timeout=10)
    assert worker.stats.released == 1
    job = queue.get_job(job_id)
    assert job.state == "wait" and job.attempts_made == 0
    finish.set()  # the abandoned handler finishes; its outcome is refused
    wait_until(lambda: worker.stats.refused == 1)
    assert queue.get_job(job_id).state == "wait"


def test_scripts_are_loaded_once_then_called_by_sha(queue, start_worker):
    calls = []
    queue.add({"n": 1})
    worker = start_worker(lambda job: None)
    wait_until(_completed(queue, 1))
    original = worker.client.execute_command
    worker.client.execute_command = lambda *args, **kw: (calls.append(args[0]), original(*args, **kw))[1]
    queue.add({"n": 2})
    wait_until(_completed(queue, 2))
    assert "EVALSHA" in calls and "EVAL" not in calls


@pytest.mark.parametrize("error", ["ConnectionError", "ClusterError"])
def test_a_worker_rides_out_redis_errors(queue, start_worker, error):
    """A lost connection, or a cluster client that ran out of redirects mid-resharding
    (ClusterError: neither a connection nor a response error): the fetch loop goes on."""
    import redis.exceptions

    failure = getattr(redis.exceptions, error)
    worker = start_worker(lambda job: "after the outage")
    real_evalsha, failures = worker.client.evalsha, []

    def flaky_evalsha(*args):
        if len(failures) < 3:
            failures.append(args[0])
            raise failure("server went away")
        return real_evalsha(*args)

    worker.client.evalsha = flaky_evalsha
    job_id = queue.add({"n": 1})
    wait_until(_completed(queue, 1))
    assert len(failures) == 3 and queue.get_job(job_id).return_value == "after the outage"
    assert worker._thread.is_alive()
