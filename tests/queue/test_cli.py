"""``minired-queue``: inspection and operations in-process, workers as real subprocesses."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from minired_queue.cli import load_handler, main
from minired_queue.transitions import complete, retry_or_fail

from .conftest import BACKENDS
from .helpers import take, wait_until

ROOT = Path(__file__).resolve().parents[2]


def _cli(backend, *args: str) -> list[str]:
    return ["--url", backend.url, *(["--cluster"] if backend.cluster else []), *args]


def test_queues_lists_every_queue_with_counts(backend, queue, capsys):
    queue.add({"n": 1})
    queue.add({"n": 2}, delay_ms=60_000)
    queue.add({"n": 3}, priority=2)
    assert main(_cli(backend, "queues")) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(queue.name))
    assert line.split() == [queue.name, "1", "1", "0", "1", "0", "0", "no"]


def test_counts_prints_json(backend, queue, capsys):
    queue.add({"n": 1})
    queue.pause()
    main(_cli(backend, "counts", queue.name))
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["wait"] == 1 and report["paused"] is True and report["metrics"]["added"] == 1


def test_failed_lists_and_retry_moves_back(backend, queue, capsys):
    ids = [queue.add({"n": n}) for n in range(2)]
    for _ in ids:
        fetch = take(queue)
        retry_or_fail(queue.keys, fetch.job, "tok", "KeyError: 'sku'").run(queue.client)
    main(_cli(backend, "failed", queue.name))
    out = capsys.readouterr().out
    assert all(job_id in out for job_id in ids) and "KeyError: 'sku'" in out
    main(_cli(backend, "retry", queue.name, ids[0]))
    assert "retried 1 job(s)" in capsys.readouterr().out
    main(_cli(backend, "retry", queue.name, "--all"))
    assert "retried 1 job(s)" in capsys.readouterr().out
    assert queue.counts()["wait"] == 2
    with pytest.raises(SystemExit):
        main(_cli(backend, "retry", queue.name))


def test_sweep_recovers_stalled_jobs(backend, queue, clock, capsys):
    job_id = queue.add({"n": 1})
    take(queue, token="dead:1", lock_ttl_ms=clock.span(40))
    clock.advance(clock.span(80))
    main(_cli(backend, "sweep", queue.name))
    out = capsys.readouterr().out
    assert "recovered 1 stalled job(s)" in out and job_id in out
    assert queue.get_state(job_id) == "wait"


def test_add_prints_the_job_id(backend, queue, capsys):
    main(_cli(backend, "add", queue.name, '{"to": "x"}', "--id", "fixed-1", "--attempts", "3"))
    assert capsys.readouterr().out.strip() == "fixed-1"
    assert queue.get_job("fixed-1").max_attempts == 3


def test_add_with_limits_and_wait_for_the_outcome(backend, queue, capsys):
    main(_cli(backend, "add", queue.name, '{"n": 1}', "--id", "j", "--ttl-ms", "60000", "--timeout-ms", "500"))
    job = queue.get_job("j")
    assert capsys.readouterr().out.strip() == "j" and job.timeout_ms == 500 and job.expire_at == job.timestamp + 60000
    assert main(_cli(backend, "add", queue.name, "1", "--dedup-id", "d", "--debounce-ms", "-5")) == 2
    assert "debounce_ms must be an integer from 0 to" in capsys.readouterr().err
    assert main(_cli(backend, "add", queue.name, "1", "--debounce-ms", "5")) == 2
    assert "need a dedup_id" in capsys.readouterr().err
    fetch = take(queue, token="t")
    complete(queue.keys, fetch.job, "t", {"ok": True}).run(queue.client)
    assert main(_cli(backend, "wait", queue.name, "j", "--timeout", "5")) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True}
    queue.add(2, job_id="k")
    fetch = take(queue, token="u")
    retry_or_fail(queue.keys, fetch.job, "u", "boom").run(queue.client)
    assert main(_cli(backend, "wait", queue.name, "k")) == 1 and capsys.readouterr().err == "failed: boom\n"
    assert main(_cli(backend, "wait", queue.name, "nope")) == 3
    queue.add(3, job_id="slow")
    assert main(_cli(backend, "wait", queue.name, "slow", "--timeout", "0.05")) == 4
    assert main(_cli(backend, "wait", queue.name, "slow", "--timeout", "-1")) == 2


def test_add_to_a_group_and_configure_its_limits(backend, queue, capsys):
    main(_cli(backend, "add", queue.name, "1", "--id", "g1", "--group", "tenant:{a}"))
    assert capsys.readouterr().out.strip() == "g1" and queue.group_counts() == {"tenant:{a}": 1}
    assert main(_cli(backend, "add", queue.name, "1", "--group", "")) == 2
    assert "group must be" in capsys.readouterr().err
    main(_cli(backend, "configure", queue.name, "group_concurrency=3", "group_rate_max=10"))
    capsys.readouterr()
    assert queue.settings()["group_concurrency"] == 3 and queue.settings()["group_rate_duration_ms"] == 1000


def test_add_with_a_payload_that_is_not_json_is_a_one_line_error(backend, queue, capsys):
    assert main(_cli(backend, "add", queue.name, "{not json")) == 2
    err = capsys.readouterr().err
    assert err.startswith("minired-queue: error: data is not JSON (") and err.count("\n") == 1
    assert main(_cli(backend, "add", queue.name, "NaN")) == 2
    assert "job data is not JSON" in capsys.readouterr().err
    assert sum(queue.counts().values()) == 0


@pytest.mark.parametrize("command", [["counts"], ["failed"], ["configure"], ["configure", "concurrency=2"],
                                     ["repeat"], ["repeat", "--remove", "r"], ["metrics"]])
def test_commands_on_a_queue_that_does_not_exist_say_so(backend, queue, capsys, command):
    with pytest.raises(SystemExit) as refused:
        main(_cli(backend, command[0], queue.name, *command[1:]))
    assert refused.value.code == f"no such queue: {queue.name!r} (minired-queue queues lists them)"
    assert capsys.readouterr().out == ""
    assert not queue.exists()
    queue.add({"n": 1})
    assert main(_cli(backend, command[0], queue.name, *command[1:])) == 0


def test_a_queue_exists_by_its_registration_or_its_keys(queue):
    assert not queue.exists()
    queue.client.hset(queue.keys.meta, "maxStalled", 2)  # as a client that does not register would
    assert queue.exists()
    queue.client.delete(queue.keys.meta)
    assert not queue.exists()
    queue.pause()
    queue.resume()
    assert queue.exists()


def test_configure_sets_up_a_new_queue_only_when_asked(backend, queue, capsys):
    with pytest.raises(SystemExit):
        main(_cli(backend, "configure", queue.name, "concurrency=2"))
    assert main(_cli(backend, "configure", queue.name, "concurrency=2", "--create")) == 0
    assert json.loads(capsys.readouterr().out)["concurrency"] == 2 and queue.exists()


def test_repeat_shows_next_runs_as_iso_utc_times(backend, queue, capsys):
    queue.add_repeatable("hourly", every_ms=3_600_000)
    tick = queue.repeatables()[0].next_tick_ms
    main(_cli(backend, "repeat", queue.name))
    expected = datetime.fromtimestamp(tick / 1000, timezone.utc).strftime("%Y-%m-%dT%H:00:00.000Z")
    assert f"hourly  every 3600000 ms  next={expected}  made=0" in capsys.readouterr().out


def test_load_handler_resolves_dotted_paths():
    assert load_handler("tests.queue.handlers:sleep_then_echo").__name__ == "sleep_then_echo"
    for bad in ("tests.queue.handlers", "tests.queue.handlers:not_callable"):
        with pytest.raises(SystemExit):
            load_handler(bad)


def _worker(backend, queue, handler: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "minired_queue.cli", *_cli(backend, "worker", queue.name, handler,
                                                                               "--block-timeout", "1", *extra)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("flavour", ["threads", "asyncio"])
def test_worker_command_processes_jobs_and_stops_on_sigterm(backend, queue, flavour):
    handler = "tests.queue.handlers:sleep_then_echo" if flavour == "threads" else "tests.queue.handlers:async_echo"
    extra = ["--asyncio"] if flavour == "asyncio" else []
    ids = [queue.add({"n": n}) for n in range(5)]
    proc = _worker(backend, queue, handler, "--concurrency", "2", *extra)
    try:
        wait_until(lambda: queue.counts()["completed"] == 5, timeout=20)
        assert [queue.get_job(i).return_value for i in ids] == [{"n": n} for n in range(5)]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


SLEEPERS = {"threads": "tests.queue.handlers:sleep_then_echo",
            "asyncio": "tests.queue.handlers:async_sleep_then_echo",
            "asyncio-plain": "tests.queue.handlers:sleep_then_echo"}  # a plain handler in a thread


def _sleeper(backend, queue, flavour: str, *extra: str) -> subprocess.Popen:
    return _worker(backend, queue, SLEEPERS[flavour], *(["--asyncio"] if flavour != "threads" else []), *extra)


# The threaded worker on every backend; the asyncio flavours' signal handling does not
# depend on the server, so two backends keep the suite short.
SIGTERM_CASES = [pytest.param(kind, "threads", id=f"{kind}-threads") for kind in BACKENDS] + [
    pytest.param(kind, flavour, id=f"{kind}-{flavour}") for kind in ("minired", "redis")
    for flavour in ("asyncio", "asyncio-plain")]


@pytest.mark.parametrize("backend,flavour", SIGTERM_CASES, indirect=["backend"])
def test_sigterm_finishes_the_in_flight_job_within_the_grace_period(backend, queue, flavour):
    job_id = queue.add({"sleep": 0.5})
    proc = _sleeper(backend, queue, flavour, "--grace", "5")
    try:
        # Both workers say they are ready and, on stopping, what they did (issue 25: the
        # asyncio one said nothing).
        assert proc.stdout.readline().startswith("worker ")
        assert proc.stdout.readline().strip() == f"started {job_id}"
        proc.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        assert proc.wait(10) == 0
        assert time.monotonic() - stopped_at < 5
        assert queue.get_job(job_id).state == "completed"
        summary = json.loads(proc.stdout.read().strip().split("stopped: ", 1)[1])
        assert summary["completed"] == 1 and summary["refused"] == 0 and "lost" not in summary
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("backend,flavour", SIGTERM_CASES, indirect=["backend"])
def test_sigterm_past_the_grace_period_releases_the_job(backend, queue, flavour):
    job_id = queue.add({"sleep": 30})
    proc = _sleeper(backend, queue, flavour, "--grace", "0.2")
    try:
        proc.stdout.readline()
        assert proc.stdout.readline().strip() == f"started {job_id}"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        job = queue.get_job(job_id)
        # Released at once, for another worker: back in wait, no attempt counted.
        assert job.state == "wait" and job.attempts_made == 0 and queue.counts()["active"] == 0
        assert '"released": 1' in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_handler_module_in_the_current_directory_is_found(backend, queue, tmp_path):
    """Issue 25 finding 2: run as an installed console script, whose sys.path holds its own
    directory and not the current one, the CLI could not import myapp.jobs."""
    app = tmp_path / "app"
    (app / "myapp").mkdir(parents=True)
    (app / "myapp" / "__init__.py").write_text("")
    (app / "myapp" / "jobs.py").write_text("def send(job):\n    return 'sent ' + job.id\n")
    launcher = tmp_path / "bin" / "minired-queue"
    launcher.parent.mkdir()
    launcher.write_text("import sys\nfrom minired_queue.cli import main\nsys.exit(main())\n")
    job_id = queue.add({"to": "a@example.com"})
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'queue'}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, str(launcher), *_cli(backend, "worker", queue.name, "myapp.jobs:send",
                                                                 "--burst", "--block-timeout", "1")],
                          cwd=app, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert queue.get_job(job_id).return_value == f"sent {job_id}"
    assert "ready" in done.stdout and '"completed": 1' in done.stdout


def test_worker_command_refuses_an_async_handler_without_asyncio(backend, queue):
    done = subprocess.run([sys.executable, "-m", "minired_queue.cli",
                           *_cli(backend, "worker", queue.name, "tests.queue.handlers:async_echo", "--burst")],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "coroutine function" in done.stderr and "--asyncio" in done.stderr


def test_sweep_uses_the_stall_limit_stored_with_the_queue(backend, queue, clock, capsys):
    """Issue 25 finding 4: the CLI's sweep applied its own max_stalled=1 and dead-lettered a
    job the workers' setting would have retried."""
    queue.configure(max_stalled=2)
    job_id = queue.add({"n": 1})
    for stall in (1, 2, 3):
        take(queue, token=f"dead:{stall}", lock_ttl_ms=clock.span(40))
        clock.advance(clock.span(80))
        main(_cli(backend, "sweep", queue.name))
        out = capsys.readouterr().out
        assert (f"recovered {job_id}" in out) == (stall <= 2) and (f"failed    {job_id}" in out) == (stall == 3)
    assert queue.get_job(job_id).state == "failed"


def test_configure_repeat_and_metrics_commands(backend, queue, capsys):
    main(_cli(backend, "configure", queue.name, "concurrency=4", "rate_max=10", "rate-duration-ms=2000", "--create"))
    assert json.loads(capsys.readouterr().out) == {"concurrency": 4, "rate_max": 10, "rate_duration_ms": 2000,
                                                   "max_stalled": 1}
    main(_cli(backend, "configure", queue.name, "concurrency=none"))
    assert "concurrency" not in json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(_cli(backend, "configure", queue.name, "concurrency=lots"))
    queue.add_repeatable("nightly", cron="0 3 * * *", tz="Europe/Paris")
    main(_cli(backend, "repeat", queue.name))
    assert "nightly  cron '0 3 * * *' Europe/Paris" in capsys.readouterr().out
    main(_cli(backend, "repeat", queue.name, "--remove", "nightly"))
    assert capsys.readouterr().out.strip() == "removed"
    queue.add({"n": 1}, priority=3)
    main(_cli(backend, "metrics", queue.name))
    out = capsys.readouterr().out
    assert f'minired_queue_jobs{{queue="{queue.name}",state="prioritized"}} 1' in out


def test_demo_reports_the_guarantees(backend, capsys):
    assert main(_cli(backend, "demo", "--server", "url", "--jobs", "150", "--workers", "2", "--kills", "1",
                     "--seed", "7")) == 0
    out = capsys.readouterr().out
    assert "never lost:         YES" in out and "effects once:       YES" in out
    assert "effect with dedup marker      150 applications, 0 duplicates" in out
