"""Priorities, the queue-wide rate limit and concurrency cap, progress, results and
retention, repeatable and cron jobs, and metrics: each an atomic transition, on every
backend."""
from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from minired_queue import Queue
from minired_queue.aio import AsyncWorker
from minired_queue.events import QueueEvents
from minired_queue.job import MAX_PRIORITY
from minired_queue.metrics import asgi_app, render, wsgi_app
from minired_queue.options import WorkerOptions
from minired_queue.repeat import Schedule
from minired_queue.transitions import complete, release, retry_or_fail, update_progress
from minired_queue.worker import Worker

from .helpers import assert_each_job_in_exactly_one_state, placement, server_time_ms, take, wait_until


def _drain_order(queue) -> list[str]:
    order = []
    while (fetch := take(queue, token=f"t{len(order)}")).status == "active":
        order.append(fetch.job.id)
    return order


# --- priorities -----------------------------------------------------------------------
def test_lower_priority_first_fifo_within_one_and_no_priority_before_all(queue):
    specs = [("p3", 3), ("p1a", 1), ("none-a", 0), ("p2", 2), ("p1b", 1), ("none-b", 0), ("p1c", 1)]
    for job_id, priority in specs:
        queue.add({"id": job_id}, job_id=job_id, priority=priority)
    assert queue.counts()["wait"] == 2 and queue.counts()["prioritized"] == 5
    assert queue.get_state("p2") == "prioritized" and queue.get_job("p2").priority == 2
    assert _drain_order(queue) == ["none-a", "none-b", "p1a", "p1b", "p1c", "p2", "p3"]


def test_prioritized_jobs_come_back_to_their_priority(queue, clock):
    queue.add({"n": 0}, job_id="low", priority=5)
    queue.add({"n": 1}, job_id="high", priority=1, attempts=2)
    queue.add({"n": 2}, job_id="high-2", priority=1)
    first = take(queue, token="a")
    assert first.job.id == "high"
    # A retry without backoff goes behind its peers; a release, to the front of its priority.
    retry_or_fail(queue.keys, first.job, "a", "boom").run(queue.client)
    second = take(queue, token="b")
    assert second.job.id == "high-2"
    assert release(queue.keys, "high-2", "b").run(queue.client)
    assert _drain_order(queue) == ["high-2", "high", "low"]


def test_delayed_and_retried_jobs_keep_their_priority(queue, clock):
    queue.add({"n": 0}, job_id="later", priority=2, delay_ms=clock.span(10))
    queue.add({"n": 1}, job_id="now", priority=7)
    clock.advance(clock.span(30))
    assert queue.promote_delayed() == 1
    assert queue.get_state("later") == "prioritized"
    assert _drain_order(queue) == ["later", "now"]
    with pytest.raises(ValueError):
        queue.add({"n": 2}, priority=MAX_PRIORITY + 1)
    with pytest.raises(ValueError):
        queue.add({"n": 2}, priority=-1)


def test_stalled_prioritized_jobs_are_recovered_into_their_priority(queue, clock):
    queue.add({"n": 0}, job_id="p1", priority=1)
    queue.add({"n": 1}, job_id="p1-next", priority=1)
    assert take(queue, token="dead", lock_ttl_ms=clock.span(40)).job.id == "p1"
    clock.advance(clock.span(100))
    assert queue.sweep().recovered == ["p1"]
    assert_each_job_in_exactly_one_state(queue, ["p1", "p1-next"])
    assert _drain_order(queue) == ["p1", "p1-next"]
    assert queue.remove("p1") is False  # active now
    queue.add({"n": 2}, job_id="gone", priority=4)
    assert queue.remove("gone") and "gone" not in placement(queue)["prioritized"]
    for n in range(3):
        queue.add({"n": n}, priority=n)
    assert queue.drain() == 3 and queue.counts()["prioritized"] == queue.counts()["wait"] == 0


# --- rate limit and concurrency cap -----------------------------------------------------
def test_rate_limit_hands_out_at_most_n_per_window(queue, clock):
    window = clock.span(1000)
    queue.configure(rate_max=3, rate_duration_ms=window)
    for n in range(5):
        queue.add({"n": n})
    assert [take(queue, token=f"t{n}").status for n in range(3)] == ["active"] * 3
    limited = take(queue, token="t3")
    assert limited.status == "limited" and 0 < limited.retry_after_ms <= window
    clock.advance(window + clock.span(20))
    assert take(queue, token="t4").status == "active"
    queue.configure(rate_max=None)
    assert take(queue, token="t5").status == "active"
    assert queue.settings() == {"max_stalled": 1, "rate_duration_ms": window}


def test_rate_limit_holds_across_workers(backend, queue):
    """Two workers, a window far longer than the test: exactly rate_max jobs run."""
    queue.configure(rate_max=2, rate_duration_ms=120_000)
    for n in range(6):
        queue.add({"n": n})
    workers = [Worker(queue.keys, backend.client(), lambda job: job.id,
                      WorkerOptions(concurrency=2, block_timeout_s=0.2)).start() for _ in range(2)]
    try:
        wait_until(lambda: queue.counts()["completed"] == 2)
        time.sleep(0.3)  # long enough for a worker to take a third if the limit leaked
        assert queue.counts()["completed"] == 2 and queue.counts()["wait"] == 4
        assert all(w.stats.fetched <= 2 for w in workers)
        queue.configure(rate_max=None)  # lifting the limit lets the rest run
        wait_until(lambda: queue.counts()["completed"] == 6)
    finally:
        for worker in workers:
            worker.stop(wait=True, timeout=10)
            worker.client.close()


def test_concurrency_cap_counts_every_worker(backend, queue):
    queue.configure(concurrency=2)
    running, peak, guard = 0, 0, threading.Lock()

    def handler(job):
        nonlocal running, peak
        with guard:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with guard:
            running -= 1

    for n in range(12):
        queue.add({"n": n})
    workers = [Worker(queue.keys, backend.client(), handler, WorkerOptions(concurrency=3, block_timeout_s=1)).start()
               for _ in range(2)]
    try:
        wait_until(lambda: queue.counts()["completed"] == 12, timeout=20)
    finally:
        for worker in workers:
            worker.stop(wait=True, timeout=10)
            worker.client.close()
    assert peak == 2


def test_concurrency_cap_and_rate_limit_hold_for_asyncio_workers(backend, queue):
    queue.configure(concurrency=2)
    running, peak = 0, 0

    async def handler(job):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1

    for n in range(10):
        queue.add({"n": n}, priority=n % 2)

    async def main():
        clients = [backend.async_client() for _ in range(2)]
        workers = [AsyncWorker(queue.keys, c, handler, WorkerOptions(concurrency=3, block_timeout_s=1))
                   for c in clients]
        runs = [asyncio.create_task(w.run()) for w in workers]
        try:
            while queue.counts()["completed"] < 10:
                await asyncio.sleep(0.02)
            queue.configure(concurrency=None, rate_max=1, rate_duration_ms=120_000)
            queue.add({"n": 10})
            queue.add({"n": 11})
            while queue.counts()["completed"] < 11:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # a leaking limit would let the last job run meanwhile
            return queue.counts()
        finally:
            for w in workers:
                w.stop()
            await asyncio.wait_for(asyncio.gather(*runs), 15)
            for c in clients:
                await c.aclose()

    counts = asyncio.run(main())
    assert peak == 2 and counts["completed"] == 11 and counts["wait"] == 1


def test_a_capped_fetch_says_so(queue):
    queue.configure(concurrency=1)
    queue.add({"n": 1})
    queue.add({"n": 2})
    first = take(queue, token="a")
    assert take(queue, token="b").status == "capped"
    complete(queue.keys, first.job, "a", None).run(queue.client)
    assert take(queue, token="b").status == "active"
    with pytest.raises(ValueError):
        queue.configure(concurrency=0)
    with pytest.raises(ValueError):
        queue.configure(nonsense=1)


# --- progress, results, retention -------------------------------------------------------
def test_progress_is_recorded_by_the_owner_only(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="owner")
    assert update_progress(queue.keys, job_id, "owner", {"pct": 40}).run(queue.client)
    assert not update_progress(queue.keys, job_id, "stranger", {"pct": 99}).run(queue.client)
    assert queue.get_job(job_id).progress == {"pct": 40}
    # Progress has its own stream, so a chatty handler cannot push job events out of theirs.
    assert not [e for e in queue.events() if e["event"] == "progress"]
    reports = QueueEvents(queue.keys, queue.client, last_id="0", progress=True, last_progress_id="0").read(0.001)
    assert [(type(e).__name__, e.stream, e.job_id, e.data) for e in reports if e.kind == "progress"] == [
        ("Progress", "progress", job_id, {"pct": 40})]
    entry = queue.active_jobs()[0]
    assert (entry["job"].id, entry["token"], entry["progress"], entry["attempt"]) == (job_id, "owner", {"pct": 40}, 1)
    assert 0 < entry["lock_ttl_ms"] <= 30_000
    complete(queue.keys, fetch.job, "owner", {"sent": 3}).run(queue.client)
    job = queue.get_job(job_id)
    assert (job.state, job.return_value, job.progress) == ("completed", {"sent": 3}, {"pct": 40})


def test_handlers_report_progress_and_errors_are_kept(backend, queue):
    def handler(job):
        job.update_progress(50)
        if job.data["fail"]:
            raise ValueError("no such user")
        return {"ok": job.id}

    good = queue.add({"fail": False})
    bad = queue.add({"fail": True})
    worker = Worker(queue.keys, backend.client(), handler, WorkerOptions(block_timeout_s=0.5)).start()
    try:
        wait_until(lambda: queue.counts()["completed"] == 1 and queue.counts()["failed"] == 1)
    finally:
        worker.stop(wait=True, timeout=10)
        worker.client.close()
    assert queue.get_job(good).return_value == {"ok": good} and queue.get_job(good).progress == 50
    failed = queue.get_job(bad)
    assert failed.failed_reason == "ValueError: no such user" and "raise ValueError" in failed.stacktrace


def test_retention_keeps_the_newest_and_drops_the_old(queue, clock):
    ids = []
    for n in range(5):
        ids.append(queue.add({"n": n}))
        fetch = take(queue, token=f"t{n}")
        complete(queue.keys, fetch.job, f"t{n}", n).run(queue.client)
        clock.advance(clock.span(5))
    for n in range(3):
        queue.add({"n": n}, job_id=f"f{n}")
        fetch = take(queue, token=f"f{n}")
        retry_or_fail(queue.keys, fetch.job, f"f{n}", "boom").run(queue.client)
    queue.configure(keep_completed=2, keep_failed_age_ms=clock.span(1000))
    assert queue.apply_retention() == 3
    assert queue.counts()["completed"] == 2 and [j.id for j in queue.completed_jobs()] == ids[:-3:-1]
    assert queue.get_job(ids[0]) is None and queue.get_job(ids[4]).return_value == 4
    assert queue.counts()["failed"] == 3  # younger than their age limit
    clock.advance(clock.span(1100))
    assert queue.apply_retention() == 3 and queue.counts()["failed"] == 0


# --- repeatable and cron jobs -------------------------------------------------------------
def test_every_ms_makes_one_instance_per_tick_however_many_schedulers(backend, queue, clock):
    every = clock.span(100)
    # A scheduler that finds the clock past a tick it has not made skips it (made once, late):
    # the rounds below must each land inside one period.
    clock.start_period(every)
    assert queue.add_repeatable("digest", {"kind": "digest"}, every_ms=every, priority=3) == "created"
    assert queue.add_repeatable("digest", {"kind": "digest"}, every_ms=every, priority=3) == "updated"
    [listed] = queue.repeatables()
    assert (listed.key, listed.schedule.every_ms, listed.priority) == ("digest", every, 3)
    assert listed.next_tick_ms % every == 0

    made = Counter()
    clients = [backend.client() for _ in range(4)]
    try:
        for _ in range(3):
            clock.advance(every)
            barrier = threading.Barrier(len(clients))

            def schedule(client):
                barrier.wait()
                made[threading.get_ident()] += Queue(queue.name, client).run_scheduler(horizon_ms=every * 2)

            threads = [threading.Thread(target=schedule, args=(c,)) for c in clients]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        for c in clients:
            c.close()
    ids = sorted(placement(queue)["delayed"] + placement(queue)["prioritized"])
    ticks = sorted(int(i.rsplit(":", 1)[1]) for i in ids)
    assert sum(made.values()) == len(ids) and len(ids) == len(set(ids)) >= 3
    assert all(t % every == 0 for t in ticks)
    if backend.has_clock_control:  # on a real clock a slow round may skip ticks (made once, late)
        assert ticks == list(range(ticks[0], ticks[-1] + every, every))
    job = queue.get_job(ids[0])
    assert (job.data, job.priority, job.repeat_key) == ({"kind": "digest"}, 3, "digest")


def test_cron_with_a_time_zone_and_a_limit(queue):
    tz = "America/New_York"
    queue.add_repeatable("report", {"r": 1}, cron="0 9 * * 1-5", tz=tz, limit=2)
    [listed] = queue.repeatables()
    now = server_time_ms(queue.client)
    expected = next(CronSim("0 9 * * 1-5", datetime.fromtimestamp(now / 1000, ZoneInfo(tz))))
    assert listed.next_tick_ms == int(expected.timestamp() * 1000)
    assert listed.schedule == Schedule(cron="0 9 * * 1-5", tz=tz) and listed.limit == 2
    # Far ahead, so both ticks fall inside the horizon: the limit stops it after two.
    assert queue.run_scheduler(horizon_ms=10 * 24 * 3600 * 1000) == 2
    assert queue.repeatables() == [] and queue.counts()["delayed"] == 2
    ticks = sorted(int(i.rsplit(":", 1)[1]) for i in placement(queue)["delayed"])
    hours = {datetime.fromtimestamp(t / 1000, ZoneInfo(tz)).hour for t in ticks}
    assert hours == {9}
    with pytest.raises(ValueError, match="cron"):
        queue.add_repeatable("bad", cron="61 * * * *")
    with pytest.raises(ValueError, match="time zone"):
        queue.add_repeatable("bad", cron="* * * * *", tz="Mars/Olympus")
    with pytest.raises(ValueError):
        queue.add_repeatable("bad", every_ms=10, cron="* * * * *")


def test_removing_a_repeatable_drops_its_pending_instance(queue, clock):
    queue.add_repeatable("tick", every_ms=clock.span(10_000))
    assert queue.run_scheduler(horizon_ms=clock.span(20_000)) >= 1
    assert queue.counts()["delayed"] >= 1
    assert queue.remove_repeatable("tick") is True
    assert queue.repeatables() == [] and queue.remove_repeatable("tick") is False
    pending = placement(queue)["delayed"]
    assert len(pending) == queue.counts()["delayed"]  # only instances of earlier ticks remain
    assert queue.run_scheduler(horizon_ms=clock.span(100_000)) == 0


def test_changing_the_schedule_never_repeats_a_fired_tick(queue, clock):
    queue.add_repeatable("job", every_ms=clock.span(1000))
    assert queue.run_scheduler(horizon_ms=clock.span(3000)) >= 3
    fired = set(placement(queue)["delayed"])
    assert queue.add_repeatable("job", every_ms=clock.span(500)) == "rescheduled"
    assert queue.run_scheduler(horizon_ms=clock.span(6000)) >= 1
    ticks = [int(i.rsplit(":", 1)[1]) for i in set(placement(queue)["delayed"]) - fired]
    last_fired = max(int(i.rsplit(":", 1)[1]) for i in fired)
    assert ticks and min(ticks) > last_fired


def test_workers_fire_repeatable_jobs(backend, queue, clock):
    seen = []
    queue.add_repeatable("beat", {"b": 1}, every_ms=clock.span(50))
    # The lock outlives many of the clock's jumps below (50 s each on minired): one past the
    # lock TTL while a job runs lets the sweep hand it out again (at-least-once delivery,
    # tested elsewhere), which read here as a tick fired twice on a loaded machine.
    worker = Worker(queue.keys, backend.client(), lambda job: seen.append(job.id),
                    WorkerOptions(sweep_interval_s=0.05, block_timeout_s=0.1,
                                  lock_ttl_ms=max(30_000, 20 * clock.span(50)))).start()

    def fired_thrice() -> bool:
        # Each tick is due a period after the last: the clock moves on until three fired,
        # however slowly a loaded machine lets the worker fetch them.
        if len(seen) < 3 and backend.has_clock_control:
            clock.advance(clock.span(50))
        return len(seen) >= 3

    try:
        wait_until(fired_thrice, interval=0.05)
    finally:
        worker.stop(wait=True, timeout=10)
        worker.client.close()
    assert len(seen) == len(set(seen)) and all(i.startswith("repeat:beat:") for i in seen)


# --- metrics ------------------------------------------------------------------------------
def _samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_prometheus_text_counts_totals_and_histogram(backend, queue):
    for n in range(4):
        queue.add({"n": n}, attempts=2 if n == 3 else 1)
    queue.add({"n": 9}, delay_ms=60_000)
    queue.add({"n": 8}, priority=2)
    for n in range(3):
        fetch = take(queue, token=f"t{n}")
        complete(queue.keys, fetch.job, f"t{n}", None).run(queue.client)
    fetch = take(queue, token="r")
    retry_or_fail(queue.keys, fetch.job, "r", "boom").run(queue.client)
    text = render([queue])
    assert "# TYPE minired_queue_processing_seconds histogram" in text
    q = f'queue="{queue.name}"'
    samples = _samples(text)
    assert samples[f'minired_queue_jobs{{{q},state="wait"}}'] == 1
    assert samples[f'minired_queue_jobs{{{q},state="prioritized"}}'] == 1
    assert samples[f'minired_queue_jobs{{{q},state="delayed"}}'] == 1
    assert samples[f'minired_queue_completed_total{{{q}}}'] == 3
    assert samples[f'minired_queue_retried_total{{{q}}}'] == 1
    assert samples[f'minired_queue_added_total{{{q}}}'] == 6
    buckets = [v for k, v in samples.items() if k.startswith("minired_queue_processing_seconds_bucket")]
    assert buckets == sorted(buckets) and buckets[-1] == 4
    assert samples[f'minired_queue_processing_seconds_count{{{q}}}'] == 4
    assert samples[f'minired_queue_oldest_waiting_age_seconds{{{q}}}'] >= 0
    history = queue.history()
    assert sum(row.get("completed", 0) for row in history) == 3
    assert sum(row.get("retried", 0) for row in history) == 1

    body = []
    app = wsgi_app(queue.client, [queue.name])
    chunks = app({}, lambda status, headers: body.append((status, dict(headers))))
    assert body[0][0] == "200 OK" and body[0][1]["Content-Type"].startswith("text/plain; version=0.0.4")
    assert b"minired_queue_completed_total" in b"".join(chunks)

    sent = []

    async def scrape():
        async def receive():
            return {"type": "http.request"}

        async def send(message):
            sent.append(message)

        await asgi_app(queue.client)({"type": "http"}, receive, send)

    asyncio.run(scrape())  # no names: every queue in the registry, this one included
    assert sent[0]["status"] == 200 and f'queue="{queue.name}"'.encode() in sent[1]["body"]


@pytest.mark.parametrize("backend", ["minired"], indirect=True)  # hours of server time: clock control
def test_history_stays_bounded(queue, clock):
    for _ in range(3):
        queue.add({"n": 1})
        fetch = take(queue)
        complete(queue.keys, fetch.job, "tok", None).run(queue.client)
        clock.advance(61 * 60 * 1000)
    queue.add({"n": 1})
    fetch = take(queue)
    complete(queue.keys, fetch.job, "tok", None).run(queue.client)
    rows = queue.history(minutes=0)
    assert len(rows) == 1 and rows[0]["completed"] == 1  # older minutes were pruned
    assert len(queue.client.hkeys(queue.keys.history)) < 30
