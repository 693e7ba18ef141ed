"""The dashboard in a real browser (Debian's headless Chromium, driven by selenium through
chromedriver): the page shows what a producer just did, follows a worker without a reload,
retries a failed job through its button, and shows a job's error. Each test runs on minired and
(in the compiled run) on a real Redis, with one exception: moving the server's clock needs minired.
The main page's screenshot, taken on minired, is saved as a test artefact
(tests/artifacts/dashboard.png; the README shows a copy)."""
from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

import pytest

from minired_queue.dashboard import DashboardServer
from minired_queue.job import JobSpec
from minired_queue.queue import Queue
from minired_queue.transitions import complete, retry_or_fail
from tests.queue.helpers import take

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = pathlib.Path(os.environ.get("MINIRED_ARTIFACTS",
                                        pathlib.Path(__file__).resolve().parents[1] / "artifacts"))

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="Debian's chromium and chromium-driver are not installed (scripts/test.sh installs them)")


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="minired-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # Flags of a headless run on a machine with no network but loopback and no GPU.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-quic", "--window-size=1280,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _serve_dashboard(url: str):
    import redis

    client = redis.Redis.from_url(url)
    with DashboardServer(client, port=0) as server:
        yield server, client
    client.close()


@pytest.fixture
def dashboard(server_backend):
    """The dashboard of a server with an empty database: minired, then the real Redis."""
    yield from _serve_dashboard(server_backend.url)


def _text(driver, css: str, timeout: float = 15) -> str:
    return WebDriverWait(driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css).text)


def _wait_text(driver, css: str, expected: str, timeout: float = 15) -> None:
    def shows(d):
        try:
            return [e.text for e in d.find_elements(By.CSS_SELECTOR, css)] == [expected]
        except StaleElementReferenceException:  # the page re-rendered under us: look again
            return False
    WebDriverWait(driver, timeout).until(shows, f"{css} never showed {expected!r}")


def _click(driver, css: str, timeout: float = 15) -> None:
    """Click what the selector finds, again if a refresh replaced it in between."""
    def clicked(d):
        try:
            d.find_element(By.CSS_SELECTOR, css).click()
            return True
        except StaleElementReferenceException:
            return False
    WebDriverWait(driver, timeout).until(clicked, f"could not click {css}")


def test_counts_update_live_retry_button_and_job_error(browser, dashboard, server_backend, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    for i in range(5):
        queue.add({"n": i}, job_id=f"job-{i}")

    browser.get(server.url)
    row = f"#queue-{queue_name}"
    _wait_text(browser, f"{row} td[data-state=wait]", "5")
    assert _text(browser, "#live") in ("live", "connecting…", "reconnecting…")

    # A worker completes two jobs: the open page follows without a reload.
    for _ in range(2):
        fetch = take(queue, token="w1:1")
        complete(queue.keys, fetch.job, "w1:1", {"ok": True}).run(client)
    _wait_text(browser, f"{row} td[data-state=completed]", "2")
    _wait_text(browser, f"{row} td[data-state=wait]", "3")
    screenshots = server_backend.kind == "minired"  # the artefacts show minired's run, once
    if screenshots:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "dashboard.png"))

    # One job fails for good; the queue's page offers to retry it.
    fetch = take(queue, token="w1:2")
    failed_id = fetch.job.id
    retry_or_fail(queue.keys, fetch.job, "w1:2", "SMTPError: mailbox full",
                  stacktrace="Traceback (most recent call last):\n  File \"jobs.py\", line 9, in send\n"
                             "SMTPError: mailbox full").run(client)
    _wait_text(browser, f"{row} td[data-state=failed]", "1")
    _click(browser, f"{row} a")
    _wait_text(browser, f"#failed-{failed_id} td.reason", "SMTPError: mailbox full")
    if screenshots:
        browser.save_screenshot(str(ARTIFACTS / "dashboard-queue.png"))

    # The job's page shows its error and traceback.
    _click(browser, f"#failed-{failed_id} a")
    _wait_text(browser, "#job-error", "SMTPError: mailbox full")
    assert "jobs.py" in _text(browser, "#job-stacktrace")
    _wait_text(browser, "#job-state", "failed")

    # Retry through the button, confirmed in the page: the job goes back to wait, once.
    _click(browser, "#job-retry")
    _click(browser, "#confirm-yes")
    _wait_text(browser, "#job-state", "wait")
    assert queue.counts()["failed"] == 0 and queue.counts()["wait"] == 3
    assert client.lrange(queue.keys.wait, 0, -1).count(failed_id.encode()) == 1


def test_failed_list_retry_and_remove_buttons(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    for i in range(2):
        queue.add_job(JobSpec({"n": i}, job_id=f"bad-{i}"))
        fetch = take(queue, token="w:1")
        retry_or_fail(queue.keys, fetch.job, "w:1", f"error {i}").run(client)
    browser.get(server.url + f"#/queue/{queue_name}")
    _wait_text(browser, "#failed-bad-0 td.reason", "error 0")

    _click(browser, "#remove-bad-1")
    _wait_text(browser, "#confirm-text", "Remove job bad-1 for good?")
    _click(browser, "#confirm-no")  # cancelled: nothing happens
    assert queue.get_job("bad-1") is not None

    _click(browser, "#remove-bad-1")
    _click(browser, "#confirm-yes")
    WebDriverWait(browser, 15).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#failed-bad-1"))
    assert queue.get_job("bad-1") is None
    _wait_text(browser, "#toast", "job bad-1 removed")  # a message after a single action

    _click(browser, "#retry-all")
    _click(browser, "#confirm-yes")
    WebDriverWait(browser, 15).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#failed-bad-0"))
    assert queue.counts()["wait"] == 1 and queue.counts()["failed"] == 0


def _visible(driver, css: str, timeout: float = 15) -> None:
    WebDriverWait(driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css).is_displayed(),
                                         f"{css} never showed")


def _hidden(driver, css: str, timeout: float = 15) -> None:
    WebDriverWait(driver, timeout).until(lambda d: not d.find_element(By.CSS_SELECTOR, css).is_displayed(),
                                         f"{css} never went away")


def test_a_late_poll_of_the_page_left_does_not_draw_over_the_page_opened(browser, dashboard,
                                                                         queue_name):
    # The queue page's data still on its way when a job's page opens: it must not draw the queue
    # page back over the job's (a soak run clicked a job's Retry as the queue page came back,
    # and the click landed on something else).
    server, client = dashboard
    Queue(queue_name, client).add(job_id="j1")
    browser.get(server.url + f"#/queue/{queue_name}")
    _wait_text(browser, "#counts td[data-state=wait]", "1")
    browser.execute_script("""
        const realFetch = window.fetch;
        window.fetch = (path, options) => String(path).startsWith("api/queue?")
            ? new Promise((resolve) => setTimeout(resolve, 1000)).then(() => realFetch(path, options))
            : realFetch(path, options);
        window.lateRefresh = refresh();""")
    browser.execute_script(f"location.hash = '#/queue/{queue_name}/job/j1'")
    _wait_text(browser, "#job-state", "wait")
    assert browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; window.lateRefresh.then(() => done(true));")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Job j1")


def test_a_refresh_keeps_a_selected_traceback_selected(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add_job(JobSpec({"n": 1}, job_id="t1", attempts=1))
    fetch = take(queue, token="w:1")
    retry_or_fail(queue.keys, fetch.job, "w:1", "boom",
                  stacktrace="Traceback (most recent call last):\nValueError: boom").run(client)
    browser.get(server.url + f"#/queue/{queue_name}/job/t1")
    _wait_text(browser, "#job-error", "boom")
    browser.execute_script("""
        const trace = document.querySelector('#job-stacktrace');
        window.traceText = trace.firstChild;
        window.getSelection().selectAllChildren(trace);""")
    client.hset(queue.keys.job("t1"), "name", "renamed")  # something for the next refresh to show
    WebDriverWait(browser, 15).until(lambda d: "renamed" in d.find_element(By.CSS_SELECTOR, "dl.facts").text)
    assert browser.execute_script("""return document.querySelector('#job-stacktrace').firstChild === window.traceText
        && window.getSelection().toString().includes('ValueError: boom')""")


def test_stale_while_unreachable_fresh_after_and_a_restart_asks_to_reload(browser, server_backend, queue_name):
    import redis

    client = redis.Redis.from_url(server_backend.url)
    queue = Queue(queue_name, client)
    queue.add(job_id="s1")
    first = DashboardServer(client, port=0).start()
    port = int(first.url.rsplit(":", 1)[1].strip("/"))
    try:
        browser.get(first.url + f"#/queue/{queue_name}")
        _wait_text(browser, "#counts td[data-state=wait]", "1")
    finally:
        first.stop()
    _visible(browser, "#stale-note")  # the dashboard is gone: the last data stays, marked stale
    assert "stale" in browser.find_element(By.ID, "view").get_attribute("class")
    _wait_text(browser, "#counts td[data-state=wait]", "1")
    with DashboardServer(client, port=port):  # back (a new CSRF token): fresh again
        _hidden(browser, "#stale-note")
        assert "stale" not in browser.find_element(By.ID, "view").get_attribute("class")
        _click(browser, "#pause-button")
        _click(browser, "#confirm-yes")
        _visible(browser, "#stale-page")
        assert "reload" in browser.find_element(By.ID, "stale-page").text
        assert not queue.is_paused()
    client.close()


def test_queue_names_with_a_slash_or_dots_open(browser, dashboard, queue_name):
    from urllib.parse import quote

    server, client = dashboard
    names = [f"{queue_name}/emails", ".."]
    try:
        for name in names:
            Queue(name, client).add(job_id="n1")
        for name in names:
            browser.get(server.url + f"#/queue/{quote(name, safe='')}")
            _wait_text(browser, "h1", f"Queue {name}")
            _wait_text(browser, "#counts td[data-state=wait]", "1")
            browser.find_element(By.CSS_SELECTOR, "#view a").click()  # back to the overview, then in again
            WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, f"queue-{name}"))
            browser.find_element(By.ID, f"queue-{name}").find_element(By.TAG_NAME, "a").click()
            _wait_text(browser, "h1", f"Queue {name}")
    finally:
        client.srem("emq:queues", "..")
        client.delete(*client.scan_iter("emq:{..}:*"))


def test_chart_labels_fit_and_escape_closes_the_dialog(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add_job(JobSpec({}, job_id="keep"))
    fetch = take(queue, token="w:1")
    retry_or_fail(queue.keys, fetch.job, "w:1", "error").run(client)
    browser.get(server.url + f"#/queue/{queue_name}")
    _wait_text(browser, "#failed-keep td.reason", "error")
    labels = browser.execute_script("return [10000, 12500, 99999, 2500000, 950, 0.5].map(yLabel)")
    assert labels == ["10k", "12.5k", "100k", "2.5M", "950", "0.5"]

    from selenium.webdriver.common.keys import Keys

    _click(browser, "#remove-keep")
    _visible(browser, "#confirm")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    _hidden(browser, "#confirm")
    assert queue.get_job("keep") is not None


# --- browsing states, queue actions, workers, history; dark mode, phones ---------------------
def _confirm(driver) -> None:
    _visible(driver, "#confirm")
    _click(driver, "#confirm-yes")
    _hidden(driver, "#confirm")


def test_browse_every_state_with_pages_filter_order_and_find(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    for n in range(30):
        queue.add({"n": n}, job_id=f"w{n:02}", name="email" if n % 5 == 0 else "sms")
    queue.add_job(JobSpec({}, job_id="later", delay_ms=3_600_000))
    browser.get(server.url + f"#/queue/{queue_name}")
    _click(browser, "#tab-wait")
    _wait_text(browser, "#page-info", "1–25 of 30 wait job(s) · page 1 of 2")
    assert browser.find_element(By.CSS_SELECTOR, "#jobs tbody tr td.job-id").text == "w29"  # newest first
    _click(browser, "#page-next")
    _wait_text(browser, "#page-info", "26–30 of 30 wait job(s) · page 2 of 2")
    _wait_text(browser, "#wait-w00 td.job-id", "w00")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "order")).select_by_value("oldest")
    _wait_text(browser, "#page-info", "1–25 of 30 wait job(s) · page 1 of 2")
    WebDriverWait(browser, 15).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#jobs tbody tr td.job-id").text == "w00")
    Select(browser.find_element(By.ID, "page-size")).select_by_value("10")
    _wait_text(browser, "#page-info", "1–10 of 30 wait job(s) · page 1 of 3")
    browser.find_element(By.ID, "filter-name").send_keys("email")
    _wait_text(browser, "#page-info", "6 of the 30 oldest wait jobs match · page 1 of 1")
    assert {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody td:nth-child(3)")} == {"email"}

    # Delayed jobs say when they run; one is promoted by its button, with a message after.
    _click(browser, "#tab-delayed")
    WebDriverWait(browser, 15).until(lambda d: "UTC" in d.find_element(By.CSS_SELECTOR, "#delayed-later td.when").text)
    _click(browser, "#delayed-later a")
    WebDriverWait(browser, 15).until(lambda d: d.find_element(By.ID, "job-due").text.endswith("UTC"))
    browser.back()
    _click(browser, "#promote-later")
    _confirm(browser)
    _wait_text(browser, "#toast", "job later is ready to run")
    assert queue.get_state("later") == "wait"

    # Find a job by its id.
    browser.find_element(By.ID, "find-id").send_keys("w07")
    _click(browser, "#find-button")
    _wait_text(browser, "h1", "Job w07 wait")


def test_every_state_has_its_tab(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add(job_id="runs")
    take(queue, token="w:1")
    queue.add(job_id="done")
    complete(queue.keys, take(queue, token="w:1").job, "w:1", None).run(client)
    queue.add(job_id="broke")
    retry_or_fail(queue.keys, take(queue, token="w:1").job, "w:1", "boom").run(client)
    queue.add_job(JobSpec({}, job_id="urgent", priority=1))
    queue.add_job(JobSpec({}, job_id="soon", delay_ms=60_000))
    queue.add(job_id="tenant-job", group="tenant")
    queue.add({}, job_id="parent", children=[JobSpec({}, job_id="child", queue=f"{queue_name}-children")])
    queue.add(job_id="waits")
    browser.get(server.url + f"#/queue/{queue_name}")
    expected = {"wait": "waits", "grouped": "tenant-job", "prioritized": "urgent", "delayed": "soon",
                "waiting-children": "parent", "active": "runs", "completed": "done", "failed": "broke"}
    for state, job_id in expected.items():
        _click(browser, f"#tab-{state}")
        _wait_text(browser, "#jobs tbody td.job-id", job_id)
        assert "on" in browser.find_element(By.ID, f"tab-{state}").get_attribute("class")
    _wait_text(browser, "#tab-wait", "wait 1")  # what the tab lists: the grouped job is under grouped
    _click(browser, "#tab-wait")
    _wait_text(browser, "#grouped-note",
               "1 grouped job(s) are ready too: they wait in their groups' lines, listed under grouped.")
    _click(browser, "#tab-paused")
    _visible(browser, "#jobs-empty")  # the queue runs: no job is held by a pause
    queue.pause()
    _wait_text(browser, "#jobs tbody td.job-id", "waits")
    _wait_text(browser, "#tab-paused", "paused 1")


def test_bulk_retry_and_remove_clean_drain_and_obliterate(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    for n in range(3):
        queue.add_job(JobSpec({}, job_id=f"bad-{n}"))
        fetch = take(queue, token="w:1")
        retry_or_fail(queue.keys, fetch.job, "w:1", f"error {n}").run(client)
    queue.add(job_id="done")
    complete(queue.keys, take(queue, token="w:1").job, "w:1", {"ok": 1}).run(client)
    browser.get(server.url + f"#/queue/{queue_name}")
    _wait_text(browser, "#failed-bad-0 td.reason", "error 0")
    for n in (0, 1):
        _click(browser, f"#failed-bad-{n} input.pick")
    _wait_text(browser, "#selected-count", "2 selected")
    _click(browser, "#bulk-retry")
    _confirm(browser)
    _wait_text(browser, "#toast", "2 job(s) back in wait")
    assert sorted(j.id for j in queue.jobs("wait").jobs) == ["bad-0", "bad-1"]
    WebDriverWait(browser, 15).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#failed-bad-0"))
    _click(browser, "#pick-all")
    _wait_text(browser, "#selected-count", "1 selected")
    _click(browser, "#bulk-remove")
    _confirm(browser)
    _wait_text(browser, "#toast", "1 job(s) removed")
    assert queue.get_job("bad-2") is None

    # A completed job retried from its page, then cleaned by age (0 min: all), then drained.
    browser.get(server.url + f"#/queue/{queue_name}/job/done")
    _click(browser, "#job-retry")
    _confirm(browser)
    _wait_text(browser, "#toast", "job done is back in wait")
    _wait_text(browser, "#job-state", "wait")
    complete(queue.keys, take(queue, token="w:2").job, "w:2", None).run(client)  # ("done" was oldest)
    browser.get(server.url + f"#/queue/{queue_name}")
    age = WebDriverWait(browser, 15).until(lambda d: d.find_element(By.ID, "clean-age"))
    age.clear()
    age.send_keys("0")
    _click(browser, "#clean-button")
    _confirm(browser)
    _wait_text(browser, "#toast", "1 completed job(s) deleted")
    _click(browser, "#drain-button")
    _confirm(browser)
    _wait_text(browser, "#toast", "2 job(s) drained")
    assert sum(queue.counts().values()) == 0

    # Obliterate waits for the queue's name to be typed.
    _click(browser, "#obliterate-button")
    _visible(browser, "#confirm-input")
    assert not browser.find_element(By.ID, "confirm-yes").is_enabled()
    browser.find_element(By.ID, "confirm-input").send_keys(queue_name[:-1])
    assert not browser.find_element(By.ID, "confirm-yes").is_enabled()
    browser.find_element(By.ID, "confirm-input").send_keys(queue_name[-1])
    _click(browser, "#confirm-yes")
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return location.hash") == "#/")
    assert queue_name not in {n.decode() for n in client.smembers("emq:queues")}


def test_workers_repeatables_settings_and_a_jobs_history(browser, dashboard, queue_name):
    import threading

    from minired_queue.options import WorkerOptions
    from minired_queue.worker import Worker

    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.configure(concurrency=3)
    queue.add_repeatable("digest", every_ms=60_000)
    queue.add_job(JobSpec({}, job_id="flaky", attempts=3))
    for attempt in range(2):
        fetch = take(queue, token=f"w:{attempt}")
        from minired_queue.transitions import add_log
        add_log(queue.keys, "flaky", f"attempt {attempt} connecting", 100).run(client)
        retry_or_fail(queue.keys, fetch.job, f"w:{attempt}", f"timeout {attempt}").run(client)
    running, release = threading.Event(), threading.Event()

    def handler(job):
        job.log("third attempt")
        running.set()
        release.wait(20)

    worker = Worker(queue_name, client, handler, WorkerOptions(concurrency=2, sweep_interval_s=None)).start()
    try:
        assert running.wait(10)
        browser.get(server.url + f"#/queue/{queue_name}")
        _wait_text(browser, f"[id='worker-{worker.id}'] td.running", "flaky")
        assert browser.find_element(By.CSS_SELECTOR, f"[id='worker-{worker.id}'] td.num").text == "1/2"
        assert _text(browser, "#repeat-digest td.next-run").endswith("Z")
        assert "concurrency" in _text(browser, "#settings")
        browser.get(server.url + f"#/queue/{queue_name}/job/flaky")
        _wait_text(browser, "#job-logs", "attempt 0 connecting\nattempt 1 connecting\nthird attempt")
        reasons = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#job-errors td.reason")]
        assert reasons == ["timeout 0", "timeout 1"]
    finally:
        release.set()
        worker.stop(wait=True, timeout=20)


def test_dark_mode_phone_width_and_favicon(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add_job(JobSpec({"long": "x" * 300}, job_id="a-rather-long-job-id-" + "y" * 40, name="email"))
    fetch = take(queue, token="w:1")
    retry_or_fail(queue.keys, fetch.job, "w:1", "E" * 200, stacktrace="Traceback\n" + "z" * 400).run(client)
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        browser.get(server.url)
        WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, f"queue-{queue_name}"))
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        red, green, blue = (int(v) for v in background[background.index("(") + 1:-1].split(",")[:3])
        assert red + green + blue < 150, background
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    favicon = browser.execute_script("""const link = document.querySelector('link[rel=icon]');
        return fetch(link.href).then((r) => [r.status, r.headers.get('content-type')]);""")
    assert favicon[0] == 200 and favicon[1].startswith("image/svg")

    browser.set_window_size(390, 844)
    try:
        for page in (f"#/queue/{queue_name}", f"#/queue/{queue_name}/job/{fetch.job.id}", "#/"):
            browser.get(server.url + page)
            _visible(browser, "#view h1")
            WebDriverWait(browser, 15).until(lambda d: "loading" not in d.find_element(By.ID, "view").text)
            width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (page, width)
    finally:
        browser.set_window_size(1280, 1000)


def test_advance_is_confirmed_and_offered_only_by_a_clock_that_moves(browser, dashboard, server_backend):
    server, client = dashboard
    browser.get(server.url)
    if server_backend.kind != "minired":  # Redis has no clock to move: the page offers none
        WebDriverWait(browser, 15).until(
            lambda d: d.find_element(By.ID, "server-backend").text.startswith("Redis 7."))
        assert not browser.find_element(By.ID, "advance-form").is_displayed()
        return
    _wait_text(browser, "#server-backend", "minired")
    # Advance the server's clock: asked first; cancelled, the clock stays.
    _visible(browser, "#advance-button")
    before = int(client.execute_command("MINIRED", "CLOCK"))
    _click(browser, "#advance-button")
    _visible(browser, "#confirm")
    assert "Advance" in _text(browser, "#confirm-text")
    _click(browser, "#confirm-no")
    assert int(client.execute_command("MINIRED", "CLOCK")) - before < 120_000
    browser.find_element(By.ID, "advance-ms").clear()
    browser.find_element(By.ID, "advance-ms").send_keys("120000")
    _click(browser, "#advance-button")
    _confirm(browser)
    WebDriverWait(browser, 15).until(lambda d: d.find_element(By.ID, "toast").text.startswith("clock now"))
    assert int(client.execute_command("MINIRED", "CLOCK")) - before >= 120_000


# --- lists that keep what they claim, charts in durations, the dialog, a job's facts ---------
def test_events_show_times_filter_and_more_and_recoveries_stay(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add(job_id="lost")
    take(queue, token="w:1")
    client.delete(queue.keys.lock("lost"))
    queue.sweep()
    for i in range(60):  # more events than the page lists at once
        queue.add(job_id=f"later-{i}")
    browser.get(server.url + f"#/queue/{queue_name}")
    _wait_text(browser, "#recovered li a", "lost")
    assert _text(browser, "#recovered-scope").startswith("Stalled jobs in the last ")
    items = browser.find_elements(By.CSS_SELECTOR, "#events li")
    assert len(items) == 20
    first_id = client.xrevrange(queue.keys.events, count=1)[0][0].decode()
    assert first_id not in items[0].text  # a time, not the raw stream id
    assert items[0].find_element(By.TAG_NAME, "time").text == browser.execute_script(
        "return new Date(arguments[0]).toLocaleString()", int(first_id.split("-")[0]))

    _click(browser, "#events-more")
    WebDriverWait(browser, 15).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#events li")) == 40)

    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.CSS_SELECTOR, "#events-type")).select_by_value("stalled")
    _wait_text(browser, "#events li code", "stalled")
    assert not browser.find_elements(By.CSS_SELECTOR, "#events-more")


def test_latency_chart_labels_bucket_bounds_in_durations(browser, dashboard, queue_name):
    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add(job_id="one")
    browser.get(server.url + f"#/queue/{queue_name}")
    _visible(browser, "#chart-latency")
    assert "bucket upper bounds" in _text(browser, "#chart-latency .u-title")
    legend = [e.get_attribute("textContent")  # (uPlot's stylesheet capitalises what it shows)
              for e in browser.find_elements(By.CSS_SELECTOR, "#chart-latency .u-series .u-label")]
    assert legend[1:] == ["p50 ≤", "p95 ≤", "p99 ≤"]
    shown = browser.execute_script(
        "return [950, 1000, 14000, 30000, 90000, 5400000].map((v) => fmtDuration(v)).concat([fmtDuration(120000, 60000)])")
    assert shown == ["950 ms", "1 s", "14 s", "30 s", "1.5 min", "1.5 h", "> 1 min"]


def test_the_dialog_keeps_focus_and_gives_it_back(browser, dashboard, queue_name):
    from selenium.webdriver.common.keys import Keys

    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add(job_id="keep")
    browser.get(server.url + f"#/queue/{queue_name}")
    _visible(browser, "#pause-button")
    _click(browser, "#pause-button")
    _visible(browser, "#confirm")
    focused = lambda: browser.execute_script("return document.activeElement.id")  # noqa: E731
    assert focused() == "confirm-no"
    seen = []
    for _ in range(4):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        seen.append(focused())
    assert seen == ["confirm-yes", "confirm-no", "confirm-yes", "confirm-no"]
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    _hidden(browser, "#confirm")
    assert focused() == "pause-button"
    assert not queue.is_paused()


def test_a_jobs_attempts_and_marker_expiry_read_as_people_say_them(browser, dashboard, queue_name):
    from minired_queue.transitions import RedisOp, apply_effect_once

    server, client = dashboard
    queue = Queue(queue_name, client)
    queue.add_job(JobSpec({}, job_id="done", attempts=3))
    fetch = take(queue, token="w:1")
    apply_effect_once(queue.keys.effect("done", "send"), queue.keys.effects("done"),
                      [RedisOp("HINCRBY", f"{queue.keys.base}:sent", "x", 1)], 7_200_000, "w:1").run(client)
    complete(queue.keys, fetch.job, "w:1", {"ok": True}).run(client)
    browser.get(server.url + f"#/queue/{queue_name}/job/done")
    _wait_text(browser, "#job-attempts", "run 1 time, 0 failed (at most 3 attempts)")
    marker = _text(browser, "#job-effects li")
    assert " h)" in marker and "expires in" in marker and "7200" not in marker
