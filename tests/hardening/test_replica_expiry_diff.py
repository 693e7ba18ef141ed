"""A replica leaves expired keys to its master, compared with a redis-server replica of the same
master (integration/replication-4's "Replication of an expired key does not delete the expired
key"): to its own clients a key whose time passed reads as missing, but it stays until the
master's DEL, and a write of the master's that reaches the replica after the deadline still
finds it (the master wrote it while it lived)."""
from __future__ import annotations

import os
import signal
import time

import pytest

from tests.support.respclient import Err, RawClient
from tests.support.servers import MiniredProcess, RedisServer
from tests.support.waiting import wait_caught_up, wait_link_up, wait_until


@pytest.fixture(params=(RedisServer, MiniredProcess), ids=("real_redis", "mini"))
def master_and_replica(request):
    with RedisServer("--enable-debug-command", "yes") as master, request.param(
            "--enable-debug-command", "yes",
            "--replicaof", "127.0.0.1", str(master.port)) as replica:
        wait_link_up(replica.port)
        yield master, replica


def test_a_master_write_after_the_deadline_finds_the_key(master_and_replica):
    master, replica = master_and_replica
    admin, own = RawClient(master.port), RawClient(replica.port)
    try:
        assert admin.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
        assert admin.call("SET", "k", "1", "PX", "300") == b"OK"
        wait_caught_up(master.port, replica.port)
        os.kill(replica.proc.pid, signal.SIGSTOP)
        try:
            assert admin.call("INCR", "k") == 2  # on the master, while k lives
            time.sleep(0.35)  # (the deadline has passed when the replica reads the INCR)
        finally:
            os.kill(replica.proc.pid, signal.SIGCONT)
        wait_caught_up(master.port, replica.port)
        assert own.call("EXISTS", "k") == 0  # logically expired ...
        assert own.call("GET", "k") is None
        assert own.call("DBSIZE") == 1  # ... but kept, with the INCR applied
        assert own.call("DEBUG", "OBJECT", "k") != Err("ERR no such key")
        assert own.call("INFO", "stats").count(b"expired_keys:0") == 1
        assert admin.call("GET", "k") is None  # the master expires it: its DEL reaches the replica
        wait_until(lambda: own.call("DBSIZE") == 0, "the master's DEL applied")
    finally:
        admin.close()
        own.close()
