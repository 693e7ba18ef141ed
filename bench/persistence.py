"""dump.rdb load and save times, minired against Redis, and how long BGSAVE holds up requests.

A dataset of --keys keys (mostly short strings, with lists, hashes, sorted sets, sets and streams
mixed in) is built in redis-server and SAVEd; then for each server: start-up on that file (time
to the first PONG, minus the time to start on an empty directory), SAVE, and the longest PING
round trip seen while a BGSAVE runs. The last is the one the event loop cares about: minired's
BGSAVE forks, so it should cost about what Redis's fork does. Load and SAVE are also given in the
server's CPU time, steadier than wall time on a shared machine. Last, each minired build loads
and saves the file in-process (`rdb_file.load`, `save_chunks`; CPU seconds, the lowest of
--rounds): the same work without start-up, logging or fsync.

    python bench/persistence.py                  # 200k keys (~1 min)
    python bench/persistence.py --keys 1000000
    # several minired builds in one run (each a source tree; ":pure" runs it uncompiled):
    python bench/persistence.py --minired main=/tmp/main --minired main-pure=/tmp/main:pure \
        --minired new=. --minired new-pure=.:pure --rounds 3
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.servers import cpu_seconds, wait_ready
from tests.support.servers import free_port


def build(r: redis.Redis, keys: int) -> None:
    pipe = r.pipeline(transaction=False)
    for i in range(keys):
        kind = i % 20
        if kind == 0:
            pipe.rpush(f"list:{i}", *range(20))
        elif kind == 1:
            pipe.hset(f"hash:{i}", mapping={f"f{j}": j for j in range(10)})
        elif kind == 2:
            pipe.zadd(f"zset:{i}", {f"m{j}": j for j in range(10)})
        elif kind == 3:
            pipe.xadd(f"stream:{i}", {"f": i, "g": "value"})
        elif kind == 4:  # sets: intsets, and string sets (a listpack from Redis 7.2 on)
            if i % 40 == 4:
                pipe.sadd(f"set:{i}", *range(i % 50, i % 50 + 12))
            else:
                pipe.sadd(f"set:{i}", *[f"member{j}" for j in range(12)])
        else:
            pipe.set(f"key:{i}", f"value-{i}-" + "x" * 20)
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def start(name: str, directory: str, tree: str | None = None) -> tuple[subprocess.Popen, int, float]:
    """Start Redis (name "redis") or minired; `tree` is a minired source tree to run (with
    ":pure" after it, uncompiled), else the minired this Python imports."""
    port = free_port()
    env = cwd = None
    if name == "redis":
        cmd = ["redis-server", "--port", str(port), "--dir", directory, "--save", "",
               "--appendonly", "no"]
    else:
        cmd = [sys.executable, "-m", "minired", "--port", str(port), "--dir", directory]
        if tree:
            path, _, pure = tree.partition(":")
            # `python -m` puts the working directory first on sys.path: run from the tree.
            cwd = os.path.abspath(path)
            env = dict(os.environ, PYTHONPATH=cwd)
            env.pop("MINIRED_PURE_PYTHON", None)
            if pure:
                env["MINIRED_PURE_PYTHON"] = "1"
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            cwd=cwd)
    return proc, port, wait_ready(port, timeout=600) - began


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(30)


def ping_stall_during_bgsave(port: int) -> float:
    """The longest PING round trip while a BGSAVE runs (from just before it is asked for)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        r = redis.Redis(port=port, socket_timeout=900)
        worst = 0.0
        r.bgsave()
        while True:
            began = time.perf_counter()
            s.sendall(b"PING\r\n")
            s.recv(16)
            worst = max(worst, time.perf_counter() - began)
            if not r.info("persistence")["rdb_bgsave_in_progress"]:
                return worst


def memory_mb(pid: int) -> tuple[float, float]:
    """The process's resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            fields[name] = value
    return tuple(int(fields[name].split()[0]) * 1024 / 1e6 for name in ("VmRSS", "VmHWM"))


def measure(work: str, name: str, tree: str, keys: int, round_: int) -> list[float]:
    """[load s, load CPU s, SAVE s, SAVE CPU s, BGSAVE stall s, RSS MB, peak RSS MB] of one
    server on the file. Loading is start-up on the file less start-up on an empty directory,
    in wall time and in the server's CPU time (steadier on a shared machine: other tenants only
    add wall time); the memory is the server's right after loading (RSS and its peak so far,
    which counts what loading held only while it ran)."""
    empty = os.path.join(work, f"{name}-empty-{round_}")
    os.mkdir(empty)
    proc, _, baseline = start(name, empty, tree)
    baseline_cpu = cpu_seconds(proc.pid)
    stop(proc)
    directory = os.path.join(work, f"{name}-{round_}")
    os.mkdir(directory)
    shutil.copy(os.path.join(work, "source", "dump.rdb"), directory)
    proc, port, loaded = start(name, directory, tree)
    try:
        loaded_cpu = cpu_seconds(proc.pid)
        r = redis.Redis(port=port, socket_timeout=900)
        assert r.dbsize() == keys, r.dbsize()
        rss, peak = memory_mb(proc.pid)
        cpu_before = cpu_seconds(proc.pid)
        began = time.perf_counter()
        r.save()
        saved = time.perf_counter() - began
        saved_cpu = cpu_seconds(proc.pid) - cpu_before
        stall = ping_stall_during_bgsave(port)
    finally:
        stop(proc)
    return [loaded - baseline, loaded_cpu - baseline_cpu, saved, saved_cpu, stall, rss, peak]


# Runs in a minired tree: load the file and save it in-process, print the CPU seconds of each.
_IN_PROCESS = """
import sys, time
from minired.data.keyspace import Keyspace
from minired.features import rdb, rdb_file
data = open(sys.argv[1], "rb").read()
best_load = best_save = float("inf")
for _ in range(int(sys.argv[2])):
    keyspace = Keyspace(16)
    began = time.process_time()
    rdb_file.load(data, keyspace, 0)
    best_load = min(best_load, time.process_time() - began)
    began = time.process_time()
    for _ in rdb_file.save_chunks(keyspace, [], 0, 0, compact=rdb.Compact()):
        pass
    best_save = min(best_save, time.process_time() - began)
print(best_load, best_save)
"""


def in_process(tree: str, path: str, rounds: int) -> list[float]:
    """[load CPU s, save CPU s] of one minired build, in-process."""
    env = None
    cwd = None
    if tree:
        tree_path, _, pure = tree.partition(":")
        cwd = os.path.abspath(tree_path)
        env = dict(os.environ, PYTHONPATH=cwd)
        env.pop("MINIRED_PURE_PYTHON", None)
        if pure:
            env["MINIRED_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, "-c", _IN_PROCESS, path, str(rounds)], env=env,
                         cwd=cwd, capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--minired", action="append", metavar="LABEL=TREE[:pure]",
                        help="a minired build to time (repeatable; default: the installed one)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat, alternating the order; each figure is its lowest round")
    args = parser.parse_args()
    builds = [tuple(spec.split("=", 1)) for spec in args.minired or ["minired="]]
    work = tempfile.mkdtemp(prefix="bench-persistence-")
    try:
        source = os.path.join(work, "source")
        os.mkdir(source)
        proc, port, _ = start("redis", source)
        build(redis.Redis(port=port, socket_timeout=900), args.keys)
        redis.Redis(port=port, socket_timeout=900).save()
        stop(proc)
        size = os.path.getsize(os.path.join(source, "dump.rdb"))
        print(f"{args.keys} keys, dump.rdb {size / 1e6:.1f} MB (written by Redis)")
        names = [("redis", "")] + builds
        best: dict[str, list[float]] = {}
        for round_ in range(args.rounds):
            # Alternate the order between rounds, so drifts in machine load hit every build.
            for name, tree in names if round_ % 2 == 0 else names[::-1]:
                figures = measure(work, name, tree, args.keys, round_)
                best[name] = [min(pair) for pair in zip(best.get(name, figures), figures)]
        print(f"{'':14} {'load s':>8} {'load CPU s':>11} {'SAVE s':>8} {'SAVE CPU s':>11} "
              f"{'BGSAVE stall ms':>16} {'RSS MB':>8} {'peak MB':>8} {'RSS/Redis':>10}")
        for name, _ in names:
            load, load_cpu, save, save_cpu, stall, rss, peak = best[name]
            print(f"{name:14} {load:8.2f} {load_cpu:11.2f} {save:8.2f} {save_cpu:11.2f} "
                  f"{stall * 1000:16.1f} {rss:8.1f} {peak:8.1f} {rss / best['redis'][5]:9.2f}x")
        print(f"\nin-process, CPU s (lowest of {args.rounds})")
        print(f"{'':14} {'load':>8} {'save':>8}")
        for name, tree in builds:
            load_cpu, save_cpu = in_process(tree, os.path.join(work, "source", "dump.rdb"),
                                            args.rounds)
            print(f"{name:14} {load_cpu:8.3f} {save_cpu:8.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
