"""Jobs as stored in their hash, and the options a producer gives them."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

STATES = ("wait", "prioritized", "active", "delayed", "completed", "failed")

# Scores of the prioritized set are priority * 2**32 + a counter, exact in a double up to 2**53.
MAX_PRIORITY = 2**21 - 1


def text(value: Any) -> str:
    """Replies are bytes unless the client decodes them; the library accepts either."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def _int(value: Any, default: int = 0) -> int:
    return int(text(value)) if value not in (None, b"", "") else default


def _optional_int(value: Any) -> int | None:
    return None if value in (None, b"", "") else int(text(value))


def _optional_text(value: Any) -> str | None:
    return None if value in (None, b"", "") else text(value)


@dataclass(frozen=True)
class Backoff:
    """Delay before retrying a failed attempt, computed by the server from its own clock:
    fixed waits ``delay_ms`` every time; exponential waits ``delay_ms * 2**(attempt-1)``."""

    kind: Literal["fixed", "exponential"]
    delay_ms: int

    @classmethod
    def fixed(cls, delay_ms: int) -> "Backoff":
        return cls("fixed", delay_ms)

    @classmethod
    def exponential(cls, delay_ms: int) -> "Backoff":
        return cls("exponential", delay_ms)

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "exponential"):
            raise ValueError(f"unknown backoff kind {self.kind!r}")
        if self.delay_ms < 0:
            raise ValueError("backoff delay must be >= 0")


def check_priority(priority: int) -> None:
    if not isinstance(priority, int) or not 0 <= priority <= MAX_PRIORITY:
        raise ValueError(f"priority must be an integer from 0 to {MAX_PRIORITY}, got {priority!r}")


@dataclass(frozen=True)
class JobSpec:
    """Everything a producer says about one job.

    ``job_id``: a stable id makes the add idempotent (adding it again is a no-op); when
    omitted a random id is made here, on the client, so a retried add is idempotent too.
    ``dedup_id``: while its marker is held, adding another job with the same dedup id
    returns the holder's id instead. ``dedup_ttl_ms`` > 0 holds the marker that long;
    0 holds it until the job completes or is dead-lettered. ``priority``: 0 (default) is
    no priority, taken first, FIFO; 1 .. 2**21-1 wait in the prioritized set, lower first,
    FIFO within one priority.
    """

    data: Any = None
    job_id: str | None = None
    name: str = ""
    dedup_id: str | None = None
    dedup_ttl_ms: int = 0
    delay_ms: int = 0
    attempts: int = 1
    backoff: Backoff | None = None
    priority: int = 0
    id: str = field(init=False)

    def __post_init__(self) -> None:
        check_priority(self.priority)
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")
        if self.delay_ms < 0 or self.dedup_ttl_ms < 0:
            raise ValueError("delays and TTLs must be >= 0")
        if self.job_id is not None and (not self.job_id or any(c in self.job_id for c in "{}")):
            raise ValueError(f"job id must be non-empty and free of braces: {self.job_id!r}")
        object.__setattr__(self, "id", self.job_id or uuid.uuid4().hex)

    def payload(self) -> str:
        return json.dumps(self.data, separators=(",", ":"))


@dataclass(frozen=True)
class Job:
    """A job's stored record, read from its hash (``Queue.get_job``, and the ``job`` a
    handler's ``ActiveJob`` carries): a snapshot, not a handle. ``state`` is filled in by
    lookups that check it. ``return_value`` is the handler's result once completed;
    ``failed_reason``/``stacktrace`` the last error; ``progress`` what the handler last
    reported."""

    id: str
    data: Any
    name: str
    timestamp: int
    delay: int
    max_attempts: int
    backoff: Backoff | None
    attempts_made: int
    attempts_started: int
    stalled_counter: int
    dedup_id: str | None
    processed_on: int | None
    finished_on: int | None
    return_value: Any
    failed_reason: str | None
    stacktrace: str | None
    locked_by: str | None
    priority: int = 0
    progress: Any = None
    repeat_key: str | None = None
    state: str | None = None

    @classmethod
    def from_hash(cls, job_id: str, raw: Mapping[Any, Any] | list, state: str | None = None) -> "Job":
        if isinstance(raw, list):  # a flat [field, value, ...] array, as Lua returns HGETALL
            raw = dict(zip(raw[0::2], raw[1::2]))
        fields = {text(k): v for k, v in raw.items()}
        backoff_kind = _optional_text(fields.get("backoffType"))
        return_value = _optional_text(fields.get("returnvalue"))
        progress = _optional_text(fields.get("progress"))
        return cls(
            id=job_id,
            data=json.loads(text(fields.get("data", "null"))),
            name=text(fields.get("name", "")),
            timestamp=_int(fields.get("timestamp")),
            delay=_int(fields.get("delay")),
            max_attempts=_int(fields.get("maxAttempts"), 1),
            backoff=Backoff(backoff_kind, _int(fields.get("backoffDelay"))) if backoff_kind else None,
            attempts_made=_int(fields.get("attemptsMade")),
            attempts_started=_int(fields.get("attemptsStarted")),
            stalled_counter=_int(fields.get("stalledCounter")),
            dedup_id=_optional_text(fields.get("dedupId")),
            processed_on=_optional_int(fields.get("processedOn")),
            finished_on=_optional_int(fields.get("finishedOn")),
            return_value=json.loads(return_value) if return_value is not None else None,
            failed_reason=_optional_text(fields.get("failedReason")),
            stacktrace=_optional_text(fields.get("stacktrace")),
            locked_by=_optional_text(fields.get("lockedBy")),
            priority=_int(fields.get("priority")),
            progress=json.loads(progress) if progress is not None else None,
            repeat_key=_optional_text(fields.get("repeatKey")),
            state=state,
        )

