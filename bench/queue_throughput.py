"""The reliable queue end to end, minired against real Redis: jobs/s for add -> fetch -> complete.

    python bench/queue_throughput.py                 # 10,000 jobs a run, 3 rounds (about 3 minutes)
    python bench/queue_throughput.py --quick         # 5,000 jobs, 1 round
    python bench/queue_throughput.py --profile DIR   # minired only, py-spy and perf record the server

Both servers are started here (bench/servers.py). For every round, each backend in turn (the
order alternates between rounds, so drifts in machine load hit both sides alike) runs, for 1
and then 4 worker processes:

1. a producer adds N jobs with ``Queue.add_many`` (pipelined addJob scripts): add rate and the
   server's CPU per add are reported too;
2. the worker processes (forked before the clock starts, each running the library's threaded
   ``Worker`` with a handler that does nothing) are released together; the clock runs from that
   moment to the last recorded completion (``complete`` acknowledged by the server).

Reported per row: jobs/s, the server's CPU time per job (from /proc, all threads), the worker
processes' CPU per job, and from INFO commandstats the commands the workers sent per job.
Ratios are minired/Redis on the medians across rounds.

Nothing is trusted from the workers' word alone. After each run: counts (wait, active, delayed,
failed empty; completed = N), the completed set holds exactly the N ids added, every job hash
says ``attemptsStarted`` = 1, the queue's metrics say N added and N completed, and the ids the
handlers saw (sent back by every worker process) are each of the N ids exactly once. Any
mismatch fails the run (exit status 1).
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redis
from servers import BenchServer, Minired, Redis

from minired_queue import JobSpec, Queue
from minired_queue.job import text
from minired_queue.options import Hooks, WorkerOptions
from minired_queue.worker import Worker

WORKER_COUNTS = (1, 4)
POLL_S = 0.005           # how often the parent looks at the workers' shared completion counters
RUN_TIMEOUT_S = 300.0


def process_cpu_seconds(pid: int) -> float:
    """CPU time of a worker process, every thread it ever ran (/proc/<pid>/stat utime + stime,
    clock ticks). Not schedstat, as the server's is read: that lists live threads only, and
    counted none of the handler threads that older workers started per job and that had ended."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_sys_seconds(pid: int) -> float:
    """Kernel-mode CPU time of a process (/proc/<pid>/stat stime, clock ticks): sockets, epoll."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK")


# --- the worker process ---------------------------------------------------------------------

def worker_process(slot: int, port: int, queue_name: str, concurrency: int, ready, go, stop, done,
                   first, last, results) -> None:
    """One worker process: the library's Worker with a handler that only notes the job id.

    Completions are counted in shared memory (``done[slot]``, ``last[slot]`` = when), so the
    parent watches progress without sending the server a single command."""
    client = redis.Redis(host="127.0.0.1", port=port)
    client.ping()
    handled: list[str] = []      # list.append is atomic: handler threads may run concurrently
    completed: list[str] = []

    def handler(job):
        if not handled:
            first[slot] = time.perf_counter()
        handled.append(job.id)
        return None

    def on_completed(job, _result) -> None:
        completed.append(job.id)
        done[slot] = len(completed)
        last[slot] = time.perf_counter()

    worker = Worker(queue_name, client, handler, WorkerOptions(concurrency=concurrency),
                    Hooks(on_completed=on_completed))
    ready.put(slot)
    go.wait()
    worker.start()
    stop.wait()
    worker.stop(wait=True, timeout=30)
    results.put((slot, worker.stats.as_dict(), handled, completed))
    client.close()


# --- one run --------------------------------------------------------------------------------

@dataclass
class Run:
    backend: str
    workers: int
    jobs: int
    add_s: float
    add_cpu_s: float
    wall_s: float
    server_cpu_s: float
    server_sys_s: float               # the kernel-mode part of server_cpu_s
    worker_cpu_s: float
    commands: dict[str, int]          # INFO commandstats calls during the processing window
    command_usec: dict[str, int]
    problems: list[str] = field(default_factory=list)

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.wall_s

    @property
    def adds_per_s(self) -> float:
        return self.jobs / self.add_s

    @property
    def server_us(self) -> float:
        return self.server_cpu_s * 1e6 / self.jobs

    @property
    def server_sys_us(self) -> float:
        return self.server_sys_s * 1e6 / self.jobs

    @property
    def add_us(self) -> float:
        return self.add_cpu_s * 1e6 / self.jobs

    @property
    def worker_us(self) -> float:
        return self.worker_cpu_s * 1e6 / self.jobs

    def per_job(self, command: str) -> float:
        return self.commands.get(command, 0) / self.jobs


def commandstats(client: redis.Redis) -> tuple[dict[str, int], dict[str, int]]:
    calls, usec = {}, {}
    for name, stat in client.info("commandstats").items():
        name = name.removeprefix("cmdstat_")
        calls[name] = int(stat["calls"])
        usec[name] = int(stat["usec"])
    return calls, usec


def run_once(server: BenchServer, workers: int, jobs: int, concurrency: int,
             profiler: list[str] | None = None) -> Run:
    client = redis.Redis(host="127.0.0.1", port=server.port)
    client.flushall()
    name = f"bench-{uuid.uuid4().hex[:8]}"
    queue = Queue(name, client)
    ids = [f"job-{n}" for n in range(jobs)]
    specs = [JobSpec({"n": n}, job_id=job_id) for n, job_id in enumerate(ids)]

    # (a) the producer
    cpu = server.cpu_seconds()
    began = time.perf_counter()
    queue.add_many(specs)
    add_s = time.perf_counter() - began
    add_cpu_s = server.cpu_seconds() - cpu
    problems = []
    if (waiting := client.llen(queue.keys.wait)) != jobs:
        problems.append(f"wait holds {waiting} ids after adding {jobs}")

    # (b) the workers: forked and connected before the clock starts
    ctx = mp.get_context("fork")
    ready, results, go, stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    done = ctx.Array("q", workers, lock=False)
    first = ctx.Array("d", workers, lock=False)
    last = ctx.Array("d", workers, lock=False)
    procs = [ctx.Process(target=worker_process, daemon=True,
                         args=(slot, server.port, name, concurrency, ready, go, stop, done, first, last, results))
             for slot in range(workers)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=60)

    spy = None
    if profiler:  # attached to the server for the processing phase only
        spy = subprocess.Popen([a.replace("{pid}", str(server.proc.pid)) for a in profiler],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # let it attach before the work starts
    client.config_resetstat()
    server_cpu, server_sys = server.cpu_seconds(), process_sys_seconds(server.proc.pid)
    worker_cpu = sum(process_cpu_seconds(p.pid) for p in procs)
    started = time.perf_counter()
    go.set()
    deadline = started + RUN_TIMEOUT_S
    while sum(done) < jobs:
        if time.perf_counter() > deadline or not all(p.is_alive() for p in procs):
            problems.append(f"only {sum(done)} of {jobs} jobs completed "
                            f"({'timeout' if time.perf_counter() > deadline else 'a worker died'})")
            break
        time.sleep(POLL_S)
    server_cpu_s = server.cpu_seconds() - server_cpu
    server_sys_s = process_sys_seconds(server.proc.pid) - server_sys
    worker_cpu_s = sum(process_cpu_seconds(p.pid) for p in procs) - worker_cpu
    wall_s = max(last) - started if sum(done) >= jobs else time.perf_counter() - started
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    calls, usec = commandstats(client)

    stop.set()
    reports = []
    for _ in procs:
        try:
            reports.append(results.get(timeout=60))
        except Exception:  # queue.Empty: a worker died or hung; verify() reports the gap
            problems.append("a worker process sent no report")
            break
    for proc in procs:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    problems += verify(client, queue, ids, reports)
    client.close()
    return Run(server.name, workers, jobs, add_s, add_cpu_s, wall_s, server_cpu_s, server_sys_s, worker_cpu_s, calls,
               usec, problems)


def verify(client: redis.Redis, queue: Queue, ids: list[str], reports: list) -> list[str]:
    """Every job completed exactly once, checked on the server and against what handlers saw."""
    jobs, problems = len(ids), []
    counts = queue.counts()
    if counts != {"wait": 0, "prioritized": 0, "active": 0, "delayed": 0, "completed": jobs, "failed": 0}:
        problems.append(f"counts {counts}")
    if {text(m) for m in client.zrange(queue.keys.completed, 0, -1)} != set(ids):
        problems.append("the completed set is not exactly the ids added")
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(queue.keys.job(job_id), "attemptsStarted")
    starts = collections.Counter(int(n or 0) for n in pipe.execute())
    if starts != {1: jobs}:
        problems.append(f"attemptsStarted per job: {dict(starts)}")
    metrics = queue.metrics()
    if metrics.get("added") != jobs or metrics.get("completed") != jobs:
        problems.append(f"metrics {metrics}")
    handled = collections.Counter(job_id for _, _, seen, _ in reports for job_id in seen)
    acked = collections.Counter(job_id for _, _, _, ok in reports for job_id in ok)
    for label, seen in (("handled", handled), ("acknowledged", acked)):
        if set(seen) != set(ids) or set(seen.values()) != {1}:
            problems.append(f"ids {label} by workers: {len(seen)} distinct, {sum(seen.values())} in all")
    stats = collections.Counter()
    for _, s, _, _ in reports:
        stats.update(s)
    if stats["fetched"] != jobs or stats["completed"] != jobs or stats["refused"] or stats["failed"] \
            or stats["retried"] or stats["released"]:
        problems.append(f"worker stats {dict(stats)}")
    return problems


# --- reporting -------------------------------------------------------------------------------

def median(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_run(run: Run) -> None:
    print(f"  {run.backend:<8} {run.workers}w  add {run.adds_per_s:8.0f}/s {run.add_us:6.1f} us/add | "
          f"process {run.jobs_per_s:7.0f} jobs/s  server {run.server_us:6.1f} us/job "
          f"(sys {run.server_sys_us:5.1f})  "
          f"workers {run.worker_us:6.1f} us/job  evalsha/job {run.per_job('evalsha'):.2f}  "
          f"bzpopmin/job {run.per_job('bzpopmin'):.3f}"
          + (f"  PROBLEMS: {run.problems}" if run.problems else ""), flush=True)


def print_tables(results: dict[tuple[str, int], list[Run]], backends: list[str]) -> None:
    print("\n### Queue end to end: add -> fetch -> complete "
          f"({next(iter(results.values()))[0].jobs} jobs, medians of {len(next(iter(results.values())))} "
          "round(s))\n")
    print("| backend | workers | jobs/s | server CPU µs/job | jobs/s ratio minired/Redis "
          "| CPU ratio minired/Redis |")
    print("|---|---|---|---|---|---|")
    for workers in WORKER_COUNTS:
        base = results.get(("redis", workers))
        for backend in backends:
            runs = results.get((backend, workers))
            if not runs:
                continue
            jps, cpu = median(runs, "jobs_per_s"), median(runs, "server_us")
            if backend == "minired" and base:
                r_jps, r_cpu = ratio(jps, median(base, "jobs_per_s")), ratio(cpu, median(base, "server_us"))
            else:
                r_jps = r_cpu = "-"
            print(f"| {backend} | {workers} | {jps:.0f} | {cpu:.1f} | {r_jps} | {r_cpu} |")

    print("\nClient side and the add phase (medians). EVALSHA/job is what the workers sent (INFO "
          "commandstats over the processing window): 2 per job is one moveToActive and one complete; the "
          "rest are fetches that missed (other workers took every candidate) or found wait empty:\n")
    print("| backend | workers | server kernel CPU µs/job | worker CPU µs/job | EVALSHA/job | BZPOPMIN/job "
          "| add jobs/s | server CPU µs/add |")
    print("|---|---|---|---|---|---|---|---|")
    for workers in WORKER_COUNTS:
        for backend in backends:
            runs = results.get((backend, workers))
            if not runs:
                continue
            print(f"| {backend} | {workers} | {median(runs, 'server_sys_us'):.0f} | {median(runs, 'worker_us'):.0f} "
                  f"| {statistics.median(r.per_job('evalsha') for r in runs):.2f} "
                  f"| {statistics.median(r.per_job('bzpopmin') for r in runs):.4f} "
                  f"| {median(runs, 'adds_per_s'):.0f} | {median(runs, 'add_us'):.1f} |")


def print_script_commands(results: dict[tuple[str, int], list[Run]], backends: list[str]) -> None:
    """Where the server's command time goes, by INFO commandstats (last round, 4 workers)."""
    print("\nServer command time per job from INFO commandstats (last round, 4 workers; EVALSHA's "
          "time includes the commands its script calls):\n")
    print("| command | " + " | ".join(f"{b} calls/job | {b} µs/job" for b in backends) + " |")
    print("|---|" + "---|---|" * len(backends))
    last = {b: results[(b, WORKER_COUNTS[-1])][-1] for b in backends if (b, WORKER_COUNTS[-1]) in results}
    names = sorted({c for r in last.values() for c in r.commands if c not in ("info", "config|resetstat")},
                   key=lambda c: -max(r.command_usec.get(c, 0) for r in last.values()))
    for name in names:
        cells = []
        for b in backends:
            r = last.get(b)
            cells.append(f"{r.commands.get(name, 0) / r.jobs:.3f} | {r.command_usec.get(name, 0) / r.jobs:.1f}"
                         if r else "- | -")
        print(f"| {name} | " + " | ".join(cells) + " |")


# --- profiling --------------------------------------------------------------------------------
#
# py-spy counts a sample whenever the thread is not idle, and on a busy 2-core machine that
# includes time spent runnable but descheduled, which piles up at the write() that wakes a
# client and at epoll. Those leaves are shown apart and left out of the shares below. perf
# (cpu-clock) samples only on-CPU time and gives the split by library (Python, Lua, kernel).

WAITING_LEAVES = ("write (libc", "epoll_pwait (libc", "epoll_wait (libc", "__libc_write", "send (libc")


def profile_category(frames: list[str]) -> str:
    """Where one native py-spy stack of minired is, by the Python frames it passes through."""
    leaf = frames[-1]
    if leaf.startswith(WAITING_LEAVES):
        return "(waiting: descheduled in write/epoll)"
    names = [f.split(" (", 1)[0] for f in frames]
    files = [f.split(" (", 1)[1] if " (" in f else "" for f in frames]
    if "ScriptEngine.call" in names:  # redis.call from Lua into Python
        i = names.index("ScriptEngine.call")
        for j in range(i + 1, len(names) - 1):
            if names[j] == "call" and files[j].startswith("minired/engine/dispatch.py"):
                if not files[j + 1].startswith("minired/engine/dispatch.py"):
                    return "commands run by scripts (handlers)"
        return "redis.call bridge (args, lookup, dispatch, reply to Lua)"
    if any("lua51" in f for f in frames) or any(n.startswith("lua_") for n in names):
        return "Lua VM and lupa conversions"
    if any(n.startswith(("ScriptEngine.", "Sandbox.")) for n in names) or "evalsha" in names:
        return "EVALSHA: engine Python (lookup, sandbox, reply shaping)"
    if any(n.startswith("RequestParser") for n in names):
        return "RESP request parsing"
    if any(n.startswith("encode") or n.startswith("_encode") for n in names):
        return "RESP reply encoding"
    if any(f.startswith("minired/engine/dispatch.py") for f in files):
        return "other commands sent by clients"
    if any(f.startswith("minired/engine/blocking.py") for f in files):
        return "blocking (BZPOPMIN) bookkeeping and wake-ups"
    if any(f.startswith("minired/") for f in files):
        return "server loop in Python (protocol, batching, writes)"
    return "event loop and reads (uvloop, libuv, kernel)"


def summarize_pyspy(path: str, top: int = 20) -> None:
    categories, own, total = collections.Counter(), collections.Counter(), 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n, frames = int(count), stack.split(";")
            total += n
            category = profile_category(frames)
            categories[category] += n
            if not category.startswith("(waiting"):
                own[frames[-1]] += n
    busy = total - categories["(waiting: descheduled in write/epoll)"]
    print(f"\n{path}: {total} samples, {busy} outside write/epoll")
    for category, n in categories.most_common():
        share = "" if category.startswith("(waiting") else f"{100 * n / busy:5.1f}% of busy"
        print(f"  {100 * n / total:5.1f}% of samples  {share:>13}  {category}")
    print("  top frames (self, share of busy samples):")
    for frame, n in own.most_common(top):
        print(f"    {100 * n / busy:5.1f}%  {frame}")


def summarize_perf(path: str) -> None:
    report = subprocess.run(["perf", "report", "-i", path, "--sort", "dso", "--stdio", "--no-children",
                             "-g", "none"], capture_output=True, text=True)
    print(f"\n{path}: on-CPU samples by library")
    for line in report.stdout.splitlines():
        if "%" in line and not line.startswith("#"):
            print("  " + line.strip())


# --- main -------------------------------------------------------------------------------------

def profilers(directory: str | None, workers: int) -> list[list[str] | None]:
    """The runs to make for one row: one unprofiled, or one per profiler (py-spy, perf)."""
    if not directory:
        return [None]
    runs = [["py-spy", "record", "-p", "{pid}", "--native", "-r", "100", "-f", "raw",
             "-o", os.path.join(directory, f"pyspy-{workers}w.raw")]]
    if shutil.which("perf"):
        runs.append(["perf", "record", "-e", "cpu-clock", "-F", "500", "-p", "{pid}",
                     "-o", os.path.join(directory, f"perf-{workers}w.data")])
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5,000 jobs, one round")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=1, help="job threads per worker process")
    parser.add_argument("--backends", nargs="+", choices=("redis", "minired"), default=["redis", "minired"])
    parser.add_argument("--profile", metavar="DIR",
                        help="minired only, one round: py-spy (native) and then perf record the server during "
                             "each processing phase, and their summaries are printed")
    opts = parser.parse_args()
    jobs = opts.jobs or (5_000 if opts.quick else 10_000)
    rounds = opts.rounds or (1 if opts.quick or opts.profile else 3)
    backends = ["minired"] if opts.profile else opts.backends
    if opts.profile:
        os.makedirs(opts.profile, exist_ok=True)

    makers = {"redis": Redis, "minired": Minired}
    servers: dict[str, BenchServer] = {}
    results: dict[tuple[str, int], list[Run]] = collections.defaultdict(list)
    began = time.monotonic()
    try:
        for backend in backends:
            servers[backend] = makers[backend]().start()
        print(f"{jobs} jobs per run, {rounds} round(s), worker processes {WORKER_COUNTS} x concurrency "
              f"{opts.concurrency}; servers: " + ", ".join(f"{b} pid {s.proc.pid} port {s.port}"
                                                           for b, s in servers.items()), flush=True)
        for r in range(rounds):
            order = backends if r % 2 == 0 else list(reversed(backends))
            print(f"round {r + 1}: {' then '.join(order)}", flush=True)
            for backend in order:
                for workers in WORKER_COUNTS:
                    for profiler in profilers(opts.profile, workers):
                        run = run_once(servers[backend], workers, jobs, opts.concurrency, profiler)
                        results[(backend, workers)].append(run)
                        print_run(run)
    finally:
        for server in servers.values():
            server.stop()

    print_tables(results, backends)
    print_script_commands(results, backends)
    if opts.profile:
        for workers in WORKER_COUNTS:
            summarize_pyspy(os.path.join(opts.profile, f"pyspy-{workers}w.raw"))
            if shutil.which("perf"):
                summarize_perf(os.path.join(opts.profile, f"perf-{workers}w.data"))
    problems = [(key, p) for key, runs in results.items() for run in runs for p in run.problems]
    print(f"\nelapsed {time.monotonic() - began:.0f} s")
    if problems:
        print("\nFAILED: " + "; ".join(f"{b} {w}w: {p}" for (b, w), p in problems))
        return 1
    print("\nOK: in every run, every job was added once, handled once and completed once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
