"""Wake-ups: how often a server's replies find the client asleep, and what that costs the server.

    python bench/wakeups.py                     # EVALSHA and PING at -P 1, 100,000 requests each
    python bench/wakeups.py -n 20000 --only PING

Each server in turn (the order alternates between rounds) gets compare.py's load from
redis-benchmark -c 50 -P 1, and the table shows per row:

- requests/s (wall clock of the redis-benchmark run);
- requests per client sleep: redis-benchmark's voluntary context switches, from the rusage
  os.wait4 returns for it. Each is a time it went to sleep waiting, so that the next reply had
  to wake it, and the server's write pays for the wake-up;
- the server's user and kernel CPU per request (/proc/<pid>/stat, clock ticks).

Session 17 found minired writing each reply as its command finished: under EVALSHA the client
slept once every 2.8 requests (Redis: 27) and minired spent 9.5 µs per request in the kernel
(Redis: 3.6). Replies now leave once a round (server.py, ClientProtocol._write); this shows
that without perf.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import SCRIPT, Load, loads, redis_cli
from servers import BenchServer, Minired, Redis

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def user_and_kernel_seconds(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) * TICK_S, int(fields[12]) * TICK_S


def measure(server: BenchServer, load: Load, requests: int, sha: str) -> dict[str, float]:
    """One redis-benchmark -c 50 -P 1 run of `load` against `server`."""
    redis_cli(server.port, "FLUSHALL")
    for pre in load.prefill:
        subprocess.run(["redis-benchmark", "-p", str(server.port), "-q", *pre[1:]],
                       capture_output=True, check=True)
    args = [sha if a == "<sha>" else a for a in load.args]
    user, kernel = user_and_kernel_seconds(server.proc.pid)
    began = time.perf_counter()
    bench = subprocess.Popen(["redis-benchmark", "-p", str(server.port), "-c", "50", "-n",
                              str(requests), "-P", "1", "-q", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(bench.pid, 0)
    bench.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - began
    if bench.returncode != 0:
        raise RuntimeError(f"redis-benchmark failed on {server.name} ({bench.returncode})")
    user_after, kernel_after = user_and_kernel_seconds(server.proc.pid)
    return {"rps": requests / wall,
            "per_sleep": requests / max(usage.ru_nvcsw, 1),
            "user_us": (user_after - user) * 1e6 / requests,
            "kernel_us": (kernel_after - kernel) * 1e6 / requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100_000, help="requests per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=["EVALSHA", "PING"], help="loads (compare.py's labels)")
    opts = parser.parse_args()

    servers: list[BenchServer] = [Redis().start(), Minired().start()]
    try:
        sha = {s.name: redis_cli(s.port, "SCRIPT", "LOAD", SCRIPT) for s in servers}
        print("| load | server | requests/s | requests per client sleep | server user µs/req "
              "| server kernel µs/req |")
        print("|---|---|---|---|---|---|")
        for load in loads(opts.n):
            if load.label not in opts.only:
                continue
            runs: dict[str, list[dict[str, float]]] = {s.name: [] for s in servers}
            for round_ in range(opts.rounds):
                for server in servers if round_ % 2 == 0 else servers[::-1]:
                    runs[server.name].append(measure(server, load, opts.n, sha[server.name]))
            for name, results in runs.items():
                median = {k: statistics.median(r[k] for r in results) for k in results[0]}
                print(f"| {load.label} | {name} | {median['rps']:.0f} | {median['per_sleep']:.1f} "
                      f"| {median['user_us']:.2f} | {median['kernel_us']:.2f} |")
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
