"""Debounce and throttle on top of the dedup id: a debounced add replaces the pending job
of its dedup id and restarts its wait; a throttled add lets the first job win for the
window. Both atomic in Lua; time only passes by moving the server clock."""
from __future__ import annotations

import threading

import pytest

from minired_queue import JobRemoved, JobSpec, Queue
from minired_queue.events import wait_steps
from minired_queue.job import text
from minired_queue.transitions import AddResult, HolderMoved, add_debounced_job, complete

from .helpers import assert_each_job_in_exactly_one_state, readme_example, take


def test_a_newer_debounced_job_replaces_the_pending_one_and_restarts_the_wait(queue, clock):
    debounce = clock.span(3000)  # (real ms on real Redis: margins wide enough for a loaded machine)
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=debounce)
    assert queue.get_state(first) == "delayed"
    clock.advance(clock.span(1000))
    second = queue.add({"v": 2}, dedup_id="doc", debounce_ms=debounce)
    assert second != first and queue.get_job(first) is None and queue.get_state(second) == "delayed"
    with pytest.raises(JobRemoved, match=f"job {first} does not exist"):
        queue.wait(first, timeout=30)
    removed = [e for e in queue.events() if e["event"] == "removed"]
    assert [(e["jobId"], e["replacedBy"]) for e in removed] == [(first, second)]
    clock.advance(clock.span(1500))  # 3500 after the first add, 1500 after the second: not due
    assert queue.promote_delayed() == 0
    clock.advance(clock.span(1600))
    assert queue.promote_delayed() == 1
    fetch = take(queue)
    assert fetch.job.id == second and fetch.job.data == {"v": 2} and fetch.job.dedup_id == "doc"
    assert queue.metrics()["removed"] == 1 and queue.metrics()["added"] == 2


def test_a_wait_on_a_job_replaced_while_it_waits_says_by_which(queue, clock):
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(1000))
    steps = wait_steps(queue.keys, first, 30)
    position = steps.send(None)
    state_read = steps.send(position.run(queue.client))
    xread = steps.send(state_read.run(queue.client))  # pending: the wait reads the stream
    second = queue.add({"v": 2}, dedup_id="doc", debounce_ms=clock.span(1000))
    with pytest.raises(JobRemoved, match=f"job {first} replaced by {second}"):
        steps.send(xread.run(queue.client))


def test_a_ready_job_not_yet_taken_is_replaced_too(queue, clock):
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(100), priority=3)
    clock.advance(clock.span(200))
    queue.promote_delayed()
    assert queue.get_state(first) == "prioritized"
    second = queue.add({"v": 2}, dedup_id="doc", debounce_ms=clock.span(100), priority=3)
    assert queue.get_job(first) is None and queue.get_state(second) == "delayed"
    assert_each_job_in_exactly_one_state(queue, [second])


def test_a_running_job_is_not_replaced_and_the_new_one_runs_after_it(queue, clock):
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(100))
    clock.advance(clock.span(200))
    queue.promote_delayed()
    fetch = take(queue, token="t")
    second = queue.add({"v": 2}, dedup_id="doc", debounce_ms=clock.span(100))
    assert second != first and queue.get_state(first) == "active" and queue.get_state(second) == "delayed"
    assert complete(queue.keys, fetch.job, "t", "done").run(queue.client)
    # The first's completion leaves the marker alone: it points at the second.
    assert text(queue.client.get(queue.keys.dedup("doc"))) == second
    third = queue.add({"v": 3}, dedup_id="doc", debounce_ms=clock.span(100))
    assert queue.get_job(second) is None and queue.get_state(third) == "delayed"


def test_the_marker_is_freed_when_the_debounced_job_finishes(queue, clock):
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(100))
    clock.advance(clock.span(200))
    queue.promote_delayed()
    fetch = take(queue, token="t")
    complete(queue.keys, fetch.job, "t", "done").run(queue.client)
    assert queue.client.get(queue.keys.dedup("doc")) is None
    second = queue.add({"v": 2}, dedup_id="doc", debounce_ms=clock.span(100))
    assert queue.get_state(first) == "completed" and queue.get_state(second) == "delayed"


def test_a_plain_add_with_a_debounced_dedup_id_is_deduplicated(queue, clock):
    pending = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(100))
    assert queue.add({"v": 2}, dedup_id="doc") == pending


def test_the_script_refuses_a_stale_read_of_the_marker(queue, clock):
    first = queue.add({"v": 1}, dedup_id="doc", debounce_ms=clock.span(100))
    spec = JobSpec({"v": 2}, dedup_id="doc", debounce_ms=clock.span(100))
    assert add_debounced_job(queue.keys, spec, "").run(queue.client) == HolderMoved(first)
    assert add_debounced_job(queue.keys, spec, "someone-else").run(queue.client) == HolderMoved(first)
    assert queue.get_state(first) == "delayed" and queue.get_job(spec.id) is None  # nothing changed
    assert add_debounced_job(queue.keys, spec, first).run(queue.client) == AddResult(spec.id, True, first)
    assert add_debounced_job(queue.keys, spec, spec.id).run(queue.client) == AddResult(spec.id, False, None)


def test_racing_debounced_adds_leave_exactly_one_pending_job(backend, queue, clock):
    added: list[str] = []
    start = threading.Barrier(4)

    def producer(n: int) -> None:
        client = backend.client()
        mine = Queue(queue.name, client)
        start.wait(10)
        for i in range(25):
            added.append(mine.add({"p": n, "i": i}, dedup_id="doc", debounce_ms=clock.span(1000)))
        client.close()

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(added) == 100 and len(set(added)) == 100
    counts = queue.counts()
    assert counts["delayed"] == 1 and sum(counts.values()) == 1
    [survivor] = [text(i) for i in queue.client.zrange(queue.keys.delayed, 0, -1)]
    assert text(queue.client.get(queue.keys.dedup("doc"))) == survivor
    assert queue.metrics()["removed"] == 99


def test_add_many_with_debounced_specs(queue, clock):
    results = queue.add_many([JobSpec({"v": v}, dedup_id="doc", debounce_ms=clock.span(100)) for v in range(3)]
                             + [JobSpec({"v": "other"})])
    assert [r.created for r in results] == [True] * 4
    assert [r.replaced for r in results] == [None, results[0].job_id, results[1].job_id, None]
    assert queue.counts()["delayed"] == 1 and queue.counts()["wait"] == 1
    with pytest.raises(ValueError, match="job data is not JSON"):
        queue.add_many([JobSpec({"v": 1}, dedup_id="x", debounce_ms=5), JobSpec(object())])
    assert queue.client.get(queue.keys.dedup("x")) is None  # checked before the first was added


def test_throttle_lets_the_first_job_win_for_the_window(queue, clock):
    first = queue.add({"v": 1}, dedup_id="mail", throttle_ms=clock.span(3000))
    fetch = take(queue, token="t")
    complete(queue.keys, fetch.job, "t", None).run(queue.client)  # finishing does not end the window
    assert queue.add({"v": 2}, dedup_id="mail", throttle_ms=clock.span(3000)) == first
    clock.advance(clock.span(3100))
    second = queue.add({"v": 3}, dedup_id="mail", throttle_ms=clock.span(3000))
    assert second != first and queue.get_state(second) == "wait"


@pytest.mark.parametrize("options, message", [
    ({"debounce_ms": 5}, "need a dedup_id"),
    ({"throttle_ms": 5}, "need a dedup_id"),
    ({"dedup_id": "d", "debounce_ms": 5, "throttle_ms": 5}, "cannot both be given"),
    ({"dedup_id": "d", "debounce_ms": 5, "dedup_ttl_ms": 5}, "dedup_ttl_ms cannot be given"),
    ({"dedup_id": "d", "throttle_ms": 5, "dedup_ttl_ms": 5}, "dedup_ttl_ms cannot be given"),
    ({"dedup_id": "d", "debounce_ms": 5, "delay_ms": 5}, "delay_ms cannot be given"),
])
def test_conflicting_options_are_refused(queue, options, message):
    with pytest.raises(ValueError, match=message):
        queue.add({"v": 1}, **options)
    assert not queue.exists()


def test_the_readme_example_runs(queue):
    exec(compile(readme_example("Expiry, timeouts, debounce and throttle"), "README.md", "exec"), {"queue": queue})
    ids = [text(i) for i in queue.client.lrange(queue.keys.wait, 0, -1) + queue.client.zrange(queue.keys.delayed, 0, -1)]
    jobs = {next(iter(job.data)): job for job in map(queue.get_job, ids)}
    assert jobs["otp"].expire_at == jobs["otp"].timestamp + 60_000
    assert (jobs["video"].timeout_ms, jobs["video"].max_attempts) == (300_000, 3)
    assert jobs["doc"].delay == 2_000 and jobs["doc"].dedup_id == "reindex-9"
    assert 0 < queue.client.pttl(queue.keys.dedup("notify-7")) <= 60_000
