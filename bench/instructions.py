"""Server instructions per request, counted by valgrind: the one figure here that other tenants
of a shared machine cannot move, so the one to compare changes by (needs valgrind installed).

    python bench/instructions.py                  # the default loads, -P 1 and -P 16
    python bench/instructions.py "INCR counter"   # any command line(s)
    python bench/instructions.py --config maxmemory 1gb "GET k"   # after CONFIG SET(s)
    python bench/instructions.py --evalsha --first-eval "return cjson.encode({1})"  # cjson built

Requests are fed straight to a ClientProtocol in this process (no sockets, no client, so the
kernel and uvloop are left out): each load runs twice under `valgrind --tool=callgrind` with
different request counts, and the difference of the two totals, divided by the difference of
the counts, is what one request costs, start-up and set-up cancelled out. `-P 16` feeds 16
requests per read, `-P 1` one; the gap between them is the per-read work. The EVALSHA row is
compare.py's script load (a fresh lock key per call); the queue row is
bench/queue_script_bench.py's recorded add -> fetch -> complete flow (three EVALSHAs), per job.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The tree measured (--tree: another checkout, built in place, with its own bench/ helpers).
TREE = os.path.dirname(HERE)

# Run first inside valgrind, before minired is imported: valgrind stretches wall time 50-100x, and
# the server does work that depends on it (a SLOWLOG entry for a command slower than 10 ms, which
# a descheduled core causes; CLIENT LIST's query-buffer figures, once per 100 ms), so with the
# real clock two runs of one build differed by up to ~3,000 instructions per EVALSHA. Every clock
# the server reads (its modules bind them at import) is replaced by a counter that moves 1 us a
# read: no command reaches the slow log, the query-buffer tick comes every 100,000 reads, and
# durations (INFO commandstats, the latency histogram) are still work done. Each is a C-level
# callable, as the real clocks are, so it adds no Python frame to what is counted. The compiled
# keyspace Clock reads the command clock in C (data/monotonic.pxd), which no counter replaces:
# the feeders set slowlog-log-slower-than to 1,000 s instead, so that a command still reads and
# compares its duration but none reaches the slow log.
_STEADY = """
import itertools, time
_ns = time.time_ns()
time.time_ns = itertools.count(_ns, 1000).__next__
time.time = itertools.count(_ns / 1e9, 1e-6).__next__
time.monotonic = itertools.count(1000.0, 1e-6).__next__
time.perf_counter_ns = itertools.count(10**12, 1000).__next__
"""

LOADS = ["PING", "GET key:__rand_int__", "SET key:__rand_int__ xxx", "INCR counter",
         "LPUSH mylist xxx", "SET key:__rand_int__ xxx NX PX 30000"]

# Run inside valgrind: feed `count` reads of `pipeline` copies of one request.
_FEEDER = _STEADY + """
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
try:
    from minired.engine.server import ClientProtocol, Server
except ImportError:  # a tree from before the folder-per-layer move
    from minired.server import ClientProtocol, Server
from minired.startup import prepare_server
from script_bench import Transport, multibulk
read = multibulk(*{words!r}) * {pipeline}
protocol = ClientProtocol(prepare_server(Server()))
protocol.connection_made(Transport())
protocol.data_received(multibulk(b"CONFIG", b"SET", b"slowlog-log-slower-than", b"1000000000"))
for setting in {settings!r}:
    protocol.data_received(multibulk(b"CONFIG", b"SET", *setting))
for start in range(0, {prefill}, 1000):  # --prefill: mylist holds that many elements first
    protocol.data_received(multibulk(b"RPUSH", b"mylist",
                                     *[b"%016d" % i for i in range(start, min({prefill}, start + 1000))]))
for _ in range({count}):
    protocol.data_received(read)
"""


# compare.py's EVALSHA load: RPOPLPUSH from a pre-filled list + SET ... PX on a fresh key per
# call. Every run builds the requests of the longest run, so only the feeding differs.
_EVALSHA_FEEDER = _STEADY + """
import hashlib, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
try:
    from minired.engine.server import ClientProtocol, Server
except ImportError:  # a tree from before the folder-per-layer move
    from minired.server import ClientProtocol, Server
from minired.startup import prepare_server
from script_bench import Transport, multibulk
from compare import SCRIPT
protocol = ClientProtocol(prepare_server(Server()))
protocol.connection_made(Transport())
protocol.data_received(multibulk(b"CONFIG", b"SET", b"slowlog-log-slower-than", b"1000000000"))
for setting in {settings!r}:
    protocol.data_received(multibulk(b"CONFIG", b"SET", *setting))
protocol.data_received(multibulk(b"RPUSH", b"src", *[b"0123456789abcdef"] * {most}))
for script in {first!r}:  # --first-eval: e.g. a script using cjson, so that it is built
    protocol.data_received(multibulk(b"EVAL", script, b"0"))
protocol.data_received(multibulk(b"SCRIPT", b"LOAD", SCRIPT.encode()))
sha = hashlib.sha1(SCRIPT.encode()).hexdigest().encode()
calls = [multibulk(b"EVALSHA", sha, b"3", b"src", b"dst", b"lock:%012d" % n, b"token")
         for n in range({most})]
reads = [b"".join(calls[i:i + {pipeline}]) for i in range(0, {most}, {pipeline})]
for read in reads[:{count}]:
    protocol.data_received(read)
"""


def instructions(argv: list[str]) -> int:
    """Instructions valgrind counted for one run of argv (a Python command line)."""
    # A fixed hash seed: dict and set layouts move the count by up to ~440 per request from one
    # seed to another, more than most changes this figure is asked to judge.
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    match = re.search(r"Collected : (\d+)", run.stderr)
    if match is None:
        raise RuntimeError(f"valgrind gave no count:\n{run.stderr[-2000:]}")
    return int(match.group(1))


def per_request(command: str, pipeline: int, requests: tuple[int, int] = (1600, 4800),
                settings: tuple = (), prefill: int = 0) -> float:
    """The same number of requests at any pipeline depth, so that rare events (a collection,
    a dict resize) weigh alike; `settings`, (name, value) pairs CONFIG SET first."""
    words = [w.encode() for w in command.split()]
    reads = (requests[0] // pipeline, requests[1] // pipeline)
    counts = []
    for count in reads:
        code = _FEEDER.format(root=TREE, here=os.path.join(TREE, "bench"), words=words,
                              pipeline=pipeline, count=count, prefill=prefill,
                              settings=[(n.encode(), v.encode()) for n, v in settings])
        counts.append(instructions([sys.executable, "-c", code]))
    return (counts[1] - counts[0]) / ((reads[1] - reads[0]) * pipeline)


def per_evalsha(pipeline: int, requests: tuple[int, int] = (1600, 4800),
                settings: tuple = (), first: tuple = ()) -> float:
    """`first`: scripts EVALed once before the load (the libraries they reach are then built,
    and their code is in the heap every collection walks)."""
    reads = (requests[0] // pipeline, requests[1] // pipeline)
    counts = [instructions([sys.executable, "-c", _EVALSHA_FEEDER.format(
        root=TREE, here=os.path.join(TREE, "bench"), pipeline=pipeline, count=count,
        most=requests[1], settings=[(n.encode(), v.encode()) for n, v in settings],
        first=[script.encode() for script in first])])
        for count in reads]
    return (counts[1] - counts[0]) / ((reads[1] - reads[0]) * pipeline)


_RUN_SCRIPT = """
import runpy, sys
sys.argv = {argv!r}
runpy.run_path({script!r}, run_name="__main__")
"""


def per_queue_job(jobs: int = 200) -> float:
    """queue_script_bench replays its recording on a fresh server per repetition: two more
    repetitions of `jobs` jobs, less two more of one job (the fresh servers' set-up)."""
    script = os.path.join(TREE, "bench", "queue_script_bench.py")

    def extra(n: int) -> int:
        runs = [instructions([sys.executable, "-c", _STEADY + _RUN_SCRIPT.format(
            script=script, argv=[script, "-n", str(n), "-r", str(r)])]) for r in (1, 3)]
        return runs[1] - runs[0]
    return (extra(jobs) - extra(1)) / (2 * (jobs - 1))


def main() -> None:
    global TREE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commands", nargs="*", help="command lines (default: the usual loads)")
    parser.add_argument("--no-queue", action="store_true", help="skip the queue row")
    parser.add_argument("--config", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="CONFIG SET before the requests "
                        "(e.g. --config maxmemory 1gb; EVALSHA's row too), repeatable")
    parser.add_argument("--prefill", type=int, default=0,
                        help="RPUSH this many 16-byte elements into mylist first (LRANGE rows)")
    parser.add_argument("--tree", default=TREE, help="the checkout to measure (default: this one)")
    parser.add_argument("--evalsha", action="store_true", help="only the EVALSHA row")
    parser.add_argument("--first-eval", action="append", default=[], metavar="SCRIPT",
                        help="EVAL this script once before the EVALSHA row's load (e.g. one "
                        "using cjson, which builds it), repeatable")
    opts = parser.parse_args()
    settings = tuple(opts.config)
    TREE = os.path.abspath(opts.tree)
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install -y valgrind)")
    print("| load | instructions/request at -P 16 | at -P 1 |")
    print("|---|---|---|")
    for command in opts.commands or ([] if opts.evalsha else LOADS):
        print(f"| {command} | {per_request(command, 16, settings=settings, prefill=opts.prefill):,.0f} "
              f"| {per_request(command, 1, settings=settings, prefill=opts.prefill):,.0f} |",
              flush=True)
    if not opts.commands:
        first = tuple(opts.first_eval)
        print(f"| EVALSHA (compare.py's script) | {per_evalsha(16, settings=settings, first=first):,.0f} "
              f"| {per_evalsha(1, settings=settings, first=first):,.0f} |", flush=True)
    if not opts.commands and not opts.no_queue and not opts.evalsha:
        print(f"| queue job (add + fetch + complete, in-process) | {per_queue_job():,.0f} per job | - |")


if __name__ == "__main__":
    main()
