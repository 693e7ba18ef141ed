"""The recovery sweep: expired locks send jobs back, stalls are counted and capped, and
overlapping sweeps reclaim each job once (the non-atomic contrast does not)."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from minired_queue import Sweeper
from minired_queue.transitions import extend_lock

from .helpers import assert_each_job_in_exactly_one_state, placement, take
from .nonatomic_sweep import NonAtomicSweep


@pytest.fixture
def lock_ttl_ms(clock) -> int:
    return clock.span(40)


@pytest.fixture
def stall(queue, lock_ttl_ms):
    def add_and_take(count: int) -> list[str]:
        """Add ``count`` jobs and take them under locks nobody renews (a dead worker)."""
        ids = [queue.add({"n": n}) for n in range(count)]
        for n in range(count):
            assert take(queue, token=f"dead:{n}", lock_ttl_ms=lock_ttl_ms).status == "active"
        return ids
    return add_and_take


def _deliveries(queue) -> Counter:
    """Drain wait through moveToActive and count how often each job is handed out."""
    delivered: Counter = Counter()
    while (fetch := take(queue, token="survivor")).status == "active":
        delivered[fetch.job.id] += 1
    return delivered


def test_live_locks_are_left_alone(queue):
    for n in range(3):
        queue.add({"n": n})
        take(queue, token=f"alive:{n}", lock_ttl_ms=30_000)
    assert queue.sweep().recovered == []
    assert queue.counts()["active"] == 3


def test_expired_locks_go_back_to_wait_and_the_stall_is_counted(queue, clock, stall, lock_ttl_ms):
    ids = stall(3)
    clock.advance(lock_ttl_ms * 2)
    result = queue.sweep()
    assert sorted(result.recovered) == sorted(ids) and result.failed == []
    assert queue.counts()["wait"] == 3 and queue.counts()["active"] == 0
    assert all(queue.get_job(i).stalled_counter == 1 for i in ids)
    assert queue.metrics()["stalled"] == 3
    assert "stalled" in [e["event"] for e in queue.events()]
    assert_each_job_in_exactly_one_state(queue, ids)


def test_a_job_that_stalls_too_often_is_dead_lettered(queue, clock, stall, lock_ttl_ms):
    [job_id] = stall(1)
    clock.advance(lock_ttl_ms * 2)
    assert queue.sweep().recovered == [job_id]
    take(queue, token="dead-again", lock_ttl_ms=lock_ttl_ms)
    clock.advance(lock_ttl_ms * 2)
    result = queue.sweep()
    assert result.failed == [job_id]
    job = queue.get_job(job_id)
    assert job.state == "failed" and "stalled more than the allowed limit" in job.failed_reason


def test_a_renewed_lock_is_not_swept(queue, clock):
    job_id = queue.add({"n": 1})
    ttl = clock.span(300)  # roomy: on real Redis each step really waits, under load
    take(queue, token="alive:1", lock_ttl_ms=ttl)
    for _ in range(4):
        clock.advance(ttl // 3)
        assert extend_lock(queue.keys, job_id, "alive:1", ttl).run(queue.client)
        assert queue.sweep().recovered == []
    assert queue.get_state(job_id) == "active"  # in total longer than one TTL, never swept


def test_throttled_sweeps_run_once_per_interval(queue, clock, stall, lock_ttl_ms):
    stall(2)
    clock.advance(lock_ttl_ms * 2)
    sweeper = Sweeper(queue.client, queue.keys)
    throttle_ms = clock.span(60_000)
    assert len(sweeper.sweep(throttle_ms=throttle_ms).recovered) == 2
    queue.drain()
    [late] = stall(1)
    clock.advance(lock_ttl_ms * 2)
    assert sweeper.sweep(throttle_ms=throttle_ms).recovered == []  # another sweep ran within the interval
    assert queue.client.pttl(queue.keys.stalled_check) > 0
    assert sweeper.sweep().recovered == [late]  # on demand, unthrottled


def test_overlapping_atomic_sweeps_reclaim_each_job_exactly_once(backend, queue, clock, stall, lock_ttl_ms):
    ids = stall(30)
    clock.advance(lock_ttl_ms * 2)
    clients = [backend.client() for _ in range(4)]
    sweepers = [Sweeper(c, queue.keys) for c in clients]
    # Every sweeper reads the same snapshot first, so all four then race on the same jobs.
    snapshots_taken = threading.Barrier(len(sweepers))
    results = [None] * len(sweepers)

    def run(index: int) -> None:
        sweeper = sweepers[index]
        original_lrange = sweeper.client.lrange

        def lrange_then_wait(*args):
            reply = original_lrange(*args)
            snapshots_taken.wait(10)
            return reply

        sweeper.client.lrange = lrange_then_wait
        results[index] = sweeper.sweep()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sweepers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    recovered = [job_id for result in results for job_id in result.recovered]
    assert sorted(recovered) == sorted(ids)  # each job reclaimed by exactly one sweep
    delivered = _deliveries(queue)
    assert set(delivered) == set(ids) and set(delivered.values()) == {1}
    for c in clients:
        c.close()


def test_overlapping_non_atomic_sweeps_double_deliver(queue, clock, stall, lock_ttl_ms, capsys):
    """The contrast: check and move in separate round trips, two sweeps interleaved."""
    ids = stall(10)
    clock.advance(lock_ttl_ms * 2)
    first, second = NonAtomicSweep(queue), NonAtomicSweep(queue)
    assert sorted(first.check()) == sorted(ids)
    assert sorted(second.check()) == sorted(ids)  # still true: the first has not moved yet
    first.move()
    second.move()
    assert len(placement(queue)["wait"]) == 20
    delivered = _deliveries(queue)
    duplicates = {job_id: n for job_id, n in delivered.items() if n > 1}
    with capsys.disabled():
        print(f"\nnon-atomic overlapping sweeps: {len(duplicates)} of {len(ids)} jobs delivered twice; "
              "the atomic sweep under the same overlap: none")
    assert set(duplicates) == set(ids) and set(duplicates.values()) == {2}
