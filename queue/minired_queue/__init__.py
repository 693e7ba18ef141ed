"""minired_queue: a reliable job queue on Redis, Redis Cluster and minired.

A job is never lost (it moves between states only inside atomic Lua scripts), never
stuck (locks expire and the recovery sweep hands orphaned jobs back), and its effects
can be made exactly-once with dedup markers. See queue/PROTOCOL.md.
"""
from .job import Backoff, Job, JobSpec
from .keys import QueueKeys
from .queue import Queue, known_queues
from .sweeper import AsyncSweeper, Sweeper
from .transitions import AddResult, RedisOp, SweepResult

__all__ = [
    "AddResult", "AsyncSweeper", "Backoff", "Job", "JobSpec", "Queue", "QueueKeys", "RedisOp",
    "SweepResult", "Sweeper", "known_queues",
]
