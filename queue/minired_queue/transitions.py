"""Each queue transition as data: which script, which KEYS, which ARGV, how to read the reply.

Nothing here does I/O, so the synchronous and asyncio code paths (and any port of the
protocol) share one definition of every transition: ``call.run(client)`` or
``await call.run_async(client)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from redis.crc import key_slot
from redis.exceptions import NoScriptError

from .checks import to_json
from .job import Job, JobSpec, text
from .keys import QueueKeys
from .scripts import LuaScript, script

T = TypeVar("T")

DEFAULT_EVENTS_CAP = 10_000
DEFAULT_PROGRESS_CAP = 1_000  # progress reports have their own stream (keys.progress)


@dataclass(frozen=True)
class Call(Generic[T]):
    script: LuaScript
    keys: list[str]
    args: list[Any]
    parse: Callable[[Any], T]

    def run(self, client: Any) -> T:
        return self.parse(self.script.run(client, self.keys, self.args))

    async def run_async(self, client: Any) -> T:
        return self.parse(await self.script.run_async(client, self.keys, self.args))


@dataclass(frozen=True)
class CallBatch(Generic[T]):
    """Several transitions in one round trip (a pipeline of EVALSHA, not a transaction);
    the reply is each call's parsed reply. A call whose script the server had not loaded
    (NOSCRIPT: a flushed script cache) is run again on its own, which loads it."""

    calls: Sequence[Call[T]]

    def _fill(self, client: Any) -> Any:
        pipe = client.pipeline(transaction=False)
        for call in self.calls:
            call.script.check_keys(call.keys)
            # execute_command: ClusterPipeline blocks the evalsha() helper, not the command.
            pipe.execute_command("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)
        return pipe

    def run(self, client: Any) -> list[T]:
        replies = self._fill(client).execute(raise_on_error=False) if self.calls else []
        return [call.run(client) if isinstance(reply, NoScriptError) else call.parse(_raised(reply))
                for call, reply in zip(self.calls, replies)]

    async def run_async(self, client: Any) -> list[T]:
        replies = await self._fill(client).execute(raise_on_error=False) if self.calls else []
        return [await call.run_async(client) if isinstance(reply, NoScriptError) else call.parse(_raised(reply))
                for call, reply in zip(self.calls, replies)]


def _raised(reply: Any) -> Any:
    if isinstance(reply, Exception):
        raise reply
    return reply


# --- replies --------------------------------------------------------------------------
@dataclass(frozen=True)
class AddResult:
    job_id: str
    created: bool  # False: the id existed already, or the dedup id was held by job_id
    replaced: str | None = None  # debounce: the pending job this one replaced


@dataclass(frozen=True)
class HolderMoved:
    """addDebouncedJob's reply when the dedup marker no longer points where the caller read."""

    holder: str


@dataclass(frozen=True)
class Fetch:
    """Reply of moveToActive. ``candidates``: the jobs to name next, next first (none when
    nothing is ready)."""

    status: str  # 'active' | 'miss' | 'expired' | 'dedup' | 'empty' | 'paused' | 'capped' | 'limited'
    now_ms: int
    next_due_ms: int  # earliest delayed job's due time, -1 when none
    candidates: tuple[str, ...] = ()
    job: Job | None = None
    retry_after_ms: int = 0  # 'limited': until the rate limit window ends
    # 'dedup': an expired job whose dedup marker's key the call must name to fail it
    expired_job: tuple[str, str] | None = None  # (job id, dedup id)


@dataclass(frozen=True)
class FailOutcome:
    status: str  # 'retry' | 'failed' | 'lost'
    delay_ms: int = 0
    attempts_made: int = 0


@dataclass(frozen=True)
class Promotion:
    moved: int
    next_due_ms: int
    now_ms: int


@dataclass(frozen=True)
class SweepResult:
    recovered: list[str]
    failed: list[str]

    def __add__(self, other: "SweepResult") -> "SweepResult":
        return SweepResult(self.recovered + other.recovered, self.failed + other.failed)


# --- transitions ----------------------------------------------------------------------
def add_job(keys: QueueKeys, spec: JobSpec, events_cap: int = DEFAULT_EVENTS_CAP) -> Call[AddResult]:
    if spec.debounce_ms:
        raise ValueError("a debounced job is added by add_debounced_job (Queue.add does it)")
    return Call(
        script("addJob"),
        [keys.wait, keys.delayed, keys.prioritized, keys.meta, keys.marker, keys.job(spec.id),
         keys.dedup(spec.dedup_id or ""), keys.metrics, keys.events, keys.group_wait, keys.groups],
        [*add_job_args(spec, spec.delay_ms, spec.throttle_ms or spec.dedup_ttl_ms, events_cap), "", "",
         spec.group or ""],
        lambda reply: AddResult(text(reply[0]), bool(reply[1])),
    )


def add_job_args(spec: JobSpec, delay_ms: int, dedup_ttl_ms: int, events_cap: int) -> list[Any]:
    """addJob's ARGV 1-13 for ``spec`` (flows.add_child appends the parent and the group)."""
    backoff = spec.backoff
    return [spec.id, spec.payload(), spec.name, spec.attempts,
            backoff.kind if backoff else "", backoff.delay_ms if backoff else 0,
            delay_ms, spec.dedup_id or "", dedup_ttl_ms, events_cap, spec.priority, spec.ttl_ms, spec.timeout_ms]


def add_debounced_job(keys: QueueKeys, spec: JobSpec, holder: str,
                      events_cap: int = DEFAULT_EVENTS_CAP) -> Call[AddResult | HolderMoved]:
    """Add ``spec`` (with ``debounce_ms``), replacing ``holder``, the pending job its dedup
    marker pointed at when read ('' for none)."""
    def parse(reply: list) -> AddResult | HolderMoved:
        if int(reply[1]) == -1:
            return HolderMoved(text(reply[0]))
        return AddResult(text(reply[0]), bool(int(reply[1])), text(reply[2]) or None)

    return Call(
        script("addDebouncedJob"),
        [keys.wait, keys.delayed, keys.prioritized, keys.meta, keys.marker, keys.job(spec.id),
         keys.dedup(spec.dedup_id or ""), keys.metrics, keys.events, keys.job(holder), keys.logs(holder)],
        [*add_job_args(spec, spec.debounce_ms, 0, events_cap), holder],
        parse,
    )


def _parse_fetch(reply: list) -> Fetch:
    status, now, due = text(reply[0]), int(reply[1]), int(reply[2])
    if status == "active":
        job_id = text(reply[4])
        return Fetch(status, now, due, tuple(map(text, reply[3])),
                     Job.from_hash(job_id, reply[5], state="active"))
    if status in ("miss", "expired"):
        return Fetch(status, now, due, tuple(map(text, reply[3])))
    if status == "dedup":
        return Fetch(status, now, due, expired_job=(text(reply[3]), text(reply[4])))
    if status == "limited":
        return Fetch(status, now, due, retry_after_ms=int(reply[3]))
    return Fetch(status, now, due)


def move_to_active(keys: QueueKeys, candidates: Sequence[str], token: str, lock_ttl_ms: int,
                   width: int = 1, dedup_ids: dict[str, str] | None = None,
                   events_cap: int = DEFAULT_EVENTS_CAP) -> Call[Fetch]:
    """Take the next ready job if it is one of ``candidates``; ``width``: how many
    candidates the reply names for the next call. ``dedup_ids``: the dedup ids known of
    candidates (a 'dedup' reply names one: an expired job the script can fail only with
    its marker's key)."""
    if isinstance(candidates, str):  # would name each of its characters
        raise TypeError("candidates: a sequence of job ids, not one id")
    dedup_ids = dedup_ids or {}
    job_keys: list[str] = []
    for job_id in candidates:
        job_keys += [keys.job(job_id), keys.lock(job_id), keys.dedup(dedup_ids.get(job_id, ""))]
    return Call(
        script("moveToActive"),
        [keys.wait, keys.active, keys.delayed, keys.prioritized, keys.meta, keys.marker, keys.limiter,
         keys.failed, keys.metrics, keys.history, keys.events, keys.group_wait, keys.groups, keys.group_active,
         keys.group_rate, *job_keys],
        [token, lock_ttl_ms, width, events_cap, *candidates],
        _parse_fetch,
    )


def extend_lock(keys: QueueKeys, job_id: str, token: str, lock_ttl_ms: int) -> Call[bool]:
    return Call(script("extendLock"), [keys.lock(job_id)], [token, lock_ttl_ms], lambda r: r == 1)


def complete(keys: QueueKeys, job: Job, token: str, return_value: Any, remove: bool = False,
             events_cap: int = DEFAULT_EVENTS_CAP) -> Call[bool]:
    return Call(
        script("complete"),
        [keys.active, keys.completed, keys.lock(job.id), keys.job(job.id), keys.dedup(job.dedup_id or ""),
         keys.metrics, keys.events, keys.meta, keys.marker, keys.history, keys.logs(job.id)],
        [job.id, token, to_json("the handler's return value", return_value),
         "1" if remove else "0", events_cap, job.dedup_id or "", _stamp(job.processed_on)],
        lambda reply: text(reply) == "completed",
    )


def _parse_fail(reply: list) -> FailOutcome:
    status = text(reply[0])
    if status == "retry":
        return FailOutcome(status, delay_ms=int(reply[1]))
    if status == "failed":
        return FailOutcome(status, attempts_made=int(reply[1]))
    return FailOutcome(status)


def retry_or_fail(keys: QueueKeys, job: Job, token: str, reason: str, stacktrace: str = "",
                  unrecoverable: bool = False, events_cap: int = DEFAULT_EVENTS_CAP) -> Call[FailOutcome]:
    return Call(
        script("retryOrFail"),
        [keys.active, keys.wait, keys.delayed, keys.prioritized, keys.failed, keys.marker, keys.lock(job.id),
         keys.job(job.id), keys.dedup(job.dedup_id or ""), keys.meta, keys.metrics, keys.history, keys.events,
         keys.group_wait, keys.groups],
        [job.id, token, reason, stacktrace, "1" if unrecoverable else "0", events_cap, _stamp(job.processed_on)],
        _parse_fail,
    )


def release(keys: QueueKeys, job_id: str, token: str) -> Call[bool]:
    return Call(
        script("releaseJob"),
        [keys.active, keys.wait, keys.prioritized, keys.meta, keys.marker, keys.lock(job_id), keys.job(job_id),
         keys.group_wait, keys.groups],
        [job_id, token],
        lambda reply: text(reply) == "released",
    )


def promote_delayed(keys: QueueKeys, candidates: Sequence[str]) -> Call[Promotion]:
    """``candidates``: the first ids of delayed (``ZRANGE delayed 0 n-1``)."""
    return Call(
        script("promoteDelayed"),
        [keys.delayed, keys.wait, keys.prioritized, keys.meta, keys.marker, keys.group_wait, keys.groups,
         *(keys.job(i) for i in candidates)],
        list(candidates),
        lambda reply: Promotion(int(reply[0]), int(reply[1]), int(reply[2])),
    )


def set_paused(keys: QueueKeys, paused: bool) -> Call[bool]:
    return Call(script("setPaused"), [keys.meta, keys.marker], ["1" if paused else "0"], lambda r: r == 1)


def move_stalled_to_wait(keys: QueueKeys, candidates: Sequence[tuple[str, str | None]],
                         events_cap: int = DEFAULT_EVENTS_CAP) -> Call[SweepResult]:
    """``candidates``: (job id, dedup id) of jobs seen in active without a lock. The stall
    limit is the queue's setting (meta ``maxStalled``), read by the script."""
    job_keys: list[str] = []
    for job_id, dedup_id in candidates:
        job_keys += [keys.lock(job_id), keys.job(job_id), keys.dedup(dedup_id or "")]
    return Call(
        script("moveStalledJobsToWait"),
        [keys.active, keys.wait, keys.prioritized, keys.failed, keys.meta, keys.marker, keys.metrics,
         keys.history, keys.events, keys.group_wait, keys.groups, *job_keys],
        [events_cap, *(job_id for job_id, _ in candidates)],
        lambda reply: SweepResult([text(i) for i in reply[0]], [text(i) for i in reply[1]]),
    )


def remove_jobs(keys: QueueKeys, candidates: Sequence[tuple[str, str | None]],
                events_cap: int = DEFAULT_EVENTS_CAP) -> Call[list[str]]:
    job_keys: list[str] = []
    for job_id, dedup_id in candidates:
        job_keys += [keys.job(job_id), keys.dedup(dedup_id or ""), keys.logs(job_id), keys.dependencies(job_id),
                     keys.children_results(job_id), keys.children_failures(job_id)]
    return Call(
        script("removeJobs"),
        [keys.wait, keys.prioritized, keys.delayed, keys.completed, keys.failed, keys.metrics, keys.events,
         keys.group_wait, keys.groups, keys.waiting_children, *job_keys],
        [events_cap, *(job_id for job_id, _ in candidates)],
        lambda reply: [text(i) for i in reply],
    )


def retry_jobs(keys: QueueKeys, job_ids: Sequence[str], source: str = "failed") -> Call[list[str]]:
    """``source``: failed (the dead letter set) or completed (run a finished job again)."""
    return Call(
        script("retryJobs"),
        [getattr(keys, source), keys.wait, keys.prioritized, keys.meta, keys.marker, keys.group_wait, keys.groups,
         *(keys.job(i) for i in job_ids)],
        list(job_ids),
        lambda reply: [text(i) for i in reply],
    )


def update_progress(keys: QueueKeys, job_id: str, token: str, progress: Any,
                    progress_cap: int = DEFAULT_PROGRESS_CAP) -> Call[bool]:
    return Call(script("updateProgress"), [keys.lock(job_id), keys.job(job_id), keys.progress],
                [job_id, token, to_json("progress", progress), progress_cap], lambda reply: reply == 1)


def clean_jobs(keys: QueueKeys, state: str, candidates: Sequence[str], keep: int | None,
               max_age_ms: int | None) -> Call[list[str]]:
    """``candidates``: the oldest ids of ``state`` (completed or failed), oldest first."""
    return Call(
        script("cleanJobs"),
        [getattr(keys, state), keys.metrics, *(k for i in candidates for k in (keys.job(i), keys.logs(i)))],
        [-1 if keep is None else keep, -1 if max_age_ms is None else max_age_ms, *candidates],
        lambda reply: [text(i) for i in reply],
    )


def repeat_instance_id(repeat_key: str, tick_ms: int) -> str:
    """The id of a repeatable's instance for one tick: deterministic, so a tick can make
    only one job."""
    return f"repeat:{repeat_key}:{tick_ms}"


def add_repeated_job(keys: QueueKeys, repeat_key: str, tick_ms: int, next_tick_ms: int | None,
                     events_cap: int = DEFAULT_EVENTS_CAP) -> Call[bool]:
    job_id = repeat_instance_id(repeat_key, tick_ms)
    return Call(
        script("addRepeatedJob"),
        [keys.repeat, keys.repeat_spec(repeat_key), keys.wait, keys.delayed, keys.prioritized, keys.meta,
         keys.marker, keys.job(job_id), keys.metrics, keys.events],
        [repeat_key, tick_ms, -1 if next_tick_ms is None else next_tick_ms, job_id, events_cap],
        lambda reply: reply == 1,
    )


def upsert_repeatable(keys: QueueKeys, repeat_key: str, first_tick_ms: int, schedule: str,
                      fields: dict[str, Any]) -> Call[str]:
    flat: list[Any] = []
    for name, value in fields.items():
        flat += [name, value]
    return Call(script("upsertRepeatable"), [keys.repeat, keys.repeat_spec(repeat_key)],
                [repeat_key, first_tick_ms, schedule, *flat], text)


def remove_repeatable(keys: QueueKeys, repeat_key: str, pending_job_id: str | None) -> Call[bool]:
    return Call(
        script("removeRepeatable"),
        [keys.repeat, keys.repeat_spec(repeat_key), keys.delayed, keys.job(pending_job_id or "")],
        [repeat_key, pending_job_id or ""],
        lambda reply: reply == 1,
    )


def _stamp(ms: int | None) -> str:
    return "" if ms is None else str(ms)


def record_depth(keys: QueueKeys) -> Call[int]:
    """Sample the ready line's depth into the per-minute history (the dashboard's chart)."""
    return Call(script("recordDepth"), [keys.wait, keys.prioritized, keys.history], [], int)


@dataclass(frozen=True)
class RedisOp:
    """One write of an effect applied by the effect guard, e.g. ``RedisOp("HINCRBY", key, "field", 1)``.
    The key must carry the queue's hash tag (it shares the marker's slot)."""

    command: str
    key: str
    args: tuple[Any, ...] = ()

    def __init__(self, command: str, key: str, *args: Any) -> None:
        object.__setattr__(self, "command", command)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "args", args)


def apply_effect_once(marker_key: str, index_key: str, ops: Sequence[RedisOp], ttl_ms: int,
                      token: str) -> Call[bool]:
    """Take the marker (listed in the job's effects set ``index_key``) and apply ``ops``.
    Refuses effect keys outside the marker's slot here, on every backend, so code that
    works on one Redis does not first fail (CROSSSLOT) when moved to a cluster."""
    marker_slot = key_slot(marker_key.encode())
    stray = [op.key for op in ops if key_slot(op.key.encode()) != marker_slot]
    if stray:
        raise ValueError(f"effect keys must carry the queue's hash tag (same slot as {marker_key!r}): {stray}")
    effect_keys: list[str] = []
    encoded: list[Any] = []
    for op in ops:
        if op.key not in effect_keys:
            effect_keys.append(op.key)
        encoded += [len(op.args), op.command, 3 + effect_keys.index(op.key), *op.args]
    return Call(script("applyEffectOnce"), [marker_key, index_key, *effect_keys], [ttl_ms, token, *encoded],
                lambda reply: reply == 1)


def promote_job(keys: QueueKeys, job_id: str) -> Call[bool]:
    """Make one delayed job ready now, before its due time."""
    return Call(script("promoteJob"),
                [keys.delayed, keys.wait, keys.prioritized, keys.meta, keys.marker, keys.job(job_id),
                 keys.group_wait, keys.groups],
                [job_id], lambda reply: reply == 1)


def add_log(keys: QueueKeys, job_id: str, line: str, kept: int) -> Call[int]:
    """Append a line to a job's log (its newest ``kept`` lines are kept); 0: no such job."""
    return Call(script("addLog"), [keys.job(job_id), keys.logs(job_id)], [line, kept], int)


def worker_heartbeat(keys: QueueKeys, worker_id: str, ttl_ms: int, fields: dict[str, Any]) -> Call[int]:
    """List a worker in the queue's registry for ``ttl_ms`` more, with what it says of itself."""
    pairs = [item for name, value in fields.items() for item in (name, value)]
    return Call(script("workerHeartbeat"), [keys.workers, keys.worker(worker_id)],
                [worker_id, ttl_ms, *pairs], int)
