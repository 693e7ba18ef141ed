"""Small tools the queue tests share."""
from __future__ import annotations

import time
from typing import Any, Callable

from minired_queue.groups import member_job_id
from minired_queue.job import text
from minired_queue.queue import Queue
from minired_queue.transitions import Fetch, move_to_active


def take(queue: Queue, token: str = "tok", lock_ttl_ms: int = 30_000) -> Fetch:
    """moveToActive until it hands out a job or says there is none (as a worker does)."""
    candidates: tuple[str, ...] = ()
    for _ in range(100):
        fetch = move_to_active(queue.keys, candidates, token, lock_ttl_ms).run(queue.client)
        if fetch.status != "miss":
            return fetch
        candidates = fetch.candidates
    raise AssertionError("moveToActive kept missing")


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def placement(queue: Queue) -> dict[str, list[str]]:
    """Every job id by the state container holding it (lists may hold an id twice); a
    grouped ready job is under ``grouped``, a flow parent waiting for its children under
    ``waiting-children``."""
    client, keys = queue.client, queue.keys
    return {
        "wait": [text(i) for i in client.lrange(keys.wait, 0, -1)],
        "prioritized": [text(i) for i in client.zrange(keys.prioritized, 0, -1)],
        "active": [text(i) for i in client.lrange(keys.active, 0, -1)],
        "delayed": [text(i) for i in client.zrange(keys.delayed, 0, -1)],
        "completed": [text(i) for i in client.zrange(keys.completed, 0, -1)],
        "failed": [text(i) for i in client.zrange(keys.failed, 0, -1)],
        "grouped": [member_job_id(m) for m in client.zrange(keys.group_wait, 0, -1)],  # ready, in a group's line
        "waiting-children": [text(i) for i in client.zrange(keys.waiting_children, 0, -1)],
    }


def assert_each_job_in_exactly_one_state(queue: Queue, job_ids: list[str]) -> None:
    where: dict[str, list[str]] = {job_id: [] for job_id in job_ids}
    for state, ids in placement(queue).items():
        for job_id in ids:
            where.setdefault(job_id, []).append(state)
    bad = {job_id: states for job_id, states in where.items() if len(states) != 1}
    assert not bad, f"jobs not in exactly one state: {bad}"


def server_time_ms(client) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def readme_example(section: str) -> str:
    """The first Python block under a README heading, to run as the README shows it."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "queue" / "README.md").read_text()
    body = readme.split(f"### {section}\n", 1)[1]
    return body.split("```python\n", 1)[1].split("```", 1)[0]
