"""`python -m minired`: the --port 0 ready line, redis-server style flags, clean stop on
SIGTERM, SIGINT and SHUTDOWN."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from minired import REDIS_VERSION, __version__
from tests.support.respclient import RawClient


def _start(*args: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "minired", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert " ready on 127.0.0.1:" in line, line + proc.stderr.read()
    port = int(line.split(" ready on ")[1].split()[0].rsplit(":", 1)[1])
    return proc, port


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(sig):
    proc, port = _start()
    assert RawClient(port).call("PING") == b"PONG"
    proc.send_signal(sig)
    assert proc.wait(10) == 0
    assert "minired stopped" in proc.stderr.read()


def test_shutdown_command_stops_the_process():
    proc, port = _start()
    client = RawClient(port)
    client.send("SHUTDOWN")
    assert proc.wait(10) == 0
    client.close()


def test_redis_server_style_options_reach_config():
    proc, port = _start("--maxmemory", "1mb", "--notify-keyspace-events", "KEA",
                        "--save", "", "--lua-time-limit=250")
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


@pytest.mark.parametrize("args,message", [
    (["--no-such-option", "1"], "unknown option --no-such-option"),
    (["--maxclients", "0"], "'maxclients': argument must be between 1 and 4294967295 inclusive"),
    (["--hz", "abc"], "'hz': argument couldn't be parsed into an integer"),
])
def test_bad_options_are_refused(args, message):
    result = subprocess.run([sys.executable, "-m", "minired", "--port", "0", *args],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and message in result.stderr


def test_version():
    result = subprocess.run([sys.executable, "-m", "minired", "--version"],
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == f"minired {__version__} (Redis {REDIS_VERSION} compatible)"
