"""`python -m minired`: the --port 0 ready line, redis-server style flags, clean stop on
SIGTERM, SIGINT and SHUTDOWN (config files, the log, --version: test_server_startup.py)."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.support.respclient import RawClient


def _start(*args: str) -> tuple[subprocess.Popen, int]:
    """minired on a free port; its log (stdout, as Redis's) is read up to the ready line."""
    proc = subprocess.Popen([sys.executable, "-m", "minired", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = ""
    for line in proc.stdout:
        if " ready on " in line:
            break
    assert " ready on 127.0.0.1:" in line, line + proc.stderr.read()
    port = int(line.split(" ready on ")[1].split()[0].rsplit(":", 1)[1])
    return proc, port


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(sig):
    proc, port = _start()
    assert RawClient(port).call("PING") == b"PONG"
    proc.send_signal(sig)
    assert proc.wait(10) == 0
    log = proc.stdout.read()
    name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
    assert ":signal-handler (" in log and f") Received {name} scheduling shutdown..." in log
    assert log.endswith(" # Redis is now ready to exit, bye bye...\n"), log


def test_shutdown_command_stops_the_process():
    proc, port = _start()
    client = RawClient(port)
    client.send("SHUTDOWN")
    assert proc.wait(10) == 0
    client.close()


def test_redis_server_style_options_reach_config():
    proc, port = _start("--maxmemory", "1mb", "--notify-keyspace-events", "KEA",
                        "--save", "", "--lua-time-limit", "250")
    try:
        client = RawClient(port)
        reply = client.call("CONFIG", "GET", "maxmemory", "notify-keyspace-events", "save",
                            "busy-reply-threshold")
        assert dict(zip(reply[::2], reply[1::2])) == {
            b"maxmemory": b"1048576", b"notify-keyspace-events": b"AKE", b"save": b"",
            b"busy-reply-threshold": b"250"}
        client.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_own_flags_given_bare_mean_yes():
    proc, port = _start("--time-control", "--fault-injection", "--loglevel", "warning")
    try:
        client = RawClient(port)
        assert isinstance(client.call("MINIRED", "ADVANCE", "0"), int)  # the clock, in ms
        assert client.call("CONFIG", "GET", "fault-injection") == [b"fault-injection", b"yes"]
        client.close()
    finally:
        proc.terminate()
        proc.wait(10)
