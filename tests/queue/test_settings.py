"""Queue-wide settings and what the docs promise about them: the stall limit belongs to the
queue, the README's defaults are the code's, the handler's job object is what the README
says, and a burst worker drains and stops."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from minired_queue.active import ActiveJob
from minired_queue.cli import build_parser
from minired_queue.effects import DEFAULT_EFFECT_TTL_MS
from minired_queue.job import Backoff, JobSpec
from minired_queue.options import WorkerOptions
from minired_queue.queue import DEFAULT_MAX_STALLED
from minired_queue.transitions import DEFAULT_EVENTS_CAP, DEFAULT_PROGRESS_CAP, retry_or_fail
from minired_queue.worker import Worker

from .helpers import take, wait_until

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "queue" / "README.md").read_text()
PROTOCOL = (ROOT / "queue" / "PROTOCOL.md").read_text()


def _defaults_table() -> dict[str, str]:
    section = README.split("### Defaults", 1)[1].split("\n### ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}


def test_readme_defaults_are_the_code_defaults():
    """Issue 25 finding 4: the defaults were nowhere in the README."""
    table = _defaults_table()
    options = WorkerOptions()
    cli = build_parser().parse_args(["worker", "q", "m:f"])
    assert table["lock TTL"] == f"{options.lock_ttl_ms} ms" and cli.lock_ttl_ms == options.lock_ttl_ms
    assert table["heartbeat"] == f"a third of the lock TTL ({options.heartbeat_interval_s:g} s)"
    assert options.heartbeat_interval_s * 3000 == options.lock_ttl_ms and cli.heartbeat_ms == 0
    sweep = next(v for k, v in table.items() if k.startswith("sweep interval"))
    assert sweep == f"{options.sweep_interval_s:g} s" and cli.sweep_interval == options.sweep_interval_s
    assert table["stall limit (`max_stalled`)"].startswith(f"{DEFAULT_MAX_STALLED}:")
    assert options.max_stalled is None and cli.max_stalled is None  # the queue's, unless given
    assert table["concurrency per worker"] == str(options.concurrency) == str(cli.concurrency)
    assert table["longest blocking wait"] == f"{options.block_timeout_s:g} s" == f"{cli.block_timeout:g} s"
    assert table["shutdown grace"] == f"{options.shutdown_grace_s:g} s" == f"{cli.grace:g} s"
    assert table["effect marker lifetime"] == f"{DEFAULT_EFFECT_TTL_MS // 86_400_000} days"
    assert table["events stream cap"] == f"~{DEFAULT_EVENTS_CAP} entries"
    assert table["progress stream cap"] == f"~{DEFAULT_PROGRESS_CAP} entries"
    spec = JobSpec(None)
    assert (spec.ttl_ms, spec.timeout_ms, spec.debounce_ms, spec.throttle_ms) == (0, 0, 0, 0)


def test_protocol_states_the_stall_limit_the_code_applies(queue, clock):
    """Issue 25 finding 3: PROTOCOL.md said a job fails after max_stalled stalls; the code
    fails it on stall max_stalled + 1 (BullMQ's maxStalledCount). Both now say the latter,
    and this checks the behaviour for a limit of 2."""
    assert "recovered from at most `max_stalled` stalls" in PROTOCOL and "the stall after that fails it" in PROTOCOL
    queue.configure(max_stalled=2)
    job_id = queue.add({"n": 1})
    outcomes = []
    for stall in range(3):
        take(queue, token=f"dead:{stall}", lock_ttl_ms=clock.span(40))
        clock.advance(clock.span(80))
        result = queue.sweep()
        outcomes.append("recovered" if result.recovered == [job_id] else "failed" if result.failed == [job_id] else "?")
    assert outcomes == ["recovered", "recovered", "failed"]
    assert queue.get_job(job_id).stalled_counter == 3


def test_a_worker_given_a_stall_limit_stores_it_with_the_queue(backend, queue, clock):
    """Issue 25 finding 4: a sweep with its own default could dead-letter a job the workers'
    setting would have retried. The limit is the queue's; a worker's option sets it."""
    assert queue.settings()["max_stalled"] == 1
    worker = Worker(queue.keys, backend.client(), lambda job: None,
                    WorkerOptions(max_stalled=3, block_timeout_s=0.2)).start()
    try:
        wait_until(lambda: queue.settings()["max_stalled"] == 3)
    finally:
        worker.stop(wait=True, timeout=10)
        worker.client.close()
    job_id = queue.add({"n": 1})
    for stall in range(3):
        take(queue, token=f"dead:{stall}", lock_ttl_ms=clock.span(40))
        clock.advance(clock.span(80))
        assert queue.sweep().recovered == [job_id]  # Queue.sweep applies the workers' 3, not 1


def test_the_handlers_job_object_carries_the_record(backend, queue):
    """Issue 25 finding 5: what a handler receives (ActiveJob) was undocumented and easily
    confused with get_job's Job. It carries that Job and reads its fields through."""
    seen = {}

    def handler(job):
        seen.update(kind=type(job), record=type(job.job), attempts=job.attempts_started, name=job.name,
                    priority=job.priority, lost=job.lock_lost, same=job.data == job.job.data)
        return "ok"

    queue.add({"n": 1}, name="welcome", priority=4)
    worker = Worker(queue.keys, backend.client(), handler, WorkerOptions(block_timeout_s=0.2)).start()
    try:
        wait_until(lambda: queue.counts()["completed"] == 1)
    finally:
        worker.stop(wait=True, timeout=10)
        worker.client.close()
    assert seen == {"kind": ActiveJob, "record": type(queue.get_job(queue.completed_jobs()[0].id)),
                    "attempts": 1, "name": "welcome", "priority": 4, "lost": False, "same": True}
    assert "### What a handler receives: `ActiveJob`" in README
    for attribute in ("apply_once", "run_once", "update_progress", "lock_lost"):
        assert f"`{attribute}" in README and hasattr(ActiveJob, attribute), attribute


def test_a_burst_worker_drains_the_queue_and_stops(backend, queue):
    ids = [queue.add({"n": n}, priority=n % 3) for n in range(9)]
    worker = Worker(queue.keys, backend.client(), lambda job: job.data["n"],
                    WorkerOptions(burst=True, concurrency=2, block_timeout_s=5))
    try:
        worker.run(install_signal_handlers=False)  # returns by itself once nothing is ready
    finally:
        worker.client.close()
    assert queue.counts()["completed"] == 9 and worker.stats.completed == 9
    assert [queue.get_job(i).return_value for i in ids] == list(range(9))


def test_settings_are_checked(queue):
    for bad in ({"max_stalled": -1}, {"rate_max": 0}, {"keep_completed": "10"}, {"concurrency": 1.5},
                {"concurrency": True}):
        try:
            queue.configure(**bad)
        except ValueError as exc:
            assert re.search(r"must be an integer >= [01]", str(exc))
        else:
            raise AssertionError(f"{bad} accepted")
    assert queue.configure(rate_max=5) == {"max_stalled": 1, "rate_max": 5, "rate_duration_ms": 1000}
    queue.configure(rate_duration_ms=250)
    assert queue.configure(rate_max=7)["rate_duration_ms"] == 250  # a stored window is kept


@pytest.mark.parametrize("options, message", [
    # A heartbeat of 0, negative or NaN renewed locks in a tight loop (~30,000 commands a
    # second against the server); a lock TTL past the server's PX range made every fetch's
    # script fail, the worker retrying forever; NaN or negative timeouts were refused by
    # the server on every blocking fetch.
    ({"heartbeat_interval_s": 0}, "heartbeat_interval_s must be a number of seconds > 0"),
    ({"heartbeat_interval_s": -1}, "heartbeat_interval_s must be"),
    ({"heartbeat_interval_s": float("nan")}, "heartbeat_interval_s must be"),
    ({"lock_ttl_ms": 10**20}, "lock_ttl_ms must be an integer from 10 to"),
    ({"block_timeout_s": float("nan")}, "block_timeout_s must be"),
    ({"block_timeout_s": -1}, "block_timeout_s must be"),
    ({"block_timeout_s": float("inf")}, "block_timeout_s must be"),
    ({"block_timeout_s": "5"}, "block_timeout_s must be"),
    ({"sweep_interval_s": 0}, "sweep_interval_s must be"),
    ({"sweep_interval_s": float("nan")}, "sweep_interval_s must be"),
    ({"shutdown_grace_s": float("nan")}, "shutdown_grace_s must be a number of seconds >= 0"),
    ({"shutdown_grace_s": True}, "shutdown_grace_s must be"),
    ({"burst": "no"}, "burst must be True or False"),
])
def test_worker_options_out_of_range_are_refused_naming_the_option(options, message):
    with pytest.raises(ValueError, match=message):
        WorkerOptions(**options)


def test_worker_options_at_their_bounds_are_taken():
    options = WorkerOptions(lock_ttl_ms=10, heartbeat_interval_s=0.001, block_timeout_s=0.001,
                            shutdown_grace_s=0, sweep_interval_s=None)
    assert options.shutdown_grace_s == 0 and options.sweep_interval_s is None


@pytest.mark.parametrize("flag", [["--heartbeat-ms", "-5"], ["--sweep-interval", "nan"],
                                  ["--grace", "-1"], ["--concurrency", "0"]])
def test_worker_command_refuses_odd_numbers_in_one_line(flag, capsys):
    from minired_queue.cli import main

    assert main(["--url", "redis://127.0.0.1:1", "worker", "q", "tests.queue.handlers:sleep_then_echo", *flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minired-queue: error: ") and err.count("\n") == 1



@pytest.mark.parametrize("spec", [dict(delay_ms=10**20), dict(dedup_id="d", dedup_ttl_ms=10**20)])
def test_a_delay_past_the_longest_duration_is_refused_before_anything_is_written(spec):
    """delay_ms=10**20 was stored as "1e+20" by the add script, and every reader took the
    job's delay for 0; a dedup TTL past the server's PX range failed the add script."""
    with pytest.raises(ValueError, match=r"_ms must be an integer from 0 to 4398046511104"):
        JobSpec(**spec)
    with pytest.raises(ValueError, match="backoff delay_ms must be an integer from 0 to"):
        Backoff.exponential(10**20)


def test_an_exponential_backoff_stops_growing_at_the_longest_duration(queue):
    """The second retry of a 2**42 ms exponential backoff would wait 2**43 ms. Doubling on,
    from 1e14 ms Lua writes the delay into the 'retrying' event as "1.4073748835533e+14",
    which the event's delay_ms cannot read; past 2**53 the score is no longer exact."""
    job_id = queue.add({"n": 1}, attempts=3, backoff=Backoff.exponential(2**42))
    for attempt in (1, 2):
        fetch = take(queue, f"t{attempt}")
        assert fetch.job.id == job_id
        assert retry_or_fail(queue.keys, fetch.job, f"t{attempt}", "boom").run(queue.client).status == "retry"
        assert queue.promote(job_id)
    retrying = [e for e in queue.events(count=50) if e["event"] == "retrying"]
    assert [e["delay"] for e in retrying] == [str(2**42), str(2**42)]
