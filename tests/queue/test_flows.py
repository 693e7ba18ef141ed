"""Flows: a parent job runs only once all its children finished, on the same queue or
others (other slots on a cluster); the last child's outcome makes it ready; a lost
report is made by the parent queue's sweep; a failed or removed child fails the parent
(or not, under "ignore"). Deterministic: workers run in burst mode with one slot, and
nothing waits on time (expiry uses the server clock, moved on minired)."""
from __future__ import annotations

import pytest

from minired_queue import JobSpec
from minired_queue.errors import JobFailed
from minired_queue.flows import add_child, resolve_child
from minired_queue.options import WorkerOptions
from minired_queue.queue import AsyncQueue, Queue
from minired_queue.transitions import complete, retry_or_fail
from minired_queue.worker import Worker
from tests.queue.helpers import readme_example, take


def drain(queue: Queue, handler) -> Worker:
    """Run a one-slot burst worker until the queue has nothing ready."""
    worker = Worker(queue.keys, queue.client, handler, WorkerOptions(burst=True, block_timeout_s=1))
    worker.run(install_signal_handlers=False)
    return worker


def handle(job):
    if job.job.on_child_failure:  # a parent
        return {"results": job.children_results(), "failures": job.children_failures()}
    if job.data.get("fail"):
        raise RuntimeError(f"child {job.data['n']} broke")
    return job.data["n"] * 10


@pytest.fixture
def other(client, queue_name) -> Queue:
    return Queue(f"{queue_name}-other", client)


def test_the_parent_runs_once_after_children_on_its_queue_and_another(queue, other):
    parent = queue.add({"parent": 1}, children=[JobSpec({"n": 1}), JobSpec({"n": 2}, queue=other.name)])
    assert queue.get_state(parent) == "waiting-children" and queue.waiting_children() == [parent]
    assert queue.counts()["wait"] == 1 and other.counts()["wait"] == 1
    drain(queue, handle)  # the child on this queue; the parent still waits for the other
    assert queue.get_state(parent) == "waiting-children"
    drain(other, handle)  # the last child's completion makes the parent ready
    assert queue.get_state(parent) == "wait"
    drain(queue, handle)
    job = queue.get_job(parent)
    assert job.state == "completed" and queue.waiting_children() == []
    assert sorted(job.return_value["results"].values()) == [10, 20] and job.return_value["failures"] == {}
    assert set(queue.children_results(parent)) == {queue.keys.job(c) for c in _children(queue, parent)} | {
        other.keys.job(c) for c in _children(other, parent)}
    assert queue.metrics()["completed"] == 2 and other.metrics()["completed"] == 1


def _children(queue: Queue, parent_id: str) -> list[str]:
    return [job.id for job in queue.completed_jobs() + queue.failed_jobs() if job.parent_id == parent_id]


def test_events_tell_a_waiting_parent_and_its_release(queue):
    from minired_queue.events import Added, QueueEvents

    events = QueueEvents(queue.keys, queue.client, last_id="0")
    parent = queue.add({"parent": 1}, children=[JobSpec({"n": 1}, job_id="only")])
    drain(queue, lambda job: 1 if job.job.on_child_failure is None else 2)
    read = events.read(timeout_s=1)
    assert read[1].waiting_children and isinstance(read[1], Added) and not read[0].waiting_children
    seen = [(type(e).__name__, e.name, e.job_id) for e in read]
    assert seen == [("Added", "waiting", "only"), ("Added", "waiting-children", parent),
                    ("Active", "active", "only"), ("Completed", "completed", "only"),
                    ("Added", "waiting", parent), ("Active", "active", parent), ("Completed", "completed", parent)]
    assert queue.wait(parent, timeout=5) == 2


def test_a_failed_child_fails_the_parent_naming_it(queue, other):
    child = JobSpec({"n": 3, "fail": True}, queue=other.name)
    parent = queue.add({"parent": 1}, children=[JobSpec({"n": 1}), child])
    drain(other, handle)
    job = queue.get_job(parent)
    assert job.state == "failed"
    assert job.failed_reason == f"child {other.keys.job(child.id)} failed: RuntimeError: child 3 broke"
    with pytest.raises(JobFailed, match="child 3 broke"):
        queue.wait(parent, timeout=5)
    drain(queue, handle)  # the other child still runs; the parent does not
    assert queue.get_state(parent) == "failed" and queue.counts()["completed"] == 1


def test_retrying_a_parent_failed_by_its_child_runs_it_with_what_it_has(queue):
    child = JobSpec({"n": 3, "fail": True})
    parent = queue.add({"parent": 1}, children=[child])
    drain(queue, handle)
    assert queue.get_state(parent) == "failed" and queue.retry_failed([parent]) == 1
    drain(queue, handle)
    job = queue.get_job(parent)
    assert job.state == "completed" and job.return_value == {
        "results": {}, "failures": {queue.keys.job(child.id): "RuntimeError: child 3 broke"}}


def test_drain_leaves_waiting_parents(queue):
    parent = queue.add({"parent": 1}, children=[JobSpec({"n": 1})])
    assert queue.drain() == 1  # the child
    assert queue.get_state(parent) == "waiting-children"
    queue.sweep()  # the drained child counts as removed
    assert queue.get_job(parent).failed_reason.endswith("failed: removed")


def test_under_ignore_the_parent_runs_and_reads_the_failure(queue):
    child = JobSpec({"n": 3, "fail": True})
    parent = queue.add({"parent": 1}, children=[JobSpec({"n": 1}), child], on_child_failure="ignore")
    drain(queue, handle)
    job = queue.get_job(parent)
    assert job.state == "completed"
    assert list(job.return_value["results"].values()) == [10]
    assert job.return_value["failures"] == {queue.keys.job(child.id): "RuntimeError: child 3 broke"}


def test_a_lost_report_is_made_by_the_sweep_and_reporting_twice_is_harmless(queue, other):
    child = JobSpec({"n": 1}, queue=other.name)
    parent = queue.add({"parent": 1}, children=[child])
    # The child's worker records its completion and dies before reporting to the parent.
    fetch = take(other)
    assert complete(other.keys, fetch.job, "tok", 10).run(other.client)
    assert queue.get_state(parent) == "waiting-children"
    other.sweep()  # the child's queue's sweep has no parents to move
    assert queue.get_state(parent) == "waiting-children"
    queue.sweep()  # the parent's queue's sweep reads the child's state
    assert queue.get_state(parent) == "wait"
    assert resolve_child(queue.keys, parent, other.keys.job(child.id), "completed", "10").run(queue.client) == "known"
    assert queue.get_state(parent) == "wait" and queue.children_results(parent) == {other.keys.job(child.id): 10}


def test_a_child_dead_lettered_outside_a_worker_is_reported_by_the_sweep(queue, other, clock):
    child = JobSpec({"n": 1}, queue=other.name, ttl_ms=clock.span(50))
    parent = queue.add({"parent": 1}, children=[child])
    clock.advance(clock.span(60))
    assert take(other).status == "expired"  # the fetch script failed it, outside any worker
    assert other.get_state(child.id) == "failed"
    queue.sweep()
    assert queue.get_job(parent).failed_reason == f"child {other.keys.job(child.id)} failed: expired"


def test_a_removed_child_counts_as_failed(queue, other):
    removed, kept = JobSpec({"n": 1}, queue=other.name), JobSpec({"n": 2})
    strict = queue.add({"p": 1}, children=[removed, kept])
    lenient = queue.add({"p": 2}, children=[JobSpec({"n": 3}, job_id="lc", queue=other.name)],
                        on_child_failure="ignore")
    assert other.remove(removed.id) and other.remove("lc")
    queue.sweep()
    assert queue.get_job(strict).failed_reason == f"child {other.keys.job(removed.id)} failed: removed"
    assert queue.get_state(lenient) == "wait"
    assert queue.children_failures(lenient) == {other.keys.job("lc"): "removed"}


def test_a_parent_removed_while_its_children_run(queue, other):
    child = JobSpec({"n": 1}, queue=other.name)
    parent = queue.add({"parent": 1}, children=[child])
    fetch = take(other)  # the child runs
    assert queue.remove(parent) and queue.get_state(parent) is None and queue.get_job(parent) is None
    assert not queue.remove(parent)
    assert complete(other.keys, fetch.job, "tok", 10).run(other.client)
    assert resolve_child(queue.keys, parent, other.keys.job(child.id), "completed", "10").run(
        queue.client) == "orphan"
    queue.sweep()
    assert queue.get_job(parent) is None and queue.counts()["wait"] == 0
    assert 0 < queue.client.pttl(queue.keys.children_results(parent))  # the unread result expires
    assert queue.events(10)[-1]["event"] == "removed"


def test_children_finished_before_the_parent_was_added_are_adopted(queue, other):
    """A producer that died between adding the children and the parent re-sends the flow."""
    parent = JobSpec({"parent": 1}, job_id="album-1")
    children = [JobSpec({"n": 1}, job_id="c1", queue=other.name), JobSpec({"n": 2}, job_id="c2")]
    for child in children:
        keys = other.keys if child.queue else queue.keys
        add_child(keys, child, queue.name, parent.id).run(queue.client)
    drain(other, handle)  # c1 completes: its result waits for a parent that does not exist yet
    assert queue.add_flow(parent, children).created
    assert queue.get_state("album-1") == "waiting-children"
    assert not queue.add_flow(parent, children).created  # re-sending changes nothing
    drain(queue, handle)
    assert queue.get_job("album-1").return_value["results"] == {other.keys.job("c1"): 10, queue.keys.job("c2"): 20}
    assert queue.client.pttl(queue.keys.children_results("album-1")) > 0  # kept a while, not for ever


def test_no_cycle_can_be_built(queue, other):
    queue.add({"n": 1}, job_id="existing")
    with pytest.raises(ValueError, match="appears twice"):
        queue.add({"p": 1}, job_id="p", children=[JobSpec({"n": 1}, job_id="p")])
    with pytest.raises(ValueError, match="appears twice"):
        queue.add({"p": 1}, children=[JobSpec({"n": 1}, job_id="x"), JobSpec({"n": 2}, job_id="x")])
    with pytest.raises(ValueError, match="'existing' already exists"):
        queue.add({"p": 1}, job_id="p2", children=[JobSpec({"n": 1}, job_id="existing")])
    assert queue.get_job("p2") is None and queue.get_job("existing").parent_id is None
    # The same id on another queue is another job.
    queue.add({"p": 1}, job_id="p3", children=[JobSpec({"n": 1}, job_id="p3", queue=other.name)])
    assert queue.get_state("p3") == "waiting-children"


@pytest.mark.parametrize("kwargs, message", [
    ({"children": [JobSpec(1)], "on_child_failure": "maybe"}, "on_child_failure must be one of"),
    ({"children": [JobSpec(1)], "on_child_failure": None}, "on_child_failure must be one of"),
    ({"on_child_failure": "ignore"}, "on_child_failure is a flow's"),
    ({"children": []}, "at least one"),
    ({"children": [{"n": 1}]}, "must be JobSpecs"),
    ({"children": [JobSpec(1, dedup_id="d")]}, "child takes no dedup_id"),
    ({"children": [JobSpec(1, dedup_id="d", throttle_ms=5)]}, "child takes no dedup_id"),
    ({"children": [JobSpec(1)], "delay_ms": 5}, "parent takes no"),
    ({"children": [JobSpec(1)], "dedup_id": "d"}, "parent takes no"),
    ({"children": [JobSpec(float("nan"))]}, "not JSON"),
])
def test_odd_flows_are_refused_before_anything_is_written(queue, kwargs, message):
    with pytest.raises(ValueError, match=message):
        queue.add({"p": 1}, **kwargs)
    assert not queue.client.exists(*queue.keys.own_keys(), queue.keys.waiting_children)


@pytest.mark.parametrize("name", ["a{b", "b}", "", 7])
def test_a_child_queue_name_with_braces_is_refused(name):
    with pytest.raises(ValueError, match="queue must be"):
        JobSpec(1, queue=name)


def test_queue_names_with_colons_are_parsed_back_from_child_keys(client, queue_name):
    parent = Queue(f"{queue_name}:a:b", client)
    other = Queue(f"{queue_name}:job:x", client)
    parent_id = parent.add({"p": 1}, children=[JobSpec({"n": 1}, job_id="c:job:1", queue=other.name)])
    take_and_complete = take(other)
    assert complete(other.keys, take_and_complete.job, "tok", 10).run(client)
    parent.sweep()  # the sweep parses the child's queue back out of its key
    assert parent.get_state(parent_id) == "wait"
    assert parent.children_results(parent_id) == {other.keys.job("c:job:1"): 10}


def test_a_retried_child_reports_only_its_final_failure(queue):
    child = JobSpec({"n": 1}, attempts=2)
    parent = queue.add({"p": 1}, children=[child])
    fetch = take(queue)
    assert retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client).status == "retry"
    queue.sweep()
    assert queue.get_state(parent) == "waiting-children"


def test_the_sweep_reaches_every_waiting_parent(queue, other, monkeypatch):
    """Parents beyond the first page are not starved by older ones whose children still run."""
    import minired_queue.flows as flows

    monkeypatch.setattr(flows, "RESOLVE_BATCH", 2)
    parents = [queue.add({"p": n}, children=[JobSpec({"n": n}, job_id=f"c{n}", queue=other.name)])
               for n in range(5)]
    fetch = take(other)  # c0 runs; c1 .. c4 complete without reporting (their workers died)
    for _ in range(4):
        done = take(other, token="t2")
        assert complete(other.keys, done.job, "t2", 1).run(other.client)
    queue.sweep()
    assert [queue.get_state(p) for p in parents] == ["waiting-children"] + ["wait"] * 4
    assert fetch.job.id == "c0"


def test_an_async_worker_runs_flows(backend, queue, other):
    import asyncio

    from minired_queue.aio import AsyncWorker

    async def parent_or_child(job):
        if job.job.on_child_failure:
            return sorted((await job.children_results()).values())
        return job.data["n"]

    parent = queue.add({"p": 1}, children=[JobSpec({"n": 1}), JobSpec({"n": 2}, queue=other.name)])

    async def scenario():
        for q in (other, queue):
            client = backend.async_client()
            try:
                await AsyncWorker(q.keys, client, parent_or_child, WorkerOptions(burst=True)).run()
            finally:
                await client.aclose()

    asyncio.run(scenario())
    assert queue.get_job(parent).return_value == [1, 2]


def test_async_queue_adds_flows_and_reads_results(backend, queue):
    import asyncio

    async def scenario():
        client = backend.async_client()
        try:
            aqueue = AsyncQueue(queue.name, client)
            parent = await aqueue.add({"p": 1}, children=[JobSpec({"n": 4})])
            assert await aqueue.get_state(parent) == "waiting-children"
            return parent
        finally:
            await client.aclose()

    parent = asyncio.run(scenario())
    drain(queue, handle)
    assert queue.get_job(parent).return_value["results"] == {
        queue.keys.job(_children(queue, parent)[0]): 40}


def test_the_readme_example_runs(queue, capsys):
    exec(compile(readme_example("Flows: a parent after its children"), "README.md", "exec"), {"queue": queue})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[10, 20, 30]"
