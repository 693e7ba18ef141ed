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
        """Phase 1 (reads only): which active jobs have no lock?"""
        client, keys = self.queue.client, self.queue.keys
        active = [text(i) for i in client.lrange(keys.active, 0, -1)]
        pipe = client.pipeline(transaction=False)
        for job_id in active:
            pipe.exists(keys.lock(job_id))
        self.stalled = [job_id for job_id, locked in zip(active, pipe.execute()) if not locked]
        return self.stalled

    def move(self) -> None:
        """Phase 2, one more round trip: move them, trusting phase 1 is still true (it may not be)."""
        client, keys = self.queue.client, self.queue.keys
        pipe = client.pipeline(transaction=False)
        for job_id in self.stalled:
            pipe.lrem(keys.active, 1, job_id)
            pipe.rpush(keys.wait, job_id)
        pipe.execute()
