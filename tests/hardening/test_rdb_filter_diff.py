"""REPLCONF rdb-filter-only, as `redis-cli --functions-rdb` and `--replica` use it: the RDB a
replica asks for holds only the functions (or nothing), and a real redis-server loads it."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer

LIBRARY = "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)"


def test_replconf_filter_answers_as_redis():
    with RedisServer() as redis, SubprocessServer() as mini:
        answers = []
        for port in (redis.port, mini.port):
            client = RawClient(port)
            answers.append([client.call("REPLCONF", "rdb-filter-only", value)
                            for value in ("", "functions", "FUNCTIONS", "keys", "functions x",
                                          '"unbalanced')])
            client.close()
        assert answers[0] == answers[1]


@pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-tools not installed")
@pytest.mark.parametrize("functions_only", [True, False])
def test_functions_rdb_loads_in_redis(tmp_path, functions_only):
    with SubprocessServer() as mini:
        client = RawClient(mini.port)
        client.call("MSET", *[f"key:{i}" for i in range(100) for _ in (0, 1)])
        client.call("FUNCTION", "LOAD", LIBRARY)
        client.close()
        option = "--functions-rdb" if functions_only else "--rdb"
        out = subprocess.run(["redis-cli", "-p", str(mini.port), option,
                              str(tmp_path / "dump.rdb")], capture_output=True, text=True,
                             timeout=60)
        assert "Transfer finished with success" in out.stdout + out.stderr
    with RedisServer("--dir", str(tmp_path), "--dbfilename", "dump.rdb") as redis:
        client = RawClient(redis.port)
        assert client.call("DBSIZE") == (0 if functions_only else 100)
        assert client.call("FCALL", "func1", "0") == 123
        client.close()
