"""What the dashboard shows, as plain JSON-ready dicts read from Redis: no web framework here.

Every read goes through the queue's own API or plain reads of its keys, and only reads: the
dashboard works against a read-only replica, and looking at a queue (even one that does not
exist) creates no key. The history it charts is written by the workers' scripts and sweeps.
Nothing here SCANs: a job's effect markers are listed in the job's own index set. Every write goes
through the queue's Lua transitions (``Queue.retry_failed``, ``Queue.remove``, ``pause``,
``promote``, ``clean_older_than``, ``drain``, ``obliterate`` ...), so a
click on the page can never lose or duplicate a job. The same functions serve minired, Redis
and Redis Cluster: each queue's keys share one hash tag, and the server panel asks only what
every node answers.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from ..chaos import guarded_key, unguarded_key
from ..job import STATES, Job, text
from ..metrics import DURATION_BOUNDS_MS
from ..queue import Queue, known_queues

ACTIVE_SHOWN = 100
EVENTS_SHOWN = 200
RECOVERY_LOOKBACK = 2_000
MARKERS_SHOWN = 50
LOG_LINES_SHOWN = 500
PAGE_SIZES = (10, 25, 50, 100)
HISTORY_MINUTES = 60


def queue_names(client: Any, prefix: str) -> list[str]:
    return known_queues(client, prefix)


def _job_summary(job: Job) -> dict[str, Any]:
    return {"id": job.id, "name": job.name, "state": job.state, "attempts_made": job.attempts_made,
            "max_attempts": job.max_attempts, "failed_reason": job.failed_reason,
            "timestamp": job.timestamp, "processed_on": job.processed_on,
            "finished_on": job.finished_on, "priority": job.priority}


def iso(ms: int | None) -> str | None:
    """A server time (ms) as ISO 8601 UTC, as the page shows due times and next runs."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _repeatable(entry: Any) -> dict[str, Any]:
    schedule = entry.schedule
    return {"key": entry.key, "name": entry.name, "every_ms": schedule.every_ms, "cron": schedule.cron,
            "tz": schedule.tz, "next_run": iso(entry.next_tick_ms), "last_run": iso(entry.last_tick_ms),
            "count": entry.count, "limit": entry.limit, "priority": entry.priority}


def overview(client: Any, prefix: str) -> dict[str, Any]:
    """Every known queue with its count per state, whether it is paused, and its totals."""
    queues = []
    for name in queue_names(client, prefix):
        queue = Queue(name, client, prefix=prefix)
        queues.append({"name": name, "counts": queue.counts(), "paused": queue.is_paused(),
                       "metrics": queue.metrics()})
    return {"queues": queues, "states": list(STATES), "time_ms": int(time.time() * 1000)}


def active_jobs(entries: list[dict[str, Any]], limit: int = ACTIVE_SHOWN) -> list[dict[str, Any]]:
    """Jobs in active (``Queue.active_jobs()``) with the worker that holds each and its lock's
    time left. A job whose lock is gone (ttl -2) is stalled: the next sweep moves it back to wait."""
    return [{"job": _job_summary(entry["job"]), "worker": entry["worker"], "token": entry["token"],
             "attempt": entry["attempt"], "lock_ttl_ms": entry["lock_ttl_ms"],
             "progress": entry["progress"]}
            for entry in entries[:limit]]


def demo_effects(queue: Queue) -> dict[str, int] | None:
    """For a queue the crash demo (``minired-queue demo``) drives: how many effects were applied
    with the dedup marker and without it. Exactly once shows as guarded == jobs with an effect."""
    guarded = queue.client.hvals(guarded_key(queue.keys))
    if not guarded:
        return None
    unguarded = queue.client.hvals(unguarded_key(queue.keys))
    return {"jobs": len(guarded), "guarded": sum(int(v) for v in guarded),
            "unguarded": sum(int(v) for v in unguarded)}


def queue_detail(client: Any, prefix: str, name: str) -> dict[str, Any]:
    """A queue's page but its job list (``job_list``): counts, totals, the running jobs, the
    live workers and what each runs, recoveries and events, repeatables and settings."""
    queue = Queue(name, client, prefix=prefix)
    looked_at = queue.events(RECOVERY_LOOKBACK)
    running = queue.active_jobs()
    return {"name": name, "counts": {**queue.counts(), **listed_apart(queue)}, "paused": queue.is_paused(),
            "metrics": queue.metrics(), "demo": demo_effects(queue), "active": active_jobs(running),
            **recoveries(looked_at), "events": looked_at[-EVENTS_SHOWN:], "workers": queue.workers(running),
            "repeatables": [_repeatable(r) for r in queue.repeatables()],
            "settings": queue.settings()}


def recoveries(events: list[dict[str, str]]) -> dict[str, Any]:
    """The sweep's recoveries (``stalled`` events) among the newest events read backwards with a
    bound, and how many were looked at: the page says "in the last N events", so the list never
    claims more than it read. Progress has its own stream, so only job events fill this one."""
    return {"recovered": [e for e in events if e.get("event") == "stalled"],
            "recovered_looked_at": len(events)}


def listed_apart(queue: Queue) -> dict[str, int]:
    """The job browser's tabs beyond the state counts: grouped ready jobs (counted in wait
    too) and flow parents waiting for their children."""
    return {"grouped": sum(queue.group_counts().values()), "waiting-children": len(queue.waiting_children())}


def job_list(client: Any, prefix: str, name: str, state: str, page: int, size: int,
             job_name: str | None, newest_first: bool) -> dict[str, Any]:
    """One page of a state's jobs (page numbers from 1), the state's total and whether a name
    filter looked at only part of it."""
    if size not in PAGE_SIZES:
        raise ValueError(f"the page size must be one of {PAGE_SIZES}")
    if page < 1:
        raise ValueError("pages are numbered from 1")
    found = Queue(name, client, prefix=prefix).jobs(state, (page - 1) * size, size, name=job_name or None,
                                                     newest_first=newest_first)
    return {"state": state, "page": page, "size": size, "total": found.total, "matched": found.matched,
            "looked_at": found.looked_at, "cut": found.cut,
            "pages": max(1, -(-found.matched // size)),
            "jobs": [{**_job_summary(j), "due": iso(found.due.get(j.id))} for j in found.jobs]}


def _percentile(row: dict[str, int], fraction: float) -> float | None:
    """The upper bound (ms) of the bucket holding the given fraction of a minute's attempts: the
    page labels it as such ("p95 ≤ 30 s"), since the histogram knows no finer. Past the last
    bound it is twice that bound, which the page shows as "> 60 s"."""
    total = row.get("ms_count", 0)
    if not total:
        return None
    running = 0
    for bound in DURATION_BOUNDS_MS:
        running += row.get(f"ms_le_{bound}", 0)
        if running >= fraction * total:
            return float(bound)
    return float(DURATION_BOUNDS_MS[-1] * 2)  # past the last bound: shown above the chart's top


def history(client: Any, prefix: str, name: str, minutes: int = HISTORY_MINUTES) -> dict[str, Any]:
    """The last hour per minute of server time, for the charts: jobs completed and failed,
    processing-time percentiles (from the histogram buckets the scripts keep), and the depth
    of the ready line (wait + prioritized) as the workers' sweeps sampled it."""
    queue = Queue(name, client, prefix=prefix)
    seconds, micros = client.time()
    pipe = client.pipeline(transaction=False)  # (TIME names no key: not in a cluster pipeline)
    pipe.llen(queue.keys.wait)
    pipe.zcard(queue.keys.prioritized)
    waiting, prioritized = pipe.execute()
    now_minute = (int(seconds) * 1000 + int(micros) // 1000) // 60_000
    rows = {row["minute"]: row for row in queue.history(minutes)}
    series: dict[str, list] = {"minute": [], "completed": [], "failed": [], "p50_ms": [],
                               "p95_ms": [], "p99_ms": [], "waiting": []}
    for minute in range(now_minute - minutes + 1, now_minute + 1):
        row = rows.get(minute, {})
        series["minute"].append(minute * 60)
        series["completed"].append(row.get("completed", 0))
        series["failed"].append(row.get("failed", 0))
        series["p50_ms"].append(_percentile(row, 0.50))
        series["p95_ms"].append(_percentile(row, 0.95))
        series["p99_ms"].append(_percentile(row, 0.99))
        series["waiting"].append(row.get("waiting"))
    return {"name": name, "series": series, "waiting_now": int(waiting) + int(prioritized),
            "top_bound_ms": DURATION_BOUNDS_MS[-1]}


def _marker(client: Any, key: str) -> dict[str, Any]:
    pipe = client.pipeline(transaction=False)
    pipe.get(key)
    pipe.pttl(key)
    value, ttl = pipe.execute()
    return {"key": key, "value": None if value is None else text(value), "ttl_ms": int(ttl)}


def job_detail(client: Any, prefix: str, name: str, job_id: str) -> dict[str, Any] | None:
    """One job: its record, state, attempts, error and traceback, progress, result, its dedup
    marker and the effect markers its handler set (``apply_once``)."""
    queue = Queue(name, client, prefix=prefix)
    job = queue.get_job(job_id)
    if job is None:
        return None
    keys = queue.keys
    # The guard lists each marker it takes in the job's effects set (no SCAN needed); a
    # marker that expired since is left out.
    names = sorted(text(k) for k in client.smembers(keys.effects(job_id)))[:MARKERS_SHOWN]
    effects = [m for m in (_marker(client, key) for key in names) if m["value"] is not None]
    lock = _marker(client, keys.lock(job_id))
    return {"queue": name, "id": job.id, "name": job.name, "state": job.state, "data": job.data,
            "timestamp": job.timestamp, "delay": job.delay, "priority": job.priority,
            "attempts_made": job.attempts_made, "attempts_started": job.attempts_started,
            "max_attempts": job.max_attempts, "stalled_counter": job.stalled_counter,
            "processed_on": job.processed_on, "finished_on": job.finished_on,
            "failed_reason": job.failed_reason, "stacktrace": job.stacktrace,
            "progress": job.progress, "result": job.return_value, "locked_by": job.locked_by,
            "lock": lock if lock["value"] is not None else None,
            "dedup": _marker(client, keys.dedup(job.dedup_id)) if job.dedup_id else None,
            "effects": effects, "errors": queue.job_errors(job_id), "logs": _logs(queue, job_id),
            "due": iso(_due_ms(queue, job_id)) if job.state == "delayed" else None}


def _due_ms(queue: Queue, job_id: str) -> int | None:
    score = queue.client.zscore(queue.keys.delayed, job_id)
    return None if score is None else int(score)


def _logs(queue: Queue, job_id: str) -> dict[str, Any]:
    """The newest lines of a job's log, oldest first, and how many it holds."""
    lines, total = queue.job_logs(job_id, 0, LOG_LINES_SHOWN)
    if total > LOG_LINES_SHOWN:
        lines, total = queue.job_logs(job_id, total - LOG_LINES_SHOWN, LOG_LINES_SHOWN)
    return {"lines": lines, "total": total}


# --- writes: each one a Lua transition of the queue library ---------------------------------
def retry(client: Any, prefix: str, name: str, job_ids: list[str] | None) -> int:
    return Queue(name, client, prefix=prefix).retry_failed(job_ids)


def remove(client: Any, prefix: str, name: str, job_id: str) -> bool:
    return Queue(name, client, prefix=prefix).remove(job_id)


def retry_completed(client: Any, prefix: str, name: str, job_ids: list[str]) -> int:
    return Queue(name, client, prefix=prefix).retry_completed(job_ids)


def remove_many(client: Any, prefix: str, name: str, job_ids: list[str]) -> list[str]:
    return Queue(name, client, prefix=prefix).remove_many(job_ids)


def promote(client: Any, prefix: str, name: str, job_id: str) -> bool:
    return Queue(name, client, prefix=prefix).promote(job_id)


def clean(client: Any, prefix: str, name: str, state: str, age_ms: int) -> int:
    return Queue(name, client, prefix=prefix).clean_older_than(state, age_ms)


def drain(client: Any, prefix: str, name: str, include_delayed: bool) -> int:
    return Queue(name, client, prefix=prefix).drain(include_delayed)


def obliterate(client: Any, prefix: str, name: str) -> int:
    return Queue(name, client, prefix=prefix).obliterate()


def set_paused(client: Any, prefix: str, name: str, paused: bool) -> bool:
    queue = Queue(name, client, prefix=prefix)
    return queue.pause() if paused else queue.resume()


# --- the server panel ---------------------------------------------------------------------------
def server_panel(client: Any) -> dict[str, Any]:
    """Clients, memory, commands per second, and (on minired) the clock and whether it can be
    moved. A cluster client reports its first node."""
    from ..connection import is_cluster

    node = client.get_default_node() if is_cluster(client) else None
    target = {"target_nodes": node} if node is not None else {}
    info = client.info(**target)
    minired = "minired_version" in info or _is_minired(client, target)
    panel = {"minired": minired, "redis_version": info.get("redis_version"),
             "connected_clients": info.get("connected_clients"),
             "used_memory_human": info.get("used_memory_human"),
             "ops_per_sec": info.get("instantaneous_ops_per_sec"),
             "uptime_s": info.get("uptime_in_seconds"), "clock_ms": None, "time_control": False}
    if minired:
        try:
            panel["clock_ms"] = int(client.execute_command("MINIRED", "CLOCK", **target))
            panel["time_control"] = True
        except Exception:  # refused without --time-control: the clock is wall time
            panel["clock_ms"] = int(time.time() * 1000)
    return panel


def _is_minired(client: Any, target: dict[str, Any]) -> bool:
    try:
        return bool(client.execute_command("COMMAND", "INFO", "minired", **target)[0])
    except Exception:
        return False


def advance_clock(client: Any, ms: int) -> int:
    """MINIRED ADVANCE: refused by the server unless it runs with --time-control."""
    if ms <= 0:
        raise ValueError("advance by a positive number of milliseconds")
    return int(client.execute_command("MINIRED", "ADVANCE", ms))
