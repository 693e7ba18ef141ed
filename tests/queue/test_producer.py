"""The producer and admin API: add, dedup, delay, inspect, retry, remove, pause, drain."""
from __future__ import annotations

from minired_queue import Backoff, JobSpec, known_queues
from minired_queue.transitions import complete, retry_or_fail

from .helpers import server_time_ms, take


def test_add_stores_the_job_in_wait(queue):
    job_id = queue.add({"to": "a@example.com"}, name="email", attempts=3, backoff=Backoff.exponential(100))
    job = queue.get_job(job_id)
    assert job.state == "wait"
    assert job.data == {"to": "a@example.com"}
    assert (job.name, job.max_attempts, job.backoff) == ("email", 3, Backoff.exponential(100))
    assert (job.attempts_made, job.attempts_started, job.stalled_counter) == (0, 0, 0)
    assert queue.counts() == {"wait": 1, "prioritized": 0, "active": 0, "delayed": 0, "completed": 0, "failed": 0}


def test_unknown_job_is_none(queue):
    assert queue.get_job("nope") is None
    assert queue.get_state("nope") is None


def test_stable_id_makes_add_idempotent(queue):
    first = queue.add_job(JobSpec({"v": 1}, job_id="invoice-42"))
    again = queue.add_job(JobSpec({"v": 2}, job_id="invoice-42"))
    assert first.created and not again.created
    assert again.job_id == "invoice-42"
    assert queue.get_job("invoice-42").data == {"v": 1}
    assert queue.counts()["wait"] == 1


def test_dedup_id_returns_the_holder_while_pending_then_frees_on_completion(queue):
    first = queue.add({"n": 1}, dedup_id="user-7-welcome")
    duplicate = queue.add_job(JobSpec({"n": 2}, dedup_id="user-7-welcome"))
    assert duplicate.job_id == first and not duplicate.created
    assert queue.counts()["wait"] == 1
    assert queue.client.get(queue.keys.dedup("user-7-welcome")).decode() == first

    fetch = take(queue)
    assert complete(queue.keys, fetch.job, "tok", None).run(queue.client)
    assert queue.client.exists(queue.keys.dedup("user-7-welcome")) == 0
    assert queue.add_job(JobSpec({"n": 3}, dedup_id="user-7-welcome")).created


def test_dedup_id_is_freed_when_the_job_is_dead_lettered(queue):
    queue.add({"n": 1}, dedup_id="d")
    fetch = take(queue)
    assert retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client).status == "failed"
    assert queue.add_job(JobSpec({"n": 2}, dedup_id="d")).created


def test_dedup_with_ttl_holds_until_it_expires_even_after_completion(queue, clock):
    ttl = clock.span(300)  # the adds before the advance must land within it, even under load
    first = queue.add({"n": 1}, dedup_id="report", dedup_ttl_ms=ttl)
    fetch = take(queue)
    complete(queue.keys, fetch.job, "tok", None).run(queue.client)
    assert queue.add({"n": 2}, dedup_id="report", dedup_ttl_ms=ttl) == first
    clock.advance(clock.span(400))
    assert queue.add({"n": 3}, dedup_id="report", dedup_ttl_ms=ttl) != first


def test_delayed_job_waits_for_the_server_clock(queue, clock):
    job_id = queue.add({"n": 1}, delay_ms=clock.span(300))
    assert queue.get_state(job_id) == "delayed"
    due = queue.client.zscore(queue.keys.delayed, job_id)
    assert due >= server_time_ms(queue.client) + clock.span(150)
    assert queue.promote_delayed() == 0
    assert take(queue).status == "empty"
    clock.advance(clock.span(400))
    assert queue.promote_delayed() == 1
    assert queue.get_state(job_id) == "wait"


def test_add_many_pipelines_thousands_of_jobs(queue):
    specs = [JobSpec({"n": n}, job_id=f"j{n}") for n in range(1200)]
    results = queue.add_many(specs + [JobSpec({"n": 0}, job_id="j0")])
    assert [r.job_id for r in results[:1200]] == [f"j{n}" for n in range(1200)]
    assert all(r.created for r in results[:1200]) and not results[-1].created
    assert queue.counts()["wait"] == 1200
    assert take(queue).job.id == "j0"  # FIFO: first added, first out


def test_jobs_come_out_in_fifo_order(queue):
    ids = [queue.add({"n": n}) for n in range(5)]
    assert [take(queue).job.id for _ in ids] == ids


def test_failed_jobs_listing_retry_and_remove(queue):
    ids = [queue.add({"n": n}) for n in range(3)]
    for n in range(3):
        fetch = take(queue)
        retry_or_fail(queue.keys, fetch.job, "tok", f"ValueError: bad {n}", "trace").run(queue.client)
    failed = queue.failed_jobs()
    assert {j.id for j in failed} == set(ids)
    assert all(j.state == "failed" and j.failed_reason.startswith("ValueError") for j in failed)

    assert queue.retry_failed([ids[0]]) == 1
    job = queue.get_job(ids[0])
    assert job.state == "wait" and job.attempts_made == 0 and job.failed_reason is None
    assert queue.retry_failed([ids[0]]) == 0  # not failed any more

    assert queue.remove(ids[1]) is True
    assert queue.get_job(ids[1]) is None
    assert queue.retry_failed() == 1  # the remaining one
    assert queue.counts() == {"wait": 2, "prioritized": 0, "active": 0, "delayed": 0, "completed": 0, "failed": 0}


def test_remove_refuses_an_active_job(queue):
    job_id = queue.add({"n": 1})
    take(queue)
    assert queue.remove(job_id) is False
    assert queue.get_state(job_id) == "active"


def test_pause_stops_handing_out_jobs_and_resume_restarts(queue):
    queue.add({"n": 1})
    assert queue.pause() is True and queue.is_paused()
    assert take(queue).status == "paused"
    assert queue.counts()["wait"] == 1
    assert queue.resume() is True and not queue.is_paused()
    assert queue.client.zcard(queue.keys.marker) == 1  # blocked workers are woken
    assert take(queue).status == "active"


def test_drain_removes_waiting_and_delayed_but_not_active(queue):
    active_id = queue.add({"n": 0})
    take(queue)
    queue.add_many([JobSpec({"n": n}) for n in range(450)])
    queue.add_many([JobSpec({"n": n}, delay_ms=60_000) for n in range(30)])
    assert queue.drain() == 480
    assert queue.counts() == {"wait": 0, "prioritized": 0, "active": 1, "delayed": 0, "completed": 0, "failed": 0}
    assert queue.get_job(active_id).state == "active"


def test_drain_can_keep_delayed_jobs(queue):
    queue.add({"n": 1})
    queue.add({"n": 2}, delay_ms=60_000)
    assert queue.drain(include_delayed=False) == 1
    assert queue.counts()["delayed"] == 1


def test_clean_keeps_the_most_recent_completed(queue):
    for n in range(5):
        queue.add({"n": n}, job_id=f"c{n}")
        fetch = take(queue)
        complete(queue.keys, fetch.job, "tok", {"n": n}).run(queue.client)
    assert queue.clean("completed", keep=2) == 3
    assert [j.id for j in queue.completed_jobs()] == ["c4", "c3"]
    assert queue.get_job("c0") is None


def test_metrics_events_and_queue_registry(client, queue):
    job_id = queue.add({"n": 1})
    queue.add({"n": 2}, delay_ms=50_000)
    fetch = take(queue)
    complete(queue.keys, fetch.job, "tok", "ok").run(client)
    metrics = queue.metrics()
    assert (metrics["added"], metrics["completed"], metrics["ms_count"]) == (2, 1, 1)
    events = queue.events()
    assert [(e["event"], e["jobId"]) for e in events][0] == ("waiting", job_id)
    assert [e["event"] for e in events] == ["waiting", "delayed", "active", "completed"]
    assert queue.name in known_queues(client)
