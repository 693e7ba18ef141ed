"""Per-job limits: ``ttl_ms`` (a job not started in time is failed as expired by the fetch
script, on the server clock, and never runs) and ``timeout_ms`` (an attempt past it is
failed and its slot given back). Expiry is driven by moving the server clock; a timeout
by a handler that never returns on its own, so no outcome depends on how fast the
machine is."""
from __future__ import annotations

import asyncio
import threading

import pytest

from minired_queue import JobFailed, JobSpec
from minired_queue.aio import AsyncWorker
from minired_queue.options import WorkerOptions
from minired_queue.transitions import move_to_active, retry_or_fail
from minired_queue.worker import Worker

from .helpers import take

ODD_VALUES = [1.5, 2.0, -1, True, False, "10", None, 2**42 + 1, float("inf")]


@pytest.mark.parametrize("option", ["ttl_ms", "timeout_ms", "debounce_ms", "throttle_ms"])
@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_durations_are_refused_before_anything_is_written(queue, option, value):
    with pytest.raises(ValueError, match=f"{option} must be an integer from 0 to {2**42}"):
        queue.add({"n": 1}, dedup_id="d", **{option: value})
    assert queue.counts() == dict.fromkeys(queue.counts(), 0) and not queue.exists()


def test_the_script_refuses_a_ttl_that_is_not_an_integer(queue):
    from minired_queue.transitions import add_job
    call = add_job(queue.keys, JobSpec(1, job_id="j"))
    args = list(call.args)
    args[11] = "1.5"
    with pytest.raises(Exception, match="TTL must be an integer >= 0, got 1.5"):
        call.script.run(queue.client, call.keys, args)
    assert queue.get_job("j") is None


def burst(queue, backend, handler=lambda job: "ran") -> Worker:
    """Run a worker until nothing is ready; returns it (its stats say what it did)."""
    worker = Worker(queue.keys, backend.client(), handler, WorkerOptions(burst=True, block_timeout_s=1.0))
    worker.run(install_signal_handlers=False)
    worker.client.close()
    return worker


def test_a_job_past_its_ttl_is_failed_as_expired_and_never_runs(backend, queue, clock):
    ran = []
    expiring = queue.add({"n": 1}, ttl_ms=clock.span(1000))
    lasting = queue.add({"n": 2}, ttl_ms=clock.span(5000))
    plain = queue.add({"n": 3})
    clock.advance(clock.span(2000))
    worker = burst(queue, backend, lambda job: ran.append(job.id))
    assert ran == [lasting, plain] and worker.stats.fetched == 2
    job = queue.get_job(expiring)
    assert (job.state, job.failed_reason, job.attempts_started, job.attempts_made) == ("failed", "expired", 0, 0)
    with pytest.raises(JobFailed) as failure:
        queue.wait(expiring, timeout=30)
    assert failure.value.reason == "expired"
    assert queue.metrics()["failed"] == 1
    expired_events = [e for e in queue.events() if e["event"] == "failed"]
    assert expired_events == [{**expired_events[0], "jobId": expiring, "failedReason": "expired", "expired": "1"}]


def test_the_expiry_time_is_stamped_and_read_on_the_server_clock(queue, clock):
    """expireAt is the server's creation stamp plus the TTL; on minired the 1000 s TTLs of the
    other tests pass only because the server clock was moved, never on the client's."""
    job_id = queue.add({"n": 1}, ttl_ms=60_000)
    fetch = take(queue)
    assert fetch.status == "active" and fetch.job.id == job_id
    assert fetch.job.expire_at == fetch.job.timestamp + 60_000 and fetch.job.timeout_ms is None


def test_a_job_expiring_while_delayed_never_runs(backend, queue, clock):
    ran = []
    job_id = queue.add({"n": 1}, delay_ms=clock.span(5000), ttl_ms=clock.span(1000))
    clock.advance(clock.span(6000))
    burst(queue, backend, lambda job: ran.append(job.id))
    assert ran == [] and queue.get_job(job_id).failed_reason == "expired"


def test_an_expired_jobs_dedup_id_is_freed_by_the_fetch(backend, queue, clock):
    first = queue.add({"n": 1}, dedup_id="digest", ttl_ms=clock.span(1000))
    assert queue.add({"n": 2}, dedup_id="digest") == first  # held while it waits
    clock.advance(clock.span(2000))
    burst(queue, backend)
    assert queue.get_job(first).failed_reason == "expired"
    second = queue.add({"n": 3}, dedup_id="digest")
    assert second != first and queue.get_state(second) == "wait"


def test_a_started_job_does_not_expire_on_retry(queue, clock):
    job_id = queue.add({"n": 1}, attempts=2, ttl_ms=clock.span(1000))
    fetch = take(queue, token="t")
    assert retry_or_fail(queue.keys, fetch.job, "t", "boom").run(queue.client).status == "retry"
    clock.advance(clock.span(2000))
    again = take(queue, token="u")
    assert again.status == "active" and again.job.id == job_id and again.job.attempts_started == 2


def test_retrying_an_expired_job_runs_it(backend, queue, clock):
    job_id = queue.add({"n": 1}, ttl_ms=clock.span(1000))
    clock.advance(clock.span(2000))
    burst(queue, backend)
    assert queue.retry_failed() == 1
    worker = burst(queue, backend)
    assert worker.stats.completed == 1 and queue.get_job(job_id).return_value == "ran"


# --- timeouts -----------------------------------------------------------------------------
def test_a_thread_handler_past_its_timeout_fails_the_attempt_and_frees_the_slot(backend, queue):
    """The timeout (50 ms) is far shorter than the heartbeat (10 s): it is not the lock that
    ends the attempt. With one slot, the next job runs while the stuck handler still does."""
    release, reported = threading.Event(), threading.Semaphore(0)
    late: list = []

    def handler(job):
        if job.data == "stuck":
            release.wait(60)
            late.append((job.lock_lost, job.update_progress(99)))
            reported.release()
            return "too late"
        return "ok"

    stuck = queue.add("stuck", timeout_ms=50, attempts=2)
    worker = Worker(queue.keys, backend.client(), handler, WorkerOptions(concurrency=1, lock_ttl_ms=30_000,
                                                                         block_timeout_s=1.0)).start()
    try:
        with pytest.raises(JobFailed, match="attempt timed out after 50 ms") as failure:
            queue.wait(stuck, timeout=60)
        assert failure.value.reason == "JobTimeoutError: attempt timed out after 50 ms"
        after = queue.add("quick")
        assert queue.wait(after, timeout=60) == "ok"  # the one slot was given back
        release.set()
        assert reported.acquire(timeout=30) and reported.acquire(timeout=30)  # both stuck attempts ran on
    finally:
        release.set()
        worker.stop(wait=True, timeout=15)
        worker.client.close()
    job = queue.get_job(stuck)
    assert (job.attempts_made, job.attempts_started, job.state) == (2, 2, "failed")  # each timeout an attempt
    assert worker.stats.as_dict()["retried"] == 1 and worker.stats.failed == 1
    assert late == [(True, False), (True, False)]  # each knew it was lost, and its progress was refused


def test_async_handlers_are_cancelled_and_plain_ones_left_running(backend, queue):
    cancelled: asyncio.Event | None = None  # made in the loop asyncio.run starts
    release = threading.Event()

    async def main() -> dict:
        nonlocal cancelled
        cancelled = asyncio.Event()
        client = backend.async_client()

        async def slow(job):
            try:
                await asyncio.Event().wait()  # never set: only the timeout ends it
            except asyncio.CancelledError:
                cancelled.set()
                raise

        def blocking(job):
            release.wait(60)
            return "late"

        results = {}
        for name, handler, sync_client in (("async", slow, None), ("thread", blocking, backend.client())):
            worker = AsyncWorker(queue.keys, client, handler, WorkerOptions(block_timeout_s=1.0),
                                 sync_client=sync_client)
            runner = asyncio.create_task(worker.run())
            job_id = await asyncio.to_thread(queue.add, name, timeout_ms=30)
            try:
                await asyncio.to_thread(queue.wait, job_id, 60)
            except JobFailed as exc:
                results[name] = exc.reason
            worker.stop()
            await asyncio.wait_for(runner, 15)
            if sync_client is not None:
                sync_client.close()
        await asyncio.wait_for(cancelled.wait(), 10)
        await client.aclose()
        return results

    try:
        assert asyncio.run(main()) == {"async": "JobTimeoutError: attempt timed out after 30 ms",
                                       "thread": "JobTimeoutError: attempt timed out after 30 ms"}
    finally:
        release.set()


@pytest.mark.parametrize("kind", ["threaded", "asyncio async def", "asyncio plain"])
def test_a_handler_within_its_timeout_keeps_its_result_or_its_error(backend, queue, kind):
    def plain(job):
        if job.data == "bad":
            raise ValueError("bad data")
        return job.data * 2

    async def coroutine(job):
        return plain(job)

    ok, bad = queue.add(21, timeout_ms=60_000), queue.add("bad", timeout_ms=60_000)
    if kind == "threaded":
        worker = Worker(queue.keys, backend.client(), plain, WorkerOptions(burst=True, block_timeout_s=1.0))
        worker.run(install_signal_handlers=False)
        worker.client.close()
    else:
        async def main() -> None:
            client, sync_client = backend.async_client(), backend.client()
            handler = coroutine if kind == "asyncio async def" else plain
            await AsyncWorker(queue.keys, client, handler, WorkerOptions(burst=True, block_timeout_s=1.0),
                              sync_client=sync_client).run()
            await client.aclose()
            sync_client.close()

        asyncio.run(main())
    assert queue.wait(ok, timeout=30) == 42
    with pytest.raises(JobFailed, match="ValueError: bad data"):
        queue.wait(bad, timeout=30)


def test_the_fetch_script_asks_for_the_dedup_key_of_an_expired_job(queue, clock):
    job_id = queue.add({"n": 1}, dedup_id="digest", ttl_ms=clock.span(1000))
    clock.advance(clock.span(2000))
    for wrong in ({}, {job_id: "other"}, {job_id: "digest:x"}):
        fetch = move_to_active(queue.keys, [job_id], "t", 1000, dedup_ids=wrong).run(queue.client)
        assert (fetch.status, fetch.expired_job) == ("dedup", (job_id, "digest"))
        assert queue.get_state(job_id) == "wait"  # nothing changed
    fetch = move_to_active(queue.keys, [job_id], "t", 1000, dedup_ids={job_id: "digest"}).run(queue.client)
    assert (fetch.status, fetch.candidates) == ("expired", ())
    assert queue.get_state(job_id) == "failed" and queue.client.get(queue.keys.dedup("digest")) is None
