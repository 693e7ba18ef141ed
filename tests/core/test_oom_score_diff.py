"""oom-score-adj compared with Redis 7.0: what each server writes to its own
/proc/<pid>/oom_score_adj (relative to the value it found, absolute, restored when turned off),
and the background child's class (rdb-key-save-delay keeps the BGSAVE child at work)."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import MiniredProcess, RedisServer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="/proc/<pid>/oom_score_adj is Linux's")


def _score(pid: int) -> int:
    with open(f"/proc/{pid}/oom_score_adj") as f:
        return int(f.read())


def _set_score(pid: int, value: int) -> None:
    with open(f"/proc/{pid}/oom_score_adj", "w") as f:
        f.write(f"{value}\n")


def _child_of(pid: int) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        if found.split():
            return int(found.split()[0])
        time.sleep(0.01)
    raise AssertionError("no background child")


def _wait_for_score(pid: int, expected: int) -> int:
    deadline = time.monotonic() + 10
    while _score(pid) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return _score(pid)


def _scenario(server) -> list:
    pid = server.proc.pid
    client = RawClient(server.port)
    try:
        seen = []
        client.call("CONFIG", "SET", "oom-score-adj", "no")
        _set_score(pid, 22)
        # Turned off: the values are stored, the file is not touched.
        seen.append(client.call("CONFIG", "SET", "oom-score-adj-values", "23 24 25"))
        seen.append(_score(pid))
        seen.append(client.call("CONFIG", "SET", "oom-score-adj-values", "9 9 30",
                                "oom-score-adj", "yes"))
        seen.append(_score(pid))  # 22 + 9
        seen.append(client.call("CONFIG", "SET", "oom-score-adj", "absolute"))
        seen.append(_score(pid))  # 9
        seen.append(client.call("CONFIG", "SET", "oom-score-adj-values", "2000 0 0"))
        seen.append(_score(pid))  # capped at 1000
        seen.append(client.call("CONFIG", "SET", "oom-score-adj-values", "9 9 30",
                                "oom-score-adj", "relative"))
        seen.append(client.call("CONFIG", "GET", "oom-score-adj"))
        client.call("SET", "k", "v")
        client.call("CONFIG", "SET", "rdb-key-save-delay", "100000000")
        seen.append(client.call("BGSAVE"))
        seen.append(_wait_for_score(_child_of(pid), 22 + 30))
        seen.append(_score(pid))
        client.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        # A replica's class, then the master's again (the port is refused: no sync starts).
        seen.append(client.call("REPLICAOF", "127.0.0.1", "1"))
        seen.append(_score(pid))  # 22 + 9 (replica)
        seen.append(client.call("CONFIG", "SET", "oom-score-adj-values", "9 11 30"))
        seen.append(_score(pid))  # 22 + 11
        seen.append(client.call("REPLICAOF", "NO", "ONE"))
        seen.append(_score(pid))  # 22 + 9 (master)
        seen.append(client.call("CONFIG", "SET", "oom-score-adj", "no"))
        seen.append(_score(pid))  # the value found first, restored
        return seen
    finally:
        client.close()


def test_oom_score_adj_matches_redis(tmp_path):
    # (a folder to save in: minired without one keeps its data in memory only)
    with RedisServer() as redis, MiniredProcess("--dir", str(tmp_path), "--save", "") as mini:
        assert _scenario(mini) == _scenario(redis)
