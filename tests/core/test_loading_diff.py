"""Start-up in Redis's order, compared with real redis-server: the server listens, then loads its
snapshot while answering -LOADING to every command not flagged loading (INFO and CONFIG SET
answer; EXEC of a transaction that queued a refused command is refused), then serves the data.
A slow load is made with key-load-delay, as Redis's own suite makes one, and events are served
every 1 KiB of the file (loading-process-events-interval-bytes 1024: Redis serves none before
2 MiB by default). SHUTDOWN while loading exits at once and saves nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from tests.support.respclient import Err, RawClient
from tests.support.servers import free_port, redis_server_binary, start_on_free_port, terminate

KEYS = 2000
# 2 ms after each of 2000 keys: a four-second load, far longer than the few commands sent.
SLOW_LOAD = ("--key-load-delay", "2000", "--loading-process-events-interval-bytes", "1024")


@pytest.fixture(scope="module")
def snapshot():
    """A dump.rdb of KEYS keys, written by redis-server."""
    directory = tempfile.mkdtemp(prefix="loading-")
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                      "--dir", directory],
        stdout=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        for start in range(0, KEYS, 500):
            client.call("MSET", *[x for i in range(start, start + 500) for x in (f"k{i}", i)])
        client.call("SAVE")
        client.close()
    finally:
        terminate(proc)
    yield os.path.join(directory, "dump.rdb")
    shutil.rmtree(directory, ignore_errors=True)


def _connect(port: int, proc: subprocess.Popen) -> RawClient:
    deadline = time.monotonic() + 30
    while True:
        try:
            return RawClient(port, timeout=30)
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the server never listened"
            time.sleep(0.02)


def _transcript(command: list[str], snapshot: str) -> list:
    directory = tempfile.mkdtemp(prefix="loading-")
    shutil.copy(snapshot, directory)
    port = free_port()
    proc = subprocess.Popen([*command, "--port", str(port), "--save", "", "--dir", directory,
                             "--appendonly", "no", *SLOW_LOAD],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = _connect(port, proc)
        out = [client.call("PING"), client.call("GET", "k1"), client.call("DBSIZE")]
        info = client.call("INFO", "persistence").decode()
        out.append([line for line in info.splitlines() if line.startswith("loading:")])
        out.append(client.call("CONFIG", "SET", "loglevel", "notice"))
        out.append(client.call("CONFIG", "SET", "appendonly", "yes"))  # refused while loading
        out.append(client.call("CONFIG", "SET", "repl-diskless-load", "swapdb"))  # (so is it)
        out.append(client.call("CONFIG", "SET", "dir", "."))  # (protected: said first)
        out += [client.call("MULTI"), client.call("GET", "k1"), client.call("EXEC")]
        out += [client.call("MULTI"), client.call("CONFIG", "GET", "loglevel"),
                client.call("EXEC")]
        client.send("SHUTDOWN", "SAVE")  # never saved while loading: the file stays
        proc.wait(30)
        out.append(proc.returncode)
        out.append(os.path.getsize(os.path.join(directory, "dump.rdb"))
                   == os.path.getsize(snapshot))
        return out
    finally:
        terminate(proc)
        shutil.rmtree(directory, ignore_errors=True)


def test_loading_answers_as_redis(snapshot):
    minired = [sys.executable, "-m", "minired"]
    got = _transcript(minired, snapshot)
    assert got == _transcript([redis_server_binary()], snapshot)
    assert got[0] == Err("LOADING Redis is loading the dataset in memory")  # (not vacuous)
