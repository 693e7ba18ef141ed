"""Server CPU per BullMQ job, redis-server against minired checkouts, in one run.

    python bench/bullmq_suite/job_cost.py --node-modules DIR [--jobs 2000] [--rounds 3]
                                          [TREE[:pure] ...]

Each round runs job_cost.js once against every server, taking turns: N jobs added with a
job's usual options (attempts, backoff, removeOnComplete/Fail), then one worker takes and
completes them all - BullMQ's addStandardJob, moveToActive and moveToFinished scripts, with
their cmsgpack and cjson calls, N times each. The server's CPU time (all threads,
/proc/PID/task/*/schedstat) over the run, divided by N, is the figure; the median of the rounds
is reported with its ratio to Redis's. BullMQ's whole suite (run.sh) spends most of its time
waiting on timers and its CPU moves by a quarter from run to run; this does not wait.

DIR holds the npm package bullmq (run.sh's work directory has one: WORK/node_modules). Each
TREE (default: this checkout) is a directory holding minired/, run as `python -m minired`
with PYTHONPATH set to it; `TREE:pure` runs it uncompiled (MINIRED_PURE_PYTHON=1).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from servers import BenchServer, Checkout, Redis  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-modules", required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("trees", nargs="*", default=[ROOT])
    args = parser.parse_args()
    servers: list[BenchServer] = [Redis(), *(Checkout(tree) for tree in args.trees)]
    env = {**os.environ, "NODE_PATH": os.path.abspath(args.node_modules)}
    per_job: dict[str, list[float]] = {server.name: [] for server in servers}
    try:
        for server in servers:
            server.start()
        for round_ in range(args.rounds):
            for server in servers:
                before = server.cpu_seconds()
                subprocess.run(["node", os.path.join(HERE, "job_cost.js"), str(server.port),
                                str(args.jobs)], env=env, check=True)
                per_job[server.name].append((server.cpu_seconds() - before) / args.jobs * 1e6)
            print(f"round {round_ + 1}: " + ", ".join(
                f"{name}: {figures[-1]:.0f} us" for name, figures in per_job.items()), flush=True)
    finally:
        for server in servers:
            server.stop()
    redis_median = statistics.median(per_job["redis"])
    print(f"\nserver CPU per job, median of {args.rounds} rounds of {args.jobs} jobs:")
    for name, figures in per_job.items():
        median = statistics.median(figures)
        print(f"  {name}: {median:.0f} us ({median / redis_median:.2f}x Redis)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
