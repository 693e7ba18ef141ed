"""The dashboard in a real browser (Debian's headless Chromium, driven by selenium through
chromedriver): the page shows what a producer just did, follows a worker without a reload,
retries a failed job through its button, and shows a job's error. The main page's screenshot is
saved as a test artefact (tests/artifacts/dashboard.png; the README shows a copy)."""
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


@pytest.fixture
def dashboard(minired_server):
    import redis

    client = redis.Redis.from_url(minired_server.url)
    with DashboardServer(client, port=0) as server:
        yield server, client
    client.close()


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


def test_counts_update_live_retry_button_and_job_error(browser, dashboard, queue_name):
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


def test_stale_while_unreachable_fresh_after_and_a_restart_asks_to_reload(browser, minired_server, queue_name):
    import redis

    client = redis.Redis.from_url(minired_server.url)
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
