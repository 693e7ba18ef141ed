"""The asyncio producer: ``AsyncQueue`` runs ``Queue``'s operations (the same steps) on a
redis.asyncio client, awaited; ``Queue`` given an asyncio client says so at once."""
from __future__ import annotations

import asyncio

import pytest

from minired_queue import AsyncQueue, Backoff, JobSpec, Queue
from minired_queue.transitions import retry_or_fail

from .helpers import take


def test_queue_refuses_an_asyncio_client_and_points_to_async_queue(backend, queue_name):
    async def main() -> None:
        client = backend.async_client()
        try:
            with pytest.raises(TypeError, match="asyncio client: use minired_queue.AsyncQueue"):
                Queue(queue_name, client)
        finally:
            await client.aclose()

    asyncio.run(main())
    sync_client = backend.client()
    with pytest.raises(TypeError, match="not an asyncio client: use minired_queue.Queue"):
        AsyncQueue(queue_name, sync_client)
    sync_client.close()


def test_async_queue_adds_inspects_and_operates(backend, queue, clock):
    async def produce() -> dict:
        client = backend.async_client()
        aqueue = AsyncQueue(queue.name, client)
        try:
            assert not await aqueue.exists()
            first = await aqueue.add({"n": 1}, attempts=2, backoff=Backoff.fixed(10), priority=3)
            later = await aqueue.add({"n": 2}, delay_ms=clock.span(60_000))
            batch = await aqueue.add_many(JobSpec({"n": n}, job_id=f"b{n}") for n in range(3, 606))
            assert [r.job_id for r in batch] == [f"b{n}" for n in range(3, 606)] and all(r.created for r in batch)
            with pytest.raises(ValueError, match="delay_ms must be an integer"):
                await aqueue.add({"n": 0}, delay_ms=0.5)
            job = await aqueue.get_job(first)
            assert (job.data, job.state, job.priority, job.max_attempts) == ({"n": 1}, "prioritized", 3, 2)
            assert await aqueue.get_state(later) == "delayed"
            assert await aqueue.configure(concurrency=2) == {"concurrency": 2, "max_stalled": 1}
            assert await aqueue.pause() and await aqueue.is_paused()
            assert await aqueue.resume() and not await aqueue.is_paused()
            assert await aqueue.add_repeatable("tick", every_ms=60_000) == "created"
            assert [r.key for r in await aqueue.repeatables()] == ["tick"]
            assert await aqueue.remove(later) and await aqueue.get_job(later) is None
            return {"exists": await aqueue.exists(), "counts": await aqueue.counts(),
                    "metrics": await aqueue.metrics(), "events": len(await aqueue.events(1000))}
        finally:
            await client.aclose()

    seen = asyncio.run(produce())
    assert seen["exists"] and seen["counts"] == queue.counts()
    assert seen["counts"] == {"wait": 603, "prioritized": 1, "active": 0, "delayed": 0, "completed": 0, "failed": 0}
    assert seen["metrics"]["added"] == 605 and seen["events"] == 605 + 1  # and one removed

    fetch = take(queue)
    retry_or_fail(queue.keys, fetch.job, "tok", "boom", unrecoverable=True).run(queue.client)

    async def operate() -> tuple:
        client = backend.async_client()
        aqueue = AsyncQueue(queue.name, client)
        try:
            failed = [job.id for job in await aqueue.failed_jobs()]
            retried = await aqueue.retry_failed()
            drained = await aqueue.drain()
            return failed, retried, drained, (await aqueue.sweep()).recovered, await aqueue.counts()
        finally:
            await client.aclose()

    failed, retried, drained, recovered, counts = asyncio.run(operate())
    assert (failed, retried, drained, recovered) == ([fetch.job.id], 1, 604, [])
    assert sum(counts.values()) == 0


def test_async_queue_has_the_operators_calls(backend, queue, clock):
    """The admin calls (admin.py) are steps too: AsyncQueue runs each, awaited."""
    from minired_queue.transitions import add_log, complete

    queue.add(job_id="done")
    fetch = take(queue, token="w:1")
    add_log(queue.keys, "done", "a line", 10).run(queue.client)
    complete(queue.keys, fetch.job, "w:1", {"ok": 1}).run(queue.client)
    queue.add_job(JobSpec({}, job_id="later", delay_ms=clock.span(60_000)))
    queue.add(job_id="ready")

    async def operate() -> dict:
        client = backend.async_client()
        aqueue = AsyncQueue(queue.name, client)
        try:
            seen = {"page": [job.id for job in (await aqueue.jobs("delayed")).jobs],
                    "logs": await aqueue.job_logs("done"), "errors": await aqueue.job_errors("done"),
                    "workers": await aqueue.workers(), "promoted": await aqueue.promote("later"),
                    "retried": await aqueue.retry_completed(["done"]),
                    "removed": sorted(await aqueue.remove_many(["ready", "later"])),
                    "cleaned": await aqueue.clean_older_than("failed", 0)}
            seen["obliterated"] = await aqueue.obliterate()
            seen["exists"] = await aqueue.exists()
            return seen
        finally:
            await client.aclose()

    seen = asyncio.run(operate())
    assert seen == {"page": ["later"], "logs": (["a line"], 1), "errors": [], "workers": [], "promoted": True,
                    "retried": 1, "removed": ["later", "ready"], "cleaned": 0, "obliterated": 1,
                    "exists": False}
