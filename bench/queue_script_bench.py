"""The reliable queue's scripts, in-process: server CPU µs per job for add -> fetch -> complete.

    python bench/queue_script_bench.py            # µs per job, by transition
    python bench/queue_script_bench.py --profile  # plus a cProfile of the whole flow

The queue library's own transitions (the same keys, arguments and scripts a worker sends) run
once against a scratch server while every request is recorded as RESP; the recording is then
fed straight to a fresh server's ClientProtocol: no sockets, no client library, no reply
decoding, no other process. What is timed (process_time, best of several repetitions) is the
server's work alone, so this isolates the part of `queue_throughput.py`'s server CPU per job
that minired controls, and under `valgrind --tool=callgrind` two lengths (-n) differ by the
server's instructions alone.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import hiredis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "queue"))
sys.path.insert(0, HERE)

from script_bench import Transport, multibulk  # noqa: E402

from minired.engine.server import ClientProtocol, Server  # noqa: E402
from minired.startup import prepare_server  # noqa: E402
from minired_queue import JobSpec  # noqa: E402
from minired_queue.keys import QueueKeys  # noqa: E402
from minired_queue.scripts import SCRIPTS  # noqa: E402
from minired_queue.transitions import add_job, complete, move_to_active  # noqa: E402


def _arg(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return str(value).encode()


class RecordingClient:
    """Just enough of redis-py's client for LuaScript.run (evalsha, eval), answering from an
    in-process server and recording every request under the transition's label."""

    def __init__(self, server: Server) -> None:
        self.transport = Transport()
        self.transport.out = []
        self.transport.write = self.transport.out.append  # keep every reply
        self.protocol = ClientProtocol(server)
        self.protocol.connection_made(self.transport)
        self.reader = hiredis.Reader()
        self.label = ""
        self.recorded: list[tuple[str, bytes]] = []

    def command(self, *args: object) -> object:
        request = multibulk(*(_arg(a) for a in args))
        self.recorded.append((self.label, request))
        self.protocol.data_received(request)
        self.reader.feed(b"".join(self.transport.out))
        self.transport.out.clear()
        reply = self.reader.gets()
        if isinstance(reply, hiredis.ReplyError):
            raise reply
        return reply

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: object) -> object:
        return self.command(b"EVALSHA", sha, numkeys, *keys_and_args)

    def eval(self, source: str, numkeys: int, *keys_and_args: object) -> object:
        return self.command(b"EVAL", source, numkeys, *keys_and_args)


def record(jobs: int) -> list[tuple[str, bytes]]:
    """The requests of `jobs` jobs going add -> fetch -> complete, as a worker sends them."""
    client = RecordingClient(prepare_server(Server()))
    for script in SCRIPTS.values():  # as replay() does, and not recorded
        client.command(b"SCRIPT", b"LOAD", script.source)
    client.recorded.clear()
    keys = QueueKeys("bench")

    def run(label: str, call) -> object:
        client.label = label
        return call.run(client)

    for n in range(jobs):
        run("addJob", add_job(keys, JobSpec({"n": n}, job_id=f"job-{n}")))
    candidates: tuple[str, ...] = ()
    for n in range(jobs):
        token = f"worker-1:{n}"
        fetch = run("moveToActive", move_to_active(keys, candidates, token, 30_000))
        if fetch.status == "miss":  # the first fetch names no candidate
            fetch = run("moveToActive", move_to_active(keys, fetch.candidates, token, 30_000))
        assert fetch.status == "active", fetch
        candidates = fetch.candidates
        run("complete", complete(keys, fetch.job, token, None, False))
    return client.recorded


def replay(requests: list[tuple[str, bytes]]) -> dict[str, float]:
    """Feed the recording to a fresh server; process_time spent per label."""
    server = prepare_server(Server())
    transport = Transport()
    protocol = ClientProtocol(server)
    protocol.connection_made(transport)
    for script in SCRIPTS.values():
        protocol.data_received(multibulk(b"SCRIPT", b"LOAD", script.source.encode()))
    spent: dict[str, float] = {}
    clock = time.process_time
    feed = protocol.data_received
    for label, request in requests:
        started = clock()
        feed(request)
        spent[label] = spent.get(label, 0.0) + clock() - started
    if b"-" in b"".join(transport.out)[:1]:
        raise RuntimeError(f"the replay got an error: {transport.out[:2]!r}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000, help="jobs per repetition")
    parser.add_argument("-r", type=int, default=5, help="repetitions (best is kept)")
    parser.add_argument("--profile", action="store_true")
    opts = parser.parse_args()

    requests = record(opts.n)
    best: dict[str, float] = {}
    for _ in range(opts.r):
        for label, seconds in replay(requests).items():
            best[label] = min(best.get(label, float("inf")), seconds)
    total = 0.0
    for label, seconds in best.items():
        per_job = seconds / opts.n * 1e6
        total += per_job
        print(f"{label:<14} {per_job:7.1f} µs/job")
    print(f"{'all':<14} {total:7.1f} µs/job (in-process, best of {opts.r} x {opts.n} jobs)")

    if opts.profile:
        profile = cProfile.Profile()
        profile.enable()
        replay(requests)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main()
