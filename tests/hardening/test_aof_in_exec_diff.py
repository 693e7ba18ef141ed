"""BGREWRITEAOF and CONFIG SET appendonly yes inside MULTI/EXEC, against redis-server: no child
is forked within a transaction, the rewrite is scheduled and starts right after (unit/multi)."""
from __future__ import annotations

import time

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer


def _info(client: RawClient, field: bytes) -> bytes:
    for line in client.call("INFO", "persistence").splitlines():
        if line.startswith(field + b":"):
            return line.split(b":", 1)[1]
    raise AssertionError(field)


def _scenario(port: int) -> list:
    client = RawClient(port)
    try:
        seen = []
        for setting in (("BGREWRITEAOF",), ("CONFIG", "SET", "appendonly", "yes")):
            client.call("MULTI")
            client.call("SET", "foo", "bar")
            client.call(*setting)
            seen.append(client.call("EXEC"))
            deadline = time.monotonic() + 20
            while ((_info(client, b"aof_rewrite_in_progress") != b"0"
                    or _info(client, b"aof_rewrite_scheduled") != b"0")
                   and time.monotonic() < deadline):
                time.sleep(0.02)
            seen.append(_info(client, b"aof_last_bgrewrite_status"))
        return seen
    finally:
        client.close()


def _redis_scenario(folder) -> list:
    folder.mkdir()
    with RedisServer("--dir", str(folder), "--logfile", str(folder / "redis.log")) as redis:
        return _scenario(redis.port)


def test_rewrites_asked_for_inside_exec_are_scheduled(tmp_path):
    (tmp_path / "minired").mkdir()
    with SubprocessServer("--dir", str(tmp_path / "minired")) as mini:
        got = _scenario(mini.port)
    expected = _redis_scenario(tmp_path / "redis")
    if got != expected:
        # Once, on a loaded machine, redis-server reported the second rewrite failed ('err'),
        # which 25 runs under load did not repeat: its log says why, and a second redis-server
        # shows whether the answer was Redis's or a failure of that run.
        log = (tmp_path / "redis" / "redis.log").read_text()
        expected = _redis_scenario(tmp_path / "redis-again")
        assert got == expected, log
    assert expected[0][1] == b"Background append only file rewriting scheduled"
