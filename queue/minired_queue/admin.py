"""What an operator's tools need beyond producing and consuming: a page of the jobs in one
state, a job's logs and past errors, the live workers, and the operations bull-board,
rq-dashboard, Sidekiq's Web UI and Flower offer (promote, retry a completed job, clean by
age, obliterate). ``Queue`` exposes each as a method; reads here only read (no SCAN), and
every write is a Lua transition or goes through ``Queue``'s own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .job import Job, text

if TYPE_CHECKING:
    from .queue import Queue

# What a state's page reads: the ids of the job list (wait, active) or sorted set (others).
LISTED_STATES = ("wait", "prioritized", "active", "delayed", "completed", "failed", "paused")
NAME_FILTER_WINDOW = 1000  # a name filter looks at this many jobs of the state, not more
LOG_LINES_KEPT = 1000


@dataclass(frozen=True)
class JobPage:
    """One page of a state's jobs: ``total`` jobs are in the state; with a name filter,
    ``matched`` of the ``looked_at`` first ones matched (``cut``: the filter did not look at
    them all). ``due`` gives a delayed job's due time (server ms)."""

    state: str
    jobs: list[Job]
    total: int
    start: int
    matched: int
    looked_at: int
    cut: bool
    due: dict[str, int]


def _ids(queue: "Queue", state: str, start: int, stop: int, newest_first: bool) -> list[str]:
    """Ids ``start`` .. ``stop`` (inclusive) of one container in the given order. Lists are
    pushed at the head (LPUSH), so the head is the newest; sorted sets (time or run order)
    have their oldest or first-to-run at rank 0."""
    key, client = getattr(queue.keys, state), queue.client
    if state in ("wait", "active"):
        if newest_first:
            found = client.lrange(key, start, stop)
        else:
            found = list(reversed(client.lrange(key, -stop - 1, -start - 1)))
    else:
        found = (client.zrevrange if newest_first else client.zrange)(key, start, stop)
    return [text(i) for i in found]


def _container_size(queue: "Queue", state: str) -> int:
    key = getattr(queue.keys, state)
    return int(queue.client.llen(key) if state in ("wait", "active") else queue.client.zcard(key))


def list_jobs(queue: "Queue", state: str, start: int = 0, count: int = 50, *, name: str | None = None,
              newest_first: bool = True) -> JobPage:
    """A page of ``state``'s jobs. ``paused``: the ready jobs (wait) of a paused queue,
    empty while it runs. Prioritized jobs are in run order whatever ``newest_first``."""
    if state not in LISTED_STATES:
        raise ValueError(f"state must be one of {', '.join(LISTED_STATES)}")
    if start < 0 or not 1 <= count <= 1000:
        raise ValueError("start must be >= 0 and count from 1 to 1000")
    container = state
    if state == "paused":
        container = "wait"
        if not queue.is_paused():
            return JobPage(state, [], 0, start, 0, 0, False, {})
    newest = newest_first and state != "prioritized"
    total = _container_size(queue, container)
    if name:
        looked = _ids(queue, container, 0, NAME_FILTER_WINDOW - 1, newest)
        pipe = queue.client.pipeline(transaction=False)
        for job_id in looked:
            pipe.hget(queue.keys.job(job_id), "name")
        matching = [job_id for job_id, found in zip(looked, pipe.execute())
                    if found is not None and name.lower() in text(found).lower()]
        ids, matched, cut = matching[start:start + count], len(matching), total > len(looked)
    else:
        ids = _ids(queue, container, start, start + count - 1, newest)
        looked, matched, cut = [], total, False
    jobs = queue._jobs(ids, state) if ids else []
    due: dict[str, int] = {}
    if state == "delayed" and jobs:
        pipe = queue.client.pipeline(transaction=False)
        for job in jobs:
            pipe.zscore(queue.keys.delayed, job.id)
        due = {job.id: int(score) for job, score in zip(jobs, pipe.execute()) if score is not None}
    return JobPage(state, jobs, total, start, matched, len(looked), cut, due)


def job_errors(queue: "Queue", job_id: str) -> list[dict[str, Any]]:
    """Each attempt that ended in an error or a stall, oldest first: {'attempt' (delivery
    number), 'reason', 'at' (server ms)}; the newest 20 (retryOrFail and the sweep note them)."""
    raw = queue.client.hget(queue.keys.job(job_id), "errors")
    return json.loads(text(raw)) if raw else []


def job_logs(queue: "Queue", job_id: str, start: int = 0, count: int = 100) -> tuple[list[str], int]:
    """Lines ``start`` .. of a job's log (oldest first) and how many it holds."""
    pipe = queue.client.pipeline(transaction=False)
    pipe.lrange(queue.keys.logs(job_id), start, start + count - 1)
    pipe.llen(queue.keys.logs(job_id))
    lines, total = pipe.execute()
    return [text(line) for line in lines], int(total)


def workers(queue: "Queue", active: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The queue's live workers, most recent heartbeat first: id, host, pid, heartbeat and
    started (server ms), concurrency, running (as of the beat) and the ids of the jobs each
    holds a lock for now. A worker is listed until a lock TTL after its last heartbeat.
    ``active``: ``Queue.active_jobs()`` if the caller has just read it."""
    listed = [(text(i), int(score)) for i, score in
              queue.client.zrevrange(queue.keys.workers, 0, 199, withscores=True)]
    pipe = queue.client.pipeline(transaction=False)
    for worker_id, _ in listed:
        pipe.hgetall(queue.keys.worker(worker_id))
    holding: dict[str, list[str]] = {}
    for entry in queue.active_jobs() if active is None else active:
        holding.setdefault(entry["worker"], []).append(entry["job"].id)
    found = []
    for (worker_id, beat), raw in zip(listed, pipe.execute()):
        if not raw:
            continue  # silent for longer than its TTL: gone
        fields = {text(k): text(v) for k, v in raw.items()}
        host, _, rest = worker_id.partition(":")
        found.append({"id": worker_id, "host": host, "pid": rest.partition(":")[0],
                      "heartbeat": beat, "started": int(fields.get("started", beat)),
                      "concurrency": int(fields.get("concurrency", 0)),
                      "running": int(fields.get("running", 0)),
                      "lock_ttl_ms": int(fields.get("lock_ttl_ms", 0)),
                      "jobs": holding.get(worker_id, [])})
    return found


# --- writes ----------------------------------------------------------------------------------
def clean_older_than(queue: "Queue", state: str, age_ms: int) -> int:
    """Delete the ``state`` (completed or failed) jobs that finished at least ``age_ms``
    ago by the server clock, with the retention script (oldest first, in batches)."""
    from .transitions import clean_jobs

    if state not in ("completed", "failed"):
        raise ValueError("clean takes 'completed' or 'failed'")
    if not isinstance(age_ms, int) or isinstance(age_ms, bool) or age_ms < 0:
        raise ValueError("the age must be an integer >= 0 (ms)")
    removed = 0
    key = getattr(queue.keys, state)
    while ids := [text(i) for i in queue.client.zrange(key, 0, 199)]:
        gone = clean_jobs(queue.keys, state, ids, None, age_ms).run(queue.client)
        removed += len(gone)
        if len(gone) < len(ids):
            break
    return removed


def obliterate(queue: "Queue") -> int:
    """Delete the queue: every job (with its log and dedup marker), its repeatables,
    settings, metrics, history, events and registry entries. Refused while jobs are active
    (their workers hold them: stop the workers, or wait). Effect markers are left to expire
    (they have a TTL). Returns the jobs deleted."""
    from .keys import registry_key

    def refuse_if_active() -> None:
        if active := int(queue.client.llen(queue.keys.active)):
            raise ValueError(f"{active} job(s) are active: stop the queue's workers first")

    refuse_if_active()
    was_paused = queue.is_paused()
    queue.pause()  # no worker takes a job from here on
    try:
        refuse_if_active()  # (one was taken just before the pause)
    except ValueError:
        if not was_paused:
            queue.resume()
        raise
    for repeatable in queue.repeatables():
        queue.remove_repeatable(repeatable.key)
    removed = queue.drain() + queue.clean("completed") + queue.clean("failed")
    keys = queue.keys
    left = {state: _container_size(queue, state) for state in ("wait", "prioritized", "delayed",
                                                               "completed", "failed", "active")}
    if any(left.values()):
        raise ValueError(f"jobs arrived meanwhile ({left}): stop the producers and try again")
    queue.client.delete(keys.meta, keys.metrics, keys.history, keys.events, keys.marker, keys.limiter,
                        keys.stalled_check, keys.repeat, keys.workers)
    queue.client.srem(registry_key(keys.prefix), queue.name)
    return removed
