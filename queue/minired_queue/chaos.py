"""A crash harness: real worker processes killed with SIGKILL mid-job while a queue drains.

Shared by the demo (``minired-queue demo``), the crash test and ``bench/queue_crash.py``.
Worker processes rotate between the threaded worker, the asyncio worker with an async
handler, and the asyncio worker with a plain handler (run in a thread with synchronous
calls). Optionally the queue also has priorities, a rate limit, a repeatable job and
flows in the mix (parents on the queue, children on it and on a side queue with workers
of its own, killed too: a parent that runs before all its children completed fails), and
groups under a per-group concurrency limit (each grouped handler notes how many of its
group's handlers run at once; the peak must stay within the limit). Every job's handler applies two effects half-way through its work:

* a guarded one (``apply_once``: dedup marker and write in one script), counted per job
  in ``<queue>:chaos:guarded``;
* an unguarded one (a plain HINCRBY), counted per job in ``<queue>:chaos:unguarded``.

A worker killed after the effects and before recording the outcome makes the job come
back through the sweep: the unguarded count then goes above one, the guarded never does.
"""
from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .connection import connect
from .errors import UnrecoverableError
from .job import STATES, JobSpec, text
from .keys import QueueKeys
from .queue import Queue
from .transitions import RedisOp


def guarded_key(keys: QueueKeys) -> str:
    return f"{keys.base}:chaos:guarded"


def unguarded_key(keys: QueueKeys) -> str:
    return f"{keys.base}:chaos:unguarded"


def side_queue(name: str) -> str:
    """The queue holding some of the flows' children, so flows cross queues (and slots)."""
    return f"{name}-kids"


# A grouped handler's entry in its group's running set, scored by when it is stale: a
# quarter of the lock TTL after it started, so a SIGKILLed handler's entry is gone before
# its lock can lapse and its job (or another of its group) be handed out again. (A live
# handler slower than that drops out early: the measure can undercount, never overcount.)
# Returns how many of the group's handlers are running, and keeps the peak per group.
_ENTER_GROUP = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local running = redis.call('ZCARD', KEYS[1])
if running > (tonumber(redis.call('HGET', KEYS[2], ARGV[3])) or 0) then
  redis.call('HSET', KEYS[2], ARGV[3], running)
end
return running
"""
GROUP_STALE_MS = 250  # a quarter of the crash harness's lock TTL


def group_running_key(job) -> str:
    return f"{job.keys.base}:chaos:running:{job.job.group}"


def group_peak_key(keys: QueueKeys) -> str:
    return f"{keys.base}:chaos:group-peak"


def _enter_group_args(job) -> tuple:
    return (_ENTER_GROUP, 2, group_running_key(job), group_peak_key(job.keys), job.token, GROUP_STALE_MS,
            job.job.group)


def _check_children(job, results: dict) -> None:
    """A flow parent must run only once every child completed (none may fail here)."""
    expected = job.data.get("children")
    if expected is not None and len(results) != expected:
        raise UnrecoverableError(f"parent ran with {len(results)} of its {expected} children done")


def effect_handler(job) -> dict:
    """Sleep, apply both effects, sleep: a kill can land before, between or after them."""
    work_s = job.data.get("work_ms", 5) / 2000
    if job.data.get("children") is not None:
        _check_children(job, job.children_results())
    if job.job.group:
        job.redis.eval(*_enter_group_args(job))
    time.sleep(work_s)
    job.redis.hincrby(unguarded_key(job.keys), job.id, 1)
    job.apply_once("count", RedisOp("HINCRBY", guarded_key(job.keys), job.id, 1))
    time.sleep(work_s)
    if job.job.group:
        job.redis.zrem(group_running_key(job), job.token)
    return {"done": job.id}


async def async_effect_handler(job) -> dict:
    """The same for the asyncio worker."""
    work_s = job.data.get("work_ms", 5) / 2000
    if job.data.get("children") is not None:
        _check_children(job, await job.children_results())
    if job.job.group:
        await job.redis.eval(*_enter_group_args(job))
    await asyncio.sleep(work_s)
    await job.redis.hincrby(unguarded_key(job.keys), job.id, 1)
    await job.apply_once("count", RedisOp("HINCRBY", guarded_key(job.keys), job.id, 1))
    await asyncio.sleep(work_s)
    if job.job.group:
        await job.redis.zrem(group_running_key(job), job.token)
    return {"done": job.id}


@dataclass
class ChaosConfig:
    url: str
    queue: str
    cluster: bool = False
    jobs: int = 2000
    workers: int = 3
    concurrency: int = 3
    kills: int = 6
    kill_interval_s: tuple[float, float] = (0.2, 0.5)
    work_ms: tuple[int, int] = (2, 10)
    lock_ttl_ms: int = 1000
    sweep_interval_s: float = 0.25
    # A job may be hit by several kills in a row; this harness is about loss and
    # duplication, not the stall limit, so it tolerates many stalls.
    max_stalled: int = 50
    # Worker processes rotate between these, so every kind of worker faces the kills.
    flavours: tuple[str, ...] = ("threads", "asyncio", "asyncio-plain")
    time_limit_s: float = 120.0
    seed: int | None = None
    priorities: bool = False  # jobs get random priorities 0..3
    rate_limit: tuple[int, int] | None = None  # (jobs, per window ms) for the whole queue
    repeat_every_ms: int | None = None  # a repeatable job ticking while the kills go on
    flows: int = 0  # flow parents, each with flow_children children (every third on the side queue)
    flow_children: int = 3
    side_workers: int = 1  # worker processes of the side queue (when there are flows)
    groups: int = 0  # every other job goes to one of this many groups ...
    group_concurrency: int = 2  # ... each limited to this many jobs at once


@dataclass
class ChaosReport:
    jobs: int
    completed: int
    failed: int
    missing: list[str]
    deliveries: int
    guarded_counts: dict[str, int]
    unguarded_counts: dict[str, int]
    kills: int
    stalled_recovered: int
    elapsed_s: float
    events: list[str] = field(default_factory=list)
    group_peaks: dict[str, int] = field(default_factory=dict)  # most handlers of a group seen at once
    repeat_instances: list[str] = field(default_factory=list)  # completed
    repeat_unfinished: list[str] = field(default_factory=list)  # made but not completed

    @property
    def lost_nothing(self) -> bool:
        return not self.missing and self.failed == 0 and not self.repeat_unfinished

    @property
    def effects_once(self) -> bool:
        """The guarded effect ran exactly once for every job and every repeat instance."""
        expected = self.jobs + len(self.repeat_instances)
        return len(self.guarded_counts) == expected and set(self.guarded_counts.values()) <= {1}

    @property
    def redeliveries(self) -> int:
        return self.deliveries - self.jobs

    @property
    def guarded_total(self) -> int:
        return sum(self.guarded_counts.values())

    @property
    def unguarded_total(self) -> int:
        return sum(self.unguarded_counts.values())

    @property
    def guarded_duplicates(self) -> int:
        return sum(n - 1 for n in self.guarded_counts.values() if n > 1)

    @property
    def unguarded_duplicates(self) -> int:
        return sum(n - 1 for n in self.unguarded_counts.values() if n > 1)

    def summary(self) -> str:
        lost = len(self.missing)
        return "\n".join([
            f"jobs added                    {self.jobs}",
            f"worker processes SIGKILLed    {self.kills}",
            f"completed                     {self.completed}   (failed {self.failed}, lost {lost})",
            f"deliveries                    {self.deliveries}   ({self.redeliveries} redeliveries)",
            f"stalled jobs recovered        {self.stalled_recovered}   (by the sweep)",
            *([f"repeatable instances          {len(self.repeat_instances)} completed, "
               f"{len(self.repeat_unfinished)} unfinished"] if self.repeat_instances or self.repeat_unfinished
              else []),
            f"effect with dedup marker      {self.guarded_total} applications, "
            f"{self.guarded_duplicates} duplicates",
            f"effect without dedup marker   {self.unguarded_total} applications, "
            f"{self.unguarded_duplicates} duplicates",
            *([f"groups: most running at once  {max(self.group_peaks.values())} "
               f"(over {len(self.group_peaks)} groups)"] if self.group_peaks else []),
            f"elapsed                       {self.elapsed_s:.1f} s",
        ])


class WorkerProcesses:
    """Worker subprocesses started through the real CLI."""

    def __init__(self, config: ChaosConfig) -> None:
        self.config = config
        self.procs: list[subprocess.Popen] = []
        self.queue_of: dict[int, str] = {}

    def spawn(self, queue: str | None = None) -> subprocess.Popen:
        c = self.config
        queue = queue or c.queue
        flavour = c.flavours[len(self.procs) % len(c.flavours)]
        handler = f"{__name__}:{'async_effect_handler' if flavour == 'asyncio' else 'effect_handler'}"
        args = [sys.executable, "-m", "minired_queue.cli", "--url", c.url, *(["--cluster"] if c.cluster else []),
                "worker", queue, handler, *(["--asyncio"] if flavour.startswith("asyncio") else []),
                "--concurrency", str(c.concurrency),
                "--lock-ttl-ms", str(c.lock_ttl_ms), "--sweep-interval", str(c.sweep_interval_s),
                "--max-stalled", str(c.max_stalled),
                "--block-timeout", "1", "--grace", "5"]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.procs.append(proc)
        self.queue_of[proc.pid] = queue
        return proc

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def stop_all(self, timeout: float = 10.0) -> None:
        for proc in self.alive():
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _busy_pids(queue: Queue) -> set[int]:
    """Pids of workers holding an active job right now (the lock token names the pid)."""
    ids = [text(i) for i in queue.client.lrange(queue.keys.active, 0, -1)]
    pipe = queue.client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(queue.keys.job(job_id), "lockedBy")
    pids = set()
    for owner in pipe.execute():
        if owner:
            pids.add(int(text(owner).split(":")[1]))  # host:pid:nonce:counter
    return pids


def run_chaos(config: ChaosConfig, say: Callable[[str], Any] = lambda _: None) -> ChaosReport:
    rng = random.Random(config.seed)
    client = connect(config.url, cluster=config.cluster)
    queue = Queue(config.queue, client)
    started = time.monotonic()
    if config.rate_limit:
        queue.configure(rate_max=config.rate_limit[0], rate_duration_ms=config.rate_limit[1])
        say(f"rate limit: {config.rate_limit[0]} jobs per {config.rate_limit[1]} ms")
    if config.repeat_every_ms:
        queue.add_repeatable("chaos-tick", {"work_ms": config.work_ms[0]}, every_ms=config.repeat_every_ms,
                             priority=1 if config.priorities else 0)
        say(f"repeatable job every {config.repeat_every_ms} ms")
    if config.groups:
        queue.configure(group_concurrency=config.group_concurrency)
        say(f"every other job in one of {config.groups} groups, at most {config.group_concurrency} at once each")

    def spec(n: int) -> JobSpec:
        group = f"g{n // 2 % config.groups}" if config.groups and n % 2 == 0 else None
        return JobSpec({"work_ms": rng.randint(*config.work_ms)}, job_id=f"job-{n}", group=group,
                       priority=rng.randint(0, 3) if config.priorities and group is None else 0)

    queue.add_many(spec(n) for n in range(config.jobs))
    say(f"added {config.jobs} jobs to {config.queue!r}{' with priorities 0-3' if config.priorities else ''}")
    ids = [f"job-{n}" for n in range(config.jobs)]
    side = Queue(side_queue(config.queue), client)
    side_ids: list[str] = []
    for n in range(config.flows):
        children = [JobSpec({"work_ms": rng.randint(*config.work_ms)}, job_id=f"flow-{n}-c{c}",
                            queue=side.name if c % 3 == 2 else None) for c in range(config.flow_children)]
        queue.add_flow(JobSpec({"work_ms": config.work_ms[0], "children": config.flow_children},
                               job_id=f"flow-{n}"), children)
        ids += [f"flow-{n}"] + [child.id for child in children if not child.queue]
        side_ids += [child.id for child in children if child.queue]
    if config.flows:
        say(f"added {config.flows} flows of {config.flow_children} children, some on {side.name!r}")

    def all_finished() -> bool:
        pipe = client.pipeline(transaction=False)
        for q, job_id in [(queue, i) for i in ids] + [(side, i) for i in side_ids]:
            pipe.zscore(q.keys.completed, job_id)
            pipe.zscore(q.keys.failed, job_id)
        replies = pipe.execute()
        return all(a is not None or b is not None for a, b in zip(replies[0::2], replies[1::2]))

    workers = WorkerProcesses(config)
    for _ in range(config.workers):
        workers.spawn()
    for _ in range(config.side_workers if config.flows else 0):
        workers.spawn(side.name)
    say(f"started {config.workers} worker processes x {config.concurrency} slots")
    kills, events = 0, []
    deadline = started + config.time_limit_s
    try:
        while time.monotonic() < deadline:
            counts = queue.counts()
            if counts["completed"] + counts["failed"] >= len(ids) and all_finished():
                break
            time.sleep(rng.uniform(*config.kill_interval_s))
            if kills < config.kills:
                busy = [p for p in workers.alive() if p.pid in _busy_pids(queue) | _busy_pids(side)]
                if busy:
                    victim = rng.choice(busy)
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    kills += 1
                    workers.spawn(workers.queue_of[victim.pid])
                    events.append(f"SIGKILL worker pid {victim.pid} mid-job; replacement started")
                    say(events[-1])
        if config.repeat_every_ms:
            # Stop the ticks, then let the instances already made finish.
            queue.remove_repeatable("chaos-tick")
            while time.monotonic() < deadline and sum(
                    n for state, n in queue.counts().items() if state not in ("completed", "failed")):
                time.sleep(0.05)
    finally:
        workers.stop_all()
    elapsed = time.monotonic() - started

    placed = {state: [text(i) for i in (client.lrange(getattr(queue.keys, state), 0, -1) if state in (
        "wait", "active") else client.zrange(getattr(queue.keys, state), 0, -1))] for state in STATES}
    repeat_done = [i for i in placed["completed"] if i.startswith("repeat:")]
    repeat_open = [i for state, found in placed.items() if state != "completed" for i in found
                   if i.startswith("repeat:")]
    pipe = client.pipeline(transaction=False)
    every = [(queue, i) for i in ids] + [(side, i) for i in side_ids]
    for q, job_id in every:
        pipe.zscore(q.keys.completed, job_id)
        pipe.hget(q.keys.job(job_id), "attemptsStarted")
    replies = pipe.execute()
    completed = [job_id for (_, job_id), score in zip(every, replies[0::2]) if score is not None]
    counts, side_counts = queue.counts(), side.counts()
    guarded, unguarded = {}, {}
    for q in (queue, side):
        guarded.update({text(k): int(v) for k, v in client.hgetall(guarded_key(q.keys)).items()})
        unguarded.update({text(k): int(v) for k, v in client.hgetall(unguarded_key(q.keys)).items()})
    report = ChaosReport(
        jobs=len(every),
        completed=len(completed),
        failed=counts["failed"] + side_counts["failed"],
        missing=sorted({job_id for _, job_id in every} - set(completed)),
        deliveries=sum(int(n or 0) for n in replies[1::2]),
        guarded_counts=guarded,
        unguarded_counts=unguarded,
        kills=kills,
        stalled_recovered=queue.metrics().get("stalled", 0) + side.metrics().get("stalled", 0),
        elapsed_s=elapsed,
        events=events,
        group_peaks={text(k): int(v) for k, v in client.hgetall(group_peak_key(queue.keys)).items()},
        repeat_instances=repeat_done,
        repeat_unfinished=repeat_open,
    )
    client.close()
    return report
