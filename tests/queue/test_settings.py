"""Queue-wide settings and what the docs promise about them: the stall limit belongs to the
queue, the README's defaults are the code's, the handler's job object is what the README
says, and a burst worker drains and stops."""
from __future__ import annotations

import re
from pathlib import Path

from minired_queue.active import ActiveJob
from minired_queue.cli import build_parser
from minired_queue.effects import DEFAULT_EFFECT_TTL_MS
from minired_queue.job import JobSpec
from minired_queue.options import WorkerOptions
from minired_queue.queue import DEFAULT_MAX_STALLED
from minired_queue.transitions import DEFAULT_EVENTS_CAP, DEFAULT_PROGRESS_CAP
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
