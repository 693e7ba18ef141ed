"""The dashboard's API on minired, Redis and Redis Cluster: what a producer and a worker did is
what the endpoints show, writes go through the queue's transitions, and access rules hold."""
from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from minired_queue.dashboard import create_app, needs_token
from minired_queue.dashboard.app import CSRF_HEADER, TOKEN_COOKIE
from minired_queue.job import JobSpec
from minired_queue.metrics import DURATION_BOUNDS_MS
from minired_queue.transitions import RedisOp, apply_effect_once, complete, retry_or_fail
from tests.queue.helpers import take


def _csrf(web: TestClient) -> str:
    page = web.get("/").text
    marker = 'name="csrf-token" content="'
    return page[page.index(marker) + len(marker):].split('"', 1)[0]


LOCAL = "http://127.0.0.1:8080"


def _app(client, **options):
    """A dashboard whose snapshots are never reused (interval 0), so each call reads what the
    test just wrote; the snapshot sharing has tests of its own."""
    return create_app(client, **{"stream_interval_s": 0, **options})


@pytest.fixture
def web(client):
    with TestClient(_app(client), base_url=LOCAL) as test_client:
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
    detail = web.get("/api/queue", params={"name": queue.name}).json()
    [active] = detail["active"]
    assert active["job"]["id"] == "j1"
    assert active["token"] == "worker-7:1" and active["worker"] == "worker-7"
    assert active["attempt"] == 1
    assert 0 < active["lock_ttl_ms"] <= 30_000


def test_stalled_job_shows_an_expired_lock(web, queue, client):
    queue.add(job_id="j1")
    take(queue, token="w:1")
    client.delete(queue.keys.lock("j1"))  # the owner stopped renewing: the lock lapsed
    [active] = web.get("/api/queue", params={"name": queue.name}).json()["active"]
    assert active["lock_ttl_ms"] == -2
    queue.sweep()
    detail = web.get("/api/queue", params={"name": queue.name}).json()
    assert detail["active"] == [] and detail["counts"]["wait"] == 1
    assert [e["jobId"] for e in detail["recovered"]] == ["j1"]


def test_a_recovery_stays_listed_behind_hundreds_of_newer_events(web, queue, client):
    """The recoveries come from a bounded backwards read of the events stream, not from the
    few events the page lists: 300 adds later the sweep's recovery is still there, and the
    reply says how many events were looked at."""
    from minired_queue.dashboard.data import EVENTS_SHOWN, RECOVERY_LOOKBACK

    queue.add(job_id="j1")
    take(queue, token="w:1")
    client.delete(queue.keys.lock("j1"))
    queue.sweep()
    for i in range(300):
        queue.add(job_id=f"later-{i}")
    detail = web.get("/api/queue", params={"name": queue.name}).json()
    assert [e["jobId"] for e in detail["recovered"]] == ["j1"]
    assert detail["recovered_looked_at"] == min(RECOVERY_LOOKBACK, client.xlen(queue.keys.events))
    assert len(detail["events"]) == EVENTS_SHOWN
    assert detail["events"][-1]["jobId"] == "later-299"


def test_job_page_has_data_error_traceback_and_markers(web, queue):
    queue.add_job(JobSpec({"to": "ada@example.com"}, job_id="mail-1", dedup_id="ada", attempts=1))
    fetch = take(queue, token="w:1")
    apply_effect_once(queue.keys.effect("mail-1", "send"), queue.keys.effects("mail-1"),
                      [RedisOp("HINCRBY", f"{queue.keys.base}:sent", "ada", 1)], 60_000, "w:1").run(queue.client)
    retry_or_fail(queue.keys, fetch.job, "w:1", "boom", stacktrace="Traceback: ValueError: boom").run(queue.client)
    job = web.get("/api/job", params={"queue": queue.name, "id": "mail-1"}).json()
    assert job["state"] == "failed" and job["data"] == {"to": "ada@example.com"}
    assert job["failed_reason"] == "boom" and "ValueError" in job["stacktrace"]
    assert job["attempts_made"] == 1 and job["max_attempts"] == 1
    assert [m["key"] for m in job["effects"]] == [queue.keys.effect("mail-1", "send")]
    assert web.get("/api/job", params={"queue": queue.name, "id": "nope"}).status_code == 404


def test_completed_job_shows_result_and_progress(web, queue):
    queue.add(job_id="r1")
    fetch = take(queue, token="w:1")
    complete(queue.keys, fetch.job, "w:1", {"sent": 3}).run(queue.client)
    job = web.get("/api/job", params={"queue": queue.name, "id": "r1"}).json()
    assert job["state"] == "completed" and job["result"] == {"sent": 3}


def test_retry_one_and_all_through_the_transitions(web, queue):
    for i in range(3):
        queue.add(job_id=f"f{i}")
    failed = [_fail(queue) for _ in range(3)]
    headers = {CSRF_HEADER: _csrf(web)}
    reply = web.post("/api/retry", params={"queue": queue.name}, json={"ids": [failed[0]]}, headers=headers)
    assert reply.json() == {"retried": 1}
    assert queue.counts()["failed"] == 2 and queue.counts()["wait"] == 1
    reply = web.post("/api/retry", params={"queue": queue.name}, json={"ids": None}, headers=headers)
    assert reply.json() == {"retried": 2}
    assert queue.counts()["failed"] == 0 and queue.counts()["wait"] == 3
    # Retrying again finds nothing to move: no job is duplicated.
    assert web.post("/api/retry", params={"queue": queue.name}, json={"ids": failed}, headers=headers).json() == {"retried": 0}
    assert queue.client.llen(queue.keys.wait) == 3


def test_remove_and_pause(web, queue):
    queue.add(job_id="gone")
    headers = {CSRF_HEADER: _csrf(web)}
    assert web.post("/api/remove", params={"queue": queue.name, "id": "gone"}, headers=headers).json() == {"removed": True}
    assert queue.get_job("gone") is None
    assert web.post("/api/pause", params={"queue": queue.name}, json={"paused": True}, headers=headers).json() == {"paused": True}
    assert queue.is_paused()
    web.post("/api/pause", params={"queue": queue.name}, json={"paused": False}, headers=headers)
    assert not queue.is_paused()


def test_history_counts_finished_attempts_per_minute(web, queue):
    for i in range(2):
        queue.add(job_id=f"h{i}")
    for i in range(2):
        fetch = take(queue, token="w:1")
        complete(queue.keys, fetch.job, "w:1", None).run(queue.client)
    queue.add(job_id="waiting")
    queue.sweep()  # the workers' sweep samples the ready line's depth (a view never writes)
    reply = web.get("/api/history", params={"name": queue.name}).json()
    series = reply["series"]
    assert reply["waiting_now"] == 1
    assert len(series["minute"]) == 60
    assert sum(series["completed"]) == 2 and sum(series["failed"]) == 0
    assert series["p50_ms"][-1] is not None
    # The percentiles are bucket upper bounds; past the last one the page says "> 60 s".
    assert series["p50_ms"][-1] in DURATION_BOUNDS_MS and reply["top_bound_ms"] == DURATION_BOUNDS_MS[-1]
    assert series["waiting"][-1] == 1
    assert queue.client.pttl(queue.keys.history) > 0  # an abandoned queue's history goes away


def test_sweeping_an_empty_queue_creates_no_history(queue):
    queue.sweep()
    assert not queue.client.exists(queue.keys.history)


def test_writes_need_the_pages_csrf_token_and_same_origin(web, queue):
    queue.add(job_id="keep")
    assert web.post("/api/remove", params={"queue": queue.name, "id": "keep"}).status_code == 403
    assert web.post("/api/remove", params={"queue": queue.name, "id": "keep"}, headers={CSRF_HEADER: "guess"}).status_code == 403
    cross = {CSRF_HEADER: _csrf(web), "origin": "http://evil.example"}
    assert web.post("/api/remove", params={"queue": queue.name, "id": "keep"}, headers=cross).status_code == 403
    assert queue.get_job("keep") is not None
    bad = web.post("/api/pause", params={"queue": queue.name}, json={"paused": "yes"}, headers={CSRF_HEADER: _csrf(web)})
    assert bad.status_code == 400 and "paused" in bad.json()["error"]


def test_a_token_guards_every_page_and_call(client, queue):
    with TestClient(_app(client, token="s3cret"), base_url=LOCAL) as web:
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
    with TestClient(_app(client), base_url=LOCAL) as web:
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


# --- DNS rebinding: the Host header names an allowed host, or nothing runs ---------------------
def test_a_foreign_host_gets_421_before_any_handler(client, queue):
    queue.add(job_id="j1")
    evil = "http://evil.example:8080"
    with TestClient(_app(client), base_url=evil) as web:
        page = web.get("/")
        assert page.status_code == 421 and "csrf-token" not in page.text
        assert web.get("/api/overview").status_code == 421
        assert web.get("/api/queue", params={"name": queue.name}).status_code == 421
        paused = web.post("/api/pause", params={"queue": queue.name}, json={"paused": True},
                          headers={"origin": evil, CSRF_HEADER: "anything"})
        assert paused.status_code == 421
    assert not queue.is_paused()
    for local in ("http://localhost:9", "http://127.0.0.1", "http://[::1]:8080"):
        with TestClient(_app(client), base_url=local) as web:
            assert web.get("/api/overview").status_code == 200, local
    with TestClient(_app(client, allowed_hosts=["dash.example.com"]),
                    base_url="http://dash.example.com:8080") as web:
        assert web.get("/api/overview").status_code == 200
    with TestClient(_app(client, allowed_hosts=["dash.example.com:443"]),
                    base_url="http://dash.example.com:8080") as web:
        assert web.get("/api/overview").status_code == 421  # a port given is the only one


def test_writes_need_an_allowed_origin(web, queue):
    queue.add(job_id="keep")
    csrf = _csrf(web)
    for origin in ("http://evil.example:8080", "null", "http://localhost:8080"):
        refused = web.post("/api/pause", params={"queue": queue.name}, json={"paused": True},
                           headers={CSRF_HEADER: csrf, "origin": origin})
        assert refused.status_code == 403 and refused.json()["reason"] == "origin", origin
    assert not queue.is_paused()
    same = web.post("/api/pause", params={"queue": queue.name}, json={"paused": True},
                    headers={CSRF_HEADER: csrf, "origin": LOCAL})
    assert same.json() == {"paused": True}


def test_allowed_hosts_of_a_server():
    from minired_queue.dashboard import allowed_hosts_for

    assert allowed_hosts_for("127.0.0.1", None) == ["127.0.0.1"]
    assert allowed_hosts_for("192.0.2.7", "t", ["dash.example"]) == ["192.0.2.7", "dash.example"]
    assert allowed_hosts_for("0.0.0.0", "t") == ["*"]  # reached by unknown names: the token guards
    assert allowed_hosts_for("::", "t", ["dash.example"]) == ["dash.example"]


def _port(url: str) -> int:
    return int(url.split("?")[0].rsplit(":", 1)[1].strip("/"))


def _status(port: int, host: str) -> int:
    """The status of GET /api/overview on a served dashboard, sent with this Host header."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/api/overview", headers={"Host": host})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.parametrize("backend", ["minired"], indirect=True)
def test_the_served_dashboard_refuses_a_rebound_host(client, queue):
    from minired_queue.dashboard import DashboardServer

    with DashboardServer(client, port=0) as server:
        port = _port(server.url)
        assert _status(port, f"evil.example:{port}") == 421
        assert _status(port, f"127.0.0.1:{port}") == 200 and _status(port, f"localhost:{port}") == 200


# --- tokens: an empty one is refused; a stale page is told to reload ----------------------------
def test_an_empty_token_is_refused(client):
    from minired_queue.dashboard import DashboardServer

    with pytest.raises(SystemExit, match="token is empty"):
        DashboardServer(client, bind="0.0.0.0", port=0, token="")
    with pytest.raises(ValueError, match="token is empty"):
        create_app(client, token="")


def test_a_page_from_before_a_restart_is_told_to_reload(client, queue):
    queue.add(job_id="keep")
    with TestClient(_app(client), base_url=LOCAL) as before:
        stale = _csrf(before)
    with TestClient(_app(client), base_url=LOCAL) as after:  # the dashboard restarted
        reply = after.post("/api/remove", params={"queue": queue.name, "id": "keep"},
                           headers={CSRF_HEADER: stale, "origin": LOCAL})
    assert reply.status_code == 403
    assert reply.json()["reason"] == "csrf" and "reload" in reply.json()["error"]
    assert queue.get_job("keep") is not None


# --- reads only read, and cost the same however many tabs are open ---------------------------
def _command_calls(client) -> dict[str, int]:
    return {name[len("cmdstat_"):]: stats["calls"] for name, stats in client.info("commandstats").items()}


def _commands_since(client, before: dict[str, int]) -> dict[str, int]:
    after = _command_calls(client)
    after["info"] -= 1  # the INFO that read these numbers
    return {name: calls - before.get(name, 0) for name, calls in after.items() if calls > before.get(name, 0)}


def _writes_among(client, commands: dict[str, int]) -> list[str]:
    """Commands that write or run scripts (a script may write), or walk the keyspace."""
    infos = client.execute_command("COMMAND", "INFO", *commands)
    return sorted(name for name, info in infos.items()
                  if "write" in info["flags"] or "@write" in info["acl_categories"]
                  or "@scripting" in info["acl_categories"] or name in ("scan", "keys"))


def _busy_queue(queue):
    """A queue with a job in every interesting state, effect markers included."""
    from minired_queue.effects import EffectGuard

    queue.add({"n": 1}, job_id="waits")
    queue.add(job_id="runs")
    queue.add(job_id="fails")
    take(queue, token="w:1")  # "waits" was added first: it runs
    running = take(queue, token="w:2").job.id
    guard = EffectGuard(queue.client, queue.keys)
    guard.apply_once(running, "count", [RedisOp("HINCRBY", f"{queue.keys.base}:sent", "n", 1)], "w:2")
    guard.run_once(running, "mail", lambda: "sent", "w:2")
    _fail(queue, token="w:3")
    queue.add(job_id="grouped", group="tenant")
    queue.add(job_id="parent", children=[JobSpec({}, job_id="child")])
    return running


def _every_view(web, queue, job_id):
    assert web.get("/").status_code == 200
    for path, params in (("/api/overview", {}), ("/api/server", {}),
                         ("/api/queue", {"name": queue.name}), ("/api/history", {"name": queue.name}),
                         ("/api/job", {"queue": queue.name, "id": job_id}),
                         *(("/api/jobs", {"queue": queue.name, "state": state, "name": "x" if state == "wait" else ""})
                           for state in ("wait", "grouped", "prioritized", "delayed", "waiting-children", "active",
                                         "completed", "failed", "paused")),
                         ("/api/jobs", {"queue": "nosuchqueue", "state": "wait"}),
                         ("/api/queue", {"name": "nosuchqueue"}), ("/api/history", {"name": "nosuchqueue"}),
                         ("/api/job", {"queue": "nosuchqueue", "id": "x"})):
        assert web.get(path, params=params).status_code in (200, 404), (path, params)
    with web.stream("GET", "/api/stream") as response:
        assert next(line for line in response.iter_lines() if line.startswith("data: "))


@pytest.mark.parametrize("backend", ["minired"], indirect=True)
def test_serving_every_view_writes_nothing_and_never_scans(web, queue, client):
    job_id = _busy_queue(queue)
    before = _command_calls(client)
    _every_view(web, queue, job_id)
    ran = _commands_since(client, before)
    assert ran and _writes_among(client, ran) == [], ran
    assert not client.exists("emq:{nosuchqueue}:history", "emq:{nosuchqueue}:meta")
    job = web.get("/api/job", params={"queue": queue.name, "id": job_id}).json()
    assert [m["key"] for m in job["effects"]] == [queue.keys.effect(job_id, "count"),
                                                  queue.keys.effect(job_id, "mail")]


def test_a_released_effect_marker_leaves_the_job_page(web, queue):
    from minired_queue.effects import EffectGuard

    queue.add(job_id="e1")
    take(queue, token="w:1")

    def broken():
        raise OSError("the mail server is down")

    with pytest.raises(OSError):
        EffectGuard(queue.client, queue.keys).run_once("e1", "mail", broken, "w:1")
    assert web.get("/api/job", params={"queue": queue.name, "id": "e1"}).json()["effects"] == []
    assert not queue.client.exists(queue.keys.effects("e1"))


class _FrozenClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def private_queue(queue_name):
    """A queue on a server of its own: the overview lists every queue on the server, so a queue
    that another test's leftover thread registers on a shared one would change the cost of a
    reading between two readings."""
    import redis

    from minired.embed import EmbeddedServer
    from minired_queue.queue import Queue

    with EmbeddedServer(port=0) as server:
        client = redis.Redis.from_url(server.url)
        yield Queue(queue_name, client)
        client.close()


def test_many_tabs_cost_the_server_what_one_does(private_queue):
    import threading

    from minired_queue.dashboard.app import Dashboard

    queue, client = private_queue, private_queue.client
    job_id = _busy_queue(queue)

    def cost(tabs: int, clock: _FrozenClock, dashboard: Dashboard | None = None) -> dict[str, int]:
        dashboard = dashboard or Dashboard(client, clock=clock)
        with TestClient(dashboard.app(), base_url=LOCAL) as web:
            before = _command_calls(client)
            threads = [threading.Thread(target=_every_view, args=(web, queue, job_id)) for _ in range(tabs)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            # Concurrent reads may open more connections: their handshakes are not polling.
            return {name: calls for name, calls in _commands_since(client, before).items()
                    if name != "hello" and not name.startswith("client|")}

    clock = _FrozenClock()
    one = cost(1, clock)
    assert cost(8, clock) == one  # eight tabs, one read of each view
    dashboard = Dashboard(client, clock=clock)
    assert cost(1, clock, dashboard) == one
    assert cost(4, clock, dashboard) == {}  # within the interval: every view from the snapshot
    clock.now += 1.0  # the next interval: each view is read once more, for every tab
    assert cost(4, clock, dashboard) == one


@pytest.mark.parametrize("backend", ["minired"], indirect=True)
def test_cli_refuses_an_empty_token_and_takes_allowed_hosts(backend, queue):
    import os
    import subprocess
    import sys

    refused = subprocess.run([sys.executable, "-m", "minired_queue.cli", "--url", backend.url, "dashboard",
                              "--port", "0", "--bind", "0.0.0.0"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "MINIRED_DASHBOARD_TOKEN": ""})
    assert refused.returncode != 0 and "token is empty" in refused.stderr
    process, url = _cli_dashboard(backend.url, "--allowed-host", "dash.example", "--allowed-host", "other.example")
    try:
        port = _port(url)
        assert _status(port, f"dash.example:{port}") == 200 and _status(port, "other.example") == 200
        assert _status(port, f"evil.example:{port}") == 421
    finally:
        process.terminate()
        process.wait(10)


def test_every_view_works_against_a_read_only_replica():
    """minired does not replicate, so a real Redis primary and its read-only replica."""
    import redis

    from minired_queue.queue import Queue
    from tests.queue.helpers import wait_until
    from tests.support.servers import RedisServer

    with RedisServer() as primary_server:
        with RedisServer("--replicaof", "127.0.0.1", str(primary_server.port)) as replica_server:
            primary = redis.Redis.from_url(primary_server.url)
            replica = redis.Redis.from_url(replica_server.url)
            queue = Queue("replicated", primary)
            job_id = _busy_queue(queue)
            wait_until(lambda: replica.exists(queue.keys.job(job_id)))  # synced
            with pytest.raises(redis.ReadOnlyError):
                replica.set("probe", 1)
            with TestClient(_app(replica), base_url=LOCAL) as web:
                _every_view(web, queue, job_id)
                assert web.get("/api/queue", params={"name": queue.name}).json()["counts"]["failed"] == 1
            primary.close()
            replica.close()


# --- browsing states, queue actions, workers, a job's history -----------------------------
def test_a_page_of_each_state_with_total_order_and_filter(web, queue):
    for n in range(12):
        queue.add({"n": n}, job_id=f"w{n:02}", name="email" if n % 3 == 0 else "sms")
    queue.add_job(JobSpec({}, job_id="later", delay_ms=3_600_000))
    params = {"queue": queue.name, "state": "wait", "size": 10}
    first = web.get("/api/jobs", params=params).json()
    assert first["total"] == 12 and first["pages"] == 2 and [j["id"] for j in first["jobs"]][:2] == ["w11", "w10"]
    second = web.get("/api/jobs", params={**params, "page": 2}).json()
    assert [j["id"] for j in second["jobs"]] == ["w01", "w00"]
    oldest = web.get("/api/jobs", params={**params, "order": "oldest"}).json()
    assert oldest["jobs"][0]["id"] == "w00"
    emails = web.get("/api/jobs", params={**params, "name": "email"}).json()
    assert emails["matched"] == 4 and {j["name"] for j in emails["jobs"]} == {"email"} and not emails["cut"]
    [delayed] = web.get("/api/jobs", params={**params, "state": "delayed"}).json()["jobs"]
    assert delayed["id"] == "later" and delayed["due"].endswith("Z")
    job = web.get("/api/job", params={"queue": queue.name, "id": "later"}).json()
    assert job["due"] == delayed["due"]
    assert web.get("/api/jobs", params={**params, "size": 7}).status_code == 400
    assert web.get("/api/jobs", params={**params, "state": "nowhere"}).status_code == 400


def test_promote_clean_drain_and_bulk_through_the_checks(web, queue):
    queue.add_job(JobSpec({}, job_id="later", delay_ms=3_600_000))
    for n in range(3):
        queue.add(job_id=f"c{n}")
        fetch = take(queue, token="w:1")
        complete(queue.keys, fetch.job, "w:1", None).run(queue.client)
    on = {"queue": queue.name}
    assert web.post("/api/promote", params={**on, "id": "later"}).status_code == 403  # no CSRF token
    headers = {CSRF_HEADER: _csrf(web), "origin": LOCAL}
    assert web.post("/api/promote", params={**on, "id": "later"}, headers=headers).json() == {"promoted": True}
    assert queue.get_state("later") == "wait"
    reply = web.post("/api/retry", params=on, json={"ids": ["c0"], "state": "completed"}, headers=headers)
    assert reply.json() == {"retried": 1} and queue.get_state("c0") == "wait"
    reply = web.post("/api/remove", params=on, json={"ids": ["c1", "later"]}, headers=headers)
    assert sorted(reply.json()["removed"]) == ["c1", "later"]
    assert web.post("/api/clean", params=on, json={"state": "completed", "age_ms": 0}, headers=headers).json() == {"removed": 1}
    assert web.post("/api/drain", params=on, json={"delayed": True}, headers=headers).json() == {"removed": 1}
    assert queue.counts() == {state: 0 for state in queue.counts()}


def test_obliterate_needs_the_queue_name_typed(web, queue, client):
    queue.add(job_id="x")
    on = {"queue": queue.name}
    headers = {CSRF_HEADER: _csrf(web), "origin": LOCAL}
    refused = web.post("/api/obliterate", params=on, json={"confirm": "wrong"}, headers=headers)
    assert refused.status_code == 400 and queue.get_job("x") is not None
    cross = web.post("/api/obliterate", params=on, json={"confirm": queue.name},
                     headers={**headers, "origin": "http://evil.example"})
    assert cross.status_code == 403 and queue.get_job("x") is not None
    assert web.post("/api/obliterate", params=on, json={"confirm": queue.name}, headers=headers).json() == {"removed": 1}
    assert queue.name not in [q["name"] for q in web.get("/api/overview").json()["queues"]]
    assert not client.exists(queue.keys.meta, queue.keys.metrics, queue.keys.events)


def test_queue_page_lists_workers_repeatables_and_settings(web, queue):
    from minired_queue.transitions import worker_heartbeat

    queue.configure(concurrency=4)
    queue.add_repeatable("digest", {"kind": "digest"}, every_ms=60_000)
    queue.add(job_id="j1")
    take(queue, token="host:42:abc:1")
    worker_heartbeat(queue.keys, "host:42:abc", 30_000, {"concurrency": 2, "running": 1}).run(queue.client)
    detail = web.get("/api/queue", params={"name": queue.name}).json()
    [worker] = detail["workers"]
    assert worker["id"] == "host:42:abc" and worker["pid"] == "42" and worker["jobs"] == ["j1"]
    [repeat] = detail["repeatables"]
    assert repeat["key"] == "digest" and repeat["every_ms"] == 60_000 and repeat["next_run"].endswith("Z")
    assert detail["settings"]["concurrency"] == 4


def test_job_page_shows_every_attempts_error_and_its_logs(web, queue):
    from minired_queue.transitions import add_log

    queue.add_job(JobSpec({}, job_id="j", attempts=2))
    for attempt in range(2):
        fetch = take(queue, token=f"w:{attempt}")
        add_log(queue.keys, "j", f"try {attempt}", 100).run(queue.client)
        retry_or_fail(queue.keys, fetch.job, f"w:{attempt}", f"error {attempt}").run(queue.client)
    job = web.get("/api/job", params={"queue": queue.name, "id": "j"}).json()
    assert [e["reason"] for e in job["errors"]] == ["error 0", "error 1"]
    assert job["logs"] == {"lines": ["try 0", "try 1"], "total": 2}
