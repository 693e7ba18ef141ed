"""The producer and admin side of a queue: add jobs, inspect and operate on them."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from redis.exceptions import NoScriptError

from .connection import connect
from .job import STATES, Backoff, Job, JobSpec, text
from .keys import DEFAULT_PREFIX, QueueKeys, registry_key
from .sweeper import Sweeper
from .transitions import (DEFAULT_EVENTS_CAP, AddResult, SweepResult, add_job, promote_delayed, remove_jobs,
                          retry_jobs, set_paused)

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
            attempts: int = 1, backoff: Backoff | None = None) -> str:
        """Add one job; returns its id (the existing job's id when deduplicated)."""
        spec = JobSpec(data, job_id=job_id, name=name, dedup_id=dedup_id, dedup_ttl_ms=dedup_ttl_ms,
                       delay_ms=delay_ms, attempts=attempts, backoff=backoff)
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
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(self.keys.wait)
        pipe.llen(self.keys.active)
        pipe.zcard(self.keys.delayed)
        pipe.zcard(self.keys.completed)
        pipe.zcard(self.keys.failed)
        return dict(zip(STATES, (int(n) for n in pipe.execute())))

    def get_state(self, job_id: str) -> str | None:
        pipe = self.client.pipeline(transaction=False)
        pipe.lpos(self.keys.wait, job_id)
        pipe.lpos(self.keys.active, job_id)
        pipe.zscore(self.keys.delayed, job_id)
        pipe.zscore(self.keys.completed, job_id)
        pipe.zscore(self.keys.failed, job_id)
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
        """Monotonic counters (added, completed, failed, retried, stalled, removed)."""
        return {text(k): int(v) for k, v in self.client.hgetall(self.keys.metrics).items()}

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
        """Delete every waiting (and, by default, delayed) job. Active jobs are untouched."""
        removed = self._remove_all(lambda: self.client.lrange(self.keys.wait, -ADMIN_BATCH, -1))
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
        """Move due delayed jobs to wait now (workers also do this as they fetch)."""
        moved = 0
        while (promotion := promote_delayed(self.keys).run(self.client)).moved:
            moved += promotion.moved
        return moved

    def sweep(self, max_stalled: int = 1) -> SweepResult:
        """Run the recovery sweep once, unthrottled."""
        return Sweeper(self.client, self.keys, max_stalled, self.events_cap).sweep()


def known_queues(client: Any, prefix: str = DEFAULT_PREFIX) -> list[str]:
    return sorted(text(name) for name in client.smembers(registry_key(prefix)))
