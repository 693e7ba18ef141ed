"""The crash test: real worker processes (threaded, asyncio with an async handler, asyncio
with a plain handler, in turn) SIGKILLed at random moments while ~2,000 jobs drain, with
priorities, a queue-wide rate limit, a repeatable job, flows (parents whose children run
on the queue and on a side queue with its own killed workers) and groups under a
per-group concurrency limit in the mix. Nothing may be lost, every job and every repeat
instance must complete, and the guarded effect must be applied exactly once per job;
every parent runs (its effect once) only after all its children completed; no group ever
has more than its limit running. A longer run: ``python bench/queue_crash.py``."""
from __future__ import annotations

import random

from minired_queue.chaos import ChaosConfig, run_chaos, side_queue
from minired_queue.queue import Queue

FLOWS, CHILDREN = 30, 3  # per flow: the parent and 2 children on the queue, 1 on the side queue
GROUPS, GROUP_LIMIT = 5, 2  # every other job in one of 5 groups, at most 2 of a group at once


def test_sigkilled_workers_lose_nothing_and_effects_happen_once(backend, client, queue_name, capsys):
    seed = random.randrange(2**32)
    report = run_chaos(ChaosConfig(url=backend.url, cluster=backend.cluster, queue=queue_name, jobs=2000,
                                   workers=3, concurrency=3, kills=6, time_limit_s=90, seed=seed,
                                   priorities=True, rate_limit=(150, 100), repeat_every_ms=50,
                                   flows=FLOWS, flow_children=CHILDREN, groups=GROUPS,
                                   group_concurrency=GROUP_LIMIT))
    with capsys.disabled():  # the redelivery count is part of the result: always show it
        print(f"\n[{backend.kind}] crash test (seed {seed}):\n{report.summary()}")
    assert report.kills >= 3, "too few kills landed mid-job for the test to mean anything"
    jobs = 2000 + FLOWS * (1 + CHILDREN)
    # Every group ran, none more than its limit at once (handlers count themselves).
    assert len(report.group_peaks) == GROUPS and max(report.group_peaks.values()) <= GROUP_LIMIT
    assert report.jobs == jobs
    assert report.missing == [] and report.failed == 0 and report.completed == jobs
    assert report.repeat_unfinished == [] and len(report.repeat_instances) >= 3 and report.lost_nothing
    # Each victim held at least one job, which had to come back through the sweep.
    assert report.redeliveries >= report.kills and report.stalled_recovered >= report.kills
    # Every job and repeat instance (the asyncio workers' plain handlers included) applied its
    # guarded effect, and exactly once.
    assert len(report.guarded_counts) == jobs + len(report.repeat_instances)
    assert set(report.guarded_counts.values()) == {1} and report.effects_once
    assert report.unguarded_total >= jobs  # without the marker, redeliveries may repeat it
    queue, side = Queue(queue_name, client), Queue(side_queue(queue_name), client)
    assert queue.counts() == {"wait": 0, "prioritized": 0, "active": 0, "delayed": 0,
                              "completed": jobs - FLOWS + len(report.repeat_instances), "failed": 0}
    assert side.counts()["completed"] == FLOWS and queue.waiting_children() == []
    for n in range(FLOWS):  # each parent's (last) delivery started after its last child finished
        results = queue.children_results(f"flow-{n}")
        assert len(results) == CHILDREN and all(value == {"done": key.rpartition(":")[2]}
                                                for key, value in results.items())
        children = [queue.get_job(f"flow-{n}-c{c}") or side.get_job(f"flow-{n}-c{c}") for c in range(CHILDREN)]
        assert queue.get_job(f"flow-{n}").processed_on >= max(child.finished_on for child in children)
