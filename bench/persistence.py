"""dump.rdb load and save times, minired against Redis, and how long BGSAVE holds up requests.

A dataset of --keys keys (mostly short strings, with lists, hashes, sorted sets and streams
mixed in) is built in redis-server and SAVEd; then for each server: start-up on that file (time
to the first PONG, minus the time to start on an empty directory), SAVE, and the longest PING
round trip seen while a BGSAVE runs. The last is the one the event loop cares about: minired's
BGSAVE forks, so it should cost about what Redis's fork does.

    python bench/persistence.py                  # 200k keys (~1 min)
    python bench/persistence.py --keys 1000000
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
from bench.servers import wait_ready
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
        else:
            pipe.set(f"key:{i}", f"value-{i}-" + "x" * 20)
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def start(name: str, directory: str) -> tuple[subprocess.Popen, int, float]:
    port = free_port()
    if name == "redis":
        cmd = ["redis-server", "--port", str(port), "--dir", directory, "--save", "",
               "--appendonly", "no"]
    else:
        cmd = [sys.executable, "-m", "minired", "--port", str(port), "--dir", directory]
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, port, wait_ready(port, timeout=600) - began


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(30)


def ping_stall_during_bgsave(port: int) -> float:
    """The longest PING round trip while a BGSAVE runs (from just before it is asked for)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        r = redis.Redis(port=port)
        worst = 0.0
        r.bgsave()
        while True:
            began = time.perf_counter()
            s.sendall(b"PING\r\n")
            s.recv(16)
            worst = max(worst, time.perf_counter() - began)
            if not r.info("persistence")["rdb_bgsave_in_progress"]:
                return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-persistence-")
    try:
        source = os.path.join(work, "source")
        os.mkdir(source)
        proc, port, _ = start("redis", source)
        build(redis.Redis(port=port), args.keys)
        redis.Redis(port=port).save()
        stop(proc)
        size = os.path.getsize(os.path.join(source, "dump.rdb"))
        print(f"{args.keys} keys, dump.rdb {size / 1e6:.1f} MB (written by Redis)")
        print(f"{'':10} {'load s':>8} {'SAVE s':>8} {'BGSAVE stall ms':>16}")
        for name in ("redis", "minired"):
            empty = os.path.join(work, name + "-empty")
            os.mkdir(empty)
            proc, _, baseline = start(name, empty)
            stop(proc)
            directory = os.path.join(work, name)
            os.mkdir(directory)
            shutil.copy(os.path.join(source, "dump.rdb"), directory)
            proc, port, loaded = start(name, directory)
            try:
                r = redis.Redis(port=port)
                assert r.dbsize() == args.keys, r.dbsize()
                began = time.perf_counter()
                r.save()
                saved = time.perf_counter() - began
                stall = ping_stall_during_bgsave(port)
            finally:
                stop(proc)
            print(f"{name:10} {loaded - baseline:8.2f} {saved:8.2f} {stall * 1000:16.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
