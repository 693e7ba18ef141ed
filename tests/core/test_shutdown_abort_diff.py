"""SHUTDOWN ABORT compared with Redis 7.0: a SIGTERM schedules a shutdown that the server's
cron starts; while DEBUG PAUSE-CRON holds the cron, SHUTDOWN ABORT cancels it (logging
"Shutdown manually aborted.") and the server goes on. Without one pending, ABORT is an error."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support.respclient import RawClient
from tests.support.servers import redis_server_binary, start_on_free_port, terminate
from tests.support.waiting import wait_until


def _abort_session(command: list, directory) -> list:
    logfile = directory / "server.log"
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "", "--dir", str(directory),
                      "--enable-debug-command", "yes", "--logfile", str(logfile)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        seen = [client.call("SHUTDOWN", "ABORT"), client.call("DEBUG", "PAUSE-CRON", "1")]
        os.kill(proc.pid, signal.SIGTERM)
        wait_until(lambda: "Received SIGTERM scheduling shutdown" in logfile.read_text(),
                   "the signal handler's line")
        seen += [client.call("SHUTDOWN", "ABORT"), client.call("DEBUG", "PAUSE-CRON", "0"),
                 client.call("PING"), client.call("SHUTDOWN", "ABORT")]
        log = logfile.read_text()
        seen += ["Shutdown manually aborted." in log, "User requested shutdown" in log]
        client.close()
        return seen
    finally:
        terminate(proc)


def test_shutdown_abort_cancels_a_signal_shutdown_the_cron_has_not_started(tmp_path):
    (tmp_path / "redis").mkdir()
    (tmp_path / "minired").mkdir()
    real = _abort_session([redis_server_binary()], tmp_path / "redis")
    mini = _abort_session([sys.executable, "-m", "minired"], tmp_path / "minired")
    assert mini == real
    assert real[-2:] == [True, False]


def _failed_save_session(command: list, directory) -> list:
    """SIGINT with save points set while dump.rdb cannot be written (a folder in its place):
    the shutdown is given up and the server goes on; SHUTDOWN NOSAVE then stops it."""
    logfile = directory / "server.log"
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "3600 1", "--dir", str(directory),
                      "--logfile", str(logfile)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        client.call("SET", "k", "v")
        (directory / "dump.rdb").mkdir()  # (made after start: a folder there stops loading)
        os.kill(proc.pid, signal.SIGINT)
        wait_until(lambda: "Errors trying to shut down" in logfile.read_text(),
                   "the shutdown given up")
        seen = [client.call("PING")]
        log = logfile.read_text()
        seen += [line.split(" ", 4)[-1] for line in log.splitlines()
                 if "shutdown" in line.lower() or "can't exit" in line or "final RDB" in line]
        client.call("SHUTDOWN", "NOSAVE")
        return seen
    except ConnectionError:
        return ["closed"]
    finally:
        terminate(proc)


def test_a_signal_shutdown_whose_save_fails_is_given_up(tmp_path):
    (tmp_path / "redis").mkdir()
    (tmp_path / "minired").mkdir()
    real = _failed_save_session([redis_server_binary()], tmp_path / "redis")
    mini = _failed_save_session([sys.executable, "-m", "minired"], tmp_path / "minired")
    assert mini == real
