"""Jobs as stored in their hash, and the options a producer gives them."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping

from .checks import duration_ms, from_json, group_name, integer, stored_integer, to_json

STATES = ("wait", "prioritized", "active", "delayed", "completed", "failed")

# Scores of the prioritized set are priority * 2**32 + a counter, exact in a double up to 2**53.
MAX_PRIORITY = 2**21 - 1


def text(value: Any) -> str:
    """Replies are bytes unless the client decodes them; the library accepts either."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


class StoredFields:
    """Reads a stored record (a job or repeatable hash) field by field, never raising: a
    field that cannot be read gives its default and is noted in ``problem`` (the first
    one), so one bad record is reported instead of breaking every listing that meets it."""

    def __init__(self, raw: Mapping[Any, Any] | list) -> None:
        if isinstance(raw, list):  # a flat [field, value, ...] array, as Lua returns HGETALL
            raw = dict(zip(raw[0::2], raw[1::2]))
        self.raw = {text(k): v for k, v in raw.items()}
        self.problem: str | None = None

    def _parse(self, name: str, what: str, parse: Callable[[str], Any], default: Any) -> Any:
        value = self.raw.get(name)
        if value in (None, b"", ""):
            return default
        try:
            return parse(text(value))
        except ValueError:  # UnicodeDecodeError and json's errors are ValueErrors too
            if self.problem is None:
                shown = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                self.problem = f"field {name!r} is not {what}: {shown!r}"
            return default

    def integer(self, name: str, default: int | None = 0) -> int | None:
        return self._parse(name, "an integer", stored_integer, default)

    def json(self, name: str, default: Any = None) -> Any:
        return self._parse(name, "JSON", from_json, default)

    def text(self, name: str, default: str | None = None) -> str | None:
        value = self.raw.get(name)
        if value in (None, b"", ""):
            return default
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    def backoff(self) -> "Backoff | None":
        kind = self.text("backoffType")
        delay = self.integer("backoffDelay")
        if kind is None:
            return None
        try:
            return Backoff(kind, delay)
        except ValueError as exc:
            self.problem = self.problem or f"field 'backoffType'/'backoffDelay': {exc}"
            return None


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
        duration_ms("backoff delay_ms", self.delay_ms)


def check_priority(priority: int) -> None:
    integer("priority", priority, 0, MAX_PRIORITY)


def check_attempts(attempts: int) -> None:
    integer("attempts", attempts, 1)


def check_backoff(backoff: Any) -> None:
    if backoff is not None and not isinstance(backoff, Backoff):
        raise ValueError(f"backoff must be a Backoff (Backoff.fixed(ms), Backoff.exponential(ms)), got {backoff!r}")


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

    ``ttl_ms`` > 0: a job not yet started that long after it was added (server clock) is
    failed as ``expired`` by the fetch script and never runs. ``timeout_ms`` > 0: each
    attempt may take that long; the worker then fails it (``JobTimeoutError``, an attempt
    like any failure). ``debounce_ms`` (with ``dedup_id``): the job waits that long, and
    adding another with the same dedup id while it still waits replaces it (its data, and
    the wait starts again). ``throttle_ms`` (with ``dedup_id``): the first job wins and
    later adds return its id for that long (a dedup marker with that TTL).
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
    ttl_ms: int = 0
    timeout_ms: int = 0
    debounce_ms: int = 0
    throttle_ms: int = 0
    queue: str | None = None  # a flow child's queue (None: its parent's); see Queue.add(children=)
    group: str | None = None  # its group: per-group limits and a fair turn (see Queue.configure)
    id: str = field(init=False)

    def __post_init__(self) -> None:
        check_priority(self.priority)
        # (a delay past MAX_DURATION_MS was stored as "1e+20", which every reader took for 0)
        for name in ("delay_ms", "dedup_ttl_ms", "ttl_ms", "timeout_ms", "debounce_ms", "throttle_ms"):
            duration_ms(name, getattr(self, name))
        if self.debounce_ms or self.throttle_ms:
            if not self.dedup_id:
                raise ValueError("debounce_ms and throttle_ms need a dedup_id: the jobs they merge share it")
            if self.debounce_ms and self.throttle_ms:
                raise ValueError("debounce_ms and throttle_ms cannot both be given: the last job or the first wins")
            if self.dedup_ttl_ms:
                raise ValueError("dedup_ttl_ms cannot be given with debounce_ms or throttle_ms, which set "
                                 "how long the dedup id is held")
            if self.debounce_ms and self.delay_ms:
                raise ValueError("delay_ms cannot be given with debounce_ms: the job waits debounce_ms")
        check_attempts(self.attempts)
        check_backoff(self.backoff)
        if self.group is not None:
            group_name(self.group)
            if self.priority or self.debounce_ms:
                raise ValueError("a grouped job takes no priority or debounce_ms: it waits in its group's line")
        if self.queue is not None and (not isinstance(self.queue, str) or not self.queue
                                       or any(c in self.queue for c in "{}")):
            raise ValueError(f"queue must be a non-empty name free of braces: {self.queue!r}")
        if self.job_id is not None and (not self.job_id or any(c in self.job_id for c in "{}")):
            raise ValueError(f"job id must be non-empty and free of braces: {self.job_id!r}")
        object.__setattr__(self, "id", self.job_id or uuid.uuid4().hex)

    def payload(self) -> str:
        return to_json("job data", self.data)


@dataclass(frozen=True)
class Job:
    """A job's stored record, read from its hash (``Queue.get_job``, and the ``job`` a
    handler's ``ActiveJob`` carries): a snapshot, not a handle. ``state`` is filled in by
    lookups that check it. ``return_value`` is the handler's result once completed;
    ``failed_reason``/``stacktrace`` the last error; ``progress`` what the handler last
    reported. ``unreadable``: why the stored record could not be read (written by hand,
    or by another client not keeping to the protocol), None when it could; the fields
    that could not be read hold their defaults. A worker fails such a job at once."""

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
    expire_at: int | None = None  # server ms after which, never started, it expires (ttl_ms)
    timeout_ms: int | None = None  # how long one attempt may take
    parent_queue: str | None = None  # a flow child's parent: its queue and id
    parent_id: str | None = None
    on_child_failure: str | None = None  # a flow parent's policy: 'fail' or 'ignore'
    group: str | None = None
    state: str | None = None
    unreadable: str | None = None

    @classmethod
    def from_hash(cls, job_id: str, raw: Mapping[Any, Any] | list, state: str | None = None) -> "Job":
        """The record in a job hash; never raises (see ``unreadable``)."""
        fields = StoredFields(raw)
        job = cls(
            id=job_id,
            data=fields.json("data"),
            name=fields.text("name", ""),
            timestamp=fields.integer("timestamp"),
            delay=fields.integer("delay"),
            max_attempts=fields.integer("maxAttempts", 1),
            backoff=fields.backoff(),
            attempts_made=fields.integer("attemptsMade"),
            attempts_started=fields.integer("attemptsStarted"),
            stalled_counter=fields.integer("stalledCounter"),
            dedup_id=fields.text("dedupId"),
            processed_on=fields.integer("processedOn", None),
            finished_on=fields.integer("finishedOn", None),
            return_value=fields.json("returnvalue"),
            failed_reason=fields.text("failedReason"),
            stacktrace=fields.text("stacktrace"),
            locked_by=fields.text("lockedBy"),
            priority=fields.integer("priority"),
            progress=fields.json("progress"),
            repeat_key=fields.text("repeatKey"),
            expire_at=fields.integer("expireAt", None),
            timeout_ms=fields.integer("timeout", None),
            parent_queue=fields.text("parentQueue"),
            parent_id=fields.text("parentId"),
            on_child_failure=fields.text("onChildFailure"),
            group=fields.text("group"),
            state=state,
        )
        if fields.problem is None and not 0 <= job.priority <= MAX_PRIORITY:
            fields.problem = f"field 'priority' is out of range: {job.priority}"
        return job if fields.problem is None else replace(job, unreadable=fields.problem)

