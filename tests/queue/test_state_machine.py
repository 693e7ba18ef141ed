"""The transitions one by one, the lock-token checks, backoff, and the invariant that a
job is always in exactly one state."""
from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minired_queue import Backoff, Queue
from minired_queue.transitions import complete, extend_lock, move_to_active, release, retry_or_fail

from .helpers import assert_each_job_in_exactly_one_state, placement, server_time_ms, take


def test_empty_queue_hands_out_nothing(queue):
    fetch = take(queue)
    assert (fetch.status, fetch.next_due_ms) == ("empty", -1)


def test_move_to_active_locks_stamps_and_returns_the_job(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="worker-a:1", lock_ttl_ms=5000)
    assert fetch.status == "active" and fetch.job.id == job_id and fetch.job.data == {"n": 1}
    assert fetch.job.attempts_started == 1 and fetch.job.processed_on == fetch.now_ms
    assert queue.client.get(queue.keys.lock(job_id)) == b"worker-a:1"
    assert 0 < queue.client.pttl(queue.keys.lock(job_id)) <= 5000
    assert placement(queue)["active"] == [job_id] and placement(queue)["wait"] == []


def test_a_stale_candidate_misses_and_names_the_current_tail(queue):
    first = queue.add({"n": 1})
    second = queue.add({"n": 2})
    fetch = move_to_active(queue.keys, ["not-the-tail"], "tok", 1000).run(queue.client)
    assert (fetch.status, fetch.candidates) == ("miss", (first,))
    assert queue.counts()["wait"] == 2 and queue.counts()["active"] == 0
    fetch = move_to_active(queue.keys, [first], "tok", 1000).run(queue.client)
    assert fetch.status == "active" and fetch.job.id == first
    assert fetch.candidates == (second,)  # the next one to ask for


def test_any_named_candidate_at_the_tail_is_taken(queue):
    """Workers racing for the tail name the jobs behind it too: whichever of them is the
    tail when the script runs is taken, without a miss."""
    ids = [queue.add({"n": n}) for n in range(6)]
    fetch = move_to_active(queue.keys, [], "tok", 1000, width=4).run(queue.client)
    assert (fetch.status, fetch.candidates) == ("miss", tuple(ids[:4]))
    named = fetch.candidates
    take(queue, token="someone-else")  # another worker took ids[0] meanwhile
    fetch = move_to_active(queue.keys, named, "tok", 1000, width=4).run(queue.client)
    assert fetch.status == "active" and fetch.job.id == ids[1]
    assert queue.client.get(queue.keys.lock(ids[1])) == b"tok"
    assert fetch.candidates == tuple(ids[2:6])
    fetch = move_to_active(queue.keys, fetch.candidates, "tok", 1000, width=2).run(queue.client)
    assert fetch.job.id == ids[2] and fetch.candidates == tuple(ids[3:5])
    assert placement(queue)["active"] == [ids[2], ids[1], ids[0]]
    assert placement(queue)["wait"] == list(reversed(ids[3:]))


def test_candidates_behind_the_tail_are_not_taken_out_of_order(queue):
    ids = [queue.add({"n": n}) for n in range(3)]
    fetch = move_to_active(queue.keys, [ids[1], ids[2]], "tok", 1000).run(queue.client)
    assert (fetch.status, fetch.candidates) == ("miss", (ids[0],))
    assert queue.counts()["active"] == 0


def test_one_id_is_not_taken_for_a_list_of_its_characters(queue):
    with pytest.raises(TypeError):
        move_to_active(queue.keys, "job-1", "tok", 1000)


def test_the_last_waiting_job_leaves_no_candidates(queue):
    job_id = queue.add({"n": 1})
    fetch = move_to_active(queue.keys, [job_id], "tok", 1000, width=8).run(queue.client)
    assert fetch.status == "active" and fetch.candidates == ()
    assert take(queue).status == "empty"


def test_complete_requires_the_lock_token(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue, token="mine")
    assert complete(queue.keys, fetch.job, "someone-else", "x").run(queue.client) is False
    assert queue.get_state(job_id) == "active"
    assert complete(queue.keys, fetch.job, "mine", {"ok": True}).run(queue.client) is True
    job = queue.get_job(job_id)
    assert job.state == "completed" and job.return_value == {"ok": True} and job.finished_on
    assert queue.client.exists(queue.keys.lock(job_id)) == 0
    assert complete(queue.keys, fetch.job, "mine", "again").run(queue.client) is False


def test_remove_on_complete_deletes_the_job(queue):
    job_id = queue.add({"n": 1})
    fetch = take(queue)
    assert complete(queue.keys, fetch.job, "tok", None, remove=True).run(queue.client)
    assert queue.get_job(job_id) is None and queue.counts()["completed"] == 0


def test_extend_lock_renews_only_for_the_owner(queue):
    job_id = queue.add({"n": 1})
    take(queue, token="mine", lock_ttl_ms=1000)
    assert extend_lock(queue.keys, job_id, "mine", 60_000).run(queue.client) is True
    assert queue.client.pttl(queue.keys.lock(job_id)) > 1000
    assert extend_lock(queue.keys, job_id, "thief", 60_000).run(queue.client) is False
    assert queue.client.get(queue.keys.lock(job_id)) == b"mine"


def test_release_puts_the_job_first_in_line_without_counting_a_failure(queue):
    first = queue.add({"n": 1})
    second = queue.add({"n": 2})
    take(queue, token="mine")
    assert release(queue.keys, first, "other").run(queue.client) is False
    assert release(queue.keys, first, "mine").run(queue.client) is True
    assert placement(queue)["wait"][-1] == first  # the tail: taken next
    job = queue.get_job(first)
    assert job.attempts_made == 0 and job.state == "wait"
    assert take(queue).job.id == first and take(queue).job.id == second


def test_failure_without_backoff_retries_at_once_then_dead_letters(queue):
    job_id = queue.add({"n": 1}, attempts=2)
    fetch = take(queue)
    outcome = retry_or_fail(queue.keys, fetch.job, "tok", "RuntimeError: one", "trace 1").run(queue.client)
    assert (outcome.status, outcome.delay_ms) == ("retry", 0)
    assert queue.get_state(job_id) == "wait"
    fetch = take(queue)
    assert fetch.job.attempts_made == 1 and fetch.job.attempts_started == 2
    outcome = retry_or_fail(queue.keys, fetch.job, "tok", "RuntimeError: two", "trace 2").run(queue.client)
    assert (outcome.status, outcome.attempts_made) == ("failed", 2)
    job = queue.get_job(job_id)
    assert job.state == "failed" and job.failed_reason == "RuntimeError: two" and job.stacktrace == "trace 2"


def test_failure_requires_the_lock_token(queue):
    job_id = queue.add({"n": 1}, attempts=3)
    fetch = take(queue, token="mine")
    assert retry_or_fail(queue.keys, fetch.job, "other", "x").run(queue.client).status == "lost"
    assert queue.get_job(job_id).attempts_made == 0 and queue.get_state(job_id) == "active"


def test_unrecoverable_error_dead_letters_at_once(queue):
    job_id = queue.add({"n": 1}, attempts=5)
    fetch = take(queue)
    outcome = retry_or_fail(queue.keys, fetch.job, "tok", "bad input", unrecoverable=True).run(queue.client)
    assert outcome.status == "failed" and queue.get_state(job_id) == "failed"


@pytest.mark.parametrize("backoff, expected", [
    (Backoff.fixed(40), [40, 40, 40]),
    (Backoff.exponential(20), [20, 40, 80]),
])
def test_backoff_goes_through_the_delayed_set_on_the_server_clock(queue, clock, backoff, expected):
    backoff = type(backoff)(backoff.kind, clock.span(backoff.delay_ms))
    job_id = queue.add({"n": 1}, attempts=4, backoff=backoff)
    for delay in map(clock.span, expected):
        fetch = take(queue)
        before = server_time_ms(queue.client)
        outcome = retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client)
        assert (outcome.status, outcome.delay_ms) == ("retry", delay)
        due = int(queue.client.zscore(queue.keys.delayed, job_id))
        assert before + delay <= due <= server_time_ms(queue.client) + delay
        assert take(queue).status == "empty"  # not due yet
        clock.advance(delay + clock.span(20))
        fetch = take(queue)  # moveToActive reports the due job; the worker promotes it
        assert 0 <= fetch.next_due_ms <= fetch.now_ms
        assert queue.promote_delayed() == 1
    fetch = take(queue)
    assert retry_or_fail(queue.keys, fetch.job, "tok", "boom").run(queue.client).status == "failed"


def test_move_to_active_reports_when_the_next_delayed_job_is_due(queue):
    queue.add({"n": 1}, delay_ms=30_000)
    fetch = take(queue)
    assert fetch.status == "empty"
    assert 29_000 <= fetch.next_due_ms - fetch.now_ms <= 30_000


ACTIONS = st.lists(st.sampled_from(["add", "add_delayed", "take", "complete", "fail", "release",
                                    "expire_and_sweep", "promote"]), min_size=5, max_size=25)


@settings(max_examples=15, suppress_health_check=list(HealthCheck))
@given(actions=ACTIONS, seed=st.integers(0, 2**16))
def test_every_job_is_always_in_exactly_one_state(client, queue_name, clock, actions, seed):
    """Random interleavings of every transition never leave a job in no state or two."""
    rng = random.Random(seed)
    queue = Queue(f"{queue_name}-{seed}-{len(actions)}-{uuid.uuid4().hex[:6]}", client)  # fresh per example
    job_ids: list[str] = []
    held: dict[str, tuple] = {}  # job id -> (job, token)
    for step, action in enumerate(actions):
        if action == "add":
            job_ids.append(queue.add({"step": step}, attempts=2))
        elif action == "add_delayed":
            job_ids.append(queue.add({"step": step}, delay_ms=clock.span(10), attempts=2))
        elif action == "take":
            fetch = take(queue, token=f"t{step}", lock_ttl_ms=clock.span(20))
            if fetch.status == "active":
                held[fetch.job.id] = (fetch.job, f"t{step}")
        elif action == "promote":
            clock.advance(clock.span(15))
            queue.promote_delayed()
        elif action == "expire_and_sweep":
            clock.advance(clock.span(30))
            queue.sweep()
            held.clear()  # every lock has lapsed; those jobs are no longer ours
        elif held:
            job_id = rng.choice(sorted(held))
            job, token = held.pop(job_id)
            if action == "complete":
                complete(queue.keys, job, token, None).run(queue.client)
            elif action == "fail":
                retry_or_fail(queue.keys, job, token, "boom").run(queue.client)
            else:
                release(queue.keys, job_id, token).run(queue.client)
        assert_each_job_in_exactly_one_state(queue, job_ids)
