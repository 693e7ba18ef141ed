"""Start-up time and memory: minired against redis-server, in one run.

    python bench/startup_memory.py

Start-up: from launching the process to its first PONG (median of several launches, the
servers taking turns), and for minired also from the embedding API call to a usable in-process
server. To show what is the interpreter's and what is minired's, the same launch of the floor
server (the smallest uvloop server that answers PING, bench/floor_server.py) and a few
interpreter runs that serve nothing are timed too.
Memory: server RSS growth after 1,000,000 list elements of 16 bytes, and after 100,000 string
keys with PX TTLs; the list load is also compared with a bare Python deque of the same bytes.
"""
from __future__ import annotations

import functools
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from servers import ROOT, BenchServer, Floor, Minired, Redis

LIST_ELEMENTS = 1_000_000
STRING_KEYS = 100_000


def send_pipeline(port: int, commands: list[list[bytes]], batch: int = 200) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for i in range(0, len(commands), batch):
            chunk = commands[i:i + batch]
            payload = b"".join(
                b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in c) for c in chunk)
            sock.sendall(payload)
            replies = 0
            data = b""
            while replies < len(chunk):
                data += sock.recv(1 << 20)
                replies = data.count(b"\r\n")
            if b"-" in data[:1]:
                raise RuntimeError(data[:200])


def list_load() -> list[list[bytes]]:
    per_command = 1000
    commands = []
    for start in range(0, LIST_ELEMENTS, per_command):
        commands.append([b"RPUSH", b"biglist"] + [b"%016d" % i for i in range(start, start + per_command)])
    return commands


def string_load() -> list[list[bytes]]:
    return [[b"SET", b"session:%08d" % i, b"%016d" % i, b"PX", b"3600000"] for i in range(STRING_KEYS)]


def measure_memory(server: BenchServer) -> dict[str, int]:
    time.sleep(0.2)
    base = server.rss_bytes()
    send_pipeline(server.port, list_load(), batch=20)
    time.sleep(0.2)
    after_list = server.rss_bytes()
    send_pipeline(server.port, string_load())
    time.sleep(0.2)
    after_strings = server.rss_bytes()
    return {"list": after_list - base, "strings": after_strings - after_list}


def deque_baseline() -> int:
    code = (
        "import collections\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1]) * 1024\n"
        "base = rss()\n"
        f"d = collections.deque(b'%016d' % i for i in range({LIST_ELEMENTS}))\n"
        "print(rss() - base)\n")
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def launch_to_first_pong(factory) -> float:
    server = factory()
    server.start()
    server.stop()
    return server.started_in


def start_and_exit(flags: list[str], code: str) -> float:
    """Wall time of `python <flags> -c <code>` from the repository root, ended by os._exit: a
    server is timed to its first PONG, not to its exit, so interpreter teardown (tens of ms
    once asyncio is loaded) is left out here too."""
    began = time.perf_counter()
    subprocess.run([sys.executable, *flags, "-c", f"{code}\nimport os; os._exit(0)"], check=True,
                   cwd=ROOT)
    return time.perf_counter() - began


def round_robin_medians(measures: dict[str, Callable[[], float]], runs: int = 11) -> dict[str, float]:
    """Median of each measure, taking turns so that a slow spell of a shared machine does not
    land on one of them only."""
    times: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(runs):
        for name, measure in measures.items():
            times[name].append(measure())
    return {name: statistics.median(values) for name, values in times.items()}


def embedded_startup(runs: int = 5) -> float:
    from minired.embed import EmbeddedServer

    times = []
    for _ in range(runs):
        began = time.perf_counter()
        server = EmbeddedServer(port=0).start()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"PING\r\n")
            assert sock.recv(16).startswith(b"+PONG")
        times.append(time.perf_counter() - began)
        server.stop()
    return statistics.median(times)


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# Interpreter runs that serve nothing, by row label: (flags, code). No Python server can answer
# sooner than the first; the others split that into the interpreter, site, and imports.
INTERPRETER_RUNS = {
    "`python -c pass` (site and this environment's .pth hooks included)": ([], "pass"),
    "`python -S -c pass` (the interpreter alone, no site)": (["-S"], "pass"),
    "`python -c 'import asyncio, uvloop'` (what any uvloop server imports)":
        ([], "import asyncio, uvloop"),
    "`python -c 'import minired.cli, minired.engine.server, ...'` (minired's start-up imports, with "
    "the GC off as the `minired` launcher has it)":
        ([], "import gc; gc.disable()\nimport minired.cli, minired.engine.server, minired.startup, "
             "minired.features.pubsub, minired.features.persistence, minired.features.security"),
}


def main() -> None:
    # An installed package has its bytecode compiled at install time (pip does it); do the
    # same here, since this environment may forbid writing .pyc files as modules import.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "minired")],
                   check=True, stdout=subprocess.DEVNULL)
    measures: dict[str, Callable[[], float]] = {
        factory.name: functools.partial(launch_to_first_pong, factory)
        for factory in (Redis, Minired, Floor)}
    measures.update({label: functools.partial(start_and_exit, flags, code)
                     for label, (flags, code) in INTERPRETER_RUNS.items()})
    start = round_robin_medians(measures)
    redis_start, minired_start = start["redis"], start["minired"]
    embedded = embedded_startup()
    print("| start-up | Redis | minired | ratio |")
    print("|---|---|---|---|")
    print(f"| subprocess launch → first PONG | {redis_start * 1000:.1f} ms | {minired_start * 1000:.1f} ms "
          f"| {minired_start / redis_start:.2f}x |")
    print(f"| (floor server, launch → first PONG: the smallest uvloop server) | - "
          f"| {start['floor'] * 1000:.1f} ms | minired/floor {minired_start / start['floor']:.2f}x |")
    for label in INTERPRETER_RUNS:
        print(f"| (no server: {label}) | - | {start[label] * 1000:.1f} ms | - |")
    print(f"| embedding API call → first PONG (in-process) | - | {embedded * 1000:.1f} ms | - |")
    print()

    results = {}
    for factory in (Redis, Minired):
        server = factory().start()
        try:
            results[server.name] = measure_memory(server)
        finally:
            server.stop()
    baseline = deque_baseline()
    r, m = results["redis"], results["minired"]
    print("| memory (RSS growth) | Redis | minired | minired/Redis | Python deque of the same bytes | minired/deque |")
    print("|---|---|---|---|---|---|")
    print(f"| 1,000,000 list elements × 16 B | {mib(r['list'])} | {mib(m['list'])} | {m['list'] / r['list']:.2f}x "
          f"| {mib(baseline)} | {m['list'] / baseline:.2f}x |")
    print(f"| 100,000 string keys with PX TTL | {mib(r['strings'])} | {mib(m['strings'])} "
          f"| {m['strings'] / r['strings']:.2f}x | - | - |")


if __name__ == "__main__":
    main()
