"""Subscribing to a queue's events, and waiting for one job's outcome.

The scripts append every transition to the queue's capped events stream (PROTOCOL.md,
section 3a, "Events"); progress reports go to a stream of their own, capped on its own, so a
handler reporting often cannot push the other events out. ``QueueEvents`` (threads) and
``AsyncQueueEvents`` (asyncio) read them with blocking ``XREAD``, from a position
(``last_id``) that the caller may keep and resume from, as typed events.

``wait_steps`` is waiting for a job's outcome (BullMQ's ``waitUntilFinished``), written
once as a step generator: take the stream position first, then read the job's state,
then read events from that position. An outcome recorded after the position was taken
is in the stream after it; one recorded before is in the state: no outcome falls
between the two reads.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, ClassVar, Iterator

from .checks import from_json, integer, seconds
from .errors import JobFailed, JobRemoved
from .job import text
from .keys import QueueKeys
from .steps import Command, Pipeline, Steps, drive, drive_async

READ_BATCH = 500
# The longest single XREAD BLOCK; iterating blocks again after it, so a stop is noticed.
DEFAULT_BLOCK_MS = 5_000


@dataclass(frozen=True)
class QueueEvent:
    """One entry of the events (or progress) stream. ``id``: its stream id, to resume
    after; ``stream``: 'events' or 'progress'; ``fields``: every field as stored. The
    subclass says what happened: ``Added``, ``Active``, ``Progress``, ``Completed``,
    ``Failed``, ``Retried``, ``Stalled``, ``Removed``; ``QueueEvent`` itself for an event
    this version does not know."""

    id: str
    job_id: str
    stream: str
    fields: dict[str, str] = field(repr=False)
    kind: ClassVar[str] = "unknown"

    @property
    def name(self) -> str:
        """The event's name as stored in the stream."""
        return self.fields.get("event", "")


class Added(QueueEvent):
    """A job was created: ready (``delayed`` False) or delayed, or a flow parent waiting
    for its children (``waiting_children``)."""
    kind = "added"

    @property
    def delayed(self) -> bool:
        return self.name == "delayed"

    @property
    def waiting_children(self) -> bool:
        return self.name == "waiting-children"


class Active(QueueEvent):
    """A worker took the job (``attempts_started``: this delivery's number)."""
    kind = "active"

    @property
    def attempts_started(self) -> int:
        return int(self.fields.get("attemptsStarted", 0))


class Progress(QueueEvent):
    """The handler reported progress (``data``: the JSON value)."""
    kind = "progress"

    @property
    def data(self) -> Any:
        return from_json(self.fields["data"])


class Completed(QueueEvent):
    kind = "completed"

    @property
    def return_value(self) -> Any:
        raw = self.fields.get("returnvalue")
        return None if raw is None else from_json(raw)


class Failed(QueueEvent):
    """The job went to the failed set: attempts spent, unrecoverable, past the stall
    limit, or ``expired`` (its TTL passed before it started)."""
    kind = "failed"

    @property
    def failed_reason(self) -> str:
        return self.fields.get("failedReason", "")

    @property
    def expired(self) -> bool:
        return self.fields.get("expired") == "1"


class Retried(QueueEvent):
    """An attempt failed and the job will run again (after ``delay_ms``)."""
    kind = "retried"

    @property
    def failed_reason(self) -> str:
        return self.fields.get("failedReason", "")

    @property
    def delay_ms(self) -> int:
        return int(self.fields.get("delay", 0))


class Stalled(QueueEvent):
    """The sweep found the job's worker gone and put it back in line."""
    kind = "stalled"


class Removed(QueueEvent):
    """The job was deleted before it finished (remove, drain), or replaced by a newer
    debounced job (``replaced_by``)."""
    kind = "removed"

    @property
    def replaced_by(self) -> str | None:
        return self.fields.get("replacedBy")


_KINDS: dict[str, type[QueueEvent]] = {
    "waiting": Added, "delayed": Added, "waiting-children": Added, "active": Active, "progress": Progress, "completed": Completed,
    "failed": Failed, "retrying": Retried, "stalled": Stalled, "removed": Removed,
}


def parse_event(entry_id: Any, raw: dict, stream: str) -> QueueEvent:
    fields = {text(k): text(v) for k, v in raw.items()}
    return _KINDS.get(fields.get("event", ""), QueueEvent)(text(entry_id), fields.get("jobId", ""), stream, fields)


def _stream_id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _entries(reply: Any) -> dict[str, list]:
    """XREAD's reply by stream name (RESP2: a list of [name, entries]; RESP3: a map)."""
    if not reply:
        return {}
    pairs = reply.items() if isinstance(reply, dict) else reply
    return {text(name): entries for name, entries in pairs}


def last_entry_id(keys_stream: str) -> Steps[str]:
    """The stream's newest id (0-0 when it is empty or missing): a position to read after."""
    newest = yield Command("xrevrange", keys_stream, count=1)
    return text(newest[0][0]) if newest else "0-0"


class EventReader:
    """The reading logic of ``QueueEvents``, as step generators (no I/O here)."""

    def __init__(self, keys: QueueKeys, last_id: str, progress: bool, last_progress_id: str,
                 count: int) -> None:
        self.keys = keys
        self.positions = {keys.events: last_id}
        if progress:
            self.positions[keys.progress] = last_progress_id
        self.count = integer("count", count, 1)

    def pin(self) -> Steps[None]:
        """Turn "$" into the stream's newest id now: "from now on" starts here, and nothing
        written between two reads is missed (XREAD's own "$" would skip it)."""
        for stream, position in self.positions.items():
            if position == "$":
                self.positions[stream] = yield from last_entry_id(stream)

    def read(self, block_ms: int) -> Steps[list[QueueEvent]]:
        yield from self.pin()
        reply = yield Command("xread", dict(self.positions), count=self.count, block=max(1, block_ms))
        found: list[QueueEvent] = []
        for stream, entries in _entries(reply).items():
            kind = "progress" if stream == self.keys.progress else "events"
            for entry_id, raw in entries:
                found.append(parse_event(entry_id, raw, kind))
                self.positions[stream] = text(entry_id)
        found.sort(key=lambda event: _stream_id(event.id))
        return found


class _Subscription:
    def __init__(self, queue: str | QueueKeys, client: Any, *, last_id: str = "$", progress: bool = False,
                 last_progress_id: str = "$", count: int = READ_BATCH,
                 block_ms: int = DEFAULT_BLOCK_MS) -> None:
        self.keys = queue if isinstance(queue, QueueKeys) else QueueKeys(queue)
        self.client = client
        self.block_ms = integer("block_ms", block_ms, 1)
        self.reader = EventReader(self.keys, last_id, progress, last_progress_id, count)

    def _block_ms(self, timeout_s: float | None) -> int:
        """How long a read blocks: the subscription's block_ms, or ``timeout_s`` (0: not at all,
        which the reader rounds up to the 1 ms XREAD takes for "no longer")."""
        if timeout_s is None:
            return self.block_ms
        return int(seconds("timeout_s", timeout_s, zero=True) * 1000)

    @property
    def last_id(self) -> str:
        """The id of the last event read from the events stream: resume from it."""
        return self.reader.positions[self.keys.events]

    @property
    def last_progress_id(self) -> str | None:
        return self.reader.positions.get(self.keys.progress)


class QueueEvents(_Subscription):
    """A queue's events, oldest first, read with blocking XREAD on a synchronous client.

    ``last_id``: read the events after this stream id ("$", the default: from now on;
    "0": everything the capped stream still holds; or a ``last_id`` kept from before).
    ``progress=True`` also reads the progress stream (``last_progress_id``). Iterating
    blocks until events come, forever; ``read(timeout_s)`` returns what came within
    the timeout (maybe nothing). "$" is the stream's end when the subscription is made."""

    def __init__(self, queue: str | QueueKeys, client: Any, **options: Any) -> None:
        super().__init__(queue, client, **options)
        drive(self.reader.pin(), self.client)

    def read(self, timeout_s: float | None = None) -> list[QueueEvent]:
        return drive(self.reader.read(self._block_ms(timeout_s)), self.client)

    def __iter__(self) -> Iterator[QueueEvent]:
        while True:
            yield from self.read()


class AsyncQueueEvents(_Subscription):
    """``QueueEvents`` on a redis.asyncio client: ``await read()``, ``async for``. A
    constructor cannot await, so "$" is the stream's end at ``await start()`` (which
    returns the subscription), or else at the first read."""

    async def start(self) -> "AsyncQueueEvents":
        await drive_async(self.reader.pin(), self.client)
        return self

    async def read(self, timeout_s: float | None = None) -> list[QueueEvent]:
        return await drive_async(self.reader.read(self._block_ms(timeout_s)), self.client)

    async def __aiter__(self) -> AsyncIterator[QueueEvent]:
        while True:
            for event in await self.read():
                yield event


# --- waiting for one job ----------------------------------------------------------------
def _settled(job_id: str, completed: Any, failed: Any, raw: list) -> tuple[bool, Any]:
    """(finished, its result) from the job's state; raises its failure or its absence."""
    exists, returnvalue, reason = raw
    if not exists:
        raise JobRemoved(job_id, "does not exist (never added, or removed)")
    if completed is not None:
        return True, None if returnvalue is None else from_json(text(returnvalue))
    if failed is not None:
        raise JobFailed(job_id, None if reason is None else text(reason))
    return False, None


def _read_state(keys: QueueKeys, job_id: str) -> Steps[tuple[bool, Any]]:
    completed, failed, exists, fields = yield Pipeline((
        Command("zscore", keys.completed, job_id), Command("zscore", keys.failed, job_id),
        Command("exists", keys.job(job_id)), Command("hmget", keys.job(job_id), "returnvalue", "failedReason")))
    return _settled(job_id, completed, failed, [exists, *fields])


def wait_steps(keys: QueueKeys, job_id: str, timeout_s: float) -> Steps[Any]:
    """The job's return value once it completes; raises ``JobFailed`` (with its reason)
    once it fails for good, ``JobRemoved`` if it does not exist or is removed first, and
    ``TimeoutError`` after ``timeout_s`` seconds (client clock) without an outcome."""
    seconds("timeout", timeout_s, high=math.inf)  # (math.inf: wait as long as it takes)
    deadline = time.monotonic() + timeout_s
    position = yield from last_entry_id(keys.events)  # first: what happens after it is in the stream
    finished, result = yield from _read_state(keys, job_id)
    if finished:
        return result
    while (left := deadline - time.monotonic()) > 0:
        reply = yield Command("xread", {keys.events: position}, count=READ_BATCH,
                              block=max(1, min(int(left * 1000), DEFAULT_BLOCK_MS)))
        entries = _entries(reply).get(keys.events, [])
        for entry_id, raw in entries:
            position = text(entry_id)
            event = parse_event(entry_id, raw, "events")
            if event.job_id != job_id:
                continue
            if isinstance(event, Completed):
                return event.return_value
            if isinstance(event, Failed):
                raise JobFailed(job_id, event.failed_reason)
            if isinstance(event, Removed):
                raise JobRemoved(job_id, f"replaced by {event.replaced_by}" if event.replaced_by else "removed")
        if len(entries) == READ_BATCH:
            # Reading behind a busy stream: the cap may trim our outcome before we reach it.
            finished, result = yield from _read_state(keys, job_id)
            if finished:
                return result
    raise TimeoutError(f"job {job_id} did not finish within {timeout_s} s")
