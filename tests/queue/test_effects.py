"""The effect guard: side effects once per job, however often the job is delivered."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from minired_queue import RedisOp
from minired_queue.effects import AsyncEffectGuard, EffectGuard
from minired_queue.transitions import complete

from .helpers import take


def _ledger(queue) -> str:
    return f"{queue.keys.base}:ledger"  # same hash tag: same slot as the markers


def test_apply_once_applies_redis_writes_once_per_job_and_effect(client, queue):
    guard = EffectGuard(client, queue.keys)
    charge = RedisOp("HINCRBY", _ledger(queue), "order-1", 500)
    log = RedisOp("RPUSH", f"{queue.keys.base}:log", "charged order-1")
    for _delivery in range(3):
        guard.apply_once("job-1", "charge", [charge, log])
    assert int(client.hget(_ledger(queue), "order-1")) == 500
    assert client.lrange(f"{queue.keys.base}:log", 0, -1) == [b"charged order-1"]
    assert guard.apply_once("job-1", "refund-check", [charge]) is True  # another effect of the job
    assert guard.apply_once("job-2", "charge", [charge]) is True  # the same effect of another job
    assert int(client.hget(_ledger(queue), "order-1")) == 1500
    assert client.exists(queue.keys.effect("job-1", "charge")) == 1
    assert guard.was_applied("job-1", "charge") and not guard.was_applied("job-3", "charge")


def test_effect_keys_outside_the_queue_slot_are_refused_on_every_backend(client, queue):
    guard = EffectGuard(client, queue.keys)
    with pytest.raises(ValueError, match="hash tag"):
        guard.apply_once("job-1", "e", [RedisOp("INCR", "global-counter")])
    assert not guard.was_applied("job-1", "e")


def test_effect_markers_expire_with_their_ttl(client, queue, clock):
    guard = EffectGuard(client, queue.keys, ttl_ms=clock.span(300))
    op = RedisOp("INCR", f"{queue.keys.base}:n")
    assert guard.apply_once("job-1", "e", [op]) is True
    assert guard.apply_once("job-1", "e", [op]) is False
    clock.advance(clock.span(400))
    assert guard.apply_once("job-1", "e", [op]) is True


def test_run_once_skips_a_repeat_and_retries_after_a_failure(client, queue):
    guard = EffectGuard(client, queue.keys)
    sent = []
    assert guard.run_once("job-1", "email", lambda: sent.append("hello") or "id-1") == (True, "id-1")
    assert guard.run_once("job-1", "email", lambda: sent.append("hello")) == (False, None)
    assert sent == ["hello"]

    def smtp_down():
        raise ConnectionError("smtp down")

    with pytest.raises(ConnectionError):
        guard.run_once("job-2", "email", smtp_down, token="delivery-1")
    assert not guard.was_applied("job-2", "email")  # released, so the retry sends it
    assert guard.run_once("job-2", "email", lambda: "sent", token="delivery-2") == (True, "sent")


def test_async_guard_behaves_the_same(backend, queue):
    async def scenario():
        client = backend.async_client()
        guard = AsyncEffectGuard(client, queue.keys)
        op = RedisOp("HINCRBY", _ledger(queue), "x", 1)
        applied = [await guard.apply_once("job-1", "count", [op]) for _ in range(3)]

        async def send():
            return "sent"

        ran = [await guard.run_once("job-1", "mail", send) for _ in range(2)]

        async def smtp_down():
            raise ConnectionError("smtp down")

        with pytest.raises(ConnectionError):
            await guard.run_once("job-2", "mail", smtp_down, token="delivery-1")
        released = not await client.exists(queue.keys.effect("job-2", "mail"))
        value = await client.hget(_ledger(queue), "x")
        await client.aclose()
        return applied, ran, released, value

    applied, ran, released, value = asyncio.run(scenario())
    assert applied == [True, False, False]
    assert ran == [(True, "sent"), (False, None)]
    assert released  # the failed effect gave its marker back, so the retry runs it
    assert int(value) == 1


@pytest.mark.parametrize("max_stalled", [None, 2])
def test_two_worker_kills_dead_letter_a_job_before_its_effect_under_the_default_stall_limit(
        client, queue, clock, max_stalled):
    """What README's 'Exactly once, and the stall limit' says: with the default limit (1)
    a job whose worker dies twice before its effect is failed, the effect applied 0 times;
    retrying it from failed applies it once; a higher limit completes it by itself."""
    if max_stalled is not None:
        queue.configure(max_stalled=max_stalled)
    guard = EffectGuard(client, queue.keys)
    charge = RedisOp("INCR", _ledger(queue))
    job_id = queue.add({"order": 1})
    for kill in range(2):  # each delivery dies before its effect: its lock lapses, the sweep counts a stall
        assert take(queue, token=f"killed-{kill}", lock_ttl_ms=clock.span(40)).job.id == job_id
        clock.advance(clock.span(80))
        queue.sweep()
    if max_stalled is None:
        job = queue.get_job(job_id)
        assert job.state == "failed" and job.failed_reason == "job stalled more than the allowed limit (1)"
        assert client.get(_ledger(queue)) is None  # applied 0 times
        assert queue.retry_failed() == 1
    fetch = take(queue, token="survivor")
    guard.apply_once(job_id, "charge", [charge], "survivor")
    guard.apply_once(job_id, "charge", [charge], "survivor")
    assert complete(queue.keys, fetch.job, "survivor", None).run(client)
    assert int(client.get(_ledger(queue))) == 1
    readme = (Path(__file__).resolve().parents[2] / "queue" / "README.md").read_text()
    assert "a job caught\nby two worker kills goes to failed" in readme and "`queue.configure(max_stalled=10)`" in readme
