"""Flows: a parent job that runs only once all its children have finished.

``Queue.add(data, children=[JobSpec(...), ...], on_child_failure="fail")`` adds the
children (each on its ``JobSpec.queue``, default the parent's) and then the parent, which
waits in its queue's ``waiting-children`` set. Each child's outcome is recorded with the
parent by ``resolveChild``, a script run in the *parent's* slot:

* right after the child's own outcome script, by the worker that ran it (the fast path);
* by any sweep of the parent's queue, which reads the state of every pending child (on
  whatever queue and slot) and reports the finished ones (the recovery path: a worker
  killed between its two scripts, a child expired or dead-lettered by a sweep, a child
  removed).

On Redis Cluster a child on another queue lives in another slot, so its completion and
its parent's move cannot be one script. They need not be: the child's outcome is durable
in its own queue first, and ``resolveChild`` is idempotent (a child already recorded
changes nothing), so reporting it twice is harmless and reporting it never is impossible
while the parent's queue is swept. Only the parent's keys (its hash, dependencies,
results) must share a slot, and they do: they all carry the parent queue's hash tag.

Why no cycle can form: a job's parent link is written only when the job is created, and
a parent is created only after all its children exist (their ids are fixed first); a
child's id that already exists without this very parent is refused. So a parent is
always created after its children, and a cycle would need a job created before itself.
"""
from __future__ import annotations

from typing import Any, Sequence

from .checks import choice, from_json
from .job import Job, JobSpec, text
from .keys import QueueKeys, job_key_parts
from .scripts import script
from .steps import Command, Pipeline, Steps
from .transitions import DEFAULT_EVENTS_CAP, AddResult, Call, add_job_args

ON_CHILD_FAILURE = ("fail", "ignore")
RESOLVE_BATCH = 100  # waiting parents a sweep looks at per turn


def _parent_keys(keys: QueueKeys, parent_id: str) -> list[str]:
    return [keys.waiting_children, keys.job(parent_id), keys.dependencies(parent_id),
            keys.children_results(parent_id), keys.children_failures(parent_id), keys.wait, keys.prioritized,
            keys.meta, keys.marker, keys.failed, keys.metrics, keys.events]


def child_queue_keys(parent: QueueKeys, child: JobSpec) -> QueueKeys:
    return QueueKeys(child.queue, parent.prefix) if child.queue else parent


def check_flow(queue: str, parent: JobSpec, children: Sequence[JobSpec], on_child_failure: str) -> None:
    """Refuse what a flow cannot keep: options that could make a child's id or a parent's
    differ from the one linked (dedup, debounce, throttle), or a parent that is delayed."""
    choice("on_child_failure", on_child_failure, ON_CHILD_FAILURE)
    if not children:
        raise ValueError("children must name at least one JobSpec")
    if parent.dedup_id or parent.delay_ms or parent.group:
        raise ValueError("a flow parent takes no dedup_id, debounce_ms, throttle_ms, delay_ms or group: it "
                         "is made ready by its last child")
    if parent.queue not in (None, queue):
        raise ValueError(f"the parent is added to queue {queue!r}, not {parent.queue!r}")
    seen = {(queue, parent.id)}
    for child in children:
        if not isinstance(child, JobSpec):
            raise ValueError(f"children must be JobSpecs, got {child!r}")
        if child.dedup_id:
            raise ValueError("a flow child takes no dedup_id, debounce_ms or throttle_ms: its parent waits "
                             "for its own id")
        where = (child.queue or queue, child.id)
        if where in seen:
            raise ValueError(f"job id {child.id!r} appears twice in the flow (or is the parent's)")
        seen.add(where)


def add_child(keys: QueueKeys, spec: JobSpec, parent_queue: str, parent_id: str,
              events_cap: int = DEFAULT_EVENTS_CAP) -> Call[AddResult]:
    return Call(
        script("addJob"),
        [keys.wait, keys.delayed, keys.prioritized, keys.meta, keys.marker, keys.job(spec.id),
         keys.dedup(""), keys.metrics, keys.events, keys.group_wait, keys.groups],
        [*add_job_args(spec, spec.delay_ms, 0, events_cap), parent_queue, parent_id, spec.group or ""],
        lambda reply: AddResult(text(reply[0]), bool(reply[1])),
    )


def add_parent_job(keys: QueueKeys, spec: JobSpec, child_keys: Sequence[str], on_child_failure: str,
                   events_cap: int = DEFAULT_EVENTS_CAP) -> Call[AddResult]:
    backoff = spec.backoff
    return Call(
        script("addParentJob"),
        _parent_keys(keys, spec.id),
        [spec.id, spec.payload(), spec.name, spec.attempts, backoff.kind if backoff else "",
         backoff.delay_ms if backoff else 0, events_cap, spec.priority, spec.ttl_ms, spec.timeout_ms,
         on_child_failure, *child_keys],
        lambda reply: AddResult(text(reply[0]), bool(reply[1])),
    )


def resolve_child(parent: QueueKeys, parent_id: str, child_key: str, outcome: str, value: str,
                  events_cap: int = DEFAULT_EVENTS_CAP) -> Call[str]:
    """Record a child's outcome ('completed' with its return value's JSON, or 'failed' with
    its reason) with its parent; idempotent."""
    return Call(script("resolveChild"), _parent_keys(parent, parent_id),
                [parent_id, child_key, outcome, value, events_cap], text)


def add_flow_steps(keys: QueueKeys, parent: JobSpec, children: Sequence[JobSpec], on_child_failure: str,
                   events_cap: int = DEFAULT_EVENTS_CAP) -> Steps[AddResult]:
    """Add the children, then the parent. Re-sending the same specs (same ids) after an
    error adds each job once. A crash between the two leaves children without a parent:
    they run as plain jobs and their results expire (resolveChild's orphan TTL)."""
    check_flow(keys.name, parent, children, on_child_failure)
    calls = [(child, add_child(child_queue_keys(keys, child), child, keys.name, parent.id, events_cap))
             for child in children]
    parent_call = add_parent_job(keys, parent, [child_queue_keys(keys, c).job(c.id) for c in children],
                                 on_child_failure, events_cap)  # every payload checked before any write
    for child, call in calls:
        added = yield call
        if not added.created:
            yield from _check_linked(child_queue_keys(keys, child), child.id, keys.name, parent.id)
    return (yield parent_call)


def _check_linked(keys: QueueKeys, child_id: str, parent_queue: str, parent_id: str) -> Steps[None]:
    """A child id that existed already must be this parent's own child (a re-sent flow):
    linking an unrelated job would let a job wait for one created before it."""
    linked = yield Command("hmget", keys.job(child_id), "parentQueue", "parentId")
    if [text(v) if v is not None else None for v in linked] != [parent_queue, parent_id]:
        raise ValueError(f"job {child_id!r} already exists on queue {keys.name!r} and is not a child of "
                         f"{parent_id!r}: a flow's children must be new jobs")


def report_to_parent_steps(keys: QueueKeys, job: Job, outcome: str, value: str,
                           events_cap: int = DEFAULT_EVENTS_CAP) -> Steps[str | None]:
    """The fast path: a child's worker, right after recording the child's final outcome."""
    if not job.parent_id or not job.parent_queue:
        return None
    parent = QueueKeys(job.parent_queue, keys.prefix)
    return (yield resolve_child(parent, job.parent_id, keys.job(job.id), outcome, value, events_cap))


def resolve_waiting_parents_steps(keys: QueueKeys, events_cap: int = DEFAULT_EVENTS_CAP) -> Steps[int]:
    """The recovery path, run by every sweep of the parent's queue: read each pending child's
    state (in its own queue) and report those that finished; a child whose hash is gone was
    removed and counts as failed ('removed'). Every waiting parent is looked at, a page of
    RESOLVE_BATCH at a time, so none waits behind older ones. Returns how many outcomes
    were reported."""
    parent_ids: list[str] = []  # read before any moves, so leaving parents shift no page
    while page := [text(i) for i in (yield Command("zrange", keys.waiting_children, len(parent_ids),
                                                   len(parent_ids) + RESOLVE_BATCH - 1))]:
        parent_ids += page
    reported = 0
    for start in range(0, len(parent_ids), RESOLVE_BATCH):
        reported += yield from _resolve_page(keys, parent_ids[start:start + RESOLVE_BATCH], events_cap)
    return reported


def _resolve_page(keys: QueueKeys, parent_ids: list[str], events_cap: int) -> Steps[int]:
    pending = yield Pipeline(tuple(Command("smembers", keys.dependencies(p)) for p in parent_ids))
    pairs = [(parent_id, text(child)) for parent_id, children in zip(parent_ids, pending) for child in children]
    commands: list[Command] = []
    for _, child_key in pairs:
        prefix, queue, child_id = job_key_parts(child_key)
        child = QueueKeys(queue, prefix)
        commands += [Command("zscore", child.completed, child_id), Command("zscore", child.failed, child_id),
                     Command("hmget", child_key, "returnvalue", "failedReason"), Command("exists", child_key)]
    replies = yield Pipeline(tuple(commands))
    reported = 0
    for index, (parent_id, child_key) in enumerate(pairs):
        completed, failed, (result, reason), exists = replies[4 * index:4 * index + 4]
        if completed is not None:
            outcome, value = "completed", text(result) if result is not None else "null"
        elif failed is not None:
            outcome, value = "failed", text(reason) if reason is not None else "failed"
        elif not exists:
            outcome, value = "failed", "removed"
        else:
            continue
        yield resolve_child(keys, parent_id, child_key, outcome, value, events_cap)
        reported += 1
    return reported


def children_results_steps(keys: QueueKeys, parent_id: str) -> Steps[dict[str, Any]]:
    """{child job key: return value} of the parent's completed children."""
    raw = yield Command("hgetall", keys.children_results(parent_id))
    return {text(k): from_json(text(v)) for k, v in raw.items()}


def children_failures_steps(keys: QueueKeys, parent_id: str) -> Steps[dict[str, str]]:
    """{child job key: failure reason} of the parent's children that failed or were removed."""
    raw = yield Command("hgetall", keys.children_failures(parent_id))
    return {text(k): text(v) for k, v in raw.items()}


def waiting_children_steps(keys: QueueKeys) -> Steps[list[str]]:
    return [text(i) for i in (yield Command("zrange", keys.waiting_children, 0, -1))]
