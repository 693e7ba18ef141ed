"""``minired-queue demo --faults``: the guarantees watched failing over and recovering.

An embedded minired with fault injection (MINIRED FAULT) makes the server fail exactly where
the queue is exposed: acknowledgements lost on the way there and on the way back, fetches
refused or whose reply is cut, heartbeats that never arrive, a LOADING window and every
connection cut at once. Each scenario runs worker threads over a fresh queue whose handler
applies one effect guarded by its dedup marker and the same effect unguarded, and prints what
the faults did and what the queue made of them: nothing lost, each guarded effect once.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from .chaos import effect_handler, guarded_key, unguarded_key
from .connection import connect
from .job import text
from .options import WorkerOptions
from .queue import Queue
from .scripts import SCRIPTS
from .worker import Worker

LOADING = "LOADING Redis is loading the dataset in memory"


@dataclass
class Outcome:
    name: str
    jobs: int
    completed: int
    fired: int
    guarded: dict[str, int]
    unguarded: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.completed == self.jobs and self.guarded == {k: 1 for k in self.unguarded} \
            and len(self.guarded) == self.jobs

    def lines(self) -> list[str]:
        duplicates = sum(n - 1 for n in self.unguarded.values())
        return [f"faults fired:  {self.fired}",
                f"never lost:    {'YES' if self.completed == self.jobs else 'NO'} - "
                f"{self.completed}/{self.jobs} jobs completed",
                f"effects once:  {'YES' if self.ok else 'NO'} - with the marker "
                f"{sum(self.guarded.values())} effects; without it {sum(self.unguarded.values())} "
                f"({duplicates} duplicates)"]


def _quoted(word: Any) -> str:
    word = str(word)
    return f'"{word}"' if " " in word else word


class _Scenario:
    """Workers over a fresh queue on the demo server, until every job is completed."""

    def __init__(self, server: Any, jobs: int, workers: int, work_ms: int,
                 heartbeat_s: float | None) -> None:
        self.server = server
        self.client = connect(server.url)
        self.queue = Queue(f"faults-{uuid.uuid4().hex[:6]}", self.client)
        self.ids = [self.queue.add({"work_ms": work_ms}, attempts=5) for _ in range(jobs)]
        options = WorkerOptions(lock_ttl_ms=30_000, heartbeat_interval_s=heartbeat_s,
                                sweep_interval_s=0.05, block_timeout_s=0.2, max_stalled=50)
        self.workers = [Worker(self.queue.keys, connect(server.url), effect_handler, options)
                        for _ in range(workers)]

    def completed(self) -> int:
        try:
            return self.queue.counts()["completed"]
        except Exception:  # the demo's own client meets the faults too
            return -1

    def run(self, during: Callable[["_Scenario"], None], timeout_s: float = 60) -> None:
        for worker in self.workers:
            worker.start()
        try:
            during(self)
            self.until(lambda: self.completed() == len(self.ids), timeout_s)
        finally:
            for worker in self.workers:
                worker.stop(wait=True, timeout=10)
                worker.client.close()

    def until(self, predicate: Callable[[], bool], timeout_s: float = 60) -> None:
        """Wait for predicate; a job left in active with no worker holding it (its owner lost
        track of it) has its lock lapsed by moving the server clock, so the sweep recovers it."""
        deadline = time.monotonic() + timeout_s
        orphans = None
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("the queue did not finish in time")
            try:
                active = sorted(self.client.lrange(self.queue.keys.active, 0, -1))
            except Exception:
                active = []
            held = any(worker._in_flight for worker in self.workers)
            seen = active if active and not held else None
            if seen is not None and seen == orphans:
                self.server.advance_clock(60_000)
                seen = None
            orphans = seen
            time.sleep(0.05)

    def outcome(self, name: str, fired: int) -> Outcome:
        client, keys = self.client, self.queue.keys
        guarded = {text(k): int(v) for k, v in client.hgetall(guarded_key(keys)).items()}
        unguarded = {text(k): int(v) for k, v in client.hgetall(unguarded_key(keys)).items()}
        client.close()
        return Outcome(name, len(self.ids), self.completed(), fired, guarded, unguarded)


def run_fault_demo(jobs: int = 60, workers: int = 3, seed: int | None = None,
                   say: Callable[[str], Any] = print) -> list[Outcome]:
    from minired.embed import EmbeddedServer

    seed = 7 if seed is None else seed
    outcomes = []
    with EmbeddedServer(time_control=True, fault_injection=True) as server:
        loader = connect(server.url)
        for script in SCRIPTS.values():  # rules on a script meet it running, not its NOSCRIPT
            loader.script_load(script.source)
        loader.close()
        faults = server.faults
        complete, fetch, heartbeat = (SCRIPTS[n].sha for n in ("complete", "moveToActive", "extendLock"))

        def scenario(name: str, story: str, rules: list[tuple], during=lambda s: None,
                     work_ms: int = 10, heartbeat_s: float | None = None) -> None:
            say(f"\n== {name}\n   {story}")
            faults.reset()
            added = [faults.add(*action, **match) for action, match in rules]
            for (action, match) in rules:
                say(f"   MINIRED FAULT ADD {' '.join(map(_quoted, action))} "
                    + " ".join(f"{k.upper().replace('_', '-')} {v}" for k, v in match.items()))
            run = _Scenario(server, jobs, workers, work_ms, heartbeat_s)
            run.run(during)
            outcome = run.outcome(name, sum(rule.fired for rule in added))
            faults.reset()
            for line in outcome.lines():
                say(f"   {line}")
            outcomes.append(outcome)

        scenario("lost acknowledgements",
                 "complete cut before it runs (the job is redelivered once its lock lapses), "
                 "or run with its reply cut (the worker cannot tell it succeeded)",
                 [(("DROP",), dict(script=complete, probability=0.2, seed=seed)),
                  (("DROP-REPLY",), dict(script=complete, probability=0.2, seed=seed + 1))])
        scenario("failed fetches",
                 "moveToActive refused with LOADING or OOM, or run with its reply cut (the job "
                 "sits in active under a token nobody holds until the sweep takes it back)",
                 [(("ERROR", LOADING), dict(script=fetch, probability=0.2, seed=seed)),
                  (("ERROR", "OOM command not allowed when used memory > 'maxmemory'."),
                   dict(script=fetch, probability=0.1, seed=seed + 1)),
                  (("DROP-REPLY",), dict(script=fetch, probability=0.1, seed=seed + 2))])

        def lapse_held_locks(run: _Scenario) -> None:
            run.until(lambda: any(worker._in_flight for worker in run.workers))
            server.advance_clock(60_000)  # every lock held now lapses: heartbeats never came
            say("   moved the clock past every lock TTL while workers held jobs")

        scenario("lost heartbeats",
                 "every heartbeat is cut, then locks lapse under running jobs: the sweep hands "
                 "them to other workers and the late acknowledgements are refused",
                 [(("DROP",), dict(script=heartbeat))], during=lapse_held_locks, work_ms=300,
                 heartbeat_s=0.05)

        def restart(run: _Scenario) -> None:
            run.until(lambda: run.completed() >= jobs // 4)
            faults.loading(300)
            say("   LOADING for 300 ms")
            run.until(lambda: run.completed() >= jobs // 2)
            say(f"   KILL-CLIENTS: {faults.kill_clients()} connection(s) cut")

        scenario("a restart", "a LOADING window, then every connection cut at once: workers "
                 "reconnect and carry on", [], during=restart)
    return outcomes


def main(jobs: int, workers: int, seed: int | None, verbose: bool = False) -> int:
    if not verbose:  # the workers' warnings about each fault would drown the story
        logging.getLogger("minired_queue").setLevel(logging.CRITICAL)
    outcomes = run_fault_demo(jobs, workers, seed)
    print()
    for outcome in outcomes:
        print(f"{outcome.name:24} {'OK' if outcome.ok else 'FAILED'}")
    return 0 if all(outcome.ok for outcome in outcomes) else 1


if __name__ == "__main__":
    import sys

    sys.exit(main(60, 3, None))
