"""The producer and admin side of a queue: add jobs, inspect and operate on them.

``Queue`` runs on a synchronous redis-py client, ``AsyncQueue`` on a redis.asyncio one.
Both run the same operations: each is a step generator of ``QueueSteps`` (``steps.py``),
driven with ``drive`` or awaited with ``drive_async``, as the threaded and the asyncio
workers share ``WorkerCore``. So the two differ only in how they wait.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterable, Sequence

from . import admin
from .checks import MAX_DURATION_MS, integer, optional_integer, stored_integer
from .connection import connect, connect_async, is_asyncio_client
from .events import wait_steps
from .flows import (
    add_flow_steps,
    children_failures_steps,
    children_results_steps,
    waiting_children_steps,
)
from .groups import GroupedIds, group_line, group_member
from .job import STATES, Backoff, Job, JobSpec, text
from .keys import DEFAULT_PREFIX, QueueKeys, registry_key
from .repeat import Repeatable, Schedule, describe, fire_steps, pending_instance, spec_fields, upsert_steps
from .steps import Command, Pipeline, Steps, drive, drive_async
from .sweeper import promote_steps, retention_steps, sweep_steps
from .transitions import (
    DEFAULT_EVENTS_CAP,
    AddResult,
    CallBatch,
    SweepResult,
    add_debounced_job,
    add_job,
    promote_job,
    record_depth,
    remove_jobs,
    remove_repeatable,
    retry_jobs,
    set_paused,
)

# Queue settings (``Queue.configure``) and the meta hash fields holding them.
SETTINGS = {"max_stalled": "maxStalled", "concurrency": "concurrency", "rate_max": "rateMax",
            "rate_duration_ms": "rateDuration", "keep_completed": "keepCompleted",
            "keep_completed_age_ms": "keepCompletedAgeMs", "keep_failed": "keepFailed",
            "keep_failed_age_ms": "keepFailedAgeMs",
            # groups: every group's limits (lua/moveToActive.lua)
            "group_concurrency": "groupConcurrency", "group_rate_max": "groupRateMax",
            "group_rate_duration_ms": "groupRateDuration"}
DEFAULT_MAX_STALLED = 1  # as moveStalledJobsToWait.lua reads it when unset
DEFAULT_RATE_DURATION_MS = 1000  # as moveToActive.lua reads it when unset
_HISTORY_FIELD = re.compile(r"^(?P<minute>\d+):(?P<name>\w+)$")

PIPELINE_CHUNK = 500
DEBOUNCE_RETRIES = 100  # each retry means another producer replaced the pending job meanwhile
ADMIN_BATCH = 200


class QueueSteps:
    """Every operation of one queue as a step generator: no I/O here. ``Queue`` and
    ``AsyncQueue`` expose each under the same name, driven on their kind of client."""

    def __init__(self, keys: QueueKeys, events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.keys = keys
        self.events_cap = integer("events_cap", events_cap, 1)
        self._registered = False

    def _register(self) -> Steps[None]:
        if not self._registered:
            yield Command("sadd", registry_key(self.keys.prefix), self.keys.name)
            self._registered = True

    def exists(self) -> Steps[bool]:
        """Whether the queue exists: registered in the queue registry (every producer and
        ``configure`` register it), or holding any key (a queue made by a client that does
        not register). Tools refuse a name that does not, so a typo is not an empty queue."""
        if (yield Command("sismember", registry_key(self.keys.prefix), self.keys.name)):
            return True
        return bool((yield Command("exists", *self.keys.own_keys())))

    # --- adding ---------------------------------------------------------------------
    def add(self, data: Any = None, *, job_id: str | None = None, name: str = "",
            dedup_id: str | None = None, dedup_ttl_ms: int = 0, delay_ms: int = 0,
            attempts: int = 1, backoff: Backoff | None = None, priority: int = 0, ttl_ms: int = 0,
            timeout_ms: int = 0, debounce_ms: int = 0, throttle_ms: int = 0,
            children: Sequence[JobSpec] | None = None, on_child_failure: str = "fail",
            group: str | None = None) -> Steps[str]:
        """Add one job; returns its id (the existing job's id when deduplicated or
        throttled). See ``JobSpec`` for ``ttl_ms``, ``timeout_ms``, ``debounce_ms`` and
        ``throttle_ms``. With ``children`` the job is a flow's parent (``add_flow``). With
        ``group`` it waits in its group's line: groups take turns, each within the queue's
        ``group_concurrency`` and ``group_rate_max`` settings."""
        spec = JobSpec(data, job_id=job_id, name=name, dedup_id=dedup_id, dedup_ttl_ms=dedup_ttl_ms,
                       delay_ms=delay_ms, attempts=attempts, backoff=backoff, priority=priority, ttl_ms=ttl_ms,
                       timeout_ms=timeout_ms, debounce_ms=debounce_ms, throttle_ms=throttle_ms, group=group)
        if children is not None:
            return (yield from self.add_flow(spec, children, on_child_failure)).job_id
        if on_child_failure != "fail":
            raise ValueError("on_child_failure is a flow's: it needs children")
        return (yield from self.add_job(spec)).job_id

    # --- flows (flows.py) -----------------------------------------------------------
    def add_flow(self, parent: JobSpec, children: Sequence[JobSpec],
                 on_child_failure: str = "fail") -> Steps[AddResult]:
        """Add ``children`` (each on its ``JobSpec.queue``, default this one), then ``parent``,
        which waits in ``waiting-children`` until every child finished. A child that fails
        for good (or is removed) fails the parent under ``"fail"`` (its reason names the
        child) or is skipped under ``"ignore"``."""
        result = yield from add_flow_steps(self.keys, parent, list(children), on_child_failure, self.events_cap)
        yield from self._register()
        return result

    def children_results(self, parent_id: str) -> Steps[dict[str, Any]]:
        """{child job key: return value} of a parent's completed children (BullMQ's
        ``getChildrenValues``); the handler's ``job.children_results()`` reads the same."""
        return (yield from children_results_steps(self.keys, parent_id))

    def children_failures(self, parent_id: str) -> Steps[dict[str, str]]:
        """{child job key: reason} of a parent's children that failed for good or were removed."""
        return (yield from children_failures_steps(self.keys, parent_id))

    # --- groups (groups.py) ----------------------------------------------------------
    def group_counts(self) -> Steps[dict[str, int]]:
        """{group: ready jobs} for each group with ready jobs, in the order of their next turn."""
        groups = [text(g) for g in (yield Command("zrange", self.keys.groups, 0, -1))]
        sizes = yield Pipeline(tuple(Command("zlexcount", self.keys.group_wait, *group_line(g)) for g in groups))
        return dict(zip(groups, (int(n) for n in sizes)))

    def waiting_children(self) -> Steps[list[str]]:
        """Ids of the flow parents still waiting for children, oldest first."""
        return (yield from waiting_children_steps(self.keys))

    def add_job(self, spec: JobSpec) -> Steps[AddResult]:
        if spec.debounce_ms:
            return (yield from self._add_debounced(spec))
        call = add_job(self.keys, spec, self.events_cap)  # checks the spec before anything is sent
        yield from self._register()
        return (yield call)

    def _add_debounced(self, spec: JobSpec) -> Steps[AddResult]:
        """Read the dedup marker, then replace the job it names; a marker moved meanwhile
        (another producer) is read again from the script's reply."""
        add_debounced_job(self.keys, spec, "", self.events_cap)  # checks the spec before anything is sent
        yield from self._register()
        holder = yield Command("get", self.keys.dedup(spec.dedup_id))
        holder = text(holder) if holder else ""
        for _ in range(DEBOUNCE_RETRIES):
            outcome = yield add_debounced_job(self.keys, spec, holder, self.events_cap)
            if isinstance(outcome, AddResult):
                return outcome
            holder = outcome.holder
        raise RuntimeError(f"dedup id {spec.dedup_id!r} kept changing hands; job {spec.id} was not added")

    def add_many(self, specs: Iterable[JobSpec]) -> Steps[list[AddResult]]:
        """Add many jobs in pipelined round trips. Each add is its own atomic script; the
        batch is not all-or-nothing, but every id is fixed up front, so repeating a
        partly-failed batch adds each job once."""
        specs = list(specs)
        if any(spec.debounce_ms for spec in specs):  # each reads its marker first: one at a time
            for spec in specs:
                spec.payload()  # every payload checked before the first is added
            results = []
            for spec in specs:
                results.append((yield from self.add_job(spec)))
            return results
        calls = [add_job(self.keys, spec, self.events_cap) for spec in specs]  # all checked first
        if not calls:
            return []
        yield from self._register()
        results = [(yield calls[0])]  # also loads the script where it will run
        for start in range(1, len(calls), PIPELINE_CHUNK):
            results += yield CallBatch(calls[start:start + PIPELINE_CHUNK])
        return results

    # --- inspection -----------------------------------------------------------------
    def counts(self) -> Steps[dict[str, int]]:
        """Jobs per state: wait (grouped ready jobs included), prioritized, active, delayed,
        completed, failed."""
        replies = yield Pipeline((*(
            Command("llen" if state in ("wait", "active") else "zcard", getattr(self.keys, state))
            for state in STATES), Command("zcard", self.keys.group_wait)))
        found = dict(zip(STATES, (int(n) for n in replies)))
        found["wait"] += int(replies[-1])
        return found

    def get_state(self, job_id: str) -> Steps[str | None]:
        replies = yield Pipeline(tuple(
            Command("lpos", getattr(self.keys, state), job_id) if state in ("wait", "active")
            else Command("zscore", getattr(self.keys, state), job_id) for state in STATES))
        for state, found in zip(STATES, replies):
            if found is not None:
                return state
        if (yield Command("zscore", self.keys.waiting_children, job_id)) is not None:
            return "waiting-children"
        group, seq = yield Command("hmget", self.keys.job(job_id), "group", "groupSeq")
        if group is not None and seq is not None and (yield Command(
                "zscore", self.keys.group_wait, group_member(text(group), text(seq), job_id))) is not None:
            return "wait"  # in its group's line
        return None

    def get_job(self, job_id: str) -> Steps[Job | None]:
        raw = yield Command("hgetall", self.keys.job(job_id))
        if not raw:
            return None
        return Job.from_hash(job_id, raw, state=(yield from self.get_state(job_id)))

    def _jobs(self, job_ids: Sequence[str], state: str) -> Steps[list[Job]]:
        replies = yield Pipeline(tuple(Command("hgetall", self.keys.job(job_id)) for job_id in job_ids))
        return [Job.from_hash(job_id, raw, state=state) for job_id, raw in zip(job_ids, replies) if raw]

    def _newest(self, state: str, start: int, count: int) -> Steps[list[Job]]:
        ids = [text(i) for i in (yield Command("zrevrange", getattr(self.keys, state), start, start + count - 1))]
        return (yield from self._jobs(ids, state)) if ids else []

    def failed_jobs(self, start: int = 0, count: int = 50) -> Steps[list[Job]]:
        """Dead-lettered jobs, most recent failure first."""
        return (yield from self._newest("failed", start, count))

    def completed_jobs(self, start: int = 0, count: int = 50) -> Steps[list[Job]]:
        return (yield from self._newest("completed", start, count))

    def is_paused(self) -> Steps[bool]:
        return bool((yield Command("hexists", self.keys.meta, "paused")))

    def metrics(self) -> Steps[dict[str, int]]:
        """Monotonic counters (added, completed, failed, retried, stalled, removed) and the
        processing-time histogram (``ms_le_<bound>``, ``ms_sum``, ``ms_count``)."""
        raw = yield Command("hgetall", self.keys.metrics)
        return _with_count({text(k): int(v) for k, v in raw.items()})

    def record_depth(self) -> Steps[int]:
        """How many jobs are ready to run (wait + prioritized), noted in the history as the
        minute's largest depth seen. Every sweep samples it (see ``sweeper.sweep_steps``)."""
        return (yield record_depth(self.keys))

    def history(self, minutes: int = 60) -> Steps[list[dict[str, int]]]:
        """Per-minute counts of the last ``minutes`` minutes that had any, oldest first:
        {'minute': unix minute, 'completed', 'failed', 'retried', 'stalled', 'ms_sum',
        'ms_count', 'ms_le_<bound>'...}. Kept in Redis for the last hour, by every worker."""
        return _history_rows((yield Command("hgetall", self.keys.history)), minutes)

    def active_jobs(self) -> Steps[list[dict[str, Any]]]:
        """Jobs in active with their owner (lock token: worker id and delivery), attempt,
        lock time left (ms; -2: lapsed, the sweep will recover it) and progress."""
        ids = [text(i) for i in (yield Command("lrange", self.keys.active, 0, -1))]
        replies = yield Pipeline(tuple(command for job_id in ids for command in (
            Command("hgetall", self.keys.job(job_id)), Command("pttl", self.keys.lock(job_id)))))
        found = []
        for index, job_id in enumerate(ids):
            raw, ttl = replies[2 * index], replies[2 * index + 1]
            if not raw:
                continue
            job = Job.from_hash(job_id, raw, state="active")
            owner = job.locked_by or ""
            found.append({"job": job, "worker": owner.rpartition(":")[0], "token": owner,
                          "attempt": job.attempts_started, "lock_ttl_ms": int(ttl), "progress": job.progress})
        return found

    # --- settings -------------------------------------------------------------------
    def configure(self, **settings: int | None) -> Steps[dict[str, int]]:
        """Store queue-wide settings with the queue (meta hash), where every worker, sweep
        and fetch reads them; None clears one. ``max_stalled`` (default 1),
        ``concurrency`` (most jobs active at once across all workers), ``rate_max`` per
        ``rate_duration_ms`` (most jobs started per window across all workers), and
        retention: ``keep_completed``/``keep_failed`` (how many finished jobs to keep),
        ``keep_completed_age_ms``/``keep_failed_age_ms`` (how long)."""
        unknown = set(settings) - set(SETTINGS)
        if unknown:
            raise ValueError(f"unknown queue settings: {sorted(unknown)}")
        for name, value in settings.items():
            optional_integer(name, value, 1 if name in ("concurrency", "rate_max", "rate_duration_ms", "group_concurrency",
                                                        "group_rate_max", "group_rate_duration_ms") else 0,
                             MAX_DURATION_MS if name.endswith("_ms") else None)
        commands = [Command("hdel", self.keys.meta, SETTINGS[name]) if value is None
                    else Command("hset", self.keys.meta, SETTINGS[name], value) for name, value in settings.items()]
        for rate, duration in (("rate_max", "rate_duration_ms"), ("group_rate_max", "group_rate_duration_ms")):
            if settings.get(rate) is not None and duration not in settings:
                commands.append(Command("hsetnx", self.keys.meta, SETTINGS[duration], DEFAULT_RATE_DURATION_MS))
        yield Pipeline(tuple(commands))
        yield from self._register()
        return (yield from self.settings())

    def settings(self) -> Steps[dict[str, int]]:
        """The stored settings, with max_stalled's default filled in (one that is not an
        integer, written by hand, is left out)."""
        values = yield Command("hmget", self.keys.meta, *SETTINGS.values())
        found = {}
        for name, value in zip(SETTINGS, values):
            if value is None:
                continue
            try:
                found[name] = stored_integer(text(value))
            except ValueError:  # not an integer (written by hand): left out
                continue
        found.setdefault("max_stalled", DEFAULT_MAX_STALLED)
        return found

    def events(self, count: int = 100) -> Steps[list[dict[str, str]]]:
        """The most recent job events, oldest first: {'id', 'event', 'jobId', ...}."""
        entries = yield Command("xrevrange", self.keys.events, count=count)
        return [{"id": text(entry_id), **{text(k): text(v) for k, v in fields.items()}}
                for entry_id, fields in reversed(entries)]

    def wait(self, job_id: str, timeout: float) -> Steps[Any]:
        """Wait for a job's outcome: its return value once it completes; raises
        ``errors.JobFailed`` (``.reason``) when it fails for good (or expires),
        ``errors.JobRemoved`` when it does not exist or is removed (or replaced by a
        debounced job) first, ``TimeoutError`` after ``timeout`` seconds. Reads the job's
        state after taking the events stream's position, so no outcome is missed."""
        return (yield from wait_steps(self.keys, job_id, timeout))

    # --- operations -----------------------------------------------------------------
    def pause(self) -> Steps[bool]:
        yield from self._register()
        return (yield set_paused(self.keys, True))

    def resume(self) -> Steps[bool]:
        return (yield set_paused(self.keys, False))

    def retry_failed(self, job_ids: Sequence[str] | None = None) -> Steps[int]:
        """Move dead-lettered jobs (all of them when ``job_ids`` is None) back to wait."""
        moved = 0
        if job_ids is not None:
            for i in range(0, len(job_ids), ADMIN_BATCH):
                moved += len((yield retry_jobs(self.keys, job_ids[i:i + ADMIN_BATCH])))
            return moved
        while ids := [text(i) for i in (yield Command("zrange", self.keys.failed, 0, ADMIN_BATCH - 1))]:
            moved_now = len((yield retry_jobs(self.keys, ids)))
            moved += moved_now
            if not moved_now:
                break
        return moved

    def _remove(self, job_ids: Sequence[str]) -> Steps[list[str]]:
        dedup_ids = yield Pipeline(tuple(Command("hget", self.keys.job(job_id), "dedupId") for job_id in job_ids))
        candidates = [(job_id, text(d) if d else None) for job_id, d in zip(job_ids, dedup_ids)]
        return (yield remove_jobs(self.keys, candidates, self.events_cap))

    def remove(self, job_id: str) -> Steps[bool]:
        """Delete a job that is not active (a flow parent waiting for children included: its
        children run on). Returns False for an active or unknown job."""
        return bool((yield from self._remove([job_id])))

    def _remove_all(self, read_batch: Command) -> Steps[int]:
        removed = 0
        while ids := [text(i) for i in (yield read_batch)]:
            removed_now = len((yield from self._remove(ids)))
            removed += removed_now
            if not removed_now:  # the jobs moved on meanwhile; what is left is not ours to drain
                break
        return removed

    def drain(self, include_delayed: bool = True) -> Steps[int]:
        """Delete every ready (wait and prioritized) and, by default, delayed job. Active jobs
        are untouched."""
        removed = yield from self._remove_all(Command("lrange", self.keys.wait, -ADMIN_BATCH, -1))
        removed += yield from self._remove_all(GroupedIds(self.keys, ADMIN_BATCH))
        removed += yield from self._remove_all(Command("zrange", self.keys.prioritized, 0, ADMIN_BATCH - 1))
        if include_delayed:
            removed += yield from self._remove_all(Command("zrange", self.keys.delayed, 0, ADMIN_BATCH - 1))
        return removed

    def clean(self, state: str = "completed", keep: int = 0) -> Steps[int]:
        """Delete finished jobs (``completed`` or ``failed``) except the ``keep`` most recent."""
        if state not in ("completed", "failed"):
            raise ValueError("clean takes 'completed' or 'failed'")
        keep = optional_integer("keep", keep)
        key = getattr(self.keys, state)
        removed = 0
        while (excess := int((yield Command("zcard", key))) - keep) > 0:
            ids = [text(i) for i in (yield Command("zrange", key, 0, min(excess, ADMIN_BATCH) - 1))]
            removed_now = len((yield from self._remove(ids)))
            removed += removed_now
            if not removed_now:
                break
        return removed

    def promote_delayed(self) -> Steps[int]:
        """Make due delayed jobs ready now (workers also do this as they fetch)."""
        moved = 0
        while (promotion := (yield from promote_steps(self.keys))).moved:
            moved += promotion.moved
        return moved

    def sweep(self) -> Steps[SweepResult]:
        """Run the recovery sweep once, unthrottled, with the queue's stall limit."""
        return (yield from sweep_steps(self.keys, 0, self.events_cap))

    def apply_retention(self) -> Steps[int]:
        """Delete finished jobs beyond the retention settings now (workers do it each sweep)."""
        return (yield from retention_steps(self.keys))

    # --- what operators' tools need (admin.py) --------------------------------------
    def jobs(self, state: str, start: int = 0, count: int = 50, *, name: str | None = None,
             newest_first: bool = True) -> Steps[admin.JobPage]:
        """A page of one state's jobs (``paused``: the ready jobs of a paused queue), with the
        state's total; ``name`` filters by a part of the job name."""
        return (yield from admin.list_jobs(self, state, start, count, name=name, newest_first=newest_first))

    def job_errors(self, job_id: str) -> Steps[list[dict[str, Any]]]:
        """Every attempt that failed or stalled (the newest 20): {'attempt', 'reason', 'at'}."""
        return (yield from admin.job_errors(self, job_id))

    def job_logs(self, job_id: str, start: int = 0, count: int = 100) -> Steps[tuple[list[str], int]]:
        """A job's log lines (``job.log(line)`` in a handler) and how many there are."""
        return (yield from admin.job_logs(self, job_id, start, count))

    def workers(self, active: list[dict[str, Any]] | None = None) -> Steps[list[dict[str, Any]]]:
        """The live workers (heartbeat within a lock TTL) and the jobs each holds;
        ``active``: what ``active_jobs()`` has just returned, if the caller read it."""
        return (yield from admin.workers(self, active))

    def promote(self, job_id: str) -> Steps[bool]:
        """Run a delayed job now. False when it is not delayed."""
        return (yield promote_job(self.keys, job_id))

    def retry_completed(self, job_ids: Sequence[str]) -> Steps[int]:
        """Run completed jobs again (their result is forgotten); returns how many moved."""
        moved = 0
        for i in range(0, len(job_ids), ADMIN_BATCH):
            moved += len((yield retry_jobs(self.keys, job_ids[i:i + ADMIN_BATCH], "completed")))
        return moved

    def remove_many(self, job_ids: Sequence[str]) -> Steps[list[str]]:
        """Delete the given jobs that are not active; returns the ids deleted."""
        removed: list[str] = []
        for i in range(0, len(job_ids), ADMIN_BATCH):
            removed += yield from self._remove(job_ids[i:i + ADMIN_BATCH])
        return removed

    def clean_older_than(self, state: str, age_ms: int) -> Steps[int]:
        """Delete completed (or failed) jobs finished at least ``age_ms`` ago."""
        return (yield from admin.clean_older_than(self, state, age_ms))

    def obliterate(self) -> Steps[int]:
        """Delete the whole queue (refused while jobs are active); returns the jobs deleted."""
        return (yield from admin.obliterate(self))

    # --- repeatable jobs ------------------------------------------------------------
    def add_repeatable(self, repeat_key: str, data: Any = None, *, every_ms: int | None = None,
                       cron: str | None = None, tz: str = "UTC", name: str = "", attempts: int = 1,
                       backoff: Backoff | None = None, priority: int = 0, limit: int = 0) -> Steps[str]:
        """Register a job made every ``every_ms`` or on the ``cron`` expression in ``tz``,
        ``limit`` times (0: forever). Registering the same key again updates its options
        and keeps its schedule unless the schedule changed. Returns 'created', 'updated'
        or 'rescheduled'. Instances are made by the workers' maintenance (or
        ``run_scheduler()``), one per tick, ids ``repeat:<key>:<tick ms>``."""
        if not repeat_key or any(c in repeat_key for c in "{}"):
            raise ValueError(f"repeat key must be non-empty and free of braces: {repeat_key!r}")
        schedule = Schedule(every_ms=every_ms, cron=cron, tz=tz)
        fields = spec_fields(JobSpec(data).payload(), name, attempts, backoff, priority, limit)
        yield from self._register()
        return (yield from upsert_steps(self.keys, repeat_key, schedule, fields))

    def repeatables(self) -> Steps[list[Repeatable]]:
        """Scheduled repeatables (one that reached its limit is no longer listed)."""
        keys = [text(k) for k in (yield Command("zrange", self.keys.repeat, 0, -1))]
        replies = yield Pipeline(tuple(command for key in keys for command in (
            Command("hgetall", self.keys.repeat_spec(key)), Command("zscore", self.keys.repeat, key))))
        return [describe(key, replies[2 * i], replies[2 * i + 1]) for i, key in enumerate(keys) if replies[2 * i]]

    def remove_repeatable(self, repeat_key: str) -> Steps[bool]:
        """Stop a repeatable; its instance not yet due is removed too."""
        last = yield Command("hget", self.keys.repeat_spec(repeat_key), "lastTick")
        return (yield remove_repeatable(self.keys, repeat_key, pending_instance(repeat_key, last)))

    def run_scheduler(self, horizon_ms: int = 0) -> Steps[int]:
        """Make the instances of repeatable ticks due within ``horizon_ms``; returns how many
        this call made. Workers do this every sweep interval."""
        return (yield from fire_steps(self.keys, horizon_ms, self.events_cap))


def _driven(operation: Callable[..., Steps[Any]]) -> Callable[..., Any]:
    @functools.wraps(operation)
    def method(self: "Queue", *args: Any, **kwargs: Any) -> Any:
        return drive(operation(self.steps, *args, **kwargs), self.client)
    return method


def _awaited(operation: Callable[..., Steps[Any]]) -> Callable[..., Any]:
    @functools.wraps(operation)
    async def method(self: "AsyncQueue", *args: Any, **kwargs: Any) -> Any:
        return await drive_async(operation(self.steps, *args, **kwargs), self.client)
    return method


# What both kinds of queue offer: each is the QueueSteps method of its name, driven on the
# queue's client (awaited on an asyncio one). One list, so that Queue and AsyncQueue cannot drift.
QUEUE_OPERATIONS = (
    "exists", "add", "add_job", "add_many", "add_flow", "children_results", "children_failures",
    "waiting_children", "group_counts", "counts", "get_state", "get_job", "failed_jobs",
    "completed_jobs", "is_paused", "metrics", "record_depth", "history", "active_jobs",
    "configure", "settings", "events", "wait", "pause", "resume", "retry_failed", "remove",
    "drain", "clean", "promote_delayed", "sweep", "apply_retention", "add_repeatable",
    "repeatables", "remove_repeatable", "run_scheduler", "jobs", "job_errors", "job_logs",
    "workers", "promote", "retry_completed", "remove_many", "clean_older_than", "obliterate",
)


def _operations(wrap: Callable[[Callable[..., Steps[Any]]], Callable[..., Any]]):
    """A class decorator giving the class each of QUEUE_OPERATIONS as a method, ``wrap``
    (``_driven`` or ``_awaited``) of the QueueSteps method of that name."""
    def decorate(cls: type) -> type:
        for name in QUEUE_OPERATIONS:
            setattr(cls, name, wrap(getattr(QueueSteps, name)))
        return cls
    return decorate


class _QueueHandle:
    """What both kinds of queue hold: the client, the key names and the steps."""

    def __init__(self, name: str, client: Any, prefix: str, events_cap: int) -> None:
        self.steps = QueueSteps(QueueKeys(name, prefix), events_cap)
        self.client = client

    @property
    def keys(self) -> QueueKeys:
        return self.steps.keys

    @property
    def name(self) -> str:
        return self.keys.name

    @property
    def events_cap(self) -> int:
        return self.steps.events_cap


@_operations(_driven)
class Queue(_QueueHandle):
    """One named queue on a synchronous redis-py client (Redis, minired, or RedisCluster).
    On a redis.asyncio client use ``AsyncQueue``: the same calls, awaited."""

    def __init__(self, name: str, client: Any, *, prefix: str = DEFAULT_PREFIX,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        if is_asyncio_client(client):
            raise TypeError(f"{client!r} is an asyncio client: use minired_queue.AsyncQueue, whose calls are "
                            "awaited (await AsyncQueue(name, client).add(...))")
        super().__init__(name, client, prefix, events_cap)

    @classmethod
    def from_url(cls, name: str, url: str, *, cluster: bool = False, **options: Any) -> "Queue":
        return cls(name, connect(url, cluster=cluster), **options)


@_operations(_awaited)
class AsyncQueue(_QueueHandle):
    """``Queue`` on a redis.asyncio client (``redis.asyncio.Redis`` or ``RedisCluster``):
    every call is awaited, and runs the same steps as ``Queue``'s."""

    def __init__(self, name: str, client: Any, *, prefix: str = DEFAULT_PREFIX,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        if not is_asyncio_client(client):
            raise TypeError(f"{client!r} is not an asyncio client: use minired_queue.Queue for a synchronous one")
        super().__init__(name, client, prefix, events_cap)

    @classmethod
    def from_url(cls, name: str, url: str, *, cluster: bool = False, **options: Any) -> "AsyncQueue":
        return cls(name, connect_async(url, cluster=cluster), **options)


def known_queues(client: Any, prefix: str = DEFAULT_PREFIX) -> list[str]:
    return sorted(text(name) for name in client.smembers(registry_key(prefix)))


def _history_rows(raw: dict, minutes: int) -> list[dict[str, int]]:
    rows: dict[int, dict[str, int]] = {}
    for key, value in raw.items():
        match = _HISTORY_FIELD.match(text(key))
        if match:
            minute = int(match.group("minute"))
            rows.setdefault(minute, {"minute": minute})[match.group("name")] = int(value)
    ordered = [_with_count(rows[m]) for m in sorted(rows)]
    if ordered and minutes > 0:
        newest = ordered[-1]["minute"]
        ordered = [row for row in ordered if row["minute"] > newest - minutes]
    return ordered


def _with_count(counters: dict[str, int]) -> dict[str, int]:
    """Add ``ms_count``, the histogram's total: the scripts store only its buckets."""
    if any(name.startswith("ms_le_") for name in counters):
        counters["ms_count"] = sum(v for name, v in counters.items() if name.startswith("ms_le_"))
    return counters
