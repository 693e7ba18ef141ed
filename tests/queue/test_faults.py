"""The reliable queue under injected faults (MINIRED FAULT, minired only): lost acknowledgements,
failed and lost fetches, lost heartbeats, a LOADING window and every connection cut mid-run.
Whatever fails, every job completes, and its guarded effect happens exactly once."""
from __future__ import annotations

import threading
import uuid

import pytest
import redis

from minired_queue import RedisOp
from minired_queue.connection import connect
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.queue import Queue
from minired_queue.scripts import SCRIPTS
from minired_queue.transitions import complete
from minired_queue.worker import Worker

from .helpers import assert_each_job_in_exactly_one_state, take, wait_until

LOADING = "LOADING Redis is loading the dataset in memory"


@pytest.fixture(scope="module")
def server():
    from minired.embed import EmbeddedServer

    with EmbeddedServer(time_control=True, fault_injection=True) as srv:
        yield srv


@pytest.fixture
def faults(server):
    server.faults.reset()
    yield server.faults
    server.faults.reset()


@pytest.fixture
def queue(server):
    client = connect(server.url)
    for script in SCRIPTS.values():  # so a rule on a script's EVALSHA meets the script running,
        client.script_load(script.source)  # not its first NOSCRIPT
    yield Queue(f"f-{uuid.uuid4().hex[:10]}", client)
    client.close()


def _completed(queue: Queue) -> int:
    """Jobs completed so far, or -1 while the test's own client is refused or cut too."""
    try:
        return queue.counts()["completed"]
    except redis.ConnectionError:  # (BusyLoadingError included)
        return -1


def _ledger(queue: Queue) -> str:
    return f"{queue.keys.base}:ledger"


class Run:
    """Workers counting deliveries per job, each delivery applying the job's guarded effect."""

    def __init__(self, server, queue: Queue, workers: int = 1, retry: bool = True,
                 **options) -> None:
        self.server, self.queue = server, queue
        self.deliveries: dict[str, int] = {}
        self.lock = threading.Lock()
        options.setdefault("lock_ttl_ms", 30_000)
        options.setdefault("sweep_interval_s", 0.05)
        options.setdefault("block_timeout_s", 0.2)
        client_options = {} if retry else {"retry": None}
        self.workers = [Worker(queue.keys, connect(server.url, **client_options), self.handle,
                               WorkerOptions(**options)) for _ in range(workers)]

    def handle(self, job):
        with self.lock:
            self.deliveries[job.id] = self.deliveries.get(job.id, 0) + 1
        job.apply_once("count", RedisOp("HINCRBY", _ledger(self.queue), job.id, 1))
        return job.id

    def __enter__(self) -> "Run":
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc) -> None:
        for worker in self.workers:
            worker.stop(wait=True, timeout=10)
            worker.client.close()

    def wait_all_completed(self, job_ids: list[str], lapse_locks: bool = True) -> None:
        """Until every job is completed. Meanwhile, a job left in active that no worker holds
        (its owner lost track of it) has its lock lapse by a move of the server clock, so the
        sweep sends it back to wait; a job some worker is running is never made to lapse."""
        queue = self.queue
        orphans: list = [None]

        def done() -> bool:
            if lapse_locks:
                try:
                    active = queue.client.lrange(queue.keys.active, 0, -1)
                except redis.ConnectionError:
                    active = []
                held = any(worker._in_flight for worker in self.workers)
                seen = sorted(active) if active and not held else None
                if seen is not None and seen == orphans[0]:  # orphaned on two looks in a row
                    self.server.advance_clock(60_000)
                    seen = None
                orphans[0] = seen
            return _completed(queue) == len(job_ids)

        wait_until(done, timeout=20, interval=0.05)

    def assert_effects_once(self, job_ids: list[str]) -> None:
        ledger = {k.decode(): int(v) for k, v in self.queue.client.hgetall(_ledger(self.queue)).items()}
        assert ledger == {job_id: 1 for job_id in job_ids}
        assert_each_job_in_exactly_one_state(self.queue, job_ids)


def test_ack_lost_on_the_way_back_the_job_completed_once(server, faults, queue):
    """DROP-REPLY on complete: the acknowledgement ran, its reply is lost. The worker cannot
    tell, but the job is completed and is never delivered again."""
    job_id = queue.add({"n": 1})
    with faults.add("DROP-REPLY", script=SCRIPTS["complete"].sha, count=1) as rule:
        with Run(server, queue, retry=False) as run:
            run.wait_all_completed([job_id], lapse_locks=False)
            assert rule.fired == 1
    assert run.deliveries == {job_id: 1}
    run.assert_effects_once([job_id])


def test_ack_lost_on_the_way_there_redelivers_and_the_effect_happens_once(server, faults, queue):
    """DROP on complete: the acknowledgement never ran. The job's lock lapses, the sweep sends
    it back to wait, it is delivered again, and its guarded effect is not repeated."""
    job_id = queue.add({"n": 1})
    with faults.add("DROP", script=SCRIPTS["complete"].sha, count=1) as rule:
        with Run(server, queue, retry=False) as run:
            wait_until(lambda: rule.fired == 1)
            run.wait_all_completed([job_id])
    assert run.deliveries == {job_id: 2}
    run.assert_effects_once([job_id])


def test_redis_py_retrying_a_lost_ack_is_refused_not_repeated(server, faults, queue):
    """With redis-py's default retry, the acknowledgement whose reply was cut is sent again:
    the second complete finds the job already done and is refused; nothing runs twice."""
    job_id = queue.add({"n": 1})
    with faults.add("DROP-REPLY", script=SCRIPTS["complete"].sha, count=1):
        with Run(server, queue) as run:
            run.wait_all_completed([job_id], lapse_locks=False)
    assert run.deliveries == {job_id: 1}
    run.assert_effects_once([job_id])


@pytest.mark.parametrize("action", [("ERROR", LOADING), ("DROP",), ("DROP-REPLY",),
                                    ("ERROR", "OOM command not allowed when used memory > 'maxmemory'.")])
def test_failed_or_lost_fetches_lose_nothing(server, faults, queue, action):
    """moveToActive refused, cut before it ran, or run with its reply lost (the job sits in
    active under a token nobody holds until the sweep takes it back): every job completes."""
    job_ids = [queue.add({"n": n}) for n in range(8)]
    with faults.add(*action, script=SCRIPTS["moveToActive"].sha, count=3) as rule:
        with Run(server, queue, workers=2, retry=False) as run:
            run.wait_all_completed(job_ids)
            assert rule.fired == 3
    run.assert_effects_once(job_ids)


def test_heartbeats_lost_past_the_lock_ttl_the_sweep_reclaims_and_the_late_ack_is_refused(
        server, faults, queue):
    """The owner's heartbeats never reach the server (DROP on extendLock: to the server, a
    heartbeat arriving after the TTL is one that never came). Its lock lapses, the sweep gives
    the job to another worker, and the first owner's late acknowledgement is refused."""
    running, release = threading.Event(), threading.Event()
    lost: list[str] = []
    ledger = _ledger(queue)

    def slow(job):
        job.apply_once("count", RedisOp("HINCRBY", ledger, job.id, 1))
        running.set()
        release.wait(10)
        return "stale"

    job_id = queue.add({"n": 1})
    faults.add("DROP", script=SCRIPTS["extendLock"].sha)
    worker = Worker(queue.keys, connect(server.url, retry=None), slow,
                    WorkerOptions(lock_ttl_ms=30_000, heartbeat_interval_s=0.02,
                                  sweep_interval_s=None, block_timeout_s=0.2),
                    Hooks(on_lock_lost=lambda job: lost.append(job.id))).start()
    try:
        assert running.wait(5)
        wait_until(lambda: any(r[b"fired"] for r in faults.list()))  # a heartbeat was cut
        server.advance_clock(60_000)
        assert queue.sweep().recovered == [job_id]
        other = take(queue, token="other:1")
        assert other.job.id == job_id and other.job.attempts_started == 2
        release.set()
        wait_until(lambda: worker.stats.refused == 1)
        assert worker.stats.completed == 0
        assert complete(queue.keys, other.job, "other:1", "fresh").run(queue.client) is True
        assert queue.get_job(job_id).return_value == "fresh"
        assert int(queue.client.hget(ledger, job_id)) == 1
    finally:
        release.set()
        worker.stop(wait=True, timeout=10)
        worker.client.close()


def test_loading_window_and_every_connection_cut_mid_run(server, faults, queue):
    """A restart seen from the workers: a LOADING window, then every connection cut. They
    reconnect, and every job completes with its effect applied exactly once (a handler cut off
    in the middle of applying it fails that attempt and the job is retried)."""
    # A handler whose effect write meets the outage fails its attempt: jobs get a few.
    job_ids = [queue.add({"n": n}, attempts=5) for n in range(40)]
    with Run(server, queue, workers=3) as run:
        wait_until(lambda: _completed(queue) >= 5)
        faults.loading(200)
        wait_until(lambda: _completed(queue) >= 15)
        wait_until(lambda: faults.kill_clients() >= 1)  # (a worker may be between connections)
        wait_until(lambda: _completed(queue) >= 25)
        faults.kill_clients("normal")
        run.wait_all_completed(job_ids)
    run.assert_effects_once(job_ids)


def test_the_fault_demo_shows_every_scenario_recovering(capsys):
    from minired_queue.cli import main

    assert main(["demo", "--faults", "--jobs", "12", "--workers", "2", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    for scenario in ("lost acknowledgements", "failed fetches", "lost heartbeats", "a restart"):
        assert f"{scenario:24} OK" in out
    assert "never lost:    NO" not in out and "effects once:  NO" not in out


@pytest.mark.parametrize("action", [("RESET",), ("CUT", "3"), ("TIMEOUT", "100")])
def test_resets_cuts_and_timeouts_of_fetches_and_acks_lose_nothing(server, faults, queue,
                                                                   action):
    """A fetch or an acknowledgement met by a TCP reset (not run), a reply cut after 3 bytes
    (run, its reply lost) or a connection that answers nothing and closes (not run): every
    job completes, and its guarded effect happens once."""
    job_ids = [queue.add({"n": n}) for n in range(8)]
    with faults.add(*action, script=SCRIPTS["moveToActive"].sha, count=2) as fetches, \
            faults.add(*action, script=SCRIPTS["complete"].sha, count=2) as acks:
        with Run(server, queue, workers=2, retry=False) as run:
            run.wait_all_completed(job_ids)
            assert fetches.fired == 2 and acks.fired == 2
    run.assert_effects_once(job_ids)


def test_crash_test_with_resets_cuts_and_timeouts_in_the_mix(server, faults, queue, capsys):
    """The crash test (test_crash.py: worker processes SIGKILLed while jobs drain), with
    seeded network faults on the workers' fetches, acknowledgements and heartbeats as well:
    TCP resets, replies cut mid-way, connections that go silent and close. Nothing is lost,
    and every guarded effect happens exactly once."""
    from minired_queue.chaos import ChaosConfig, run_chaos

    rules = [faults.add("RESET", script=SCRIPTS["moveToActive"].sha, probability=0.03, seed=1),
             faults.add("CUT", 3, script=SCRIPTS["complete"].sha, probability=0.03, seed=2),
             faults.add("TIMEOUT", 150, script=SCRIPTS["moveToActive"].sha, probability=0.02,
                        seed=4)]
    # Jobs are short: few heartbeats are sent, so this one may not fire in a run.
    faults.add("TIMEOUT", 150, script=SCRIPTS["extendLock"].sha, probability=0.3, seed=3)
    report = run_chaos(ChaosConfig(url=server.url, queue=f"{queue.name}-crash", jobs=300,
                                   workers=3, concurrency=2, kills=3, time_limit_s=90, seed=5,
                                   priorities=True, repeat_every_ms=50))
    with capsys.disabled():  # what was injected is part of the result: always show it
        print(f"\ncrash test with network faults:\n{report.summary()}\n"
              + "\n".join(f"{entry[b'spec'].decode()[:60]}: fired {entry[b'fired']}"
                          for entry in faults.list()))
    assert all(rule.fired for rule in rules), [(rule.matched, rule.fired) for rule in rules]
    assert report.kills >= 1
    assert report.missing == [] and report.failed == 0 and report.completed == 300
    assert report.repeat_unfinished == [] and report.lost_nothing
    assert len(report.guarded_counts) == 300 + len(report.repeat_instances)
    assert set(report.guarded_counts.values()) == {1} and report.effects_once
