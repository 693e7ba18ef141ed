"""Memory per element, by type: minired (compiled and uncompiled) against redis-server, one run.

    python bench/memory.py                       # every load, this tree, both builds (~2 min)
    python bench/memory.py --only list           # some loads
    python bench/memory.py --tree /tmp/old       # minired from another checkout (built in place
                                                 # for its compiled row)

Each load (same bytes for every server) goes into a fresh server. Reported per element (per key
for the string loads):
- RSS: the server process's RSS growth over the load (what the machine pays; Redis's includes
  jemalloc's rounding, minired's pymalloc's and the freed-but-kept arenas);
- Redis MEMORY USAGE (SAMPLES 0: every element), summed over the load's keys;
- minired tracemalloc: the Python allocations still held after the load, in an embedded server
  (`tracemalloc` counts what Python allocated, without allocator rounding or fragmentation).
The compiled build is whatever the tree holds (.so beside the sources, see setup.py); the
uncompiled one the same tree with MINIRED_PURE_PYTHON=1.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import ROOT, BenchServer, Redis, wait_ready


def _cmds_list(n: int = 1_000_000, size: int = 16):
    for start in range(0, n, 1000):
        yield [b"RPUSH", b"biglist"] + [b"%0*d" % (size, i) for i in range(start, min(n, start + 1000))]


def _cmds_small_lists(keys: int = 50_000, per: int = 10):
    for k in range(keys):
        yield [b"RPUSH", b"queue:%d" % k] + [b"job:%010d" % (k * per + i) for i in range(per)]


def _cmds_strings_int(keys: int = 200_000):
    for k in range(keys):
        yield [b"SET", b"counter:%d" % k, b"%d" % (k * 7919)]


def _cmds_strings_text(keys: int = 200_000):
    for k in range(keys):
        yield [b"SET", b"session:%d" % k, b"user-%011d" % k]


def _cmds_small_hashes(keys: int = 50_000, per: int = 10):
    for k in range(keys):
        args = [b"HSET", b"user:%d" % k]
        for i in range(per):
            args += [b"field%d" % i, b"value-%d-%d" % (k, i)]
        yield args


def _cmds_large_hash(n: int = 500_000):
    for start in range(0, n, 1000):
        args = [b"HSET", b"bighash"]
        for i in range(start, start + 1000):
            args += [b"f:%d" % i, b"v:%010d" % i]
        yield args


def _cmds_int_sets(keys: int = 50_000, per: int = 10):
    for k in range(keys):
        yield [b"SADD", b"ids:%d" % k] + [b"%d" % (k * per + i) for i in range(per)]


def _cmds_large_int_set(n: int = 500_000):
    for start in range(0, n, 1000):
        yield [b"SADD", b"bigintset"] + [b"%d" % i for i in range(start, start + 1000)]


def _cmds_string_sets(keys: int = 50_000, per: int = 10):
    for k in range(keys):
        yield [b"SADD", b"tags:%d" % k] + [b"tag-%d-%d" % (k, i) for i in range(per)]


def _cmds_small_zsets(keys: int = 50_000, per: int = 10):
    for k in range(keys):
        args = [b"ZADD", b"board:%d" % k]
        for i in range(per):
            args += [b"%d" % (i * 3), b"member-%d" % i]
        yield args


def _cmds_large_zset(n: int = 200_000):
    for start in range(0, n, 1000):
        args = [b"ZADD", b"bigzset"]
        for i in range(start, start + 1000):
            args += [b"%d" % i, b"m:%010d" % i]
        yield args


# name: (commands, elements, what an element is, the keys to sum MEMORY USAGE over)
LOADS = {
    "list": (_cmds_list, 1_000_000, "element (16 B)", lambda: [b"biglist"]),
    "small-lists": (_cmds_small_lists, 500_000, "element (50k lists × 10 × 14 B)",
                    lambda: [b"queue:%d" % k for k in range(50_000)]),
    "strings-int": (_cmds_strings_int, 200_000, "key (int value)",
                    lambda: [b"counter:%d" % k for k in range(200_000)]),
    "strings-text": (_cmds_strings_text, 200_000, "key (16 B text)",
                     lambda: [b"session:%d" % k for k in range(200_000)]),
    "small-hashes": (_cmds_small_hashes, 500_000, "field (50k hashes × 10)",
                     lambda: [b"user:%d" % k for k in range(50_000)]),
    "large-hash": (_cmds_large_hash, 500_000, "field (1 hash × 500k)", lambda: [b"bighash"]),
    "int-sets": (_cmds_int_sets, 500_000, "member (50k intsets × 10)",
                 lambda: [b"ids:%d" % k for k in range(50_000)]),
    "large-int-set": (_cmds_large_int_set, 500_000, "member (1 set × 500k ints)",
                      lambda: [b"bigintset"]),
    "string-sets": (_cmds_string_sets, 500_000, "member (50k sets × 10)",
                    lambda: [b"tags:%d" % k for k in range(50_000)]),
    "small-zsets": (_cmds_small_zsets, 500_000, "member (50k zsets × 10)",
                    lambda: [b"board:%d" % k for k in range(50_000)]),
    "large-zset": (_cmds_large_zset, 200_000, "member (1 zset × 200k)", lambda: [b"bigzset"]),
}


def _encode(command: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(command) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in command)


def send(port: int, commands, batch: int = 100) -> list[bytes]:
    """Pipelines the commands in batches; returns the raw replies of integer type (`:n`)."""
    numbers = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        chunk: list = []
        for command in list(commands) + [None]:
            if command is not None:
                chunk.append(command)
            if chunk and (len(chunk) == batch or command is None):
                sock.sendall(b"".join(map(_encode, chunk)))
                data = b""
                while data.count(b"\r\n") < len(chunk):
                    data += sock.recv(1 << 20)
                if b"\r\n-" in b"\r\n" + data:
                    raise RuntimeError(data[:200])
                numbers += [int(line[1:]) for line in data.split(b"\r\n") if line[:1] == b":"]
                chunk = []
    return numbers


class MiniredAt(BenchServer):
    """minired from a given tree (its own sources and whatever it has compiled in place)."""

    def __init__(self, tree: str, pure: bool) -> None:
        super().__init__()
        self.tree, self.pure = tree, pure
        self.name = "minired uncompiled" if pure else "minired compiled"

    def start(self) -> "MiniredAt":
        env = dict(os.environ, PYTHONPATH=self.tree)
        env.pop("MINIRED_PURE_PYTHON", None)
        if self.pure:
            env["MINIRED_PURE_PYTHON"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minired", "--port", str(self.port), "--loglevel", "warning",
             "--save", ""], cwd=self.tree, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        wait_ready(self.port)
        return self


def rss_growth(server: BenchServer, load: str) -> int:
    commands, _, _, _ = LOADS[load]
    server.start()
    try:
        time.sleep(0.2)
        base = server.rss_bytes()
        send(server.port, commands())
        time.sleep(0.2)
        return server.rss_bytes() - base
    finally:
        server.stop()


def redis_memory_usage(load: str) -> tuple[int, int]:
    commands, _, _, keys = LOADS[load]
    server = Redis()
    server.start()
    try:
        time.sleep(0.2)
        base = server.rss_bytes()
        send(server.port, commands())
        time.sleep(0.2)
        rss = server.rss_bytes() - base
        usage = sum(send(server.port, ([b"MEMORY", b"USAGE", k, b"SAMPLES", b"0"] for k in keys())))
        return rss, usage
    finally:
        server.stop()


_TRACED = r"""
import json, socket, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import memory
from minired.embed import EmbeddedServer
server = EmbeddedServer(port=0, save="").start()
import gc
gc.collect()
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
memory.send(server.port, memory.LOADS[sys.argv[3]][0]())
time.sleep(0.1)
gc.collect()
after = tracemalloc.get_traced_memory()[0]
print(json.dumps(after - before))
"""


def traced(tree: str, pure: bool, load: str) -> int:
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("MINIRED_PURE_PYTHON", None)
    if pure:
        env["MINIRED_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, "-c", _TRACED, tree, os.path.dirname(os.path.abspath(__file__)),
                          load], cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", default=ROOT, help="the minired checkout to measure")
    parser.add_argument("--only", nargs="*", choices=sorted(LOADS), help="loads to run")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    tree = os.path.abspath(args.tree)
    loads = args.only or list(LOADS)
    compiled = any(name.endswith(".so") for name in os.listdir(os.path.join(tree, "minired", "data")))
    builds = [False, True] if compiled else [True]
    print(f"tree {tree}{'' if compiled else ' (not compiled: uncompiled build only)'}")
    print("| load | per | Redis RSS | Redis MEMORY USAGE | build | minired RSS | tracemalloc | RSS ratio |")
    print("|---|---|---|---|---|---|---|---|")
    figures = {}
    for load in loads:
        _, elements, per, _ = LOADS[load]
        redis_rss, usage = redis_memory_usage(load)
        figures[load] = {"redis_rss": redis_rss, "redis_usage": usage}
        for pure in builds:
            rss = rss_growth(MiniredAt(tree, pure), load)
            held = traced(tree, pure, load)
            build = "uncompiled" if pure else "compiled"
            figures[load][build] = {"rss": rss, "tracemalloc": held}
            print(f"| {load} | {per} | {redis_rss / elements:.1f} B | {usage / elements:.1f} B "
                  f"| {build} | {rss / elements:.1f} B | {held / elements:.1f} B "
                  f"| {rss / redis_rss:.2f}x |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
