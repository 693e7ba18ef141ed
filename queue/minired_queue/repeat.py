"""Repeatable jobs: every N ms, or on a cron expression in a time zone.

A repeatable is a spec hash (``emq:{Q}:repeat:<key>``: schedule and the options of its
instances) and an entry in the ``repeat`` zset whose score is its next tick (server ms).
Any process with the queue (every worker's maintenance, ``Queue.run_scheduler()``) reads
the ticks due within a horizon, computes the tick after each here (cron needs a real
parser: ``cronsim``), and fires the tick with addRepeatedJob, a compare-and-set on the
score: of any number of schedulers reading the same tick, exactly one makes its instance
(id ``repeat:<key>:<tick>``). Instances are made ahead of their tick as delayed jobs, so
they start on time however rarely the schedulers look.

``every`` ticks are multiples of the interval since the Unix epoch (every scheduler
agrees on them); cron ticks are wall-clock times in the given zone, DST as cron does it
(a skipped time runs at the end of the gap, a repeated one once). A scheduler that was
away for several ticks makes one instance for the missed ones and resumes from now.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .checks import duration_ms, integer, stored_integer
from .job import Backoff, StoredFields, check_attempts, check_backoff, check_priority, text
from .keys import QueueKeys
from .steps import Command, Pipeline, Steps
from .transitions import DEFAULT_EVENTS_CAP, add_repeated_job, repeat_instance_id, upsert_repeatable

log = logging.getLogger(__name__)

FIRE_BATCH = 100  # repeatables read per pass
TICKS_PER_PASS = 100  # most instances one repeatable gets per pass


@dataclass(frozen=True)
class Schedule:
    """``every_ms`` or ``cron`` (5 fields, optional seconds as cronsim reads them) with ``tz``."""

    every_ms: int | None = None
    cron: str | None = None
    tz: str = "UTC"

    def __post_init__(self) -> None:
        if (self.every_ms is None) == (self.cron is None):
            raise ValueError("give exactly one of every_ms and cron")
        if self.every_ms is not None:
            duration_ms("every_ms", self.every_ms, 1)
        try:
            zone = ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {self.tz!r}") from exc
        if self.cron is not None:
            try:
                CronSim(self.cron, datetime.now(zone))
            except CronSimError as exc:
                raise ValueError(f"bad cron expression {self.cron!r}: {exc}") from exc

    @property
    def signature(self) -> str:
        """How the schedule is stored; a change of it reschedules the repeatable."""
        return f"every:{self.every_ms}" if self.every_ms is not None else f"cron:{self.cron}|{self.tz}"

    @classmethod
    def parse(cls, signature: str) -> "Schedule":
        """The schedule a ``signature`` stores; ValueError when it holds none."""
        kind, _, rest = signature.partition(":")
        if kind == "every":
            return cls(every_ms=stored_integer(rest))
        if kind != "cron":
            raise ValueError(f"unknown schedule {signature!r}")
        expression, _, tz = rest.rpartition("|")
        return cls(cron=expression, tz=tz)

    def next_after(self, ms: int) -> int:
        """The first tick strictly after ``ms`` (Unix ms)."""
        if self.every_ms is not None:
            return (ms // self.every_ms + 1) * self.every_ms
        start = datetime.fromtimestamp(ms / 1000, ZoneInfo(self.tz))
        return int(next(CronSim(self.cron, start)).timestamp() * 1000)


@dataclass(frozen=True)
class Repeatable:
    """A registered repeatable job, as ``Queue.repeatables()`` lists it."""

    key: str
    schedule: Schedule | None  # None: unreadable
    next_tick_ms: int | None  # None: ended (its limit reached)
    data: Any
    name: str
    priority: int
    limit: int
    count: int
    last_tick_ms: int | None
    unreadable: str | None = None  # why the stored spec could not be read (see Job.unreadable)


def spec_fields(data_json: str, name: str, attempts: int, backoff: Backoff | None, priority: int,
                limit: int) -> dict[str, Any]:
    check_priority(priority)
    check_attempts(attempts)
    integer("limit", limit)
    check_backoff(backoff)
    return {"data": data_json, "name": name, "maxAttempts": attempts,
            "backoffType": backoff.kind if backoff else "", "backoffDelay": backoff.delay_ms if backoff else 0,
            "priority": priority, "limit": limit}


def upsert_steps(keys: QueueKeys, repeat_key: str, schedule: Schedule, fields: dict[str, Any]) -> Steps[str]:
    """Register or update; the first tick comes after both now and the last fired tick."""
    for _ in range(10):
        seconds, micros = yield Command("time")
        now = int(seconds) * 1000 + int(micros) // 1000
        last = (yield Command("hget", keys.repeat_spec(repeat_key), "lastTick"))
        after = max(now, int(last)) if last is not None else now
        outcome = yield upsert_repeatable(keys, repeat_key, schedule.next_after(after), schedule.signature, fields)
        if outcome != "stale":
            return outcome
    raise RuntimeError(f"repeatable {repeat_key!r}: its ticks kept moving while registering it")


def fire_steps(keys: QueueKeys, horizon_ms: int, events_cap: int = DEFAULT_EVENTS_CAP) -> Steps[int]:
    """Make the instances of every tick due within ``horizon_ms`` of now; returns how many
    this caller made (others may have made some of them: each tick makes one)."""
    seconds, micros = yield Command("time")
    now = int(seconds) * 1000 + int(micros) // 1000
    due = yield Command("zrangebyscore", keys.repeat, "-inf", now + horizon_ms, start=0, num=FIRE_BATCH,
                        withscores=True)
    if not due:
        return 0
    entries = [(text(member), int(score)) for member, score in due]
    specs = yield Pipeline(tuple(Command("hget", keys.repeat_spec(key), "schedule") for key, _ in entries))
    made = 0
    for (key, tick), signature in zip(entries, specs):
        if signature is None:
            continue  # removed meanwhile
        try:
            schedule = Schedule.parse(text(signature))
        except ValueError as exc:  # not ours to guess; Queue.repeatables() lists it as unreadable
            log.warning("repeatable %s skipped: unreadable schedule (%s)", key, exc)
            continue
        for _ in range(TICKS_PER_PASS):
            following = schedule.next_after(max(tick, now))
            made += bool((yield add_repeated_job(keys, key, tick, following, events_cap)))
            if following > now + horizon_ms:
                break
            score = yield Command("zscore", keys.repeat, key)
            if score is None or int(score) != following:
                break  # ended, removed, or another scheduler is ahead
            tick = following
    return made


def describe(key: str, raw: dict, score: Any) -> Repeatable:
    """A repeatable as stored; never raises (see ``Repeatable.unreadable``)."""
    fields = StoredFields(raw)
    try:
        schedule: Schedule | None = Schedule.parse(fields.text("schedule", ""))
    except ValueError as exc:
        schedule = None
        fields.problem = f"field 'schedule': {exc}"
    return Repeatable(
        key=key, schedule=schedule,
        next_tick_ms=int(score) if score is not None else None,
        data=fields.json("data"), name=fields.text("name", ""),
        priority=fields.integer("priority"), limit=fields.integer("limit"),
        count=fields.integer("count"), last_tick_ms=fields.integer("lastTick", None),
        unreadable=fields.problem,
    )


def pending_instance(repeat_key: str, last_tick: Any) -> str | None:
    return repeat_instance_id(repeat_key, int(last_tick)) if last_tick is not None else None

