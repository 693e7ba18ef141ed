"""Lock loss: a worker that stalls past its lock TTL must not record an outcome for a job
another worker now owns, and must notice that it lost the job."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from minired_queue import RedisOp
from minired_queue.effects import EffectGuard
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.transitions import complete, extend_lock, retry_or_fail
from minired_queue.worker import Worker

from .helpers import take, wait_until


def test_a_paused_owner_cannot_ack_a_job_another_worker_owns(client, queue, clock):
    job_id = queue.add({"n": 1})
    guard = EffectGuard(client, queue.keys)
    effect = RedisOp("HINCRBY", f"{queue.keys.base}:effects", job_id, 1)

    first = take(queue, token="worker-a:1", lock_ttl_ms=clock.span(50))
    assert guard.apply_once(job_id, "count", [effect], token="worker-a:1")
    clock.advance(clock.span(100))  # worker A is paused (GC, SIGSTOP, network) past its lock
    assert queue.sweep().recovered == [job_id]

    second = take(queue, token="worker-b:1", lock_ttl_ms=30_000)
    assert second.job.id == job_id and second.job.attempts_started == 2
    assert not guard.apply_once(job_id, "count", [effect], token="worker-b:1")  # redelivery skips it

    # A wakes up: its heartbeat, ack and failure are all refused.
    assert extend_lock(queue.keys, job_id, "worker-a:1", 30_000).run(client) is False
    assert complete(queue.keys, first.job, "worker-a:1", "from A").run(client) is False
    assert retry_or_fail(queue.keys, first.job, "worker-a:1", "A failed").run(client).status == "lost"
    assert queue.get_state(job_id) == "active"

    assert complete(queue.keys, second.job, "worker-b:1", "from B").run(client) is True
    assert queue.get_job(job_id).return_value == "from B"
    assert int(client.hget(f"{queue.keys.base}:effects", job_id)) == 1


def test_a_worker_notices_the_lost_lock_and_its_outcome_is_discarded(backend, queue, clock):
    """A real Worker whose lock is taken from under it: the heartbeat flags the loss and
    the ack is refused, while the new owner's result stands."""
    running, release_handler = threading.Event(), threading.Event()
    held = {}
    lost = []

    def slow(job):
        held["job"] = job
        running.set()
        release_handler.wait(10)
        return "stale result"

    job_id = queue.add({"n": 1})
    worker = Worker(queue.keys, backend.client(), slow,
                    WorkerOptions(lock_ttl_ms=60, heartbeat_interval_s=0.02, sweep_interval_s=None,
                                  block_timeout_s=1.0),
                    Hooks(on_lock_lost=lambda job: lost.append(job.id))).start()
    try:
        assert running.wait(5)
        # Simulate the owner being partitioned: its lock is gone and the job is re-owned.
        queue.client.delete(queue.keys.lock(job_id))
        assert queue.sweep().recovered == [job_id]
        fetch = take(queue, token="other:1")
        wait_until(lambda: held["job"].lock_lost)  # the next heartbeat finds the token changed
        release_handler.set()
        wait_until(lambda: lost == [job_id])
        assert worker.stats.refused == 1 and worker.stats.completed == 0
        assert complete(queue.keys, fetch.job, "other:1", "fresh result").run(queue.client)
        assert queue.get_job(job_id).return_value == "fresh result"
    finally:
        worker.stop(wait=True, timeout=10)
        worker.client.close()


PAUSED_WORKER = """
import sys, time
from minired_queue.connection import connect
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.worker import Worker
url, cluster, queue = sys.argv[1], sys.argv[2] == "1", sys.argv[3]

def handler(job):
    print("started", flush=True)
    time.sleep(float(job.data["sleep"]))
    return "from the stopped process"

Worker(queue, connect(url, cluster=cluster), handler,
       WorkerOptions(lock_ttl_ms=300, sweep_interval_s=None, block_timeout_s=1.0, shutdown_grace_s=3),
       Hooks(on_lock_lost=lambda job: print("refused", flush=True))).run()
"""


def test_a_sigstopped_worker_process_cannot_ack_after_sigcont(backend, queue):
    """The real thing: a worker process frozen past its TTL (SIGSTOP stops its heartbeat
    too), its job swept to another owner, then thawed; its late ack must be refused."""
    job_id = queue.add({"sleep": 0.5})
    proc = subprocess.Popen([sys.executable, "-c", PAUSED_WORKER, backend.url, "1" if backend.cluster else "0",
                             queue.name], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert proc.stdout.readline().strip() == "started"
        proc.send_signal(signal.SIGSTOP)
        wait_until(lambda: not queue.client.exists(queue.keys.lock(job_id)))  # 300 ms TTL lapses
        assert queue.sweep().recovered == [job_id]
        fetch = take(queue, token="replacement:1")
        assert fetch.job.id == job_id
        proc.send_signal(signal.SIGCONT)
        assert proc.stdout.readline().strip() == "refused"  # the thawed worker tried to ack
        assert queue.get_state(job_id) == "active"
        assert queue.client.get(queue.keys.lock(job_id)) == b"replacement:1"
        assert complete(queue.keys, fetch.job, "replacement:1", "from the replacement").run(queue.client)
        job = queue.get_job(job_id)
        assert job.return_value == "from the replacement"
        assert [e["event"] for e in queue.events()].count("completed") == 1
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        proc.wait(10)
