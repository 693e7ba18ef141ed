"""``minired-queue``: inspect and operate queues from a shell, run workers and the demo."""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import sys
from typing import Any, Callable

from .connection import connect, connect_async
from .keys import DEFAULT_PREFIX, QueueKeys
from .options import WorkerOptions
from .queue import Queue, known_queues

DEFAULT_URL = "redis://127.0.0.1:6379"


def load_handler(path: str) -> Callable[..., Any]:
    """Resolve ``package.module:function``."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"handler must look like package.module:function, got {path!r}")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise SystemExit(f"{path} is not callable")
    return target


def _queue(args: argparse.Namespace, name: str) -> Queue:
    return Queue(name, connect(args.url, cluster=args.cluster), prefix=args.prefix)


def cmd_queues(args: argparse.Namespace) -> int:
    client = connect(args.url, cluster=args.cluster)
    names = known_queues(client, args.prefix)
    if not names:
        print("no queues")
        return 0
    print(f"{'queue':<24} {'wait':>8} {'active':>8} {'delayed':>8} {'completed':>10} {'failed':>8}  paused")
    for name in names:
        queue = Queue(name, client, prefix=args.prefix)
        c = queue.counts()
        print(f"{name:<24} {c['wait']:>8} {c['active']:>8} {c['delayed']:>8} {c['completed']:>10} "
              f"{c['failed']:>8}  {'yes' if queue.is_paused() else 'no'}")
    return 0


def cmd_counts(args: argparse.Namespace) -> int:
    queue = _queue(args, args.queue)
    print(json.dumps({"counts": queue.counts(), "paused": queue.is_paused(), "metrics": queue.metrics()}))
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    jobs = _queue(args, args.queue).failed_jobs(0, args.count)
    if not jobs:
        print("no failed jobs")
    for job in jobs:
        print(f"{job.id}  attempts={job.attempts_made}/{job.max_attempts}  stalls={job.stalled_counter}  "
              f"reason={job.failed_reason}")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    if not args.all and not args.ids:
        raise SystemExit("give job ids, or --all")
    moved = _queue(args, args.queue).retry_failed(None if args.all else args.ids)
    print(f"retried {moved} job(s)")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    result = _queue(args, args.queue).sweep(max_stalled=args.max_stalled)
    print(f"recovered {len(result.recovered)} stalled job(s), failed {len(result.failed)}")
    for job_id in result.recovered:
        print(f"  recovered {job_id}")
    for job_id in result.failed:
        print(f"  failed    {job_id}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    job_id = _queue(args, args.queue).add(json.loads(args.data), job_id=args.id, dedup_id=args.dedup_id,
                                          dedup_ttl_ms=args.dedup_ttl_ms, delay_ms=args.delay_ms,
                                          attempts=args.attempts)
    print(job_id)
    return 0


def _worker_options(args: argparse.Namespace) -> WorkerOptions:
    return WorkerOptions(
        concurrency=args.concurrency, lock_ttl_ms=args.lock_ttl_ms,
        heartbeat_interval_s=args.heartbeat_ms / 1000 if args.heartbeat_ms else None,
        sweep_interval_s=args.sweep_interval if args.sweep_interval > 0 else None,
        max_stalled=args.max_stalled, block_timeout_s=args.block_timeout, shutdown_grace_s=args.grace,
    )


def cmd_worker(args: argparse.Namespace) -> int:
    handler = load_handler(args.handler)
    keys = QueueKeys(args.queue, args.prefix)
    options = _worker_options(args)
    if args.asyncio:
        from .aio import AsyncWorker

        async def main() -> None:
            client = connect_async(args.url, cluster=args.cluster)
            worker = AsyncWorker(keys, client, handler, options)
            await worker.run(install_signal_handlers=True)
            await client.aclose()

        try:
            import uvloop
            uvloop.run(main())
        except ImportError:
            asyncio.run(main())
        return 0
    from .worker import Worker

    worker = Worker(keys, connect(args.url, cluster=args.cluster), handler, options)
    print(f"worker {worker.id} on {keys.name} ready", flush=True)
    worker.run()
    print(f"worker {worker.id} stopped: {json.dumps(worker.stats.as_dict())}", flush=True)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minired-queue", description=__doc__)
    parser.add_argument("--url", default=os.environ.get("MINIRED_QUEUE_URL", DEFAULT_URL),
                        help="server URL (env MINIRED_QUEUE_URL; default %(default)s)")
    parser.add_argument("--cluster", action="store_true", help="the URL is one node of a Redis Cluster")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="key prefix (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("queues", help="list queues and their counts").set_defaults(fn=cmd_queues)

    p = sub.add_parser("counts", help="one queue's counts, paused flag and counters as JSON")
    p.add_argument("queue")
    p.set_defaults(fn=cmd_counts)

    p = sub.add_parser("failed", help="list dead-lettered jobs, newest first")
    p.add_argument("queue")
    p.add_argument("--count", type=int, default=50)
    p.set_defaults(fn=cmd_failed)

    p = sub.add_parser("retry", help="move failed jobs back to wait")
    p.add_argument("queue")
    p.add_argument("ids", nargs="*")
    p.add_argument("--all", action="store_true")
    p.set_defaults(fn=cmd_retry)

    p = sub.add_parser("sweep", help="recover stalled jobs now")
    p.add_argument("queue")
    p.add_argument("--max-stalled", type=int, default=1)
    p.set_defaults(fn=cmd_sweep)

    p = sub.add_parser("add", help="add a job")
    p.add_argument("queue")
    p.add_argument("data", help="JSON payload")
    p.add_argument("--id")
    p.add_argument("--dedup-id")
    p.add_argument("--dedup-ttl-ms", type=int, default=0)
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--attempts", type=int, default=1)
    p.set_defaults(fn=cmd_add)

    p = sub.add_parser("worker", help="process jobs with a handler given as package.module:function")
    p.add_argument("queue")
    p.add_argument("handler")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--lock-ttl-ms", type=int, default=30_000)
    p.add_argument("--heartbeat-ms", type=int, default=0, help="default: a third of the lock TTL")
    p.add_argument("--sweep-interval", type=float, default=5.0, help="seconds; 0 disables")
    p.add_argument("--max-stalled", type=int, default=1)
    p.add_argument("--block-timeout", type=float, default=5.0)
    p.add_argument("--grace", type=float, default=10.0, help="seconds in-flight jobs get on SIGTERM")
    p.add_argument("--asyncio", action="store_true", help="use the asyncio worker")
    p.set_defaults(fn=cmd_worker)

    p = sub.add_parser("demo", help="show the guarantees: crashes, recovery, exactly-once effects")
    p.add_argument("--jobs", type=int, default=500)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=3)
    p.add_argument("--kills", type=int, default=4)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--server", choices=("minired", "url"), default="minired",
                   help="embedded minired (default), or the server at --url")
    p.set_defaults(fn=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
