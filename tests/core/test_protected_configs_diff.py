"""enable-protected-configs compared with Redis 7.0: protected parameters (dir, dbfilename)
are refused by CONFIG SET unless the setting allows the client (yes, or local for a loopback
or Unix socket connection)."""
from __future__ import annotations

import pytest

from tests.support.differential import Differential
from tests.support.servers import MiniredProcess, RedisServer


@pytest.mark.parametrize("setting", ["no", "local", "yes"])
def test_protected_configs_follow_enable_protected_configs(setting, tmp_path):
    args = ("--enable-protected-configs", setting)
    with RedisServer(*args) as redis, MiniredProcess(*args, "--dir", str(tmp_path)) as mini:
        diff = Differential(redis.port, mini.port)
        try:
            diff.check("CONFIG", "SET", "dbfilename", "other.rdb")
            diff.check("CONFIG", "SET", "dbfilename", "sub/other.rdb")  # (not a path)
            diff.check("CONFIG", "GET", "dbfilename")
            diff.check("CONFIG", "SET", "dbfilename", "x.rdb", "maxmemory", "1mb")
            diff.check("CONFIG", "GET", "maxmemory")
            diff.check("CONFIG", "SET", "daemonize", "yes")  # immutable whatever the setting
        finally:
            diff.close()
