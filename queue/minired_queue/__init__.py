"""minired_queue: a reliable job queue on Redis, Redis Cluster and minired.

A job is never lost (it moves between states only inside atomic Lua scripts), never
stuck (locks expire and the recovery sweep hands orphaned jobs back), and its effects
can be made exactly-once with dedup markers. Priorities, repeatable and cron jobs, a
queue-wide rate limit and concurrency cap, progress, retention and metrics come on top,
each an atomic script as well. See queue/README.md and queue/PROTOCOL.md.
"""
from .active import ActiveJob, AsyncActiveJob
from .errors import JobFailed, JobRemoved, JobTimeoutError
from .events import AsyncQueueEvents, QueueEvent, QueueEvents
from .job import Backoff, Job, JobSpec
from .keys import QueueKeys
from .queue import AsyncQueue, Queue, known_queues
from .repeat import Repeatable, Schedule
from .sweeper import AsyncSweeper, Sweeper
from .transitions import AddResult, RedisOp, SweepResult

__all__ = [
    "ActiveJob", "AddResult", "AsyncActiveJob", "AsyncQueue", "AsyncQueueEvents", "AsyncSweeper", "Backoff", "Job",
    "JobFailed", "JobRemoved", "JobSpec", "JobTimeoutError", "Queue", "QueueEvent", "QueueEvents", "QueueKeys", "RedisOp", "Repeatable", "Schedule", "SweepResult", "Sweeper", "known_queues",
]
