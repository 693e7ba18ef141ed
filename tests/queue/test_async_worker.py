"""The asyncio worker: the same guarantees as the synchronous one on redis.asyncio."""
from __future__ import annotations

import asyncio
import time

import pytest

from minired_queue import Backoff, RedisOp
from minired_queue.aio import AsyncWorker
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.transitions import SweepResult
from minired_queue.worker import Worker

from .helpers import take


async def _until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {timeout}s")


def _run(backend, queue, handler, scenario, hooks: Hooks | None = None, sync_client=None, **options):
    """Run ``scenario(worker)`` next to a running AsyncWorker, then stop it cleanly."""
    async def main():
        client = backend.async_client()
        worker = AsyncWorker(queue.keys, client, handler, WorkerOptions(**{"block_timeout_s": 1.0, **options}),
                             hooks, sync_client=sync_client)
        runner = asyncio.create_task(worker.run())
        try:
            return await scenario(worker)
        finally:
            worker.stop()
            await asyncio.wait_for(runner, 15)
            await client.aclose()

    return asyncio.run(main())


def test_async_and_plain_handlers_complete_jobs(backend, queue):
    ids = [queue.add({"n": n}) for n in range(10)]

    async def double(job):
        await asyncio.sleep(0.001)
        return job.data["n"] * 2

    async def scenario(worker):
        await _until(lambda: worker.stats.completed == 10)  # counted after the ack returns
        return queue.counts()["completed"]

    assert _run(backend, queue, double, scenario, concurrency=3) == 10
    assert [queue.get_job(i).return_value for i in ids] == [n * 2 for n in range(10)]

    more = [queue.add({"n": n}) for n in range(3)]
    _run(backend, queue, lambda job: f"sync {job.data['n']}",  # a plain function runs in a thread
         lambda worker: _until(lambda: queue.counts()["completed"] == 13), sync_client=queue.client)
    assert [queue.get_job(i).return_value for i in more] == ["sync 0", "sync 1", "sync 2"]


def test_a_plain_handler_under_the_asyncio_worker_applies_its_effects(backend, queue):
    """Issue 25 finding 1: a plain handler was handed awaitable calls; apply_once returned
    an unawaited coroutine and every job was recorded done with no effect applied."""
    ledger, direct = f"{queue.keys.base}:ledger", f"{queue.keys.base}:direct"

    def send(job):  # the README's shape of handler: plain def, synchronous calls
        assert job.apply_once("count", RedisOp("HINCRBY", ledger, job.id, 1)) is True
        assert job.run_once("external", lambda: "sent") == (True, "sent")
        job.redis.hincrby(direct, job.id, 1)
        assert job.update_progress({"done": 1}) is True
        return job.id

    ids = [queue.add({"n": n}) for n in range(20)]
    _run(backend, queue, send, lambda worker: _until(lambda: queue.counts()["completed"] == 20),
         sync_client=queue.client, concurrency=4)
    assert {k.decode(): int(v) for k, v in queue.client.hgetall(ledger).items()} == {i: 1 for i in ids}
    assert {k.decode(): int(v) for k, v in queue.client.hgetall(direct).items()} == {i: 1 for i in ids}
    assert all(queue.client.exists(queue.keys.effect(i, "external")) for i in ids)
    assert queue.get_job(ids[0]).progress == {"done": 1}


def test_a_plain_handlers_error_is_recorded(backend, queue):
    def broken(job):
        raise KeyError("sku")

    job_id = queue.add({"n": 1}, attempts=2)
    _run(backend, queue, broken, lambda w: _until(lambda: queue.counts()["failed"] == 1), sync_client=queue.client)
    job = queue.get_job(job_id)
    assert (job.failed_reason, job.attempts_made) == ("KeyError: 'sku'", 2)


def test_a_plain_handler_without_synchronous_calls_is_refused_at_start(backend, queue):
    async def main():
        client = backend.async_client()
        try:
            with pytest.raises(TypeError, match="plain function.*sync_client"):
                AsyncWorker(queue.keys, client, lambda job: None)
        finally:
            await client.aclose()

    asyncio.run(main())


def test_an_async_handler_is_refused_by_the_threaded_worker(queue):
    async def handler(job):
        return None

    with pytest.raises(TypeError, match="coroutine function.*AsyncWorker"):
        Worker(queue.keys, queue.client, handler)


def test_a_plain_handler_returning_a_coroutine_fails_its_job_loudly(backend, queue):
    async def really_async(job):
        return None

    job_id = queue.add({"n": 1})
    _run(backend, queue, lambda job: really_async(job), lambda w: _until(lambda: queue.counts()["failed"] == 1),
         sync_client=queue.client)
    assert "declare it `async def`" in queue.get_job(job_id).failed_reason


def test_async_concurrency_overlaps_jobs(backend, queue):
    running, peak = 0, 0

    async def handler(job):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.1)
        running -= 1

    for n in range(8):
        queue.add({"n": n})
    _run(backend, queue, handler, lambda w: _until(lambda: queue.counts()["completed"] == 8), concurrency=4)
    assert peak == 4


def test_async_wake_up_is_immediate(backend, queue):
    started = []

    async def scenario(worker):
        await asyncio.sleep(0.3)
        latencies = []
        for _ in range(5):
            added = time.monotonic()
            queue.add({"n": 1})
            await _until(lambda: started)
            latencies.append((started.pop() - added) * 1000)
        return sorted(latencies)[2]

    async def handler(job):
        started.append(time.monotonic())

    latency_ms = _run(backend, queue, handler, scenario, block_timeout_s=30)
    print(f"\nasync wake-up latency, median of 5: {latency_ms:.1f} ms")
    # Woken by the push, not by the 30 s block timeout (milliseconds, as printed above, on a
    # machine that is not loaded).
    assert latency_ms < 10_000


def test_async_retries_then_dead_letters_with_hooks(backend, queue):
    statuses = []

    async def broken(job):
        raise RuntimeError(f"attempt {job.job.attempts_started}")

    async def on_failed(job, exc, status):
        statuses.append(status)

    job_id = queue.add({"n": 1}, attempts=3, backoff=Backoff.exponential(10))
    _run(backend, queue, broken, lambda w: _until(lambda: len(statuses) == 3), Hooks(on_failed=on_failed))
    job = queue.get_job(job_id)
    assert statuses == ["retry", "retry", "failed"]
    assert job.state == "failed" and job.failed_reason == "RuntimeError: attempt 3"


def test_async_effect_guard_and_heartbeat(backend, queue):
    ledger = f"{queue.keys.base}:ledger"

    async def handler(job):
        await job.apply_once("pay", RedisOp("HINCRBY", ledger, job.id, 1))
        await job.apply_once("pay", RedisOp("HINCRBY", ledger, job.id, 1))
        await asyncio.sleep(3.2)  # over two lock TTLs: the heartbeat must keep it
        return "paid"

    job_id = queue.add({"n": 1})
    # Thirty beats per TTL, as in test_worker's heartbeat test; and the scenario waits on the
    # worker's own count, not on a blocking call that would hold the loop the beats run on.
    _run(backend, queue, handler, lambda w: _until(lambda: w.stats.completed == 1),
         lock_ttl_ms=1500, heartbeat_interval_s=0.05, sweep_interval_s=0.02)
    assert int(queue.client.hget(ledger, job_id)) == 1
    assert queue.get_job(job_id).attempts_started == 1


def test_async_worker_sweeps_and_stops_gracefully(backend, queue):
    stalled_id = queue.add({"n": "stalled"})
    assert take(queue, token="crashed:1", lock_ttl_ms=50).status == "active"
    stuck_id = queue.add({"n": "stuck"})
    recovered = []

    async def handler(job):
        if job.data["n"] == "stuck":
            await asyncio.sleep(30)
        return "ok"

    async def scenario(worker):
        await _until(lambda: queue.get_state(stalled_id) == "completed")
        await _until(lambda: queue.get_state(stuck_id) == "active")
        return worker

    worker = _run(backend, queue, handler, scenario, Hooks(on_stalled=lambda ids, failed: recovered.extend(ids)),
                  sweep_interval_s=0.05, shutdown_grace_s=0.2, concurrency=2)
    assert recovered == [stalled_id]
    assert worker.stats.released == 1
    assert queue.get_state(stuck_id) == "wait"  # released on stop, first in line
    assert queue.get_job(stuck_id).attempts_made == 0


def test_async_worker_stops_when_a_cancellation_is_swallowed(backend, queue):
    """Python 3.11's wait_for, which redis-py uses when a socket timeout is set (cluster
    clients have one by default), returns the call's result instead of raising when the
    cancellation lands as the call completes. The maintenance loop must end anyway."""
    in_sweep = asyncio.Event()

    async def scenario(worker):
        async def sweep_that_swallows_a_cancellation(throttle_ms: int = 0) -> SweepResult:
            in_sweep.set()
            try:
                await asyncio.sleep(0.5)
            except asyncio.CancelledError:
                pass
            return SweepResult([], [])

        worker.housekeeping = sweep_that_swallows_a_cancellation
        await asyncio.wait_for(in_sweep.wait(), 10)
        return time.monotonic()

    async def nothing(job):
        return None

    asked = _run(backend, queue, nothing, scenario, sweep_interval_s=0.01)
    assert time.monotonic() - asked < 5


def test_a_burst_async_worker_drains_the_queue_and_stops(backend, queue):
    async def handler(job):
        await job.update_progress("half")
        return job.data["n"]

    ids = [queue.add({"n": n}, priority=n % 2) for n in range(6)]

    async def main():
        client = backend.async_client()
        worker = AsyncWorker(queue.keys, client, handler, WorkerOptions(burst=True, concurrency=3))
        try:
            await asyncio.wait_for(worker.run(), 20)  # returns by itself once nothing is ready
        finally:
            await client.aclose()
        return worker.stats.completed

    assert asyncio.run(main()) == 6
    assert [queue.get_job(i).return_value for i in ids] == list(range(6))
    assert queue.get_job(ids[0]).progress == "half"


def test_async_worker_logs_and_lists_itself_in_the_registry(backend, queue):
    queue.add(job_id="logged")
    release = asyncio.Event()

    async def handler(job):
        assert await job.log("step one") == 1
        await release.wait()

    async def scenario(worker):
        await _until(lambda: [w["jobs"] for w in queue.workers()] == [["logged"]])
        assert queue.workers()[0]["id"] == worker.id
        release.set()
        await _until(lambda: queue.counts()["completed"] == 1)
        return worker.id

    worker_id = _run(backend, queue, handler, scenario)
    assert queue.job_logs("logged") == (["step one"], 1)
    assert queue.workers() == [] and not queue.client.exists(queue.keys.worker(worker_id))
