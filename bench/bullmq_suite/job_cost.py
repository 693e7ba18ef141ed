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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

from tests.support.servers import free_port  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """CPU time the process has used, all threads, in nanoseconds' resolution (schedstat;
    /proc/PID/stat counts 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def wait_for_port(port: int, proc: subprocess.Popen) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on {port} exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on {port} did not start")


def start(target: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="job_cost.")
    if target == "redis":
        args, env = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"], None
    else:
        tree, _, mode = target.partition(":")
        env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.path.join(tree, 'queue')}"}
        env.pop("MINIRED_PURE_PYTHON", None)
        if mode == "pure":
            env["MINIRED_PURE_PYTHON"] = "1"
        args = [sys.executable, "-m", "minired", "--port", str(port), "--save", "",
                "--appendonly", "no"]
    proc = subprocess.Popen(args, cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return proc, port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-modules", required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("trees", nargs="*", default=[ROOT])
    args = parser.parse_args()
    targets = ["redis", *(os.path.abspath(t.split(":")[0]) + t[len(t.split(":")[0]):]
                          for t in args.trees)]
    servers = {target: start(target) for target in targets}
    env = {**os.environ, "NODE_PATH": os.path.abspath(args.node_modules)}
    per_job: dict[str, list[float]] = {target: [] for target in targets}
    try:
        for round_ in range(args.rounds):
            for target in targets:
                proc, port = servers[target]
                before = cpu_seconds(proc.pid)
                subprocess.run(["node", os.path.join(HERE, "job_cost.js"), str(port),
                                str(args.jobs)], env=env, check=True)
                per_job[target].append((cpu_seconds(proc.pid) - before) / args.jobs * 1e6)
            print(f"round {round_ + 1}: " + ", ".join(
                f"{t}: {per_job[t][-1]:.0f} us" for t in targets), flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
    redis_median = statistics.median(per_job["redis"])
    print(f"\nserver CPU per job, median of {args.rounds} rounds of {args.jobs} jobs:")
    for target in targets:
        median = statistics.median(per_job[target])
        print(f"  {target}: {median:.0f} us ({median / redis_median:.2f}x Redis)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
