"""What an operator's tools need beyond producing and consuming: a page of the jobs in one
state, a job's logs and past errors, the live workers, and the operations bull-board,
rq-dashboard, Sidekiq's Web UI and Flower offer (promote, retry a completed job, clean by
age, obliterate). Each is a step generator over ``QueueSteps``, which ``Queue`` and
``AsyncQueue`` expose as methods; reads here only read (no SCAN), and every write is a Lua
transition or goes through the queue's own steps.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .groups import member_job_id
from .job import Job, text
from .keys import registry_key
from .steps import Command, Pipeline, Steps
from .transitions import clean_jobs

if TYPE_CHECKING:
    from .queue import QueueSteps

# What a state's page reads: the ids of the job list (wait, active) or sorted set (others).
# ``grouped``: the ready jobs in their groups' lines (counted under wait, listed apart: a
# group's line is not the wait list); ``waiting-children``: flow parents not yet ready.
LISTED_STATES = ("wait", "grouped", "prioritized", "active", "delayed", "waiting-children", "completed", "failed",
                 "paused")
_CONTAINERS = {"grouped": "group_wait", "waiting-children": "waiting_children", "paused": "wait"}
_JOB_STATES = {"grouped": "wait"}  # what get_state says of a job listed there
NAME_FILTER_WINDOW = 1000  # a name filter looks at this many jobs of the state, not more
LOG_LINES_KEPT = 1000
CLEAN_BATCH = 200


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


def _ids(queue: "QueueSteps", state: str, start: int, stop: int, newest_first: bool) -> Steps[list[str]]:
    """Ids ``start`` .. ``stop`` (inclusive) of one container in the given order. Lists are
    pushed at the head (LPUSH), so the head is the newest; sorted sets (time or run order)
    have their oldest or first-to-run at rank 0."""
    key = getattr(queue.keys, _CONTAINERS.get(state, state))
    if state in ("wait", "active"):
        if newest_first:
            found = yield Command("lrange", key, start, stop)
        else:
            found = list(reversed((yield Command("lrange", key, -stop - 1, -start - 1))))
    else:
        found = yield Command("zrevrange" if newest_first else "zrange", key, start, stop)
    if state == "grouped":
        return [member_job_id(member) for member in found]
    return [text(i) for i in found]


def _container_size(queue: "QueueSteps", state: str) -> Steps[int]:
    key = getattr(queue.keys, _CONTAINERS.get(state, state))
    return int((yield Command("llen" if state in ("wait", "active") else "zcard", key)))


def list_jobs(queue: "QueueSteps", state: str, start: int = 0, count: int = 50, *, name: str | None = None,
              newest_first: bool = True) -> Steps[JobPage]:
    """A page of ``state``'s jobs. ``paused``: the ready jobs (wait) of a paused queue,
    empty while it runs. Prioritized jobs are in run order whatever ``newest_first``, grouped
    ones by group, each group's line in its order."""
    if state not in LISTED_STATES:
        raise ValueError(f"state must be one of {', '.join(LISTED_STATES)}")
    if start < 0 or not 1 <= count <= 1000:
        raise ValueError("start must be >= 0 and count from 1 to 1000")
    container = "wait" if state == "paused" else state
    if state == "paused" and not (yield from queue.is_paused()):
        return JobPage(state, [], 0, start, 0, 0, False, {})
    newest = newest_first and state not in ("prioritized", "grouped")
    total = yield from _container_size(queue, container)
    if name:
        looked = yield from _ids(queue, container, 0, NAME_FILTER_WINDOW - 1, newest)
        names = yield Pipeline(tuple(Command("hget", queue.keys.job(job_id), "name") for job_id in looked))
        matching = [job_id for job_id, found in zip(looked, names)
                    if found is not None and name.lower() in text(found).lower()]
        ids, matched, cut = matching[start:start + count], len(matching), total > len(looked)
    else:
        ids = yield from _ids(queue, container, start, start + count - 1, newest)
        looked, matched, cut = [], total, False
    jobs = (yield from queue._jobs(ids, _JOB_STATES.get(state, state))) if ids else []
    due: dict[str, int] = {}
    if state == "delayed" and jobs:
        scores = yield Pipeline(tuple(Command("zscore", queue.keys.delayed, job.id) for job in jobs))
        due = {job.id: int(score) for job, score in zip(jobs, scores) if score is not None}
    return JobPage(state, jobs, total, start, matched, len(looked), cut, due)


def job_errors(queue: "QueueSteps", job_id: str) -> Steps[list[dict[str, Any]]]:
    """Each attempt that ended in an error or a stall, oldest first: {'attempt' (delivery
    number), 'reason', 'at' (server ms)}; the newest 20 (retryOrFail and the sweep note them).
    A field that is not a JSON list (written by hand) reads as none, as the scripts read it."""
    raw = yield Command("hget", queue.keys.job(job_id), "errors")
    try:
        errors = json.loads(text(raw)) if raw else []
    except ValueError:
        return []
    return errors if isinstance(errors, list) else []


def job_logs(queue: "QueueSteps", job_id: str, start: int = 0, count: int = 100) -> Steps[tuple[list[str], int]]:
    """Lines ``start`` .. of a job's log (oldest first) and how many it holds."""
    lines, total = yield Pipeline((Command("lrange", queue.keys.logs(job_id), start, start + count - 1),
                                   Command("llen", queue.keys.logs(job_id))))
    return [text(line) for line in lines], int(total)


def workers(queue: "QueueSteps", active: list[dict[str, Any]] | None = None) -> Steps[list[dict[str, Any]]]:
    """The queue's live workers, most recent heartbeat first: id, host, pid, heartbeat and
    started (server ms), concurrency, running (as of the beat) and the ids of the jobs each
    holds a lock for now. A worker is listed until a lock TTL after its last heartbeat.
    ``active``: ``Queue.active_jobs()`` if the caller has just read it."""
    listed = [(text(i), int(score)) for i, score in
              (yield Command("zrevrange", queue.keys.workers, 0, 199, withscores=True))]
    described = yield Pipeline(tuple(Command("hgetall", queue.keys.worker(worker_id)) for worker_id, _ in listed))
    holding: dict[str, list[str]] = {}
    for entry in (yield from queue.active_jobs()) if active is None else active:
        holding.setdefault(entry["worker"], []).append(entry["job"].id)
    found = []
    for (worker_id, beat), raw in zip(listed, described):
        if not raw:
            continue  # silent for longer than its TTL: gone
        fields = {text(k): text(v) for k, v in raw.items()}
        host, _, rest = worker_id.partition(":")
        found.append({"id": worker_id, "host": host, "pid": rest.partition(":")[0],
                      "heartbeat": beat, "started": _field(fields, "started", beat),
                      "concurrency": _field(fields, "concurrency", 0),
                      "running": _field(fields, "running", 0),
                      "lock_ttl_ms": _field(fields, "lock_ttl_ms", 0),
                      "jobs": holding.get(worker_id, [])})
    return found


def _field(fields: dict[str, str], name: str, default: int) -> int:
    """A worker hash's number; one that is not an integer (written by hand) reads as the
    default, so one bad entry does not hide every worker."""
    try:
        return int(fields.get(name, default))
    except ValueError:
        return default


# --- writes ----------------------------------------------------------------------------------
def clean_older_than(queue: "QueueSteps", state: str, age_ms: int) -> Steps[int]:
    """Delete the ``state`` (completed or failed) jobs that finished at least ``age_ms``
    ago by the server clock, with the retention script (oldest first, in batches)."""
    if state not in ("completed", "failed"):
        raise ValueError("clean takes 'completed' or 'failed'")
    if not isinstance(age_ms, int) or isinstance(age_ms, bool) or age_ms < 0:
        raise ValueError("the age must be an integer >= 0 (ms)")
    removed = 0
    key = getattr(queue.keys, state)
    while ids := [text(i) for i in (yield Command("zrange", key, 0, CLEAN_BATCH - 1))]:
        gone = yield clean_jobs(queue.keys, state, ids, None, age_ms)
        removed += len(gone)
        if len(gone) < len(ids):
            break
    return removed


def obliterate(queue: "QueueSteps") -> Steps[int]:
    """Delete the queue: every job (with its log and dedup marker; a flow parent with its
    children's outcomes), its repeatables, settings, metrics, history, events, group
    rotation and limits, and registry entries. Refused while jobs are active
    (their workers hold them: stop the workers, or wait). Effect markers are left to expire
    (they have a TTL). Returns the jobs deleted."""
    def refuse_if_active() -> Steps[None]:
        if active := int((yield Command("llen", queue.keys.active))):
            raise ValueError(f"{active} job(s) are active: stop the queue's workers first")

    yield from refuse_if_active()
    was_paused = yield from queue.is_paused()
    yield from queue.pause()  # no worker takes a job from here on
    try:
        yield from refuse_if_active()  # (one was taken just before the pause)
    except ValueError:
        if not was_paused:
            yield from queue.resume()
        raise
    for repeatable in (yield from queue.repeatables()):
        yield from queue.remove_repeatable(repeatable.key)
    keys = queue.keys
    removed = yield from queue.drain()
    removed += yield from queue._remove_all(Command("zrange", keys.waiting_children, 0, CLEAN_BATCH - 1))
    removed += yield from queue.clean("completed")
    removed += yield from queue.clean("failed")
    left = {}
    for state in ("wait", "prioritized", "delayed", "completed", "failed", "active", "group_wait",
                  "waiting_children"):
        left[state] = yield from _container_size(queue, state)
    if any(left.values()):
        raise ValueError(f"jobs arrived meanwhile ({left}): stop the producers and try again")
    yield Command("delete", keys.meta, keys.metrics, keys.history, keys.events, keys.progress, keys.marker,
                  keys.limiter, keys.stalled_check, keys.repeat, keys.workers, keys.groups, keys.group_active,
                  keys.group_rate)
    yield Command("srem", registry_key(keys.prefix), keys.name)
    return removed
