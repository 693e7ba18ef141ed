"""replica-announce-port and replica-announced, side by side with Redis: a replica gives its
master the announced port (REPLCONF listening-port), which the master lists it under in INFO
and ROLE (what Sentinel connects to), and INFO on the replica shows replica_announced as set
(Sentinel leaves a replica set to `no` out of its SENTINEL REPLICAS)."""
from __future__ import annotations

import pytest

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient
from tests.support.servers import NO_SYNC_DELAY, RedisServer
from tests.support.waiting import info_field, wait_link_up, wait_until

# A redis-server master sends its RDB at once (not after the default 5 s diskless delay).
_REDIS_ARGS = NO_SYNC_DELAY


def _start(kind: str, *args: str):
    if kind == "redis":
        return RedisServer(*_REDIS_ARGS, *args).start()
    return SubprocessServer(*args).start()


@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_replica_announces_its_port_and_whether_to_list_it(kind):
    master = _start(kind)
    replica = _start(kind, "--replicaof", "127.0.0.1", str(master.port),
                     "--replica-announce-port", "12345", "--replica-announced", "no")
    try:
        wait_link_up(replica.port)
        on_master, on_replica = RawClient(master.port), RawClient(replica.port)
        # (ROLE lists a replica once it is online, INFO as soon as it asks to sync: Redis's
        # replica is online only after its first REPLCONF ACK, a moment after its link is up)
        wait_until(lambda: b"state=online" in on_master.call("INFO", "replication"),
                   "the replica online")
        listed = info_field(on_master, "replication", "slave0")
        assert "port=12345," in listed, listed
        assert on_master.call("ROLE")[2][0][1] == b"12345"
        assert info_field(on_replica, "replication", "replica_announced") == "0"
        assert on_replica.call("CONFIG", "SET", "replica-announced", "yes") == b"OK"
        assert info_field(on_replica, "replication", "replica_announced") == "1"
        on_master.close()
        on_replica.close()
    finally:
        replica.stop()
        master.stop()
