"""The effect guard: make a job's side effects happen once although the job may be
delivered more than once.

Delivery is at-least-once: a worker can finish a side effect and die before it records
the job's outcome, and the job is then delivered again. The guard keys each effect by
``<job id>:<effect name>`` in a dedup marker (``emq:{q}:de:<job id>:<effect>``, SET NX PX),
listed in the job's effects set (``emq:{q}:effects:<job id>``) so it can be found without a SCAN.

* ``apply_once`` is for effects that are themselves Redis writes: marker and writes go
  in one script, so the effect is applied exactly once, crash or no crash.
* ``run_once`` is for anything else (an email, an HTTP call). It takes the marker
  *before* running the effect and gives it back if the effect raises. A crash after the
  marker is taken and before the effect completes leaves the effect skipped on
  redelivery: at most once across crashes. For exactly once, the effect itself must be
  idempotent under the same key (e.g. pass the marker's name as an idempotency key).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from .checks import duration_ms
from .keys import QueueKeys
from .scripts import script
from .steps import Invoke, Steps, drive, drive_async
from .transitions import Call, RedisOp, apply_effect_once

T = TypeVar("T")

DEFAULT_EFFECT_TTL_MS = 7 * 24 * 3600 * 1000  # outlive any plausible redelivery


def _run_once_steps(keys: QueueKeys, job_id: str, effect: str, fn: Callable[[], Any], ttl_ms: int,
                    token: str) -> Steps[tuple[bool, Any]]:
    """Take the marker, run ``fn``, give the marker back if ``fn`` raised (then re-raise)."""
    marker, index = keys.effect(job_id, effect), keys.effects(job_id)
    if not (yield apply_effect_once(marker, index, (), ttl_ms, token)):  # the marker alone
        return False, None
    outcome = yield Invoke(fn)
    if outcome.error is not None:
        yield Call(script("releaseEffect"), [marker, index], [token], lambda reply: reply)
        raise outcome.error
    return True, outcome.result


class EffectGuard:
    def __init__(self, client: Any, keys: QueueKeys, ttl_ms: int = DEFAULT_EFFECT_TTL_MS) -> None:
        self.client = client
        self.keys = keys
        self.ttl_ms = duration_ms("effect marker ttl_ms", ttl_ms, 1)

    def apply_once(self, job_id: str, effect: str, ops: Sequence[RedisOp], token: str = "-") -> bool:
        """Apply ``ops`` atomically unless this job's ``effect`` was applied before."""
        return apply_effect_once(self.keys.effect(job_id, effect), self.keys.effects(job_id), ops,
                                 self.ttl_ms, token).run(self.client)

    def run_once(self, job_id: str, effect: str, fn: Callable[[], T], token: str = "-") -> tuple[bool, T | None]:
        """Run ``fn`` unless this job's ``effect`` ran before. Returns (ran, fn's result)."""
        return drive(_run_once_steps(self.keys, job_id, effect, fn, self.ttl_ms, token), self.client)

    def was_applied(self, job_id: str, effect: str) -> bool:
        return bool(self.client.exists(self.keys.effect(job_id, effect)))


class AsyncEffectGuard:
    """The same guard on a redis.asyncio client; ``fn`` may be a coroutine function."""

    def __init__(self, client: Any, keys: QueueKeys, ttl_ms: int = DEFAULT_EFFECT_TTL_MS) -> None:
        self.client = client
        self.keys = keys
        self.ttl_ms = duration_ms("effect marker ttl_ms", ttl_ms, 1)

    async def apply_once(self, job_id: str, effect: str, ops: Sequence[RedisOp], token: str = "-") -> bool:
        return await apply_effect_once(self.keys.effect(job_id, effect), self.keys.effects(job_id), ops,
                                       self.ttl_ms, token).run_async(self.client)

    async def run_once(self, job_id: str, effect: str, fn: Callable[[], Any], token: str = "-") -> tuple[bool, Any]:
        return await drive_async(_run_once_steps(self.keys, job_id, effect, fn, self.ttl_ms, token),
                                 self.client)
