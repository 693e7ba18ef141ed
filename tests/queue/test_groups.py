"""Groups: jobs of one group wait in its line; the one fetch script serves the groups with
ready jobs in turn, each within the queue's per-group concurrency and rate limits. Every
transition that makes a job ready again (retry, backoff, stall recovery, release,
retry from failed) puts a grouped job back in its group's line."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from minired_queue import JobSpec
from minired_queue.options import WorkerOptions
from minired_queue.transitions import complete, release, retry_or_fail
from minired_queue.worker import Worker

from .helpers import readme_example, take


def _take_all(queue, limit: int = 1000) -> list[str]:
    order = []
    while len(order) < limit and (fetch := take(queue, token=f"t{len(order)}")).status == "active":
        order.append(fetch.job.id)
    return order


def test_groups_take_turns_so_a_big_one_cannot_starve_a_small_one(queue):
    for n in range(50):
        queue.add({"n": n}, job_id=f"a{n}", group="tenant-a")
    queue.add({}, job_id="b0", group="tenant-b")
    queue.add({}, job_id="c0", group="tenant-c")
    queue.add({}, job_id="c1", group="tenant-c")
    assert queue.group_counts() == {"tenant-a": 50, "tenant-b": 1, "tenant-c": 2}
    assert queue.counts()["wait"] == 53 and queue.get_state("b0") == "wait"
    order = _take_all(queue)
    assert order[:6] == ["a0", "b0", "c0", "a1", "c1", "a2"]
    assert order[6:] == [f"a{n}" for n in range(3, 50)]
    assert queue.group_counts() == {} and queue.counts()["active"] == 53


def test_a_fetch_names_the_jobs_behind_the_group_heads(queue):
    from minired_queue.transitions import move_to_active

    for n in range(3):
        queue.add({}, job_id=f"a{n}", group="a")
    queue.add({}, job_id="b0", group="b")
    miss = move_to_active(queue.keys, [], "t", 30_000, width=3).run(queue.client)
    assert miss.status == "miss" and miss.candidates == ("a0", "b0", "a1")
    taken = move_to_active(queue.keys, miss.candidates, "t", 30_000, width=3).run(queue.client)
    assert taken.job.id == "a0" and taken.candidates == ("b0", "a1", "a2")


def test_ungrouped_jobs_come_first_and_prioritized_ones_after_the_groups(queue):
    queue.add({}, job_id="g", group="x")
    queue.add({}, job_id="p", priority=1)
    queue.add({}, job_id="w")
    assert _take_all(queue) == ["w", "g", "p"]


def test_group_concurrency_holds_and_a_finished_job_frees_its_place(queue):
    queue.configure(group_concurrency=2)
    for n in range(4):
        queue.add({}, job_id=f"a{n}", group="a")
    queue.add({}, job_id="b0", group="b")
    fetches = [take(queue, token=f"t{n}") for n in range(4)]
    assert [f.job.id for f in fetches if f.status == "active"] == ["a0", "b0", "a1"]
    assert fetches[3].status == "capped"
    assert complete(queue.keys, fetches[0].job, "t0", 1).run(queue.client)
    assert take(queue, token="t5").job.id == "a2"
    assert take(queue, token="t6").status == "capped"
    # A retried job leaves active too: its place is free, and it is back in its line first.
    assert retry_or_fail(queue.keys, fetches[2].job, "t2", "boom").run(queue.client).status == "failed"
    assert take(queue, token="t7").job.id == "a3"


def test_group_rate_limit_per_window(queue, clock):
    window = clock.span(1000)
    queue.configure(group_rate_max=2, group_rate_duration_ms=window)
    assert queue.settings()["group_rate_duration_ms"] == window
    for n in range(4):
        queue.add({}, job_id=f"a{n}", group="a")
    queue.add({}, job_id="b0", group="b")
    assert _take_all(queue) == ["a0", "b0", "a1"]
    limited = take(queue, token="late")
    assert limited.status == "limited" and 0 < limited.retry_after_ms <= window
    clock.advance(window + clock.span(20))
    assert _take_all(queue) == ["a2", "a3"]


def test_retries_recoveries_and_releases_return_to_the_group(queue, clock):
    queue.configure(group_concurrency=1)
    queue.add({}, job_id="a0", group="a", attempts=3)
    queue.add({}, job_id="a1", group="a")
    first = take(queue, token="t0", lock_ttl_ms=clock.span(100))
    assert first.job.id == "a0" and take(queue, token="x").status == "capped"
    assert retry_or_fail(queue.keys, first.job, "t0", "boom").run(queue.client).status == "retry"
    assert queue.get_state("a0") == "wait" and queue.group_counts() == {"a": 2}
    again = take(queue, token="t1", lock_ttl_ms=clock.span(100))
    assert again.job.id == "a0"  # back at the front of its group's line
    clock.advance(clock.span(200))  # its worker died: the lock lapses
    assert queue.sweep().recovered == ["a0"] and queue.get_state("a0") == "wait"
    third = take(queue, token="t2")
    assert third.job.id == "a0" and release(queue.keys, "a0", "t2").run(queue.client)
    assert take(queue, token="t3").job.id == "a0"
    assert complete(queue.keys, queue.get_job("a0"), "t3", 1).run(queue.client)
    assert queue.retry_failed() == 0 and take(queue, token="t4").job.id == "a1"


def test_delayed_and_failed_grouped_jobs_come_back_to_their_group(queue, clock):
    queue.add({}, job_id="d", group="g", delay_ms=clock.span(50))
    clock.advance(clock.span(60))
    assert queue.promote_delayed() == 1 and queue.group_counts() == {"g": 1}
    fetch = take(queue)
    assert retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client).status == "failed"
    assert queue.retry_failed() == 1 and queue.group_counts() == {"g": 1}


def test_the_sweep_prunes_what_idle_groups_left(queue, clock):
    queue.configure(group_concurrency=5, group_rate_max=5, group_rate_duration_ms=clock.span(100))
    for n in range(3):
        queue.add({}, job_id=f"j{n}", group=f"g{n}")
    fetches = [take(queue, token=f"t{n}") for n in range(3)]
    assert queue.client.zcard(queue.keys.group_active) == 3 and queue.client.hlen(queue.keys.group_rate) == 6
    for n in range(2):
        assert complete(queue.keys, fetches[n].job, f"t{n}", 1).run(queue.client)
    queue.sweep()  # windows still open; two jobs left active
    assert queue.client.zcard(queue.keys.group_active) == 1 and queue.client.hlen(queue.keys.group_rate) == 6
    clock.advance(clock.span(150))
    queue.sweep()
    assert queue.client.hlen(queue.keys.group_rate) == 0
    assert [m.split(b"\0")[1] for m in queue.client.zrange(queue.keys.group_active, 0, -1)] == [b"j2"]


def test_an_expired_grouped_job_leaves_its_group(queue, clock):
    queue.add({}, job_id="old", group="g", ttl_ms=clock.span(50))
    queue.add({}, job_id="new", group="h")
    clock.advance(clock.span(60))
    assert take(queue).status == "expired"  # the fetch failed "old" instead of handing it out
    assert take(queue).job.id == "new"
    assert queue.get_job("old").failed_reason == "expired" and queue.group_counts() == {}


def test_removing_and_draining_grouped_jobs(queue):
    for n in range(3):
        queue.add({}, job_id=f"a{n}", group="a")
    queue.add({}, job_id="b0", group="b")
    assert queue.remove("b0") and queue.group_counts() == {"a": 3}
    assert queue.get_state("b0") is None
    assert queue.drain() == 3 and queue.group_counts() == {} and queue.counts()["wait"] == 0
    assert take(queue).status == "empty"


@pytest.mark.parametrize("name", ["{a}", "a:b:{c}", "}{", "a\1b", "ünï", " "])
def test_any_group_name_without_nul_works(queue, name):
    queue.add({}, job_id="x", group=name)
    queue.add({}, job_id="y", group=name + "z")  # a longer name is another group
    assert queue.group_counts() == {name: 1, name + "z": 1}
    assert _take_all(queue) == ["x", "y"] and queue.get_job("x").group == name


@pytest.mark.parametrize("kwargs, message", [
    ({"group": ""}, "group must be"),
    ({"group": 7}, "group must be"),
    ({"group": "a\0b"}, "group must be"),
    ({"group": "a", "priority": 2}, "grouped job takes no priority"),
    ({"group": "a", "dedup_id": "d", "debounce_ms": 5}, "grouped job takes no priority or debounce"),
])
def test_odd_groups_are_refused(queue, kwargs, message):
    with pytest.raises(ValueError, match=message):
        queue.add({}, **kwargs)
    assert queue.counts()["wait"] == 0 and not queue.client.exists(queue.keys.group_wait)


@pytest.mark.parametrize("setting", ["group_concurrency", "group_rate_max", "group_rate_duration_ms"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2"])
def test_odd_group_limits_are_refused(queue, setting, value):
    with pytest.raises(ValueError, match=setting):
        queue.configure(**{setting: value})


def test_a_flow_child_may_have_a_group_but_not_its_parent(queue):
    with pytest.raises(ValueError, match="parent takes no"):
        queue.add_flow(JobSpec({}, group="a"), [JobSpec({})])
    parent = queue.add({}, children=[JobSpec({"n": 1}, group="a")])
    assert queue.group_counts() == {"a": 1}
    Worker(queue.keys, queue.client, lambda job: 1, WorkerOptions(burst=True)).run(install_signal_handlers=False)
    assert queue.get_state(parent) == "completed"


def test_workers_never_run_more_of_a_group_than_its_limit(backend, queue):
    queue.configure(group_concurrency=2)
    running, peak, guard = Counter(), Counter(), threading.Lock()
    release_all = threading.Event()

    def handler(job):
        group = job.job.group
        with guard:
            running[group] += 1
            peak[group] = max(peak[group], running[group])
            if sum(running.values()) >= 4:  # every group at its limit: let them go
                release_all.set()
        release_all.wait(5)
        with guard:
            running[group] -= 1

    for n in range(12):
        queue.add({}, group=f"g{n % 2}")
    workers = [Worker(queue.keys, backend.client(), handler, WorkerOptions(concurrency=4, burst=True))
               for _ in range(2)]
    threads = [threading.Thread(target=w.run, kwargs={"install_signal_handlers": False}) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for worker in workers:
        worker.client.close()
    assert queue.counts()["completed"] == 12
    assert peak == {"g0": 2, "g1": 2}


def test_the_readme_example_runs(queue, capsys):
    exec(compile(readme_example("Groups: fair turns and per-group limits"), "README.md", "exec"), {"queue": queue})
    assert capsys.readouterr().out.splitlines() == ["{'tenant-a': 10, 'tenant-b': 1}",
                                                    "['tenant-a', 'tenant-b', 'tenant-a']"]
    assert queue.counts()["completed"] == 11


def test_async_queue_adds_counts_and_drains_groups(backend, queue):
    import asyncio

    from minired_queue.queue import AsyncQueue

    async def scenario():
        client = backend.async_client()
        try:
            aqueue = AsyncQueue(queue.name, client)
            await aqueue.add({}, job_id="x", group="{t}:1")
            await aqueue.add({}, job_id="y", group="{t}:1")
            counts = await aqueue.group_counts(), await aqueue.get_state("x"), (await aqueue.counts())["wait"]
            return counts, await aqueue.drain()
        finally:
            await client.aclose()

    (groups, state, waiting), drained = asyncio.run(scenario())
    assert groups == {"{t}:1": 2} and state == "wait" and waiting == 2 and drained == 2
    assert queue.group_counts() == {}
