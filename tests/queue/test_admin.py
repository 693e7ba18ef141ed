"""The operator's side of the library (minired_queue/admin.py): pages of a state's jobs,
promote, retry a completed job, clean by age, obliterate, job logs and every attempt's
error, and the worker registry."""
from __future__ import annotations

import pytest

from minired_queue.job import Backoff, JobSpec
from minired_queue.options import WorkerOptions
from minired_queue.transitions import complete, retry_or_fail
from minired_queue.worker import Worker
from tests.queue.helpers import assert_each_job_in_exactly_one_state, take, wait_until


def _finish(queue, token="w:1", result=None):
    fetch = take(queue, token=token)
    complete(queue.keys, fetch.job, token, result).run(queue.client)
    return fetch.job.id


def test_pages_of_a_state_with_total_order_and_name_filter(queue):
    for n in range(7):
        queue.add({"n": n}, job_id=f"w{n}", name="email" if n % 2 else "sms")
    page = queue.jobs("wait", 0, 3)
    assert page.total == 7 and [j.id for j in page.jobs] == ["w6", "w5", "w4"]  # newest first
    assert [j.id for j in queue.jobs("wait", 3, 3).jobs] == ["w3", "w2", "w1"]
    assert [j.id for j in queue.jobs("wait", 0, 3, newest_first=False).jobs] == ["w0", "w1", "w2"]
    assert [j.id for j in queue.jobs("wait", 6, 3, newest_first=False).jobs] == ["w6"]
    emails = queue.jobs("wait", 0, 2, name="EMA")
    assert emails.matched == 3 and [j.id for j in emails.jobs] == ["w5", "w3"] and not emails.cut
    assert all(j.state == "wait" for j in page.jobs)
    assert queue.jobs("paused").total == 0  # the queue runs: nothing is held by a pause
    queue.pause()
    assert queue.jobs("paused", 0, 50).total == 7
    with pytest.raises(ValueError):
        queue.jobs("nowhere")


def test_delayed_page_gives_due_times_and_promote_runs_one_now(queue, client):
    queue.add_job(JobSpec({}, job_id="later", delay_ms=3_600_000, priority=4))
    queue.add_job(JobSpec({}, job_id="much-later", delay_ms=7_200_000))
    page = queue.jobs("delayed", newest_first=False)
    assert [j.id for j in page.jobs] == ["later", "much-later"]
    assert 3_600_000 <= page.due["much-later"] - page.due["later"] < 3_660_000  # (real Redis: ms pass)
    assert queue.promote("later") is True
    assert queue.get_state("later") == "prioritized"  # ready by its priority
    assert queue.promote("later") is False  # not delayed any more: nothing moves
    assert queue.promote("nosuchjob") is False
    assert_each_job_in_exactly_one_state(queue, ["later", "much-later"])


def test_retry_a_completed_job_and_remove_many(queue):
    queue.add(job_id="c1")
    queue.add(job_id="c2")
    _finish(queue, result={"ok": 1})
    assert queue.retry_completed(["c1", "c2"]) == 1  # c2 waits: only completed ones move
    job = queue.get_job("c1")
    assert job.state == "wait" and job.return_value is None and job.finished_on is None
    assert sorted(queue.remove_many(["c1", "c2", "nope"])) == ["c1", "c2"]
    assert queue.counts()["wait"] == 0


def test_clean_by_age_on_the_server_clock(queue, clock):
    queue.add(job_id="old")
    _finish(queue)
    clock.advance(clock.span(1500))
    queue.add(job_id="new")
    _finish(queue)
    assert queue.clean_older_than("completed", clock.span(1000)) == 1
    assert queue.get_job("old") is None and queue.get_job("new") is not None
    with pytest.raises(ValueError):
        queue.clean_older_than("wait", 0)


def test_logs_and_every_attempts_error_go_with_the_job(queue, client):
    from minired_queue.active import ActiveJob
    from minired_queue.effects import EffectGuard

    queue.add_job(JobSpec({}, job_id="j", attempts=3, backoff=Backoff.fixed(0)))
    for attempt in range(3):
        fetch = take(queue, token=f"w:{attempt}")
        active = ActiveJob(fetch.job, f"w:{attempt}", EffectGuard(client, queue.keys))
        assert active.log(f"attempt {attempt} starts") == attempt + 1
        retry_or_fail(queue.keys, fetch.job, f"w:{attempt}", f"error {attempt}").run(client)
    errors = queue.job_errors("j")
    assert [(e["attempt"], e["reason"]) for e in errors] == [(1, "error 0"), (2, "error 1"), (3, "error 2")]
    assert queue.job_logs("j") == (["attempt 0 starts", "attempt 1 starts", "attempt 2 starts"], 3)
    queue.retry_failed(["j"])  # a retry keeps the history: attempts are numbered by delivery
    fetch = take(queue, token="w:9")
    retry_or_fail(queue.keys, fetch.job, "w:9", "error again").run(client)
    assert [e["attempt"] for e in queue.job_errors("j")][-1] == 4
    assert queue.remove("j")
    assert not client.exists(queue.keys.logs("j"))
    assert ActiveJob(fetch.job, "w:9", EffectGuard(client, queue.keys)).log("late") == 0  # no orphan
    assert not client.exists(queue.keys.logs("j"))


def test_logs_go_with_cleaned_and_removed_on_complete_jobs(queue, client):
    from minired_queue.transitions import add_log

    queue.add(job_id="a")
    add_log(queue.keys, "a", "line", 10).run(client)
    _finish(queue)
    queue.clean("completed")
    assert not client.exists(queue.keys.logs("a"))
    queue.add(job_id="b")
    fetch = take(queue, token="w:1")
    add_log(queue.keys, "b", "line", 10).run(client)
    complete(queue.keys, fetch.job, "w:1", None, remove=True).run(client)
    assert not client.exists(queue.keys.logs("b"), queue.keys.job("b"))
    queue.add(job_id="c")
    for n in range(5):
        add_log(queue.keys, "c", f"line {n}", 3).run(client)
    assert queue.job_logs("c") == (["line 2", "line 3", "line 4"], 3)  # capped to the newest


def test_obliterate_deletes_every_key_of_the_queue(queue, client):
    queue.add(job_id="w")
    queue.add_job(JobSpec({}, job_id="d", delay_ms=60_000))
    queue.add(job_id="done")
    queue.configure(concurrency=3)
    queue.add_repeatable("tick", every_ms=60_000)
    fetch = take(queue)
    with pytest.raises(ValueError, match="active"):
        queue.obliterate()
    assert not queue.is_paused()  # refused: nothing changed
    complete(queue.keys, fetch.job, "tok", None).run(client)
    assert queue.obliterate() == 3
    assert client.exists(*(getattr(queue.keys, k) for k in ("wait", "delayed", "completed", "meta",
                                                           "metrics", "events", "repeat"))) == 0
    assert queue.name not in {n.decode() for n in client.smembers("emq:queues")}


def test_workers_list_themselves_with_what_they_run(queue, client):
    import threading

    started, release = threading.Event(), threading.Event()

    def handler(job):
        started.set()
        release.wait(10)

    queue.add(job_id="long")
    worker = Worker(queue.name, client, handler,
                    WorkerOptions(concurrency=2, lock_ttl_ms=30_000, sweep_interval_s=None)).start()
    try:
        started.wait(10)
        [found] = wait_until(lambda: [w for w in queue.workers() if w["jobs"] == ["long"]])
        assert found["id"] == worker.id and found["concurrency"] == 2 and found["heartbeat"] > 0
        assert client.pttl(queue.keys.worker(worker.id)) > 0
    finally:
        release.set()
        worker.stop(wait=True, timeout=10)
    assert queue.workers() == []  # a stopped worker leaves the registry
    assert not client.exists(queue.keys.worker(worker.id))


def test_a_silent_worker_drops_out_after_its_ttl(queue, client, clock):
    from minired_queue.transitions import worker_heartbeat

    worker_heartbeat(queue.keys, "host:1:abc", clock.span(100), {"concurrency": 1}).run(client)
    assert [w["id"] for w in queue.workers()] == ["host:1:abc"]
    clock.advance(clock.span(150))
    assert queue.workers() == []


def test_a_name_filter_says_when_it_looked_at_part_of_the_state(queue, monkeypatch):
    from minired_queue import admin

    monkeypatch.setattr(admin, "NAME_FILTER_WINDOW", 5)
    for n in range(8):
        queue.add(job_id=f"j{n}", name="email")
    page = queue.jobs("wait", name="email")
    assert page.cut and page.looked_at == 5 and page.matched == 5 and page.total == 8


def test_a_stall_is_in_the_jobs_errors_too(queue, client):
    queue.client.hset(queue.keys.meta, "maxStalled", 1)
    queue.add(job_id="s")
    for token in ("w:1", "w:2"):
        take(queue, token=token)
        client.delete(queue.keys.lock("s"))  # the worker died: its lock lapsed
        queue.sweep()
    reasons = [(e["attempt"], e["reason"].split(":")[0]) for e in queue.job_errors("s")]
    assert reasons == [(1, "stalled"), (2, "job stalled more than the allowed limit (1)")]
    assert queue.get_state("s") == "failed"


def test_a_removed_pending_job_takes_its_log_and_tells_its_waiters(queue, client):
    """removeJobs with both sides' keys: the log goes with the job, and a job removed before
    it finished gets its `removed` event (a finished one does not)."""
    from minired_queue.transitions import add_log

    queue.add(job_id="done")
    assert _finish(queue, token="w:2") == "done"
    queue.add_job(JobSpec({}, job_id="r", attempts=2))
    fetch = take(queue, token="w:1")
    add_log(queue.keys, "r", "tried once", 10).run(client)
    retry_or_fail(queue.keys, fetch.job, "w:1", "boom").run(client)  # back in wait, with a log
    assert sorted(queue.remove_many(["r", "done"])) == ["done", "r"]
    assert not client.exists(queue.keys.logs("r"), queue.keys.job("r"), queue.keys.job("done"))
    assert [e["jobId"] for e in queue.events() if e["event"] == "removed"] == ["r"]


def test_a_debounced_job_replacing_a_pending_one_deletes_its_log(queue, client):
    from minired_queue.transitions import add_log

    queue.add_job(JobSpec({}, job_id="first", dedup_id="d", debounce_ms=60_000, attempts=2))
    queue.promote("first")
    fetch = take(queue, token="w:1")
    add_log(queue.keys, "first", "ran once", 10).run(client)
    retry_or_fail(queue.keys, fetch.job, "w:1", "boom").run(client)  # pending again, with a log
    queue.add_job(JobSpec({}, job_id="second", dedup_id="d", debounce_ms=60_000))
    assert queue.get_job("first") is None
    assert not client.exists(queue.keys.logs("first"))


def test_an_unreadable_errors_field_does_not_keep_a_job_in_active(queue, client):
    """recordError reads `errors` as leniently as the counters are read: a field written by
    hand starts a new list instead of failing retryOrFail (the job would stay active)."""
    queue.add(job_id="j")
    fetch = take(queue, token="w:1")
    client.hset(queue.keys.job("j"), mapping={"errors": "not json", "attemptsMade": "x"})
    assert retry_or_fail(queue.keys, fetch.job, "w:1", "boom").run(client).status == "failed"
    assert [(e["attempt"], e["reason"]) for e in queue.job_errors("j")] == [(1, "boom")]
    client.hset(queue.keys.job("j"), "errors", "{")
    assert queue.job_errors("j") == []  # read as none, as the scripts read it


# --- the operator's calls meet groups and flows --------------------------------------------
def test_promote_and_retry_completed_put_a_grouped_job_back_in_its_group(queue):
    queue.add_job(JobSpec({}, job_id="later", delay_ms=3_600_000, group="tenant"))
    queue.add(job_id="first", group="tenant")
    assert queue.promote("later") is True
    assert queue.group_counts() == {"tenant": 2} and queue.client.llen(queue.keys.wait) == 0
    assert _finish(queue) == "first"  # the head of the group's line
    assert queue.retry_completed(["first"]) == 1
    assert queue.group_counts() == {"tenant": 2} and queue.get_state("first") == "wait"
    page = queue.jobs("grouped")  # listed in the line's order, as wait counts them
    assert [j.id for j in page.jobs] == ["first", "later"] and page.total == 2 == queue.counts()["wait"]
    assert all(j.state == "wait" for j in page.jobs) and queue.jobs("wait").total == 0
    assert_each_job_in_exactly_one_state(queue, ["first", "later"])
    assert [take(queue, token=t).job.id for t in ("t1", "t2")] == ["first", "later"]


def test_remove_many_takes_a_waiting_parent_with_its_childrens_outcomes(queue, client):
    parent = queue.add({"p": 1}, job_id="parent", children=[JobSpec({}, job_id="kid"), JobSpec({}, job_id="kid2")])
    assert _finish(queue, result=7) == "kid"
    queue.sweep()  # reports kid's result to the parent, which still waits for kid2
    page = queue.jobs("waiting-children")
    assert [j.id for j in page.jobs] == [parent] and page.jobs[0].state == "waiting-children"
    assert queue.children_results(parent) == {queue.keys.job("kid"): 7}
    assert queue.remove_many([parent, "kid"]) == [parent, "kid"]
    assert queue.waiting_children() == [] and queue.get_job(parent) is None
    assert not client.exists(queue.keys.job(parent), queue.keys.dependencies(parent),
                             queue.keys.children_results(parent), queue.keys.children_failures(parent))
    last = queue.events(10)[-1]  # (a finished job's removal has no event)
    assert (last["event"], last["jobId"]) == ("removed", parent)
    assert queue.get_state("kid2") == "wait"  # a child runs on without its parent


def test_removing_a_finished_parent_deletes_its_childrens_outcomes(queue, client):
    parent = queue.add({"p": 1}, job_id="parent", children=[JobSpec({}, job_id="kid")])
    assert _finish(queue, result=1) == "kid"
    queue.sweep()
    assert _finish(queue, token="w:2") == parent
    assert client.exists(queue.keys.children_results(parent))
    assert queue.remove(parent)
    assert not client.exists(queue.keys.job(parent), queue.keys.children_results(parent))


def test_obliterate_deletes_groups_and_flows_too(queue, client):
    queue.configure(group_concurrency=1, group_rate_max=5, group_rate_duration_ms=60_000)
    queue.add(job_id="g1", group="tenant")
    queue.add(job_id="g2", group="tenant")
    queue.add({"p": 1}, job_id="parent", children=[JobSpec({}, job_id="kid")])
    assert _finish(queue) == "kid"
    queue.sweep()  # the parent is ready now, and runs before the groups' jobs
    assert _finish(queue, token="w:2") == "parent" and queue.children_results("parent")
    assert _finish(queue, token="w:3") == "g1"  # group-active and group-rate are written
    queue.add({"p": 2}, job_id="waiting", children=[JobSpec({}, job_id="kid3")])
    assert queue.obliterate() == 6  # g2, parent, kid, g1, waiting, kid3
    assert client.keys(f"*{{{queue.name}}}*") == []
