"""Queue metrics in the Prometheus text format, and the per-minute history.

Everything is read from Redis, where every worker's scripts write it (the totals and the
processing-time histogram in ``emq:{Q}:metrics``, the last hour per minute in
``emq:{Q}:history``), so one scrape of any process sees the whole fleet. Memory is
bounded: fixed histogram buckets, and the history prunes minutes older than an hour.

    from minired_queue.metrics import asgi_app, render, wsgi_app
    print(render([queue]))                       # text for one or more queues
    app = wsgi_app(client, ["emails", "reports"])  # mount at /metrics (None: every known queue)
    app = asgi_app(client)                       # the same for ASGI frameworks

``minired-queue metrics [queue ...]`` prints the same text.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable, Sequence

from .job import STATES, StoredFields, text
from .keys import DEFAULT_PREFIX
from .queue import Queue, known_queues

# Upper bounds (ms) of the processing-time buckets, as lua/includes/recordFinish.lua has them.
DURATION_BOUNDS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)
TOTALS = ("added", "completed", "failed", "retried", "stalled", "removed")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _oldest_waiting_age_s(queue: Queue, now_ms: int) -> float:
    """Age of the next job to run: the tail of wait, else the head of prioritized (since it
    was added, or became due for a delayed one)."""
    client, keys = queue.client, queue.keys
    tail = client.lindex(keys.wait, -1)
    if tail is None:
        head = client.zrange(keys.prioritized, 0, 0)
        tail = head[0] if head else None
    if tail is None:
        return 0.0
    stamp, delay = client.hmget(keys.job(text(tail)), "timestamp", "delay")
    fields = StoredFields({"timestamp": stamp, "delay": delay})  # a hand-written job must not break a scrape
    created = fields.integer("timestamp", None)
    if created is None:
        return 0.0
    return max(0, now_ms - created - fields.integer("delay")) / 1000


def render(queues: Iterable[Queue]) -> str:
    """Prometheus text exposition (version 0.0.4) for ``queues`` (``Queue`` objects)."""
    queues = list(queues)
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[str, str, Any]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for suffix, labels, value in samples:
            lines.append(f"{name}{suffix}{{{labels}}} {value}")

    counts, metrics, paused, ages = [], [], [], []
    for queue in queues:
        counts.append(queue.counts())
        metrics.append(queue.metrics())
        paused.append(queue.is_paused())
        seconds, micros = queue.client.time()
        ages.append(_oldest_waiting_age_s(queue, int(seconds) * 1000 + int(micros) // 1000))
    q = [f'queue="{_label(queue.name)}"' for queue in queues]

    family("minired_queue_jobs", "gauge", "Jobs per state.",
           [("", f'{q[i]},state="{state}"', counts[i][state]) for i in range(len(queues)) for state in STATES])
    family("minired_queue_paused", "gauge", "1 while the queue is paused.",
           [("", q[i], int(paused[i])) for i in range(len(queues))])
    for total in TOTALS:
        family(f"minired_queue_{total}_total", "counter", f"Jobs {total} since the queue was created.",
               [("", q[i], metrics[i].get(total, 0)) for i in range(len(queues))])
    samples = []
    for i in range(len(queues)):
        running = 0
        for bound in DURATION_BOUNDS_MS:
            running += metrics[i].get(f"ms_le_{bound}", 0)
            samples.append(("_bucket", f'{q[i]},le="{bound / 1000:g}"', running))
        running += metrics[i].get("ms_le_inf", 0)
        samples.append(("_bucket", f'{q[i]},le="+Inf"', running))
        samples.append(("_sum", q[i], f"{metrics[i].get('ms_sum', 0) / 1000:g}"))
        samples.append(("_count", q[i], metrics[i].get("ms_count", 0)))
    family("minired_queue_processing_seconds", "histogram",
           "Time from a job's delivery to its outcome, per finished attempt.", samples)
    family("minired_queue_oldest_waiting_age_seconds", "gauge",
           "Age of the next job to run (0 when none is ready).",
           [("", q[i], f"{ages[i]:g}") for i in range(len(queues))])
    return "\n".join(lines) + "\n"


def _body(client: Any, names: Sequence[str] | None, prefix: str) -> bytes:
    queue_names = names if names is not None else known_queues(client, prefix)
    return render(Queue(name, client, prefix=prefix) for name in queue_names).encode()


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def wsgi_app(client: Any, names: Sequence[str] | None = None, prefix: str = DEFAULT_PREFIX) -> Callable:
    """A WSGI application answering every request with the metrics of ``names`` (None:
    every queue in the registry, looked up per scrape), read with the synchronous
    ``client``."""
    def app(environ: dict, start_response: Callable) -> list[bytes]:
        body = _body(client, names, prefix)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body]

    return app


def asgi_app(client: Any, names: Sequence[str] | None = None, prefix: str = DEFAULT_PREFIX) -> Callable:
    """The same as an ASGI application (e.g. ``Mount("/metrics", asgi_app(client))`` in
    Starlette). ``client`` is synchronous too: the scrape runs in a thread."""
    async def app(scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return
        body = await asyncio.to_thread(_body, client, names, prefix)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return app
