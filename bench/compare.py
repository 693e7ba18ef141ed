"""minired against real Redis (and the floor server), side by side, in one run.

    python bench/compare.py            # full run (a few minutes)
    python bench/compare.py --quick    # smaller counts, one round

For every load, redis-benchmark (-c 50) runs against each server in turn, alternating the order
between rounds so machine load drifts hit both sides alike. Reported per row: requests/s, p50
and p99 latency (from redis-benchmark; medians over rounds), and the server's CPU time per
request (read from the server process; the lowest over rounds, see `summarize`) with the
minired/Redis ratio. The floor server (bench/floor_server.py) runs
only the PING/SET/GET rows.
"""
from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from servers import BenchServer, Floor, Minired, Redis

SCRIPT = ("redis.call('RPOPLPUSH', KEYS[1], KEYS[2]) "
          "return redis.call('SET', KEYS[3], ARGV[1], 'PX', 30000)")


@dataclass
class Load:
    label: str
    args: list[str]                      # redis-benchmark arguments after the common ones
    floor: bool = False                  # the floor server answers it too
    prefill: list[list[str]] = field(default_factory=list)  # redis-cli commands run first
    needs_script: bool = False


def loads(requests: int) -> list[Load]:
    fill = ["-n", str(requests), "-c", "50", "-P", "16", "LPUSH", "src", "0123456789abcdef"]
    return [
        Load("PING", ["-t", "ping_mbulk"], floor=True),
        Load("SET", ["-t", "set"], floor=True),
        Load("GET", ["-t", "get"], floor=True),
        Load("INCR", ["-t", "incr"]),
        Load("LPUSH", ["-t", "lpush"]),
        Load("RPOP", ["-t", "rpop"], prefill=[["bench", *fill[:-3], "LPUSH", "mylist", "0123456789abcdef"]]),
        Load("LMOVE", ["-r", "1", "LMOVE", "src", "dst", "RIGHT", "LEFT"], prefill=[["bench", *fill]]),
        Load("SET NX PX", ["-r", "1000000", "SET", "key:__rand_int__", "val", "NX", "PX", "30000"]),
        Load("EVALSHA", ["-r", "100000", "EVALSHA", "<sha>", "3", "src", "dst", "lock:__rand_int__", "token"],
             prefill=[["bench", *fill]], needs_script=True),
    ]


def redis_cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def run_benchmark(server: BenchServer, load: Load, requests: int, pipeline: int, sha: str) -> dict:
    redis_cli(server.port, "FLUSHALL")
    for pre in load.prefill:
        subprocess.run(["redis-benchmark", "-p", str(server.port), "-q", *pre[1:]],
                       capture_output=True, check=True)
    args = [sha if a == "<sha>" else a for a in load.args]
    before = server.cpu_seconds()
    result = subprocess.run(
        ["redis-benchmark", "-p", str(server.port), "-c", "50", "-n", str(requests),
         "-P", str(pipeline), "--csv", *args],
        capture_output=True, text=True, check=True)
    cpu = server.cpu_seconds() - before
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing for {load.label} on {server.name}: "
                           f"{result.stderr[-400:]}")
    row = rows[-1]
    return {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
            "p99": float(row["p99_latency_ms"]), "cpu_us": cpu * 1e6 / requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small counts, one round")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", nargs="*", help="labels of loads to run")
    opts = parser.parse_args()
    rounds = opts.rounds or (1 if opts.quick else 3)
    base = 20_000 if opts.quick else 100_000

    servers: list[BenchServer] = [Redis().start(), Minired().start(), Floor().start()]
    try:
        sha = {s.name: redis_cli(s.port, "SCRIPT", "LOAD", SCRIPT) for s in servers[:2]}
        table = []
        for load in loads(base):
            if opts.only and load.label not in opts.only:
                continue
            for pipeline in (1, 16):
                requests = base * (4 if pipeline == 16 else 1)
                targets = [s for s in servers if s.name != "floor" or load.floor]
                results: dict[str, list[dict]] = {s.name: [] for s in targets}
                for r in range(rounds):
                    order = targets if r % 2 == 0 else list(reversed(targets))
                    for server in order:
                        results[server.name].append(
                            run_benchmark(server, load, requests, pipeline, sha.get(server.name, "")))
                summary = {name: summarize(runs) for name, runs in results.items()}
                table.append((load.label, pipeline, summary))
                print_row(load.label, pipeline, summary, flush=True)
        print()
        print_markdown(table)
    finally:
        for server in servers:
            server.stop()


def summarize(runs: list[dict]) -> dict:
    """Medians of what the client saw; the lowest server CPU per request, since on a shared
    machine interference only ever adds CPU time (cache and frequency effects of the other
    tenants), so the least of the alternating rounds is the steadiest estimate."""
    summary = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
    summary["cpu_us"] = min(x["cpu_us"] for x in runs)
    return summary


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_row(label: str, pipeline: int, summary: dict, flush: bool = False) -> None:
    parts = [f"{label:<10} P{pipeline:<3}"]
    for name, s in summary.items():
        parts.append(f"{name}: {s['rps']:>9.0f} rps {s['cpu_us']:6.2f} us/req")
    print("  ".join(parts), flush=flush)


def print_markdown(table: list) -> None:
    print("| load | P | Redis req/s | minired req/s | req/s ratio | Redis p50/p99 ms | minired p50/p99 ms "
          "| Redis CPU µs/req | minired CPU µs/req | CPU ratio | floor CPU µs/req | minired/floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, pipeline, s in table:
        r, m, f = s["redis"], s["minired"], s.get("floor")
        print(f"| {label} | {pipeline} | {r['rps']:.0f} | {m['rps']:.0f} | {_ratio(m['rps'], r['rps'])} "
              f"| {r['p50']:.2f}/{r['p99']:.2f} | {m['p50']:.2f}/{m['p99']:.2f} "
              f"| {r['cpu_us']:.2f} | {m['cpu_us']:.2f} | {_ratio(m['cpu_us'], r['cpu_us'])} "
              f"| {f['cpu_us']:.2f} | {_ratio(m['cpu_us'], f['cpu_us'])} |" if f else
              f"| {label} | {pipeline} | {r['rps']:.0f} | {m['rps']:.0f} | {_ratio(m['rps'], r['rps'])} "
              f"| {r['p50']:.2f}/{r['p99']:.2f} | {m['p50']:.2f}/{m['p99']:.2f} "
              f"| {r['cpu_us']:.2f} | {m['cpu_us']:.2f} | {_ratio(m['cpu_us'], r['cpu_us'])} | - | - |")


if __name__ == "__main__":
    main()
