"""How the cost of one command grows with the size of its data: each command runs on data of
size n and of size 8n, and the ratio of the two server-side durations (read back from SLOWLOG,
so reply encoding and the client do not count) is printed. Linear work gives about 8 (more on a
loaded machine: caches and the collector), quadratic work about 64.

    python bench/complexity.py [n]        # default n = 20000; an embedded minired

Used for issue 20's audit of long-running commands (KEYS, SCAN with a huge COUNT, SORT, set
algebra, random draws); see bench/README.md for what it found.
"""
from __future__ import annotations

import sys

import redis

from minired.embed import EmbeddedServer

COMMANDS = [
    ("SUNION", "s1", "s2", "s3"), ("SINTER", "s1", "s2", "s3"), ("SDIFF", "s1", "s2", "s3"),
    ("SINTERCARD", 3, "s1", "s2", "s3"), ("ZUNIONSTORE", "d", 2, "z1", "z2"),
    ("ZINTERSTORE", "d", 2, "z1", "z2"), ("ZDIFF", 2, "z1", "z2"), ("SORT", "s1", "ALPHA"),
    ("SORT", "s2", "BY", "w_*", "GET", "#", "GET", "w_*"), ("KEYS", "w_m1*"),
    ("KEYS", "*1*2*3*4*5*6*7*8*9*0*x"), ("SCAN", 0, "COUNT", 10**9), ("SCAN", 0, "COUNT", 10),
    ("SSCAN", "s1", 0, "MATCH", "*1*2*x", "COUNT", 10**9), ("HSCAN", "h", 0, "COUNT", 10**9),
    ("ZSCAN", "z1", 0, "COUNT", 10**9), ("ZRANGEBYLEX", "z1", "-", "+"),
    ("SRANDMEMBER", "s3"), ("HRANDFIELD", "h"), ("RANDOMKEY",), ("ZRANDMEMBER", "z2"),
]


def fill(r: redis.Redis, n: int) -> None:
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for start in range(0, n, 2000):
        part = [f"m{i}" for i in range(start, min(n, start + 2000))]
        pipe.sadd("s1", *part)
        pipe.sadd("s2", *part[::2])
        pipe.sadd("s3", *part[::3])
        pipe.zadd("z1", {m: i for i, m in enumerate(part, start)})
        pipe.zadd("z2", {m: -i for i, m in enumerate(part, start)})
        pipe.hset("h", mapping={m: m for m in part})
        pipe.mset({f"w_{m}": 1 for m in part})
    pipe.execute()


def server_ms(r: redis.Redis, command: tuple) -> float:
    best = float("inf")
    for _ in range(3):
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        r.execute_command(*command)
        r.config_set("slowlog-log-slower-than", -1)
        entries = [e for e in r.slowlog_get(-1)
                   if not e["command"].lower().startswith((b"config", b"slowlog"))]
        best = min(best, max(e["duration"] for e in entries) / 1000)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    with EmbeddedServer(port=0) as server:
        r = redis.Redis(port=server.port)
        times = {}
        for size in (n, 8 * n):
            fill(r, size)
            for command in COMMANDS:
                times.setdefault(command, []).append(server_ms(r, command))
    print(f"{'command':50s} {n:>8d} {8 * n:>9d}   ratio")
    for command, (small, big) in times.items():
        name = " ".join(map(str, command))[:50]
        print(f"{name:50s} {small:7.2f}ms {big:8.2f}ms  x{big / max(small, 1e-3):5.1f}")


if __name__ == "__main__":
    main()
