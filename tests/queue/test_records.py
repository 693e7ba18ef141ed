"""What the library writes is checked first (integers in range, JSON), and what it reads
back never breaks a worker or a listing: a record it cannot read (written by hand, or by
a client not keeping to the protocol) is reported, and a worker fails such a job."""
from __future__ import annotations

import pytest
from redis.exceptions import ResponseError

from minired_queue import Backoff, JobSpec, Queue
from minired_queue.cli import main
from minired_queue.effects import AsyncEffectGuard, EffectGuard
from minired_queue.options import WorkerOptions
from minired_queue.scripts import script
from minired_queue.transitions import add_job, retry_or_fail, upsert_repeatable
from minired_queue.worker import Worker

from .helpers import take

BAD_ADDS = [
    ({"delay_ms": 0.5}, "delay_ms must be an integer from 0 to 4398046511104, got 0.5"),
    ({"attempts": 2.5}, "attempts must be an integer >= 1, got 2.5"),
    ({"dedup_id": "d", "dedup_ttl_ms": 1.5}, "dedup_ttl_ms must be an integer from 0 to 4398046511104, got 1.5"),
    ({"priority": 2.5}, "priority must be an integer from 0 to 2097151, got 2.5"),
    ({"priority": True}, "priority must be an integer from 0 to 2097151, got True"),
    ({"attempts": True}, "attempts must be an integer >= 1, got True"),
    ({"delay_ms": "5"}, "delay_ms must be an integer from 0 to 4398046511104, got '5'"),
    ({"backoff": 1000}, "backoff must be a Backoff"),
]


@pytest.mark.parametrize(("options", "message"), BAD_ADDS)
def test_add_refuses_what_is_not_an_integer_in_range_and_writes_nothing(queue, options, message):
    with pytest.raises(ValueError) as refused:
        queue.add({"n": 1}, **options)
    assert message in str(refused.value)
    assert sum(queue.counts().values()) == 0


def test_backoff_constructors_check_their_delay():
    for make in (Backoff.fixed, Backoff.exponential):
        with pytest.raises(ValueError, match="backoff delay_ms must be an integer from 0 to 4398046511104, got 1.5"):
            make(1.5)


@pytest.mark.parametrize(("options", "message"), [
    ({"every_ms": 1500.5}, "every_ms must be an integer from 1 to 4398046511104, got 1500.5"),
    ({"every_ms": 1000, "limit": 1.5}, "limit must be an integer >= 0, got 1.5"),
    ({"every_ms": 1000, "attempts": 0}, "attempts must be an integer >= 1, got 0"),
    ({"every_ms": 1000, "priority": False}, "priority must be an integer"),
    ({"every_ms": True}, "every_ms must be an integer from 1 to 4398046511104, got True"),
])
def test_add_repeatable_refuses_what_is_not_an_integer_in_range(queue, options, message):
    with pytest.raises(ValueError) as refused:
        queue.add_repeatable("r", {"n": 1}, **options)
    assert message in str(refused.value)
    assert queue.repeatables() == []


@pytest.mark.parametrize("options", [{"concurrency": 1.5}, {"lock_ttl_ms": True}, {"max_stalled": 0.5}])
def test_worker_options_are_checked_by_the_same_rules(options):
    with pytest.raises(ValueError, match="must be an integer"):
        WorkerOptions(**options)


@pytest.mark.parametrize("data", [float("nan"), float("inf"), {1, 2}, object(), {"when": b"bytes"}])
def test_data_that_is_not_json_is_refused(queue, data):
    with pytest.raises(ValueError, match="job data is not JSON"):
        queue.add(data)
    with pytest.raises(ValueError, match="job data is not JSON"):
        queue.add_repeatable("r", data, every_ms=1000)
    assert sum(queue.counts().values()) == 0


# --- the scripts refuse bad numbers from any client ---------------------------------------
def _raw_add(queue, **changes):
    """addJob's KEYS and ARGV as the library builds them, with some ARGV replaced, as a
    client in another language might send them."""
    call = add_job(queue.keys, JobSpec({"n": 1}, job_id="raw"))
    args = list(call.args)
    for index, value in changes.items():
        args[int(index[1:])] = value
    return script("addJob").run(queue.client, call.keys, args)


@pytest.mark.parametrize(("argv", "message"), [
    ({"a3": "2.5"}, "max attempts must be an integer >= 1, got 2.5"),
    ({"a5": "abc"}, "backoff delay must be an integer >= 0, got abc"),
    ({"a6": "0.5"}, "delay must be an integer >= 0, got 0.5"),
    ({"a7": "d", "a8": "1.5"}, "dedup TTL must be an integer >= 0, got 1.5"),
    ({"a10": "-1"}, "priority must be an integer >= 0, got -1"),
    ({"a6": "0x10"}, "delay must be an integer >= 0, got 0x10"),
])
def test_add_script_refuses_bad_numbers_with_an_error_and_writes_nothing(queue, argv, message):
    with pytest.raises(ResponseError, match=message):
        _raw_add(queue, **argv)
    assert queue.client.exists(queue.keys.job("raw"), queue.keys.dedup("d")) == 0
    assert sum(queue.counts().values()) == 0
    assert _raw_add(queue) is not None  # the same call with the library's arguments works


def test_upsert_repeatable_script_refuses_bad_numbers(queue):
    fields = {"data": "1", "name": "", "maxAttempts": 1, "backoffType": "", "backoffDelay": 0,
              "priority": 0, "limit": "1.5"}
    with pytest.raises(ResponseError, match="limit must be an integer >= 0, got 1.5"):
        upsert_repeatable(queue.keys, "r", 1000, "every:1000", fields).run(queue.client)
    with pytest.raises(ResponseError, match="first tick must be an integer >= 0, got 1e3"):
        upsert_repeatable(queue.keys, "r", "1e3", "every:1000", {**fields, "limit": 0}).run(queue.client)
    assert queue.client.exists(queue.keys.repeat, queue.keys.repeat_spec("r")) == 0


# --- records that cannot be read -----------------------------------------------------------
def _spoil(queue, job_id: str, **fields) -> None:
    queue.client.hset(queue.keys.job(job_id), mapping=fields)


def test_a_worker_fails_an_unreadable_job_and_goes_on(backend, queue):
    bad = queue.add({"n": 1}, attempts=3)
    good = queue.add({"n": 2})
    _spoil(queue, bad, maxAttempts="2.5")
    ran = []
    worker = Worker(queue.keys, backend.client(), lambda job: ran.append(job.id) or "done",
                    WorkerOptions(burst=True, block_timeout_s=5))
    try:
        worker.run(install_signal_handlers=False)
    finally:
        worker.client.close()
    assert ran == [good]
    assert (worker.stats.fetched, worker.stats.completed, worker.stats.failed) == (2, 1, 1)
    job = queue.get_job(bad)
    assert job.state == "failed"
    assert job.failed_reason == "UnreadableJobError: unreadable job: field 'maxAttempts' is not an integer: '2.5'"
    assert job.unreadable == "field 'maxAttempts' is not an integer: '2.5'"
    assert [j.id for j in queue.failed_jobs()] == [bad]


@pytest.mark.parametrize(("fields", "problem"), [
    ({"attemptsMade": "x"}, "field 'attemptsMade' is not an integer: 'x'"),
    ({"data": "{not json"}, "field 'data' is not JSON: '{not json'"),
    ({"data": "NaN"}, "field 'data' is not JSON: 'NaN'"),
    ({"priority": " 3"}, "field 'priority' is not an integer: ' 3'"),
    ({"backoffType": "linear"}, "unknown backoff kind 'linear'"),
    ({"progress": b"\xff"}, "field 'progress' is not JSON"),
])
def test_listings_report_an_unreadable_job_instead_of_raising(backend, queue, capsys, fields, problem):
    job_id = queue.add({"n": 1})
    fetch = take(queue)
    assert retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client).status == "failed"
    _spoil(queue, job_id, **fields)
    job = queue.get_job(job_id)
    assert problem in job.unreadable and job.state == "failed" and job.failed_reason == "boom"
    assert [j.id for j in queue.failed_jobs()] == [job_id]
    assert queue.counts()["failed"] == 1
    assert main(["--url", backend.url, *(["--cluster"] if backend.cluster else []), "failed", queue.name]) == 0
    assert job_id in capsys.readouterr().out


def test_scripts_get_past_counters_that_are_not_numbers(queue, clock):
    """retryOrFail and the sweep count on the job hash: a counter that is not a number must
    neither fail the script (the job would never leave active) nor stop the sweep of the
    other jobs in its batch."""
    first, second, third = (queue.add({"n": n}, attempts=2) for n in range(3))
    lock_ttl = clock.span(50)
    for n in range(2):
        take(queue, token=f"t{n}", lock_ttl_ms=lock_ttl)
    _spoil(queue, first, stalledCounter="x", attemptsMade="1.5")
    _spoil(queue, second, stalledCounter="2")
    clock.advance(clock.span(100))
    result = queue.sweep()
    assert (sorted(result.recovered), result.failed) == ([first], [second])
    assert queue.client.hget(queue.keys.job(first), "stalledCounter") == b"1"

    fetch = take(queue, token="t3")
    assert fetch.job.id == first and fetch.job.unreadable == "field 'attemptsMade' is not an integer: '1.5'"
    assert retry_or_fail(queue.keys, fetch.job, "t3", "boom").run(queue.client).status == "retry"
    assert queue.client.hget(queue.keys.job(first), "attemptsMade") == b"1"
    assert queue.get_state(third) == "wait"


def test_repeatables_list_an_unreadable_spec_and_the_scheduler_skips_it(backend, queue, capsys):
    queue.add_repeatable("good", {"n": 1}, every_ms=60_000)
    queue.add_repeatable("bad", {"n": 2}, every_ms=60_000)
    queue.client.hset(queue.keys.repeat_spec("bad"), mapping={"schedule": "every:1500.5", "limit": "1.5"})
    listed = {r.key: r for r in queue.repeatables()}
    assert listed["good"].unreadable is None and listed["good"].schedule.every_ms == 60_000
    assert listed["bad"].schedule is None and "not an integer: '1500.5'" in listed["bad"].unreadable
    queue.client.zadd(queue.keys.repeat, {"good": 0, "bad": 0})  # both due now
    assert queue.run_scheduler() == 1
    assert main(["--url", backend.url, *(["--cluster"] if backend.cluster else []), "repeat", queue.name]) == 0
    out = capsys.readouterr().out
    assert "good  every 60000 ms" in out and "bad  unreadable: field 'schedule'" in out


# --- JSON only ------------------------------------------------------------------------------
def test_a_result_or_progress_that_is_not_json_fails_the_attempt(backend, queue):
    returns_a_set = queue.add({"kind": "set"})
    reports_an_object = queue.add({"kind": "progress"})
    returns_nan = queue.add({"kind": "nan"})
    fine = queue.add({"kind": "fine"})

    def handler(job):
        kind = job.data["kind"]
        if kind == "progress":
            job.update_progress(object())
        return {"set": {1, 2, 3}, "nan": float("nan")}.get(kind, [kind])

    worker = Worker(queue.keys, backend.client(), handler, WorkerOptions(burst=True, block_timeout_s=5))
    try:
        worker.run(install_signal_handlers=False)
    finally:
        worker.client.close()
    reasons = {job_id: queue.get_job(job_id).failed_reason for job_id in (returns_a_set, reports_an_object, returns_nan)}
    assert reasons == {
        returns_a_set: "ValueError: the handler's return value is not JSON: Object of type set is not JSON serializable",
        reports_an_object: "ValueError: progress is not JSON: Object of type object is not JSON serializable",
        returns_nan: "ValueError: the handler's return value is not JSON: Out of range float values are not JSON "
                     "compliant",
    }
    assert queue.get_job(fine).return_value == ["fine"]
    assert queue.get_job(reports_an_object).progress is None


def test_counts_and_metrics_get_past_an_unreadable_waiting_job(backend, queue, capsys):
    job_id = queue.add({"n": 1})
    _spoil(queue, job_id, timestamp="yesterday", delay="soon")
    assert queue.counts()["wait"] == 1
    assert main(["--url", backend.url, *(["--cluster"] if backend.cluster else []), "metrics", queue.name]) == 0
    assert f'minired_queue_oldest_waiting_age_seconds{{queue="{queue.name}"}} 0\n' in capsys.readouterr().out
    assert queue.get_job(job_id).unreadable == "field 'timestamp' is not an integer: 'yesterday'"


def test_the_other_numbers_the_library_writes_are_checked_too(client, queue):
    for make in (lambda: EffectGuard(client, queue.keys, ttl_ms=1.5),
                 lambda: AsyncEffectGuard(client, queue.keys, ttl_ms=0),
                 lambda: Queue(queue.name, client, events_cap=True),
                 lambda: Worker(queue.keys, client, lambda job: None, events_cap=10.5)):
        with pytest.raises(ValueError, match="must be an integer (>= 1|from 1 to 4398046511104)"):
            make()
    with pytest.raises(ValueError, match="keep must be an integer >= 0, got 0.5"):
        queue.clean("completed", keep=0.5)
