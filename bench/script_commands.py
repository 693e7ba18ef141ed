"""Server CPU per redis.call inside a script, redis-server against minired checkouts, in one run.

    python bench/script_commands.py [--calls 2000] [--rounds 5] [TREE[:pure] ...]

The commands are the ones BullMQ's and the reliable queue's scripts make on every job, each with
its usual shape (a hash with missing fields, a small sorted set, a stream trimmed with MAXLEN ~).
For each, one script loops over the call `--calls` times; it runs `--rounds` times on every
server in turn, and the lowest server CPU time (/proc/PID/task/*/schedstat) per loop turn is
reported, with its ratio to Redis's. The loop itself costs both servers ~0.02 µs a turn.

Each TREE (default: this checkout) is a directory holding minired/, built in place (the old
build of an old-against-new run); `TREE:pure` runs it uncompiled (MINIRED_PURE_PYTHON=1).
"""
from __future__ import annotations

import argparse
import os
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import ROOT, BenchServer, Checkout, Redis

# (label, commands run before, the loop's body); the script's key is KEYS[1] = "k".
_HUNDRED = ["ZADD", "k", *[x for i in range(100) for x in (str(i), f"m{i}")]]
_THOUSAND = ["ZADD", "k", *[x for i in range(1000) for x in (str(i), f"m{i}")]]
CASES = [
    ("GET (a missing key)", [], "redis.call('GET', 'missing')"),
    ("EXISTS", [["SET", "k", "v"]], "redis.call('EXISTS', KEYS[1])"),
    ("HGET", [["HSET", "k", "f", "v"]], "redis.call('HGET', KEYS[1], 'f')"),
    ("HMGET (4 fields, 2 missing)", [["HSET", "k", "a", "1", "b", "2"]],
     "redis.call('HMGET', KEYS[1], 'a', 'b', 'c', 'd')"),
    ("HSET", [], "redis.call('HSET', KEYS[1], 'f', i)"),
    ("INCR", [], "redis.call('INCR', KEYS[1])"),
    ("SET ... PX", [], "redis.call('SET', KEYS[1], 'token', 'PX', 30000)"),
    ("RPOPLPUSH (one element, back and forth)", [["LPUSH", "k", "job"]],
     "redis.call('RPOPLPUSH', KEYS[1], KEYS[1])"),
    ("LPUSH + LREM -1", [], "redis.call('LPUSH', KEYS[1], 'x') redis.call('LREM', KEYS[1], -1, 'x')"),
    ("ZADD (100 members)", [_HUNDRED], "redis.call('ZADD', KEYS[1], i % 100, 'm5')"),
    ("ZADD + ZREMRANGEBYRANK 0 -1", [],
     "redis.call('ZADD', KEYS[1], 1, 'a') redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1)"),
    ("ZRANGEBYSCORE ... LIMIT 0 1 (100 members)", [_HUNDRED],
     "redis.call('ZRANGEBYSCORE', KEYS[1], 0, 1733574000000, 'LIMIT', 0, 1)"),
    ("ZREVRANGE 0 0 (100 members)", [_HUNDRED], "redis.call('ZREVRANGE', KEYS[1], 0, 0)"),
    ("ZREVRANGE 1000 -1 (1,000 members)", [_THOUSAND], "redis.call('ZREVRANGE', KEYS[1], 1000, -1)"),
    ("XADD MAXLEN ~ 10000", [],
     "redis.call('XADD', KEYS[1], 'MAXLEN', '~', 10000, '*', 'event', 'added', 'jobId', i)"),
]


def per_call(server: BenchServer, client: redis.Redis, setup: list, body: str, calls: int,
             rounds: int) -> float:
    """The lowest server CPU µs per loop turn over the rounds."""
    sha = client.script_load(f"for i = 1, {calls} do {body} end return 1")
    best = float("inf")
    for _ in range(rounds):
        client.flushall()
        for command in setup:
            client.execute_command(*command)
        before = server.cpu_seconds()
        client.evalsha(sha, 1, "k")
        best = min(best, server.cpu_seconds() - before)
    return best / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("trees", nargs="*", default=[ROOT])
    args = parser.parse_args()
    servers: list[BenchServer] = [Redis(), *(Checkout(tree) for tree in args.trees)]
    rows = []
    try:
        for server in servers:
            server.start()
        clients = [redis.Redis(port=server.port) for server in servers]
        for label, setup, body in CASES:
            figures = [per_call(server, client, setup, body, args.calls, args.rounds)
                       for server, client in zip(servers, clients)]
            rows.append((label, figures))
            print(f"{label}: " + ", ".join(f"{f:.2f}" for f in figures), flush=True)
    finally:
        for server in servers:
            server.stop()
    names = [server.name for server in servers]
    print("\n| command, inside a script (µs of server CPU per call) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label, figures in rows:
        cells = [f"{figures[0]:.2f}"] + [f"{f:.2f} ({f / figures[0]:.2f}x)" for f in figures[1:]]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
