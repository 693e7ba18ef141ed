"""``minired-queue``: inspect and operate queues from a shell, run workers and the demo."""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import sys
from datetime import datetime, timezone
from typing import Any, Callable

from .connection import connect, connect_async
from .core import UNREACHABLE, is_async_handler
from .errors import JobFailed, JobRemoved
from .keys import DEFAULT_PREFIX, QueueKeys
from .options import Hooks, WorkerOptions
from .queue import Queue, known_queues

DEFAULT_URL = "redis://127.0.0.1:6379"


def load_handler(path: str) -> Callable[..., Any]:
    """Resolve ``package.module:function``, finding modules in the current directory as
    ``python -m`` (and RQ's and Celery's CLIs) do."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"handler must look like package.module:function, got {path!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise SystemExit(f"cannot import {module_name!r} (looked in {cwd} and sys.path): {exc}") from exc
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise SystemExit(f"{path} is not callable")
    return target


def _queue(args: argparse.Namespace, name: str) -> Queue:
    return Queue(name, connect(args.url, cluster=args.cluster), prefix=args.prefix)


def _existing_queue(args: argparse.Namespace, name: str) -> Queue:
    """The named queue; exits non-zero when there is none, so a typo is not read as an
    empty queue."""
    queue = _queue(args, name)
    if not queue.exists():
        raise SystemExit(f"no such queue: {name!r} (minired-queue queues lists them)")
    return queue


def _usage_error(message: str) -> int:
    """A mistake in the command line: one line on stderr and exit status 2, as argparse does."""
    print(f"minired-queue: error: {message}", file=sys.stderr)
    return 2


def iso_utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cmd_queues(args: argparse.Namespace) -> int:
    client = connect(args.url, cluster=args.cluster)
    names = known_queues(client, args.prefix)
    if not names:
        print("no queues")
        return 0
    print(f"{'queue':<24} {'wait':>8} {'prio':>8} {'active':>8} {'delayed':>8} {'completed':>10} {'failed':>8}"
          "  paused")
    for name in names:
        queue = Queue(name, client, prefix=args.prefix)
        c = queue.counts()
        print(f"{name:<24} {c['wait']:>8} {c['prioritized']:>8} {c['active']:>8} {c['delayed']:>8} "
              f"{c['completed']:>10} {c['failed']:>8}  {'yes' if queue.is_paused() else 'no'}")
    return 0


def cmd_counts(args: argparse.Namespace) -> int:
    queue = _existing_queue(args, args.queue)
    print(json.dumps({"counts": queue.counts(), "paused": queue.is_paused(), "metrics": queue.metrics()}))
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    jobs = _existing_queue(args, args.queue).failed_jobs(0, args.count)
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
    result = _queue(args, args.queue).sweep()
    print(f"recovered {len(result.recovered)} stalled job(s), failed {len(result.failed)}")
    for job_id in result.recovered:
        print(f"  recovered {job_id}")
    for job_id in result.failed:
        print(f"  failed    {job_id}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    try:
        data = json.loads(args.data)
    except json.JSONDecodeError as exc:
        return _usage_error(f"data is not JSON ({exc}): {args.data!r}")
    try:
        job_id = _queue(args, args.queue).add(data, job_id=args.id, dedup_id=args.dedup_id,
                                              dedup_ttl_ms=args.dedup_ttl_ms, delay_ms=args.delay_ms,
                                              attempts=args.attempts, priority=args.priority,
                                              ttl_ms=args.ttl_ms, timeout_ms=args.timeout_ms,
                                              debounce_ms=args.debounce_ms, throttle_ms=args.throttle_ms,
                                              group=args.group)
    except ValueError as exc:
        return _usage_error(str(exc))
    print(job_id)
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    """Print the job's return value (JSON) once it completes; exit 1 with its failure,
    3 when it does not exist or was removed, 4 on timeout."""
    try:
        result = _existing_queue(args, args.queue).wait(args.job_id, timeout=args.timeout)
    except ValueError as exc:
        return _usage_error(str(exc))
    except JobFailed as failure:
        print(f"failed: {failure.reason}", file=sys.stderr)
        return 1
    except JobRemoved as gone:
        print(str(gone), file=sys.stderr)
        return 3
    except TimeoutError as exc:
        print(str(exc), file=sys.stderr)
        return 4
    print(json.dumps(result))
    return 0


def _worker_options(args: argparse.Namespace) -> WorkerOptions:
    return WorkerOptions(
        concurrency=args.concurrency, lock_ttl_ms=args.lock_ttl_ms,
        heartbeat_interval_s=args.heartbeat_ms / 1000 if args.heartbeat_ms else None,
        sweep_interval_s=None if args.sweep_interval == 0 else args.sweep_interval,
        max_stalled=args.max_stalled, block_timeout_s=args.block_timeout, shutdown_grace_s=args.grace,
        burst=args.burst, fail_fast=args.fail_fast,
    )


def _ready_line(worker: Any, keys: QueueKeys, flavour: str) -> str:
    return f"worker {worker.id} on {keys.name} ready ({flavour}, concurrency {worker.options.concurrency})"


def _stop_line(worker: Any) -> str:
    return f"worker {worker.id} stopped: {json.dumps(worker.stats.as_dict())}"


def cmd_worker(args: argparse.Namespace) -> int:
    handler = load_handler(args.handler)
    keys = QueueKeys(args.queue, args.prefix)
    try:
        options = _worker_options(args)
    except ValueError as exc:  # (--concurrency 0, --grace nan, ...)
        return _usage_error(str(exc))
    try:
        return _run_worker(args, handler, keys, options)
    except UNREACHABLE as exc:  # only under --fail-fast: otherwise the worker waits for the server
        raise SystemExit(f"cannot reach the server at {args.url}: {exc}") from None


def _run_worker(args: argparse.Namespace, handler: Callable[..., Any], keys: QueueKeys,
                options: WorkerOptions) -> int:
    if args.asyncio:
        from .aio import AsyncWorker

        async def main() -> None:
            client = connect_async(args.url, cluster=args.cluster)
            # A plain handler runs in a thread with synchronous calls, on its own client.
            sync_client = None if is_async_handler(handler) else connect(args.url, cluster=args.cluster)
            # Ready once the worker has reached the server (it checks before fetching).
            hooks = Hooks(on_ready=lambda: print(_ready_line(worker, keys, "asyncio"), flush=True))
            worker = AsyncWorker(keys, client, handler, options, hooks, sync_client=sync_client)
            try:
                await worker.run(install_signal_handlers=True)
            finally:
                print(_stop_line(worker), flush=True)
                await client.aclose()
                if sync_client is not None:
                    sync_client.close()

        try:
            import uvloop
            uvloop.run(main())
        except ImportError:
            asyncio.run(main())
        return 0
    from .worker import Worker

    hooks = Hooks(on_ready=lambda: print(_ready_line(worker, keys, "threads"), flush=True))
    try:
        worker = Worker(keys, connect(args.url, cluster=args.cluster), handler, options, hooks)
    except TypeError as exc:
        raise SystemExit(str(exc)) from exc
    try:
        worker.run()
    finally:
        print(_stop_line(worker), flush=True)
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from .metrics import render

    client = connect(args.url, cluster=args.cluster)
    queues = ([_existing_queue(args, name) for name in args.queues] if args.queues
              else [Queue(name, client, prefix=args.prefix) for name in known_queues(client, args.prefix)])
    sys.stdout.write(render(queues))
    return 0


def cmd_configure(args: argparse.Namespace) -> int:
    queue = _queue(args, args.queue) if args.create and args.settings else _existing_queue(args, args.queue)
    changes = {}
    for pair in args.settings:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"settings look like name=value (value 'none' clears), got {pair!r}")
        try:
            changes[name.replace("-", "_")] = None if value.lower() == "none" else int(value)
        except ValueError as exc:
            raise SystemExit(f"{name}: not an integer: {value!r}") from exc
    try:
        print(json.dumps(queue.configure(**changes) if changes else queue.settings()))
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    return 0


def cmd_repeat(args: argparse.Namespace) -> int:
    queue = _existing_queue(args, args.queue)
    if args.remove:
        print("removed" if queue.remove_repeatable(args.remove) else f"no repeatable {args.remove!r}")
        return 0
    repeatables = queue.repeatables()
    if not repeatables:
        print("no repeatable jobs")
    for r in repeatables:
        if r.unreadable:
            print(f"{r.key}  unreadable: {r.unreadable}")
            continue
        when = f"every {r.schedule.every_ms} ms" if r.schedule.every_ms else f"cron '{r.schedule.cron}' {r.schedule.tz}"
        following = iso_utc(r.next_tick_ms) if r.next_tick_ms is not None else "none"
        print(f"{r.key}  {when}  next={following}  made={r.count}{f'/{r.limit}' if r.limit else ''}")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    try:
        from .dashboard import DashboardServer
    except ImportError as exc:  # the web side is an optional extra
        raise SystemExit(f"the dashboard needs its extra: pip install 'minired[dashboard]' ({exc})")
    server = DashboardServer(connect(args.url, cluster=args.cluster), prefix=args.prefix,
                             bind=args.bind, port=args.port, token=args.token,
                             allowed_hosts=args.allowed_host)
    print(f"dashboard for {args.url} on {server.url}", flush=True)
    server.run()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.faults:
        from .fault_demo import main as fault_demo_main

        return fault_demo_main(min(args.jobs, 100), args.workers, args.seed, args.verbose)
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

    p = sub.add_parser("sweep", help="recover stalled jobs now (with the queue's stall limit)")
    p.add_argument("queue")
    p.set_defaults(fn=cmd_sweep)

    p = sub.add_parser("configure", help="show or set queue settings: max_stalled, concurrency, rate_max, "
                                         "rate_duration_ms, keep_completed, keep_completed_age_ms, keep_failed, "
                                         "keep_failed_age_ms, group_concurrency, group_rate_max, "
                                         "group_rate_duration_ms")
    p.add_argument("queue")
    p.add_argument("settings", nargs="*", help="name=value ('none' clears)")
    p.add_argument("--create", action="store_true",
                   help="set the settings of a queue that does not exist yet (else refused as a likely typo)")
    p.set_defaults(fn=cmd_configure)

    p = sub.add_parser("repeat", help="list repeatable jobs, or remove one")
    p.add_argument("queue")
    p.add_argument("--remove", metavar="KEY")
    p.set_defaults(fn=cmd_repeat)

    p = sub.add_parser("metrics", help="queue metrics in the Prometheus text format")
    p.add_argument("queues", nargs="*", help="default: every known queue")
    p.set_defaults(fn=cmd_metrics)

    p = sub.add_parser("add", help="add a job")
    p.add_argument("queue")
    p.add_argument("data", help="JSON payload")
    p.add_argument("--id")
    p.add_argument("--dedup-id")
    p.add_argument("--dedup-ttl-ms", type=int, default=0)
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--attempts", type=int, default=1)
    p.add_argument("--priority", type=int, default=0, help="1 (first) .. 2097151; 0: none, before all")
    p.add_argument("--ttl-ms", type=int, default=0, help="not started by then: failed as expired")
    p.add_argument("--timeout-ms", type=int, default=0, help="how long one attempt may run")
    p.add_argument("--debounce-ms", type=int, default=0, help="with --dedup-id: replace the pending job")
    p.add_argument("--throttle-ms", type=int, default=0, help="with --dedup-id: the first job wins that long")
    p.add_argument("--group", help="its group: fair turns and per-group limits (configure group_concurrency=N)")
    p.set_defaults(fn=cmd_add)

    p = sub.add_parser("wait", help="wait for a job's outcome; print its return value")
    p.add_argument("queue")
    p.add_argument("job_id")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds (default %(default)s)")
    p.set_defaults(fn=cmd_wait)

    p = sub.add_parser("worker", help="process jobs with a handler given as package.module:function")
    p.add_argument("queue")
    p.add_argument("handler")
    p.add_argument("--concurrency", type=int, default=1, help="jobs at once (default %(default)s)")
    p.add_argument("--lock-ttl-ms", type=int, default=30_000, help="default %(default)s")
    p.add_argument("--heartbeat-ms", type=int, default=0, help="default: a third of the lock TTL")
    p.add_argument("--sweep-interval", type=float, default=5.0, help="seconds; 0 disables (default %(default)s)")
    p.add_argument("--max-stalled", type=int, default=None,
                   help="store this stall limit with the queue (default: keep the queue's, 1 if unset)")
    p.add_argument("--block-timeout", type=float, default=5.0, help="seconds (default %(default)s)")
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds in-flight jobs get on SIGTERM before release (default %(default)s)")
    p.add_argument("--burst", action="store_true", help="exit once nothing is ready")
    p.add_argument("--asyncio", action="store_true", help="use the asyncio worker")
    p.add_argument("--fail-fast", action="store_true",
                   help="exit with an error if the server cannot be reached at start (default: wait for it)")
    p.set_defaults(fn=cmd_worker)

    p = sub.add_parser("dashboard", help="serve the web dashboard (pip install 'minired[dashboard]')")
    p.add_argument("--port", type=int, default=8080, help="default %(default)s; 0 picks a free port")
    p.add_argument("--bind", default="127.0.0.1",
                   help="default %(default)s; anywhere else a token is required")
    p.add_argument("--token", default=os.environ.get("MINIRED_DASHBOARD_TOKEN"),
                   help="access token (env MINIRED_DASHBOARD_TOKEN); made up when binding beyond "
                        "loopback without one; an empty one is refused")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="also answer requests for this Host name (repeatable; loopback names and "
                        "the bound address are always answered)")
    p.set_defaults(fn=cmd_dashboard)

    p = sub.add_parser("demo", help="show the guarantees: crashes, recovery, exactly-once effects")
    p.add_argument("--jobs", type=int, default=500)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=3)
    p.add_argument("--kills", type=int, default=4)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--server", choices=("minired", "url"), default="minired",
                   help="embedded minired (default), or the server at --url")
    p.add_argument("--dashboard", action="store_true",
                   help="serve the dashboard while the demo runs, and until Ctrl-C after it")
    p.add_argument("--faults", action="store_true",
                   help="instead: lost acks, failed fetches, lost heartbeats and a restart injected "
                        "into an embedded minired (MINIRED FAULT), at most 100 jobs per scenario")
    p.add_argument("--dashboard-port", type=int, default=8080, help="default %(default)s")
    p.set_defaults(fn=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
