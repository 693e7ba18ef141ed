"""Both servers under valgrind, over TCP: instructions, simulated cache misses and mispredicted
branches per request, minired against Redis. Where the CPU time differs, this says why.

    python bench/instructions_tcp.py            # the queue job, EVALSHA and SET (~5 minutes)
    python bench/instructions_tcp.py -n 300     # shorter runs (the default is 1,500)

Each server runs under `valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes`, its
instrumentation off. One lean client (a raw socket and hiredis, as in queue_replay_tcp.py)
sets the load up, turns the instrumentation on (callgrind_control), sends the measured
requests one at a time, each once the last reply is in, and turns it off again. Every load runs
at two lengths, n and 3n; the difference divided by 2n is one request (one job for the queue),
with start-up, set-up and the toggling cancelled out. Everything the server process runs in
user space is counted: the event loop, parsing, the commands, Lua; not the kernel. Collections
(Lua's, CPython's) and malloc's consolidations fall at points any change shifts, so shorter
runs move by a few percent from one build to the next where the path itself has not changed;
the default length averages over many of them, and PYTHONHASHSEED=0 fixes minired's hashes.

The caches are valgrind's model of this machine's (L1 instruction and data, last level), warm
from the first measured request: a miss there means the request ran through more code or data
than the cache holds. That is what differs between the servers; a busy machine, whose other
processes evict the caches between requests, makes each such miss dearer still.

Loads: the queue's fetch + complete (queue_script_bench.py's recording, the jobs added first,
unmeasured); compare.py's EVALSHA script (RPOPLPUSH from a pre-filled list + SET ... PX on a
fresh key per call); and SET of a fresh key, for scale.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compare import SCRIPT  # noqa: E402
from queue_replay_tcp import Connection, setup_and_measured  # noqa: E402
from queue_script_bench import record  # noqa: E402
from script_bench import multibulk  # noqa: E402
from servers import BenchServer, Minired, Redis, wait_ready  # noqa: E402

# callgrind's event columns with --cache-sim=yes --branch-sim=yes, in its order.
EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim"]


@dataclass
class Counts:
    instructions: float
    l1i_misses: float
    l1d_misses: float
    ll_misses: float
    mispredicted: float        # conditional and indirect branches

    @classmethod
    def from_totals(cls, totals: dict[str, float]) -> "Counts":
        return cls(totals["Ir"], totals["I1mr"], totals["D1mr"] + totals["D1mw"],
                   totals["ILmr"] + totals["DLmr"] + totals["DLmw"], totals["Bcm"] + totals["Bim"])


class UnderValgrind(BenchServer):
    """A bench server run under callgrind with its instrumentation off until asked."""

    def __init__(self, inner: BenchServer, out_file: str) -> None:
        super().__init__()
        self.inner, self.name, self.out_file = inner, inner.name, out_file
        inner.port = self.port

    def command(self) -> list[str]:
        return ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
                "--instr-atstart=no", f"--callgrind-out-file={self.out_file}", *self.inner.command()]

    def start(self) -> "UnderValgrind":
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=os.path.dirname(HERE))
        wait_ready(self.port, timeout=180)
        return self

    def instrument(self, on: bool) -> None:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(self.proc.pid)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    def finish(self) -> dict[str, float]:
        """Stop the server (callgrind writes its file on exit) and read the totals."""
        self.proc.terminate()
        self.proc.wait(300)
        with open(self.out_file) as f:
            for line in f:
                if line.startswith("totals:"):
                    return dict(zip(EVENTS, map(float, line.split()[1:])))
        raise RuntimeError(f"callgrind wrote no totals to {self.out_file}")

    def stop(self) -> None:
        super().stop()
        self.inner.stop()


def queue_load(jobs: int) -> tuple[list[bytes], list[bytes]]:
    return setup_and_measured(record(jobs))


def evalsha_load(calls: int) -> tuple[list[bytes], list[bytes]]:
    sha = hashlib.sha1(SCRIPT.encode()).hexdigest().encode()
    setup = [multibulk(b"RPUSH", b"src", *[b"0123456789abcdef"] * calls),
             multibulk(b"SCRIPT", b"LOAD", SCRIPT.encode())]
    return setup, [multibulk(b"EVALSHA", sha, b"3", b"src", b"dst", b"lock:%012d" % n, b"token")
                   for n in range(calls)]


def set_load(calls: int) -> tuple[list[bytes], list[bytes]]:
    return [], [multibulk(b"SET", b"key:%012d" % n, b"xxx") for n in range(calls)]


LOADS = {"queue job (fetch + complete)": queue_load, "EVALSHA": evalsha_load, "SET": set_load}


def measure(kind: type[BenchServer], load, count: int, scratch: str) -> dict[str, float]:
    setup, measured = load(count)
    out_file = os.path.join(scratch, f"{load.__name__}-{kind.name}-{count}.out")
    server = UnderValgrind(kind(), out_file).start()
    try:
        connection = Connection(server.port)
        for request in setup:
            connection.call(request)
        server.instrument(True)
        for request in measured:
            connection.call(request)
        server.instrument(False)
        connection.close()
        return server.finish()
    finally:
        server.stop()


def per_request(kind: type[BenchServer], load, n: int, scratch: str) -> Counts:
    short, long = (measure(kind, load, count, scratch) for count in (n, 3 * n))
    return Counts.from_totals({event: (long[event] - short[event]) / (2 * n) for event in EVENTS})


def _ratio(ours: float, theirs: float) -> str:
    # The model's last level holds nearly all of either server: a handful of misses per request
    # make no ratio worth printing.
    return f"{ours / theirs:.2f}x" if theirs >= 10 else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1500, help="requests (jobs) in the shorter run")
    parser.add_argument("--keep", metavar="DIR", help="keep callgrind's files there (for callgrind_annotate)")
    opts = parser.parse_args()
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt-get install -y valgrind)")
    scratch = opts.keep or os.path.join("/tmp", f"instructions-tcp-{os.getpid()}")
    os.makedirs(scratch, exist_ok=True)
    began = time.monotonic()
    print("Per request (per job for the queue), one client over TCP, each request sent once the "
          "last reply is in:\n")
    print("| load | server | instructions | L1i misses | L1d misses | LL misses | mispredicted branches |")
    print("|---|---|---|---|---|---|---|")
    try:
        for label, load in LOADS.items():
            rows = {kind.name: per_request(kind, load, opts.n, scratch) for kind in (Redis, Minired)}
            for name, c in rows.items():
                print(f"| {label} | {name} | {c.instructions:,.0f} | {c.l1i_misses:,.0f} | "
                      f"{c.l1d_misses:,.0f} | {c.ll_misses:,.0f} | {c.mispredicted:,.0f} |")
            r, m = rows["redis"], rows["minired"]
            print(f"| {label} | minired/Redis | {m.instructions / r.instructions:.2f}x | "
                  f"{m.l1i_misses / r.l1i_misses:.2f}x | {m.l1d_misses / r.l1d_misses:.2f}x | "
                  f"{_ratio(m.ll_misses, r.ll_misses)} | {m.mispredicted / r.mispredicted:.2f}x |",
                  flush=True)
    finally:
        if not opts.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nelapsed {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
