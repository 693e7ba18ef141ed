"""A worker whose server is down: it says ready only once the server answers (or, with
``fail_fast``, raises at start), backs off while the server is away, and logs one line
when an outage starts and one when it ends, never a traceback per retry."""
from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError

from minired.embed import EmbeddedServer
from minired_queue import Queue
from minired_queue.aio import AsyncWorker
from minired_queue.connection import connect, connect_async
from minired_queue.options import Hooks, Reconnect, WorkerOptions
from minired_queue.worker import Worker
from tests.support.servers import free_port

from .helpers import wait_until


def _outage_lines(caplog, words: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("minired_queue") and words in r.getMessage()]


def test_reconnect_backs_off_exponentially_up_to_a_cap():
    reconnect = Reconnect()
    delays = [reconnect.failed() for _ in range(12)]
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4] and max(delays) == Reconnect.MOST_S == delays[-1]
    reconnect.succeeded()
    assert reconnect.failed() == Reconnect.FIRST_S


def test_fail_fast_raises_at_start_when_the_server_is_unreachable(caplog):
    ready = []
    client = connect(f"redis://127.0.0.1:{free_port()}")
    worker = Worker("q", client, lambda job: None, WorkerOptions(fail_fast=True), Hooks(on_ready=lambda: ready.append(1)))
    with pytest.raises(ConnectionError):
        worker.run(install_signal_handlers=False)
    assert ready == [] and worker.core.outage.failures == 0


def test_fail_fast_raises_at_start_for_the_asyncio_worker_too():
    ready = []

    async def handler(job):
        return None

    async def main() -> None:
        client = connect_async(f"redis://127.0.0.1:{free_port()}")
        worker = AsyncWorker("q", client, handler, WorkerOptions(fail_fast=True),
                             Hooks(on_ready=lambda: ready.append(1)))
        try:
            await worker.run()
        finally:
            await client.aclose()

    with pytest.raises(ConnectionError):
        asyncio.run(main())
    assert ready == []


class _ThreadedRun:
    """A worker running in a thread of its own: the threaded worker as is, the asyncio
    worker in an event loop of its own."""

    def __init__(self, flavour: str, port: int, handler, options: WorkerOptions, hooks: Hooks) -> None:
        self.client = connect(f"redis://127.0.0.1:{port}")
        self.loop: asyncio.AbstractEventLoop | None = None
        if flavour == "threads":
            self.worker = Worker("outage", self.client, handler, options, hooks)
            self.thread = threading.Thread(target=self.worker.run, kwargs={"install_signal_handlers": False},
                                           daemon=True)
        else:
            async_client = connect_async(f"redis://127.0.0.1:{port}")

            async def run() -> None:
                self.loop = asyncio.get_running_loop()
                try:
                    await self.worker.run()
                finally:
                    await async_client.aclose()

            async def async_handler(job):
                return handler(job)

            self.worker = AsyncWorker("outage", async_client, async_handler, options, hooks)
            self.thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if isinstance(self.worker, Worker):
            self.worker.stop()
        else:
            wait_until(lambda: self.loop is not None)
            self.loop.call_soon_threadsafe(self.worker.stop)
        self.thread.join(15)
        self.client.close()


@pytest.mark.parametrize("flavour", ["threads", "asyncio"])
def test_one_line_per_outage_and_one_when_it_ends(caplog, monkeypatch, flavour):
    caplog.set_level(logging.INFO, logger="minired_queue")
    monkeypatch.setattr(Reconnect, "FIRST_S", 0.001)
    monkeypatch.setattr(Reconnect, "MOST_S", 0.02)
    port = free_port()
    ready = threading.Event()
    done = []
    run = _ThreadedRun(flavour, port, lambda job: done.append(job.data) or "ok",
                       WorkerOptions(block_timeout_s=1, sweep_interval_s=0.05, lock_ttl_ms=3000),
                       Hooks(on_ready=ready.set))
    worker, client, runner = run.worker, run.client, run.thread
    server = None
    try:
        # Down at start: not ready, retrying quietly.
        wait_until(lambda: worker.core.outage.failures >= 20)
        assert not ready.is_set()
        assert len(_outage_lines(caplog, "cannot reach the server")) == 1

        # Up: ready, one line saying so, jobs flow.
        server = EmbeddedServer(port=port).start()
        wait_until(ready.is_set)
        assert len(_outage_lines(caplog, "reaches the server again")) == 1
        Queue("outage", client).add({"n": 1})
        wait_until(lambda: done == [{"n": 1}])

        # Down while running (fetch loop and maintenance both failing): one more line.
        failures = worker.core.outage.failures
        server.stop()
        server = None
        wait_until(lambda: worker.core.outage.failures >= failures + 20)
        assert len(_outage_lines(caplog, "cannot reach the server")) == 2

        # Back again: one more line, and the worker works on.
        server = EmbeddedServer(port=port).start()
        wait_until(lambda: len(_outage_lines(caplog, "reaches the server again")) == 2)
        Queue("outage", client).add({"n": 2})
        wait_until(lambda: done == [{"n": 1}, {"n": 2}])
    finally:
        run.stop()
        if server is not None:
            server.stop()
    assert not runner.is_alive()
    assert [r for r in caplog.records if r.exc_info] == []
    assert len(_outage_lines(caplog, "cannot reach the server")) == 2


@pytest.mark.parametrize("flavour", [[], ["--asyncio"]])
def test_worker_command_with_fail_fast_exits_non_zero_when_the_server_is_unreachable(flavour):
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "queue"), os.environ.get("PYTHONPATH", "")])}
    handler = "tests.queue.handlers:async_echo" if flavour else "tests.queue.handlers:sleep_then_echo"
    url = f"redis://127.0.0.1:{free_port()}"
    proc = subprocess.run([sys.executable, "-m", "minired_queue.cli", "--url", url, "worker", "q", handler,
                           "--fail-fast", *flavour], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"cannot reach the server at {url}: ") and "Traceback" not in proc.stderr
    assert " ready " not in proc.stdout


def test_a_setup_the_server_refuses_is_tried_again_by_both_workers(caplog):
    """The setup writes (the worker registry's entry), so the server can refuse it as it
    refuses a fetch (OOM, or ClusterError from a cluster client mid-resharding): the worker
    logs it, tries again and becomes ready; under ``fail_fast`` the error is raised."""
    from redis.exceptions import ClusterError

    caplog.set_level(logging.WARNING, logger="minired_queue")
    with EmbeddedServer() as server:
        def refuse_first(client, count):
            real, refused = client.evalsha, []

            def evalsha(*args):
                if len(refused) < count:
                    refused.append(args[0])
                    raise ClusterError("out of redirects")
                return real(*args)
            client.evalsha = evalsha
            return refused

        client = connect(server.url)
        refused = refuse_first(client, 2)
        ready = threading.Event()
        worker = Worker("refused", client, lambda job: None, WorkerOptions(sweep_interval_s=None),
                        Hooks(on_ready=ready.set)).start()
        try:
            assert ready.wait(30) and len(refused) == 2
        finally:
            worker.stop(wait=True, timeout=10)
        assert len(_outage_lines(caplog, "refused the setup")) == 2
        refuse_first(client, 1)
        with pytest.raises(ClusterError):
            Worker("refused", client, lambda job: None, WorkerOptions(fail_fast=True)).run(install_signal_handlers=False)
        client.close()

        async def handler(job):
            return None

        async def run_async() -> list:
            aclient = connect_async(server.url)
            refused = refuse_first(aclient, 2)  # (the real evalsha's coroutine is awaited by the caller)
            aready = asyncio.Event()
            aworker = AsyncWorker("refused", aclient, handler, WorkerOptions(sweep_interval_s=None),
                                  Hooks(on_ready=aready.set))
            task = asyncio.ensure_future(aworker.run())
            try:
                await asyncio.wait_for(aready.wait(), 30)
            finally:
                aworker.stop()
                await asyncio.wait_for(task, 30)
                await aclient.aclose()
            return refused

        assert len(asyncio.run(run_async())) == 2
