"""Events you subscribe to (QueueEvents, AsyncQueueEvents) and waiting for a job's outcome
(Queue.wait, AsyncQueue.wait). Nothing here waits on time: each blocking read returns
because the events it waits for were written before it, or it is given a timeout whose
passing is the point of the test."""
from __future__ import annotations

import asyncio
import threading

import pytest

from minired_queue import AsyncQueue, AsyncQueueEvents, JobFailed, JobRemoved, QueueEvents
from minired_queue.events import (
    Active,
    Added,
    Completed,
    Failed,
    Progress,
    Removed,
    Retried,
    Stalled,
    wait_steps,
)
from minired_queue.steps import drive
from minired_queue.transitions import complete, retry_or_fail, update_progress

from .helpers import readme_example, take


def read_all(events: QueueEvents, count: int) -> list:
    """Read until ``count`` events came (each read returns at once: they were written)."""
    found: list = []
    while len(found) < count:
        batch = events.read(timeout_s=5)
        assert batch, f"expected {count} events, got {found}"
        found += batch
    return found


def test_every_transition_is_a_typed_event_in_order(queue, clock):
    queue.add({"n": 0}, job_id="before")
    events = QueueEvents(queue.keys, queue.client, progress=True)  # "$": what happens from now on
    done = queue.add({"n": 1}, job_id="done")
    assert take(queue, lock_ttl_ms=10**9).job.id == "before" and queue.remove("before") is False
    queue.add({"n": 2}, job_id="later", delay_ms=clock.span(60_000))
    fetch = take(queue, token="t1")
    assert update_progress(queue.keys, done, "t1", {"pct": 50}).run(queue.client)
    assert complete(queue.keys, fetch.job, "t1", {"sent": True}).run(queue.client)
    queue.add({"n": 3}, job_id="flaky", attempts=2)
    for token in ("t2", "t3"):
        fetch = take(queue, token=token)
        retry_or_fail(queue.keys, fetch.job, token, "boom").run(queue.client)
    queue.remove("later")
    queue.add({"n": 4}, job_id="crashed")
    take(queue, token="t4", lock_ttl_ms=clock.span(50))
    clock.advance(clock.span(60))
    assert queue.sweep().recovered == ["crashed"]

    everything = read_all(events, 15)
    # Two streams: each in order; between them only by time (their ids share the ms clock).
    [progress] = [e for e in everything if e.stream == "progress"]
    seen = [e for e in everything if e.stream == "events"]
    assert (type(seen[1]).__name__, seen[1].job_id) == ("Active", "before")  # after the subscription
    del seen[1]
    seen.insert(3, progress)
    assert [(type(e).__name__, e.job_id) for e in seen] == [
        ("Added", "done"), ("Added", "later"), ("Active", "done"), ("Progress", "done"), ("Completed", "done"),
        ("Added", "flaky"), ("Active", "flaky"), ("Retried", "flaky"), ("Active", "flaky"), ("Failed", "flaky"),
        ("Removed", "later"), ("Added", "crashed"), ("Active", "crashed"), ("Stalled", "crashed")]
    added, delayed, active, progress, completed = seen[:5]
    assert isinstance(added, Added) and not added.delayed and delayed.delayed
    assert isinstance(active, Active) and active.attempts_started == 1
    assert isinstance(progress, Progress) and progress.stream == "progress" and progress.data == {"pct": 50}
    assert isinstance(completed, Completed) and completed.return_value == {"sent": True}
    retried, failed = seen[7], seen[9]
    assert isinstance(retried, Retried) and retried.failed_reason == "boom" and retried.delay_ms == 0
    assert isinstance(failed, Failed) and failed.failed_reason == "boom" and not failed.expired
    assert isinstance(seen[10], Removed) and seen[10].replaced_by is None
    assert isinstance(seen[13], Stalled)
    assert {e.kind for e in seen} == {"added", "active", "progress", "completed", "retried", "failed", "removed",
                                      "stalled"}
    assert events.read(timeout_s=0.001) == []


def test_progress_stays_out_of_the_events_stream_and_is_capped_on_its_own(queue):
    job_id = queue.add({"n": 1})
    take(queue, token="t")
    for pct in range(3000):
        update_progress(queue.keys, job_id, "t", pct).run(queue.client)
    assert [e["event"] for e in queue.events()] == ["waiting", "active"]  # not drowned
    assert queue.client.xlen(queue.keys.progress) < 3000  # MAXLEN ~ 1000
    reports = QueueEvents(queue.keys, queue.client, last_id="0", progress=True, last_progress_id="0",
                          count=10_000).read(timeout_s=0.001)
    assert reports[-1].data == 2999 and [e.kind for e in reports[:2]] == ["added", "active"]


def test_a_subscription_resumes_from_its_last_id(queue):
    events = QueueEvents(queue.keys, queue.client, last_id="0")
    queue.add(1, job_id="a")
    queue.add(2, job_id="b")
    assert [e.job_id for e in read_all(events, 2)] == ["a", "b"]
    kept = events.last_id
    queue.add(3, job_id="c")
    resumed = QueueEvents(queue.keys, queue.client, last_id=kept)
    assert [e.job_id for e in resumed.read(timeout_s=5)] == ["c"]
    assert resumed.last_id > kept and QueueEvents(queue.keys, queue.client, last_id=resumed.last_id).read(0.001) == []


def test_wait_returns_the_result_or_raises_the_failure(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="t")
    completer = threading.Thread(target=lambda: complete(queue.keys, fetch.job, "t", [1, 2]).run(queue.client))
    completer.start()  # before or after the waiter subscribes: either way the outcome is seen
    assert queue.wait(job_id, timeout=30) == [1, 2]
    completer.join()
    assert queue.wait(job_id, timeout=30) == [1, 2]  # already finished: from its state

    doomed = queue.add({"n": 2})
    fetch = take(queue, token="u")
    failer = threading.Thread(target=lambda: retry_or_fail(queue.keys, fetch.job, "u", "ValueError: bad").run(
        queue.client))
    failer.start()
    with pytest.raises(JobFailed) as failure:
        queue.wait(doomed, timeout=30)
    failer.join()
    assert failure.value.reason == "ValueError: bad" and failure.value.job_id == doomed


def test_wait_on_a_job_removed_or_unknown_raises_job_removed(queue):
    with pytest.raises(JobRemoved, match="does not exist"):
        queue.wait("no-such-job", timeout=30)
    job_id = queue.add({"n": 1})
    remover = threading.Thread(target=lambda: queue.remove(job_id))
    remover.start()  # removed before the wait reads its state, or after: JobRemoved either way
    with pytest.raises(JobRemoved):
        queue.wait(job_id, timeout=30)
    remover.join()


def test_only_unfinished_jobs_removed_get_a_removed_event(queue):
    done = queue.add(1)
    fetch = take(queue, token="t")
    complete(queue.keys, fetch.job, "t", None).run(queue.client)
    pending = [queue.add(n) for n in range(3)]
    assert queue.clean("completed") == 1 and queue.drain() == 3
    removed = [e["jobId"] for e in queue.events() if e["event"] == "removed"]
    assert sorted(removed) == sorted(pending) and done not in removed


def test_wait_times_out_on_a_job_that_does_not_finish(queue):
    job_id = queue.add({"n": 1})
    take(queue, token="t")  # active, and nobody will finish it
    with pytest.raises(TimeoutError, match="did not finish"):
        queue.wait(job_id, timeout=0.05)


@pytest.mark.parametrize("timeout", [0, -1, True, "5", None, float("nan")])
def test_wait_refuses_a_timeout_that_is_not_a_positive_number(queue, timeout):
    with pytest.raises(ValueError, match="timeout must be"):
        queue.wait("x", timeout=timeout)


@pytest.mark.parametrize("when", ["before the state is read", "after the state is read"])
def test_wait_misses_no_outcome_between_its_two_reads(queue, when):
    """Drive the wait step by step and complete the job between its stream position and its
    state read, or between the state read and the first XREAD: the result is found either way."""
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="t")
    steps = wait_steps(queue.keys, job_id, 30)
    position = steps.send(None)
    assert position.method == "xrevrange"
    state_read = steps.send(position.run(queue.client))
    if when == "before the state is read":
        complete(queue.keys, fetch.job, "t", "early").run(queue.client)
        assert drive_rest(steps, state_read.run(queue.client), queue.client) == "early"
    else:
        xread = steps.send(state_read.run(queue.client))
        assert xread.method == "xread"
        complete(queue.keys, fetch.job, "t", "late").run(queue.client)
        assert drive_rest(steps, xread.run(queue.client), queue.client) == "late"


def drive_rest(steps, reply, client):
    try:
        operation = steps.send(reply)
    except StopIteration as done:
        return done.value
    return drive(_resumed(operation, steps), client)


def _resumed(first, steps):
    reply = yield first
    while True:
        try:
            operation = steps.send(reply)
        except StopIteration as done:
            return done.value
        reply = yield operation


def test_wait_sees_the_result_of_a_job_deleted_as_it_completes(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="t")
    steps = wait_steps(queue.keys, job_id, 30)
    position = steps.send(None)
    state_read = steps.send(position.run(queue.client))
    xread = steps.send(state_read.run(queue.client))  # not finished yet: it reads the stream
    complete(queue.keys, fetch.job, "t", {"gone": True}, remove=True).run(queue.client)
    assert queue.get_job(job_id) is None
    assert drive_rest(steps, xread.run(queue.client), queue.client) == {"gone": True}


def test_async_events_and_wait(backend, queue):
    async def main() -> tuple:
        client = backend.async_client()
        try:
            aqueue = AsyncQueue(queue.name, client)
            await aqueue.add({"n": 0})
            events = await AsyncQueueEvents(queue.keys, client).start()  # "$": from here on
            job_id = await aqueue.add({"n": 1})
            take(queue, token="first")  # the job added before the subscription
            fetch = take(queue, token="t")
            waiter = asyncio.ensure_future(aqueue.wait(job_id, timeout=30))
            await asyncio.sleep(0)
            complete(queue.keys, fetch.job, "t", "ok").run(queue.client)
            result = await waiter
            kinds = []
            async for event in events:
                kinds.append((event.kind, event.job_id == job_id))
                if event.kind == "completed":
                    break
            with pytest.raises(JobRemoved):
                await aqueue.wait("missing", timeout=30)
            with pytest.raises(TimeoutError):
                await aqueue.wait(await aqueue.add(2, delay_ms=10**9), timeout=0.05)
            return result, kinds, events.last_id
        finally:
            await client.aclose()

    result, kinds, last_id = asyncio.run(main())
    assert result == "ok" and last_id != "0"
    assert kinds == [("added", True), ("active", False), ("active", True), ("completed", True)]


def test_the_readme_example_runs(queue, capsys):
    exec(compile(readme_example("Events and waiting for a job"), "README.md", "exec"), {"queue": queue})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "ZeroDivisionError: integer division or modulo by zero"
    assert [line.split()[0] for line in printed[1:]] == ["added", "active", "completed", "added", "active", "failed"]
