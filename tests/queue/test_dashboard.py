"""The dashboard's API on minired, Redis and Redis Cluster: what a producer and a worker did is
what the endpoints show, writes go through the queue's transitions, and access rules hold."""
from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from minired_queue.dashboard import create_app, needs_token
from minired_queue.dashboard.app import CSRF_HEADER, TOKEN_COOKIE
from minired_queue.job import JobSpec
from minired_queue.transitions import RedisOp, apply_effect_once, complete, retry_or_fail
from tests.queue.helpers import take


def _csrf(web: TestClient) -> str:
    page = web.get("/").text
    marker = 'name="csrf-token" content="'
    return page[page.index(marker) + len(marker):].split('"', 1)[0]


@pytest.fixture
def web(client):
    with TestClient(create_app(client)) as test_client:
        yield test_client


def _fail(queue, token="tok"):
    fetch = take(queue, token=token)
    retry_or_fail(queue.keys, fetch.job, token, "boom: the mail server said no",
                  stacktrace="Traceback (most recent call last):\n  File \"jobs.py\", line 3\nValueError: boom").run(queue.client)
    return fetch.job.id


def test_overview_counts_every_state(web, queue):
    for i in range(3):
        queue.add({"n": i})
    queue.add_job(JobSpec({"n": "later"}, delay_ms=60_000))
    queue.add_job(JobSpec({"n": "urgent"}, priority=3))
    take(queue)
    found = {q["name"]: q for q in web.get("/api/overview").json()["queues"]}[queue.name]
    assert found["counts"] == {"wait": 2, "prioritized": 1, "active": 1, "delayed": 1,
                               "completed": 0, "failed": 0}
    assert found["paused"] is False


def test_active_job_shows_worker_attempt_and_lock_ttl(web, queue):
    queue.add({"x": 1}, job_id="j1")
    take(queue, token="worker-7:1", lock_ttl_ms=30_000)
    detail = web.get(f"/api/queues/{queue.name}").json()
    [active] = detail["active"]
    assert active["job"]["id"] == "j1"
    assert active["token"] == "worker-7:1" and active["worker"] == "worker-7"
    assert active["attempt"] == 1
    assert 0 < active["lock_ttl_ms"] <= 30_000


def test_stalled_job_shows_an_expired_lock(web, queue, client):
    queue.add(job_id="j1")
    take(queue, token="w:1")
    client.delete(queue.keys.lock("j1"))  # the owner stopped renewing: the lock lapsed
    [active] = web.get(f"/api/queues/{queue.name}").json()["active"]
    assert active["lock_ttl_ms"] == -2
    queue.sweep()
    detail = web.get(f"/api/queues/{queue.name}").json()
    assert detail["active"] == [] and detail["counts"]["wait"] == 1
    assert [e["jobId"] for e in detail["recovered"]] == ["j1"]


def test_job_page_has_data_error_traceback_and_markers(web, queue):
    queue.add_job(JobSpec({"to": "ada@example.com"}, job_id="mail-1", dedup_id="ada", attempts=1))
    fetch = take(queue, token="w:1")
    apply_effect_once(queue.keys.effect("mail-1", "send"),
                      [RedisOp("HINCRBY", f"{queue.keys.base}:sent", "ada", 1)], 60_000, "w:1").run(queue.client)
    retry_or_fail(queue.keys, fetch.job, "w:1", "boom", stacktrace="Traceback: ValueError: boom").run(queue.client)
    job = web.get(f"/api/queues/{queue.name}/jobs/mail-1").json()
    assert job["state"] == "failed" and job["data"] == {"to": "ada@example.com"}
    assert job["failed_reason"] == "boom" and "ValueError" in job["stacktrace"]
    assert job["attempts_made"] == 1 and job["max_attempts"] == 1
    assert [m["key"] for m in job["effects"]] == [queue.keys.effect("mail-1", "send")]
    assert web.get(f"/api/queues/{queue.name}/jobs/nope").status_code == 404


def test_completed_job_shows_result_and_progress(web, queue):
    queue.add(job_id="r1")
    fetch = take(queue, token="w:1")
    complete(queue.keys, fetch.job, "w:1", {"sent": 3}).run(queue.client)
    job = web.get(f"/api/queues/{queue.name}/jobs/r1").json()
    assert job["state"] == "completed" and job["result"] == {"sent": 3}


def test_retry_one_and_all_through_the_transitions(web, queue):
    for i in range(3):
        queue.add(job_id=f"f{i}")
    failed = [_fail(queue) for _ in range(3)]
    headers = {CSRF_HEADER: _csrf(web)}
    reply = web.post(f"/api/queues/{queue.name}/retry", json={"ids": [failed[0]]}, headers=headers)
    assert reply.json() == {"retried": 1}
    assert queue.counts()["failed"] == 2 and queue.counts()["wait"] == 1
    reply = web.post(f"/api/queues/{queue.name}/retry", json={"ids": None}, headers=headers)
    assert reply.json() == {"retried": 2}
    assert queue.counts()["failed"] == 0 and queue.counts()["wait"] == 3
    # Retrying again finds nothing to move: no job is duplicated.
    assert web.post(f"/api/queues/{queue.name}/retry", json={"ids": failed}, headers=headers).json() == {"retried": 0}
    assert queue.client.llen(queue.keys.wait) == 3


def test_remove_and_pause(web, queue):
    queue.add(job_id="gone")
    headers = {CSRF_HEADER: _csrf(web)}
    assert web.post(f"/api/queues/{queue.name}/remove/gone", headers=headers).json() == {"removed": True}
    assert queue.get_job("gone") is None
    assert web.post(f"/api/queues/{queue.name}/pause", json={"paused": True}, headers=headers).json() == {"paused": True}
    assert queue.is_paused()
    web.post(f"/api/queues/{queue.name}/pause", json={"paused": False}, headers=headers)
    assert not queue.is_paused()


def test_history_counts_finished_attempts_per_minute(web, queue):
    for i in range(2):
        queue.add(job_id=f"h{i}")
    for i in range(2):
        fetch = take(queue, token="w:1")
        complete(queue.keys, fetch.job, "w:1", None).run(queue.client)
    queue.add(job_id="waiting")
    series = web.get(f"/api/queues/{queue.name}/history").json()["series"]
    assert len(series["minute"]) == 60
    assert sum(series["completed"]) == 2 and sum(series["failed"]) == 0
    assert series["p50_ms"][-1] is not None
    assert series["waiting"][-1] == 1


def test_writes_need_the_pages_csrf_token_and_same_origin(web, queue):
    queue.add(job_id="keep")
    assert web.post(f"/api/queues/{queue.name}/remove/keep").status_code == 403
    assert web.post(f"/api/queues/{queue.name}/remove/keep", headers={CSRF_HEADER: "guess"}).status_code == 403
    cross = {CSRF_HEADER: _csrf(web), "origin": "http://evil.example"}
    assert web.post(f"/api/queues/{queue.name}/remove/keep", headers=cross).status_code == 403
    assert queue.get_job("keep") is not None
    bad = web.post(f"/api/queues/{queue.name}/pause", json={"paused": "yes"}, headers={CSRF_HEADER: _csrf(web)})
    assert bad.status_code == 400 and "paused" in bad.json()["error"]


def test_a_token_guards_every_page_and_call(client, queue):
    with TestClient(create_app(client, token="s3cret")) as web:
        assert web.get("/").status_code == 401
        assert web.get("/api/overview").status_code == 401
        assert web.get("/?token=wrong").status_code == 401
        assert web.get("/api/overview", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        login = web.get("/?token=s3cret", follow_redirects=False)
        assert login.status_code == 303 and TOKEN_COOKIE in login.headers["set-cookie"]
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        assert web.get("/api/overview").status_code == 200  # the cookie now carries it


def test_binding_beyond_loopback_needs_a_token():
    assert not needs_token("127.0.0.1") and not needs_token("::1") and not needs_token("localhost")
    assert needs_token("0.0.0.0") and needs_token("192.0.2.7") and needs_token("example.com")


def test_server_panel(web, backend):
    panel = web.get("/api/server").json()
    assert panel["minired"] is backend.kind.startswith("minired")  # (minired_cluster too)
    assert panel["connected_clients"] >= 1
    if backend.kind == "minired":
        assert panel["time_control"] is True  # the suite's minired runs with --time-control
        before = panel["clock_ms"]
        reply = web.post("/api/server/advance", json={"ms": 5000}, headers={CSRF_HEADER: _csrf(web)})
        assert reply.json()["clock_ms"] >= before + 5000


def test_event_stream_sends_the_overview(client, queue):
    queue.add(job_id="s1")
    with TestClient(create_app(client, stream_interval_s=0.05)) as web:
        with web.stream("GET", "/api/stream") as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    payload = json.loads(line[6:])
                    break
    names = {q["name"]: q for q in payload["overview"]["queues"]}
    assert names[queue.name]["counts"]["wait"] == 1
    assert "connected_clients" in payload["server"]


def _cli_dashboard(url: str, *args: str):
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "minired_queue.cli", "--url", url, "dashboard",
                                "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    return process, line.rsplit(" on ", 1)[-1].strip()


@pytest.mark.parametrize("backend", ["minired"], indirect=True)
def test_cli_serves_the_dashboard(backend, queue):
    import urllib.error
    import urllib.request

    queue.add(job_id="cli")
    process, url = _cli_dashboard(backend.url)
    try:
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        overview = json.loads(urllib.request.urlopen(url + "api/overview", timeout=10).read())
        assert queue.name in [q["name"] for q in overview["queues"]]
    finally:
        process.terminate()
        process.wait(10)
    # Beyond loopback a token is made up, printed in the URL, and required.
    process, url = _cli_dashboard(backend.url, "--bind", "0.0.0.0")
    try:
        base, _, token = url.partition("?token=")
        assert len(token) >= 16
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "api/overview", timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(base + "api/overview", headers={"Authorization": f"Bearer {token}"})
        assert urllib.request.urlopen(request, timeout=10).status == 200
    finally:
        process.terminate()
        process.wait(10)
