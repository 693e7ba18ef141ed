"""The reliable queue's recorded requests, replayed over TCP by one lean client: server CPU µs
per job for fetch -> complete, minired against Redis in the same run.

    python bench/queue_replay_tcp.py            # 3,000 jobs, 3 rounds alternating the servers
    python bench/queue_replay_tcp.py -n 500 -r 1

This sits between queue_script_bench.py (the same requests fed in-process: no sockets, no
waiting) and queue_throughput.py (worker processes on redis-py): one client on a raw socket
sends each request once the last reply is in, so the server goes idle and is woken for every
request, but no worker's Python runs on the machine in between. The difference from the
in-process figure is the cost of a socket round trip from idle; the further difference to
queue_throughput.py's server CPU per job is what the workers' own work does to the server.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

import hiredis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from queue_script_bench import record  # noqa: E402
from script_bench import multibulk  # noqa: E402
from servers import Minired, Redis  # noqa: E402

from minired_queue.scripts import SCRIPTS  # noqa: E402


class Connection:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def call(self, request: bytes) -> object:
        self.sock.sendall(request)
        while True:
            reply = self.reader.gets()
            if reply is not False:
                if isinstance(reply, hiredis.ReplyError):
                    raise reply
                return reply
            self.reader.feed(self.sock.recv(65536))

    def close(self) -> None:
        self.sock.close()


def setup_and_measured(requests: list[tuple[str, bytes]]) -> tuple[list[bytes], list[bytes]]:
    """The recording split in two: loading the scripts and adding the jobs, then what is
    measured, the jobs' fetch and complete (also bench/instructions_tcp.py's queue load)."""
    setup = [multibulk(b"SCRIPT", b"LOAD", script.source.encode()) for script in SCRIPTS.values()]
    setup += [request for label, request in requests if label == "addJob"]
    return setup, [request for label, request in requests if label != "addJob"]


def server_us_per_job(server, requests: list[tuple[str, bytes]], jobs: int) -> float:
    """Load the scripts and add the jobs, then time the server's CPU over fetch and complete."""
    setup, measured = setup_and_measured(requests)
    connection = Connection(server.port)
    try:
        for request in setup:
            connection.call(request)
        before = server.cpu_seconds()
        for request in measured:
            connection.call(request)
        return (server.cpu_seconds() - before) / jobs * 1e6
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--jobs", type=int, default=3000)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    opts = parser.parse_args()
    requests = record(opts.jobs)
    results: dict[str, list[float]] = {"redis": [], "minired": []}
    for round_no in range(opts.rounds):
        kinds = (Redis, Minired) if round_no % 2 == 0 else (Minired, Redis)
        for kind in kinds:
            server = kind().start()
            try:
                results[server.name].append(server_us_per_job(server, requests, opts.jobs))
            finally:
                server.stop()
    print(f"Queue requests replayed over TCP, one client, {opts.jobs} jobs, {opts.rounds} round(s); "
          "server CPU µs per job for fetch + complete (lowest round):\n")
    print("| backend | server CPU µs/job | rounds |")
    print("|---|---|---|")
    for name, values in results.items():
        print(f"| {name} | {min(values):.1f} | {', '.join(f'{v:.1f}' for v in values)} |")
    print(f"\nminired/Redis: {min(results['minired']) / min(results['redis']):.2f}x")


if __name__ == "__main__":
    main()
