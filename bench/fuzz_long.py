"""The long protocol fuzz run: random and malformed RESP/inline input from many connections at
once against a minired subprocess, checking after every round that a fresh connection still
gets PONG and that resident memory stays flat under huge length headers.

    python bench/fuzz_long.py [--seconds 120] [--connections 32] [--seed N]

Prints the cases run, protocol errors seen, and the server's RSS before and after.
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from minired.embed import SubprocessServer

PIECES = [b"*", b"$", b"\r\n", b"\n", b"\r", b"-", b"+", b":", b'"', b"'", b"\\x4", b"PING",
          b"SET", b"GET", b"ECHO", b"*1\r\n", b"*2\r\n", b"*3\r\n", b"$3\r\n", b"$-1\r\n",
          b"$500000000\r\n", b"*1048576\r\n", b"*2147483648\r\n", b"0", b"9" * 20, b" ", b"\x00"]


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def random_payload(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.5:
        return b"".join(rng.choice(PIECES) if rng.random() < 0.7 else rng.randbytes(rng.randint(1, 30))
                        for _ in range(rng.randint(1, 40)))
    if kind < 0.7:  # a valid command truncated at a random point
        arg = rng.randbytes(rng.randint(0, 200))
        frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%b\r\n" % (len(arg), arg)
        return frame[:rng.randint(1, len(frame))]
    if kind < 0.8:  # a very long line
        return rng.choice([b"A", b"*", b"$", b"*1\r\n$"]) + b"9" * rng.randint(60_000, 200_000)
    if kind < 0.9:  # many tiny commands at once
        return b"PING\r\n" * rng.randint(1000, 50_000)
    return rng.randbytes(rng.randint(1, 5000))


def ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(7) == b"+PONG\r\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    print(f"seed {args.seed}, {args.connections} connections, {args.seconds:.0f} s")

    cases = 0
    errors_seen = 0
    failures: list[str] = []
    lock = threading.Lock()
    with SubprocessServer() as server:
        pid = server.proc.pid
        start_rss = rss(pid)
        deadline = time.monotonic() + args.seconds

        def worker(index: int) -> None:
            nonlocal cases, errors_seen
            rng = random.Random(args.seed * 1000 + index)
            while time.monotonic() < deadline:
                payload = random_payload(rng)
                try:
                    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                        sock.sendall(payload)
                        sock.settimeout(0.05)
                        try:
                            reply = sock.recv(65536)
                        except socket.timeout:
                            reply = b""
                except ConnectionError:
                    reply = b""
                except OSError as exc:
                    failures.append(f"connect failed: {exc!r}")
                    return
                with lock:
                    cases += 1
                    errors_seen += b"Protocol error" in reply

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.connections)]
        for t in threads:
            t.start()
        rounds = 0
        while any(t.is_alive() for t in threads):
            time.sleep(1)
            rounds += 1
            if not ping(server.port):
                failures.append(f"no PONG after {cases} cases")
                break
        for t in threads:
            t.join()

        # Length headers from many connections: nothing may be allocated before data arrives.
        header_rss_before = rss(pid)
        held = []
        for _ in range(500):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(b"*1\r\n$500000000\r\n")
            held.append(sock)
        ping(server.port)
        header_rss_after = rss(pid)
        for sock in held:
            sock.close()
        alive = ping(server.port)
        end_rss = rss(pid)

    mb = 1024 * 1024
    print(f"cases run:               {cases}")
    print(f"protocol errors replied: {errors_seen}")
    print(f"liveness checks:         {rounds}, server alive at end: {alive}")
    print(f"RSS start / end:         {start_rss / mb:.1f} MB / {end_rss / mb:.1f} MB")
    print(f"RSS with 500 x 500 MB length headers held: {header_rss_before / mb:.1f} MB -> "
          f"{header_rss_after / mb:.1f} MB")
    for failure in failures:
        print("FAILURE:", failure)
    grew = header_rss_after - header_rss_before > 32 * mb
    return 1 if failures or not alive or grew else 0


if __name__ == "__main__":
    sys.exit(main())
