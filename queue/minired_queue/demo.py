"""``minired-queue demo``: make the guarantees visible.

Starts an embedded minired (or uses ``--url`` with ``--server url``), fills a queue, runs
worker processes, SIGKILLs some of them in the middle of jobs, lets the sweep hand their
jobs to the survivors, and prints what happened: nothing lost, every job completed once,
and the side effect applied once per job with the dedup marker, more often without.
With ``--dashboard`` the run is slowed down and served on the web dashboard, so a person can
watch workers die, locks expire, the sweep recover their jobs and the effect counts stay exact.
"""
from __future__ import annotations

import argparse
import threading
import uuid

from .chaos import ChaosConfig, run_chaos


def _wait_for_interrupt() -> None:
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


def _start_dashboard(url: str, cluster: bool, args: argparse.Namespace):
    from .connection import connect
    from .dashboard import DashboardServer

    dashboard = DashboardServer(connect(url, cluster=cluster), prefix=args.prefix,
                                port=args.dashboard_port).start()
    print(f"dashboard: {dashboard.url}  (open it now: the demo runs slowly enough to watch)\n",
          flush=True)
    return dashboard


def main(args: argparse.Namespace) -> int:
    server = dashboard = None
    url, cluster = args.url, args.cluster
    watching = getattr(args, "dashboard", False)
    if args.server == "minired":
        from minired.embed import EmbeddedServer

        # Clock control lets the dashboard's button move time: locks lapse on demand.
        server = EmbeddedServer(port=0, time_control=watching).start()
        url, cluster = server.url, False
        print(f"embedded minired listening on {url}")
    if watching:
        dashboard = _start_dashboard(url, cluster, args)
    print(f"{args.jobs} jobs, {args.workers} worker processes x {args.concurrency} slots; up to {args.kills} "
          "workers are SIGKILLed while holding a job.\nEach job applies one effect guarded by its dedup "
          "marker and the same effect unguarded.\n")
    try:
        config = ChaosConfig(url=url, cluster=cluster, queue=f"demo-{uuid.uuid4().hex[:6]}", jobs=args.jobs,
                             workers=args.workers, concurrency=args.concurrency, kills=args.kills,
                             # Watched on the page, jobs take a second or so and kills come
                             # every few seconds; otherwise the demo runs through in seconds.
                             work_ms=(400, 1200) if watching else (20, 60),
                             kill_interval_s=(2.0, 4.0) if watching else (0.3, 0.7),
                             lock_ttl_ms=3000 if watching else 1000, seed=args.seed)
        report = run_chaos(config, say=lambda line: print(f"  {line}", flush=True))
        if dashboard is not None:
            print(f"\ndone; the dashboard stays up at {dashboard.url} until Ctrl-C", flush=True)
            _wait_for_interrupt()
    finally:
        if dashboard is not None:
            dashboard.stop()
        if server is not None:
            server.stop()

    print()
    print(report.summary())
    print()
    lost_none = report.lost_nothing
    once = report.effects_once
    print(f"never lost:         {'YES' if lost_none else 'NO'} - every job reached completed")
    print(f"never stuck:        {'YES' if report.stalled_recovered or not report.kills else 'NO'} - "
          f"{report.stalled_recovered} job(s) of killed workers went back to wait through the sweep")
    print(f"effects once:       {'YES' if once else 'NO'} - with the marker: {report.guarded_total} effects "
          f"for {report.jobs} jobs; without it: {report.unguarded_total} "
          f"({report.unguarded_duplicates} duplicates from redeliveries)")
    return 0 if lost_none and once else 1
