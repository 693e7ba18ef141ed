"""Celery: kombu's Redis transport as the broker and the Redis result backend, with Celery's own
embedded worker (celery.contrib.testing.worker) consuming in a thread."""
from __future__ import annotations

import gc

import pytest
from celery import Celery, chain, chord, group
from celery.contrib.testing.tasks import ping  # noqa: F401  registers celery.ping for the worker's check
from celery.contrib.testing.worker import start_worker

from tests.integration import jobs

# Celery's Redis backend still calls redis-py's setex, which redis-py 8 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated setex:DeprecationWarning")

RESULT_TIMEOUT = 10


@pytest.fixture
def app(target):
    app = Celery("integration", broker=target.url, backend=target.url, set_as_current=False)
    app.conf.update(
        broker_connection_retry_on_startup=True,
        result_expires=600,
        task_acks_late=True,
        worker_hijack_root_logger=False,
    )
    yield app
    # AsyncResults kept alive by reference cycles (chains link parents, groups their children)
    # unsubscribe from their result channels when collected: collect them while the server is
    # still there, rather than at interpreter exit.
    gc.collect()
    app.close()


def test_worker_runs_tasks_failures_retries_and_canvas(app, tmp_path):
    add = app.task(name="integration.add")(jobs.add)
    total = app.task(name="integration.total")(jobs.total)
    fail = app.task(name="integration.fail")(jobs.fail)
    flaky = app.task(name="integration.flaky", autoretry_for=(jobs.JobFailure,), max_retries=1,
                     default_retry_delay=0)(jobs.fail_first_attempt)

    with start_worker(app, pool="solo", perform_ping_check=True, shutdown_timeout=10):
        sums = [add.delay(n, 10) for n in range(5)]
        failing = fail.delay("boom")
        retried = flaky.delay(str(tmp_path / "flaky"))
        chained = chain(add.s(1, 2), add.s(10))()
        grouped = group(add.s(n, n) for n in range(3))()
        chorded = chord(add.s(n, 1) for n in range(4))(total.s())
        # The worker holds an ETA task unacknowledged (kombu keeps it in its unacked hash and
        # zset) until it is due.
        counted_down = add.apply_async((20, 22), countdown=0.5)

        assert [result.get(timeout=RESULT_TIMEOUT) for result in sums] == [10, 11, 12, 13, 14]
        assert all(result.status == "SUCCESS" for result in sums)

        with pytest.raises(jobs.JobFailure, match="boom"):
            failing.get(timeout=RESULT_TIMEOUT)
        assert failing.status == "FAILURE"
        assert "JobFailure" in failing.traceback

        assert retried.get(timeout=RESULT_TIMEOUT) == "recovered"
        assert chained.get(timeout=RESULT_TIMEOUT) == 13
        assert grouped.get(timeout=RESULT_TIMEOUT) == [0, 2, 4]
        assert chorded.get(timeout=RESULT_TIMEOUT) == 1 + 2 + 3 + 4
        assert counted_down.get(timeout=RESULT_TIMEOUT) == 42

        # Remote control: a broadcast over kombu's fanout (pub/sub) with the reply on a queue.
        [reply] = app.control.ping(timeout=5, limit=1)
        assert list(reply.values()) == [{"ok": "pong"}]

    # The results are stored in the backend, readable by a fresh client after the worker is gone.
    assert app.AsyncResult(sums[3].id).get(timeout=RESULT_TIMEOUT) == 13
    assert app.AsyncResult(failing.id).state == "FAILURE"
