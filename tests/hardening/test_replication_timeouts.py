"""repl-timeout both ways, against a real redis-server: a replica whose master stops answering
gives the link up, logs it as Redis does, and continues once the master is back; a master whose
replica acknowledges nothing for that long disconnects it (a replica that attached with SYNC,
which never acknowledges, stays)."""
from __future__ import annotations

import os
import signal
import time

from tests.support.fake_replica import SilentReplica
from tests.support.respclient import RawClient
from tests.support.servers import NO_SYNC_DELAY, RedisServer, start_server
from tests.support.waiting import info_field, wait_caught_up, wait_link_up, wait_until
from tests.support.workload import held_data


def _replica_of_a_master_that_stops(kind: str, log) -> list:
    master = RedisServer(*NO_SYNC_DELAY).start()
    replica = start_server(kind, "--repl-timeout", "2", "--logfile", str(log))
    client, link = RawClient(master.port), RawClient(replica.port)
    try:
        client.call("SET", "a", "1")
        assert link.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        wait_link_up(replica.port)
        pid = int(info_field(client, "server", "process_id"))
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_until(lambda: "MASTER timeout: no data nor PING received..." in log.read_text(),
                       "the replica giving its link up")
            down = info_field(link, "replication", "master_link_status")
        finally:
            os.kill(pid, signal.SIGCONT)
        client.call("SET", "b", "2")
        wait_link_up(replica.port)
        wait_caught_up(master.port, replica.port)
        return [down, held_data(replica.port) == held_data(master.port),
                info_field(client, "stats", "sync_full"),
                info_field(client, "stats", "sync_partial_ok")]
    finally:
        client.close()
        link.close()
        replica.stop()
        master.stop()


def test_a_replica_gives_up_a_master_that_stops_answering(tmp_path):
    seen = _replica_of_a_master_that_stops("minired", tmp_path / "minired.log")
    assert seen == _replica_of_a_master_that_stops("redis", tmp_path / "redis.log")
    assert seen == ["down", True, "1", "1"]


def _master_of_silent_replicas(kind: str, log) -> list:
    master = start_server(kind, "--repl-timeout", "2", "--logfile", str(log))
    client = RawClient(master.port)
    silent = SilentReplica(master.port, 7777)
    old_style = SilentReplica(master.port, 7778, psync=False)
    try:
        assert info_field(client, "replication", "connected_slaves") == "2"
        wait_until(lambda: info_field(client, "replication", "connected_slaves") == "1",
                   "the silent replica disconnected")
        time.sleep(3)  # (longer than repl-timeout: the SYNC replica is kept all the same)
        return [info_field(client, "replication", "connected_slaves"),
                silent.closed_by_master(), old_style.closed_by_master(),
                "Disconnecting timedout replica (streaming sync): 127.0.0.1:7777"
                in log.read_text()]
    finally:
        silent.close()
        old_style.close()
        client.close()
        master.stop()


def test_a_master_disconnects_a_replica_that_stops_acknowledging(tmp_path):
    seen = _master_of_silent_replicas("minired", tmp_path / "minired.log")
    assert seen == _master_of_silent_replicas("redis", tmp_path / "redis.log")
    assert seen == ["1", True, False, True]


def _replica_of_a_master_that_never_answers(kind: str, log) -> list:
    """A master that accepts the connection but answers nothing (stopped): the replica is in
    its handshake (ROLE's word), not syncing, until repl-timeout gives the attempt up."""
    master = RedisServer().start()
    replica = start_server(kind, "--repl-timeout", "2", "--logfile", str(log))
    client, link = RawClient(master.port), RawClient(replica.port)
    pid = int(info_field(client, "server", "process_id"))
    os.kill(pid, signal.SIGSTOP)
    try:
        assert link.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        wait_until(lambda: link.call("ROLE")[3] == b"handshake", "the replica in its handshake")
        seen = [info_field(link, "replication", "master_sync_in_progress")]
        wait_until(lambda: "Timeout connecting to the MASTER..." in log.read_text(),
                   "the replica giving the handshake up")
        return seen
    finally:
        os.kill(pid, signal.SIGCONT)
        client.close()
        link.close()
        replica.stop()
        master.stop()


def test_a_replica_gives_up_a_handshake_that_gets_no_answer(tmp_path):
    seen = _replica_of_a_master_that_never_answers("minired", tmp_path / "minired.log")
    assert seen == _replica_of_a_master_that_never_answers("redis", tmp_path / "redis.log")
    assert seen == ["0"]
