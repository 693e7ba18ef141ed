"""Exceptions a handler may raise to steer what happens to its job."""


class UnrecoverableError(Exception):
    """Raise from a handler to dead-letter the job now, whatever attempts it has left."""


class UnreadableJobError(UnrecoverableError):
    """A fetched job whose stored record cannot be read (a field that is not an integer or
    not JSON, written by hand or by a client not keeping to the protocol). The worker fails
    it at once, without running the handler, instead of dying on it."""


class JobTimeoutError(Exception):
    """An attempt ran past the job's ``timeout_ms``: the worker failed the attempt with this
    error (it counts like any failure, retried while attempts remain) and freed its slot.
    An ``async def`` handler is cancelled; a plain handler's thread cannot be stopped and
    may run on, its outcome then refused."""


class JobFailed(Exception):
    """What waiting for a job raises when it ended in the failed set: ``reason`` is its
    ``failedReason`` ('expired' for a job whose TTL passed before it started)."""

    def __init__(self, job_id: str, reason: str | None) -> None:
        super().__init__(f"job {job_id} failed: {reason}")
        self.job_id = job_id
        self.reason = reason


class JobRemoved(Exception):
    """What waiting for a job raises when the job does not exist, or was removed (or
    replaced by a debounced one) before it finished."""

    def __init__(self, job_id: str, why: str = "removed") -> None:
        super().__init__(f"job {job_id} {why}")
        self.job_id = job_id
