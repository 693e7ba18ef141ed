"""The crash test: real worker processes (threaded and asyncio, alternating) SIGKILLed at
random moments while ~2,000 jobs drain. Nothing may be lost, every job must complete, and
the guarded effect must be applied exactly once per job. A longer run:
``python bench/queue_crash.py``."""
from __future__ import annotations

import random

from minired_queue.chaos import ChaosConfig, run_chaos
from minired_queue.queue import Queue


def test_sigkilled_workers_lose_nothing_and_effects_happen_once(backend, client, queue_name, capsys):
    seed = random.randrange(2**32)
    report = run_chaos(ChaosConfig(url=backend.url, cluster=backend.cluster, queue=queue_name, jobs=2000,
                                   workers=3, concurrency=3, kills=6, time_limit_s=90, seed=seed))
    with capsys.disabled():  # the redelivery count is part of the result: always show it
        print(f"\n[{backend.kind}] crash test (seed {seed}):\n{report.summary()}")
    assert report.kills >= 3, "too few kills landed mid-job for the test to mean anything"
    assert report.missing == [] and report.failed == 0 and report.completed == 2000
    # Each victim held at least one job, which had to come back through the sweep.
    assert report.redeliveries >= report.kills and report.stalled_recovered >= report.kills
    assert len(report.guarded_counts) == 2000 and set(report.guarded_counts.values()) == {1}
    assert report.unguarded_total >= 2000  # without the marker, redeliveries may repeat it
    counts = Queue(queue_name, client).counts()
    assert counts == {"wait": 0, "prioritized": 0, "active": 0, "delayed": 0, "completed": 2000, "failed": 0}
