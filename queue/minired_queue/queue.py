"""The producer and admin side of a queue: add jobs, inspect and operate on them."""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from redis.exceptions import NoScriptError

from . import admin
from .connection import connect
from .job import STATES, Backoff, Job, JobSpec, text
from .keys import DEFAULT_PREFIX, QueueKeys, registry_key
from .repeat import Repeatable, Schedule, describe, fire_steps, pending_instance, spec_fields, upsert_steps
from .steps import drive
from .sweeper import promote_steps, retention_steps, sweep_steps
from .transitions import (
    DEFAULT_EVENTS_CAP,
    AddResult,
    SweepResult,
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
            "keep_failed_age_ms": "keepFailedAgeMs"}
DEFAULT_MAX_STALLED = 1  # as moveStalledJobsToWait.lua reads it when unset
DEFAULT_RATE_DURATION_MS = 1000  # as moveToActive.lua reads it when unset
_HISTORY_FIELD = re.compile(r"^(?P<minute>\d+):(?P<name>\w+)$")

PIPELINE_CHUNK = 500
ADMIN_BATCH = 200


class Queue:
    """One named queue on a redis-py client (Redis, minired, or RedisCluster)."""

    def __init__(self, name: str, client: Any, *, prefix: str = DEFAULT_PREFIX,
                 events_cap: int = DEFAULT_EVENTS_CAP) -> None:
        self.keys = QueueKeys(name, prefix)
        self.client = client
        self.events_cap = events_cap
        self._registered = False

    @classmethod
    def from_url(cls, name: str, url: str, *, cluster: bool = False, **options: Any) -> "Queue":
        return cls(name, connect(url, cluster=cluster), **options)

    @property
    def name(self) -> str:
        return self.keys.name

    def _register(self) -> None:
        if not self._registered:
            self.client.sadd(registry_key(self.keys.prefix), self.name)
            self._registered = True

    # --- adding ---------------------------------------------------------------------
    def add(self, data: Any = None, *, job_id: str | None = None, name: str = "",
            dedup_id: str | None = None, dedup_ttl_ms: int = 0, delay_ms: int = 0,
            attempts: int = 1, backoff: Backoff | None = None, priority: int = 0) -> str:
        """Add one job; returns its id (the existing job's id when deduplicated)."""
        spec = JobSpec(data, job_id=job_id, name=name, dedup_id=dedup_id, dedup_ttl_ms=dedup_ttl_ms,
                       delay_ms=delay_ms, attempts=attempts, backoff=backoff, priority=priority)
        return self.add_job(spec).job_id

    def add_job(self, spec: JobSpec) -> AddResult:
        self._register()
        return add_job(self.keys, spec, self.events_cap).run(self.client)

    def add_many(self, specs: Iterable[JobSpec]) -> list[AddResult]:
        """Add many jobs in pipelined round trips. Each add is its own atomic script; the
        batch is not all-or-nothing, but every id is fixed up front, so repeating a
        partly-failed batch adds each job once."""
        specs = list(specs)
        if not specs:
            return []
        self._register()
        results = [self.add_job(specs[0])]  # also loads the script where it will run
        for start in range(1, len(specs), PIPELINE_CHUNK):
            chunk = specs[start:start + PIPELINE_CHUNK]
            calls = [add_job(self.keys, spec, self.events_cap) for spec in chunk]
            pipe = self.client.pipeline(transaction=False)
            for call in calls:
                # execute_command: ClusterPipeline blocks the evalsha() helper, not the command.
                pipe.execute_command("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)
            for call, reply in zip(calls, pipe.execute(raise_on_error=False)):
                if isinstance(reply, NoScriptError):  # script cache flushed mid-batch
                    results.append(call.run(self.client))
                elif isinstance(reply, Exception):
                    raise reply
                else:
                    results.append(call.parse(reply))
        return results

    # --- inspection -----------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Jobs per state: wait, prioritized, active, delayed, completed, failed."""
        pipe = self.client.pipeline(transaction=False)
        for state in STATES:
            key = getattr(self.keys, state)
            pipe.llen(key) if state in ("wait", "active") else pipe.zcard(key)
        return dict(zip(STATES, (int(n) for n in pipe.execute())))

    def get_state(self, job_id: str) -> str | None:
        pipe = self.client.pipeline(transaction=False)
        for state in STATES:
            key = getattr(self.keys, state)
            pipe.lpos(key, job_id) if state in ("wait", "active") else pipe.zscore(key, job_id)
        for state, found in zip(STATES, pipe.execute()):
            if found is not None:
                return state
        return None

    def get_job(self, job_id: str) -> Job | None:
        raw = self.client.hgetall(self.keys.job(job_id))
        if not raw:
            return None
        return Job.from_hash(job_id, raw, state=self.get_state(job_id))

    def _jobs(self, job_ids: Sequence[str], state: str) -> list[Job]:
        pipe = self.client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hgetall(self.keys.job(job_id))
        return [Job.from_hash(job_id, raw, state=state)
                for job_id, raw in zip(job_ids, pipe.execute()) if raw]

    def failed_jobs(self, start: int = 0, count: int = 50) -> list[Job]:
        """Dead-lettered jobs, most recent failure first."""
        ids = [text(i) for i in self.client.zrevrange(self.keys.failed, start, start + count - 1)]
        return self._jobs(ids, "failed") if ids else []

    def completed_jobs(self, start: int = 0, count: int = 50) -> list[Job]:
        ids = [text(i) for i in self.client.zrevrange(self.keys.completed, start, start + count - 1)]
        return self._jobs(ids, "completed") if ids else []

    def is_paused(self) -> bool:
        return bool(self.client.hexists(self.keys.meta, "paused"))

    def metrics(self) -> dict[str, int]:
        """Monotonic counters (added, completed, failed, retried, stalled, removed) and the
        processing-time histogram (``ms_le_<bound>``, ``ms_sum``, ``ms_count``)."""
        return _with_count({text(k): int(v) for k, v in self.client.hgetall(self.keys.metrics).items()})

    def record_depth(self) -> int:
        """How many jobs are ready to run (wait + prioritized), noted in the history as the
        minute's largest depth seen. Every sweep samples it (see ``sweeper.sweep_steps``)."""
        return record_depth(self.keys).run(self.client)

    def history(self, minutes: int = 60) -> list[dict[str, int]]:
        """Per-minute counts of the last ``minutes`` minutes that had any, oldest first:
        {'minute': unix minute, 'completed', 'failed', 'retried', 'stalled', 'ms_sum',
        'ms_count', 'ms_le_<bound>'...}. Kept in Redis for the last hour, by every worker."""
        return _history_rows(self.client.hgetall(self.keys.history), minutes)

    def active_jobs(self) -> list[dict[str, Any]]:
        """Jobs in active with their owner (lock token: worker id and delivery), attempt,
        lock time left (ms; -2: lapsed, the sweep will recover it) and progress."""
        ids = [text(i) for i in self.client.lrange(self.keys.active, 0, -1)]
        pipe = self.client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hgetall(self.keys.job(job_id))
            pipe.pttl(self.keys.lock(job_id))
        replies = pipe.execute()
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
    def configure(self, **settings: int | None) -> dict[str, int]:
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
            low = 1 if name in ("concurrency", "rate_max", "rate_duration_ms") else 0
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        pipe = self.client.pipeline(transaction=False)
        for name, value in settings.items():
            if value is None:
                pipe.hdel(self.keys.meta, SETTINGS[name])
            else:
                pipe.hset(self.keys.meta, SETTINGS[name], value)
        if settings.get("rate_max") is not None and "rate_duration_ms" not in settings:
            pipe.hsetnx(self.keys.meta, SETTINGS["rate_duration_ms"], DEFAULT_RATE_DURATION_MS)
        pipe.execute()
        self._register()
        return self.settings()

    def settings(self) -> dict[str, int]:
        """The stored settings, with max_stalled's default filled in."""
        values = self.client.hmget(self.keys.meta, *SETTINGS.values())
        found = {name: int(value) for name, value in zip(SETTINGS, values) if value is not None}
        found.setdefault("max_stalled", DEFAULT_MAX_STALLED)
        return found

    def events(self, count: int = 100) -> list[dict[str, str]]:
        """The most recent job events, oldest first: {'id', 'event', 'jobId', ...}."""
        entries = self.client.xrevrange(self.keys.events, count=count)
        return [{"id": text(entry_id), **{text(k): text(v) for k, v in fields.items()}}
                for entry_id, fields in reversed(entries)]

    # --- operations -----------------------------------------------------------------
    def pause(self) -> bool:
        self._register()
        return set_paused(self.keys, True).run(self.client)

    def resume(self) -> bool:
        return set_paused(self.keys, False).run(self.client)

    def retry_failed(self, job_ids: Sequence[str] | None = None) -> int:
        """Move dead-lettered jobs (all of them when ``job_ids`` is None) back to wait."""
        if job_ids is not None:
            return sum(len(retry_jobs(self.keys, job_ids[i:i + ADMIN_BATCH]).run(self.client))
                       for i in range(0, len(job_ids), ADMIN_BATCH))
        moved = 0
        while ids := [text(i) for i in self.client.zrange(self.keys.failed, 0, ADMIN_BATCH - 1)]:
            moved_now = len(retry_jobs(self.keys, ids).run(self.client))
            moved += moved_now
            if not moved_now:
                break
        return moved

    def _remove(self, job_ids: Sequence[str]) -> list[str]:
        pipe = self.client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hget(self.keys.job(job_id), "dedupId")
        candidates = [(job_id, text(d) if d else None) for job_id, d in zip(job_ids, pipe.execute())]
        return remove_jobs(self.keys, candidates).run(self.client)

    def remove(self, job_id: str) -> bool:
        """Delete a job that is not active. Returns False for an active or unknown job."""
        return bool(self._remove([job_id]))

    def _remove_all(self, read_batch) -> int:
        removed = 0
        while ids := [text(i) for i in read_batch()]:
            removed_now = len(self._remove(ids))
            removed += removed_now
            if not removed_now:  # the jobs moved on meanwhile; what is left is not ours to drain
                break
        return removed

    def drain(self, include_delayed: bool = True) -> int:
        """Delete every ready (wait and prioritized) and, by default, delayed job. Active jobs
        are untouched."""
        removed = self._remove_all(lambda: self.client.lrange(self.keys.wait, -ADMIN_BATCH, -1))
        removed += self._remove_all(lambda: self.client.zrange(self.keys.prioritized, 0, ADMIN_BATCH - 1))
        if include_delayed:
            removed += self._remove_all(lambda: self.client.zrange(self.keys.delayed, 0, ADMIN_BATCH - 1))
        return removed

    def clean(self, state: str = "completed", keep: int = 0) -> int:
        """Delete finished jobs (``completed`` or ``failed``) except the ``keep`` most recent."""
        if state not in ("completed", "failed"):
            raise ValueError("clean takes 'completed' or 'failed'")
        key = getattr(self.keys, state)
        removed = 0
        while (excess := int(self.client.zcard(key)) - keep) > 0:
            ids = [text(i) for i in self.client.zrange(key, 0, min(excess, ADMIN_BATCH) - 1)]
            removed_now = len(self._remove(ids))
            removed += removed_now
            if not removed_now:
                break
        return removed

    def promote_delayed(self) -> int:
        """Make due delayed jobs ready now (workers also do this as they fetch)."""
        moved = 0
        while (promotion := drive(promote_steps(self.keys), self.client)).moved:
            moved += promotion.moved
        return moved

    def sweep(self) -> SweepResult:
        """Run the recovery sweep once, unthrottled, with the queue's stall limit."""
        return drive(sweep_steps(self.keys, 0, self.events_cap), self.client)

    def apply_retention(self) -> int:
        """Delete finished jobs beyond the retention settings now (workers do it each sweep)."""
        return drive(retention_steps(self.keys), self.client)

    # --- repeatable jobs ------------------------------------------------------------
    def add_repeatable(self, repeat_key: str, data: Any = None, *, every_ms: int | None = None,
                       cron: str | None = None, tz: str = "UTC", name: str = "", attempts: int = 1,
                       backoff: Backoff | None = None, priority: int = 0, limit: int = 0) -> str:
        """Register a job made every ``every_ms`` or on the ``cron`` expression in ``tz``,
        ``limit`` times (0: forever). Registering the same key again updates its options
        and keeps its schedule unless the schedule changed. Returns 'created', 'updated'
        or 'rescheduled'. Instances are made by the workers' maintenance (or
        ``run_scheduler()``), one per tick, ids ``repeat:<key>:<tick ms>``."""
        if not repeat_key or any(c in repeat_key for c in "{}"):
            raise ValueError(f"repeat key must be non-empty and free of braces: {repeat_key!r}")
        schedule = Schedule(every_ms=every_ms, cron=cron, tz=tz)
        fields = spec_fields(JobSpec(data).payload(), name, attempts, backoff, priority, limit)
        self._register()
        return drive(upsert_steps(self.keys, repeat_key, schedule, fields), self.client)

    def repeatables(self) -> list[Repeatable]:
        """Scheduled repeatables (one that reached its limit is no longer listed)."""
        keys = [text(k) for k in self.client.zrange(self.keys.repeat, 0, -1)]
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(self.keys.repeat_spec(key))
            pipe.zscore(self.keys.repeat, key)
        replies = pipe.execute()
        found = [describe(key, replies[2 * i], replies[2 * i + 1]) for i, key in enumerate(keys) if replies[2 * i]]
        return found

    def remove_repeatable(self, repeat_key: str) -> bool:
        """Stop a repeatable; its instance not yet due is removed too."""
        last = self.client.hget(self.keys.repeat_spec(repeat_key), "lastTick")
        return remove_repeatable(self.keys, repeat_key, pending_instance(repeat_key, last)).run(self.client)

    def run_scheduler(self, horizon_ms: int = 0) -> int:
        """Make the instances of repeatable ticks due within ``horizon_ms``; returns how many
        this call made. Workers do this every sweep interval."""
        return drive(fire_steps(self.keys, horizon_ms, self.events_cap), self.client)

    # --- what operators' tools need (admin.py) ----------------------------------------------
    def jobs(self, state: str, start: int = 0, count: int = 50, *, name: str | None = None,
             newest_first: bool = True) -> "admin.JobPage":
        """A page of one state's jobs (``paused``: the ready jobs of a paused queue), with the
        state's total; ``name`` filters by a part of the job name."""
        return admin.list_jobs(self, state, start, count, name=name, newest_first=newest_first)

    def job_errors(self, job_id: str) -> list[dict[str, Any]]:
        """Every attempt that failed or stalled (the newest 20): {'attempt', 'reason', 'at'}."""
        return admin.job_errors(self, job_id)

    def job_logs(self, job_id: str, start: int = 0, count: int = 100) -> tuple[list[str], int]:
        """A job's log lines (``job.log(line)`` in a handler) and how many there are."""
        return admin.job_logs(self, job_id, start, count)

    def workers(self) -> list[dict[str, Any]]:
        """The live workers (heartbeat within a lock TTL) and the jobs each holds."""
        return admin.workers(self)

    def promote(self, job_id: str) -> bool:
        """Run a delayed job now. False when it is not delayed."""
        return promote_job(self.keys, job_id).run(self.client)

    def retry_completed(self, job_ids: Sequence[str]) -> int:
        """Run completed jobs again (their result is forgotten); returns how many moved."""
        return sum(len(retry_jobs(self.keys, job_ids[i:i + ADMIN_BATCH], "completed").run(self.client))
                   for i in range(0, len(job_ids), ADMIN_BATCH))

    def remove_many(self, job_ids: Sequence[str]) -> list[str]:
        """Delete the given jobs that are not active; returns the ids deleted."""
        return [gone for i in range(0, len(job_ids), ADMIN_BATCH)
                for gone in self._remove(job_ids[i:i + ADMIN_BATCH])]

    def clean_older_than(self, state: str, age_ms: int) -> int:
        """Delete completed (or failed) jobs finished at least ``age_ms`` ago."""
        return admin.clean_older_than(self, state, age_ms)

    def obliterate(self) -> int:
        """Delete the whole queue (refused while jobs are active); returns the jobs deleted."""
        return admin.obliterate(self)


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
