"""dramatiq: its Redis broker (Lua dispatch script, delay queue, dead-letter queue), the Redis
results backend and its threaded Worker."""
from __future__ import annotations

import dramatiq
import pytest
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import ResultFailure, Results
from dramatiq.results.backends.redis import RedisBackend

from tests.integration import jobs

QUEUE = "integration"
JOIN_TIMEOUT_MS = 15_000
RESULT_TIMEOUT_MS = 5_000


@pytest.fixture
def broker(target):
    broker = RedisBroker(url=target.url)
    backend = RedisBackend(url=target.url)
    broker.add_middleware(Results(backend=backend))
    # Actors bind to the global broker unless told otherwise; results are read through it too.
    dramatiq.set_broker(broker)
    yield broker
    broker.close()
    backend.client.close()


def test_worker_runs_messages_results_retries_delays_and_dead_letters(broker, target, tmp_path):
    actor_options = dict(broker=broker, queue_name=QUEUE, store_results=True, min_backoff=10,
                         max_backoff=20)
    add = dramatiq.actor(jobs.add, actor_name="add", max_retries=0, **actor_options)
    fail = dramatiq.actor(jobs.fail, actor_name="fail", max_retries=0, **actor_options)
    flaky = dramatiq.actor(jobs.fail_first_attempt, actor_name="flaky", max_retries=1,
                           **actor_options)

    sums = [add.send(n, 10) for n in range(5)]
    delayed = add.send_with_options(args=(1, 1), delay=200)
    failing = fail.send("boom")
    retried = flaky.send(str(tmp_path / "flaky"))
    grouped = dramatiq.group([add.message(n, n) for n in range(3)], broker=broker).run()
    piped = dramatiq.pipeline([add.message(1, 2), add.message(10)], broker=broker).run()

    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        broker.join(QUEUE, timeout=JOIN_TIMEOUT_MS)
        worker.join()
    finally:
        worker.stop()

    assert [message.get_result(block=True, timeout=RESULT_TIMEOUT_MS) for message in sums] == \
        [10, 11, 12, 13, 14]
    assert delayed.get_result(block=True, timeout=RESULT_TIMEOUT_MS) == 2
    assert retried.get_result(block=True, timeout=RESULT_TIMEOUT_MS) == "recovered"
    assert list(grouped.get_results(block=True, timeout=RESULT_TIMEOUT_MS)) == [0, 2, 4]
    assert piped.get_result(block=True, timeout=RESULT_TIMEOUT_MS) == 13  # add(10, add(1, 2))
    with pytest.raises(ResultFailure, match="boom"):
        failing.get_result(block=True, timeout=RESULT_TIMEOUT_MS)

    # A message out of retries is kept in the queue's dead-letter set, nothing else is left.
    with target.client() as client:
        [dead_id] = client.zrange(f"dramatiq:{QUEUE}.XQ", 0, -1)
        assert failing.message_id.encode() in client.hget(f"dramatiq:{QUEUE}.XQ.msgs", dead_id)
        assert client.llen(f"dramatiq:{QUEUE}") == 0
        assert client.hlen(f"dramatiq:{QUEUE}.msgs") == 0
