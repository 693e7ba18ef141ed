"""A deliberately broken recovery sweep, kept only to show why the real one is one script.

It checks the locks in one round trip and moves the jobs in another. Two such sweeps
that overlap both see the same lock-less jobs and both push them back to wait, so each
stalled job is delivered twice. Never use this outside the contrast test.
"""
from __future__ import annotations

from minired_queue.job import text
from minired_queue.queue import Queue


class NonAtomicSweep:
    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self.stalled: list[str] = []

    def check(self) -> list[str]:
        """Round trip 1: which active jobs have no lock?"""
        client, keys = self.queue.client, self.queue.keys
        active = [text(i) for i in client.lrange(keys.active, 0, -1)]
        self.stalled = [job_id for job_id in active if not client.exists(keys.lock(job_id))]
        return self.stalled

    def move(self) -> None:
        """Round trip 2: move them, trusting round trip 1 is still true (it may not be)."""
        client, keys = self.queue.client, self.queue.keys
        for job_id in self.stalled:
            client.lrem(keys.active, 1, job_id)
            client.rpush(keys.wait, job_id)
