"""The long crash run: many more jobs and kills than the in-suite crash test.

    python bench/queue_crash.py                       # embedded minired, 20,000 jobs
    python bench/queue_crash.py --server redis        # a throwaway redis-server
    python bench/queue_crash.py --server cluster      # a throwaway 3-master Redis Cluster
    python bench/queue_crash.py --url redis://host:6379 [--cluster]

Exits non-zero if any job was lost, failed, or had its guarded effect applied twice, or if
a group ever had more than its limit running.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minired_queue.chaos import ChaosConfig, run_chaos


@contextlib.contextmanager
def server(kind: str):
    if kind == "minired":
        from minired.embed import EmbeddedServer

        with EmbeddedServer(port=0) as srv:
            yield srv.url, False
    elif kind == "redis":
        from tests.support.servers import RedisServer

        with RedisServer() as srv:
            yield srv.url, False
    else:
        from tests.queue.cluster import RedisClusterServers

        with RedisClusterServers() as srv:
            yield srv.url, True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=("minired", "redis", "cluster"), default="minired")
    parser.add_argument("--url", help="use this server instead of starting one")
    parser.add_argument("--cluster", action="store_true", help="--url is a Redis Cluster node")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rate-limit", type=int, default=300, help="jobs per 100 ms for the queue; 0: none")
    parser.add_argument("--flows", type=int, default=200,
                        help="flow parents of 3 children each (one on a side queue with its own workers)")
    parser.add_argument("--groups", type=int, default=20, help="groups for every other job; 0: none")
    parser.add_argument("--group-concurrency", type=int, default=2, help="most jobs of one group at once")
    args = parser.parse_args()

    target = contextlib.nullcontext((args.url, args.cluster)) if args.url else server(args.server)
    with target as (url, cluster):
        config = ChaosConfig(url=url, cluster=cluster, queue=f"bench-{uuid.uuid4().hex[:6]}", jobs=args.jobs,
                             workers=args.workers, concurrency=args.concurrency, kills=args.kills,
                             kill_interval_s=(0.2, 0.6), time_limit_s=1800, seed=args.seed,
                             priorities=True, rate_limit=(args.rate_limit, 100) if args.rate_limit else None,
                             repeat_every_ms=50, flows=args.flows, groups=args.groups,
                             group_concurrency=args.group_concurrency)
        report = run_chaos(config, say=lambda line: print(line, flush=True))
    print()
    print(report.summary())
    ok = report.lost_nothing and report.effects_once and all(
        peak <= args.group_concurrency for peak in report.group_peaks.values())
    print("\nOK: nothing lost, every effect once, no group over its limit" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
