"""FAILOVER's TIMEOUT on the server's clock: under time control, MINIRED ADVANCE past the
deadline ends the wait at once (aborted, or with FORCE the failover goes on), as the time
passing would; short of it, the failover goes on waiting. The failover waits on a replica of
our own (a socket) that never acknowledges, so only the clock decides. Each way the failover
ends, nothing of it is left on the clock's listeners or the shutdown hooks.

The deadline is 60 s away and the advances leave 10 s on either side of it: the real time the
test takes never decides an outcome.
"""
from __future__ import annotations

import logging
import socket

import pytest

from minired.embed import EmbeddedServer
from minired.features import failover
from tests.support.fake_replica import SilentReplica
from tests.support.respclient import RawClient
from tests.support.servers import free_port, start_server
from tests.support.waiting import blocked_clients, info_field, wait_blocked, wait_until

from .test_replication_failover import _online_ports, _psync_to

TIMEOUT_MS = 60_000
SHORT_MS = 50_000  # (advanced first: 10 s short of the deadline)
PAST_MS = 20_000  # (then: 10 s past it)


@pytest.fixture
def srv():
    with EmbeddedServer(time_control=True) as server:
        yield server


@pytest.fixture
def target():
    """A listening socket to name as the failover's target (the silent replica announces its
    port): a forced failover connects to it and sends its PSYNC ... FAILOVER."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", free_port()))
    sock.listen(1)
    sock.settimeout(30)
    yield sock
    sock.close()


def _failover_hooks(srv: EmbeddedServer) -> list:
    """What of a failover the clock's listeners and the shutdown hooks hold (read on the
    server's loop)."""
    def held() -> list:
        server = srv.server
        return [hook for hook in [*server.clock.listeners, *server.hooks.shutdown]
                if isinstance(getattr(hook, "__self__", None), failover.Failover)]
    return srv.call(held)


def _state(client: RawClient) -> str:
    return info_field(client, "replication", "master_failover_state")


def _waiting_on_silent_replica(srv: EmbeddedServer, port: int) -> tuple[RawClient, SilentReplica]:
    client = RawClient(srv.port)
    replica = SilentReplica(srv.port, port)
    wait_until(lambda: port in _online_ports(client), "the silent replica online")
    client.call("SET", "k", "v")  # (the master's offset passes the replica's)
    return client, replica


def _logged(caplog, text: str) -> bool:
    return any(text in record.getMessage() for record in caplog.records
               if record.name == "minired.replication")


def test_advancing_past_the_timeout_aborts_the_failover(srv, caplog):
    caplog.set_level(logging.INFO, logger="minired.replication")
    client, replica = _waiting_on_silent_replica(srv, 7777)
    writer = RawClient(srv.port)
    try:
        assert client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT",
                           str(TIMEOUT_MS)) == b"OK"
        assert len(_failover_hooks(srv)) == 2  # (its clock listener and its shutdown hook)
        writer.send("SET", "k", "w")
        wait_blocked(client)
        srv.advance_clock(SHORT_MS)
        assert _state(client) == "waiting-for-sync"
        assert blocked_clients(client) == 1
        assert not _logged(caplog, "aborted")
        srv.advance_clock(PAST_MS)
        assert _state(client) == "no-failover"
        assert _logged(caplog, "FAILOVER to 127.0.0.1:7777 aborted: Replica never caught up "
                               "before timeout")
        assert writer.read() == b"OK"  # (the held write went through)
        assert client.call("SET", "k", "x") == b"OK"
        assert client.call("ROLE")[0] == b"master"
        assert _failover_hooks(srv) == []
    finally:
        writer.close()
        client.close()
        replica.close()


def test_minired_advance_past_the_timeout_of_a_failover_to_any_replica(srv, caplog):
    """The command moves the clock as the embedding API does."""
    caplog.set_level(logging.INFO, logger="minired.replication")
    client, replica = _waiting_on_silent_replica(srv, 7777)
    try:
        assert client.call("FAILOVER", "TIMEOUT", str(TIMEOUT_MS)) == b"OK"
        client.call("MINIRED", "ADVANCE", str(SHORT_MS))
        assert _state(client) == "waiting-for-sync"
        client.call("MINIRED", "ADVANCE", str(PAST_MS))
        assert _state(client) == "no-failover"
        assert _logged(caplog, "FAILOVER to any replica aborted: Replica never caught up "
                               "before timeout")
        assert _failover_hooks(srv) == []
    finally:
        client.close()
        replica.close()


def test_advancing_past_the_timeout_with_force_fails_over(srv, target, caplog):
    """FORCE: past the deadline the master becomes its target's replica at once and asks it
    to take over; a target that refuses ends the failover, nothing of it left behind."""
    caplog.set_level(logging.INFO, logger="minired.replication")
    target_port = target.getsockname()[1]
    client, replica = _waiting_on_silent_replica(srv, target_port)
    conn = None
    try:
        replid = info_field(client, "replication", "master_replid").encode()
        offset = int(info_field(client, "replication", "master_repl_offset"))
        assert client.call("FAILOVER", "TO", "127.0.0.1", str(target_port), "TIMEOUT",
                           str(TIMEOUT_MS), "FORCE") == b"OK"
        srv.advance_clock(SHORT_MS)
        assert _state(client) == "waiting-for-sync"
        assert client.call("ROLE")[0] == b"master"
        srv.advance_clock(PAST_MS)
        assert _state(client) == "failover-in-progress"
        assert client.call("ROLE")[0] == b"slave"
        assert _logged(caplog, f"FAILOVER to 127.0.0.1:{target_port} time out exceeded, "
                               "failing over.")
        assert _failover_hooks(srv) == []  # (no deadline any more: the target decides)
        conn, argv = _psync_to(target)
        assert argv == [b"PSYNC", replid, b"%d" % (offset + 1), b"FAILOVER"]
        conn.sendall(b"-ERR not now\r\n")
        wait_until(lambda: _state(client) == "no-failover", "the refused failover aborted")
        assert client.call("ROLE")[0] == b"master"
        assert _failover_hooks(srv) == []
    finally:
        if conn is not None:
            conn.close()
        client.close()
        replica.close()


def _fails_over_again_and_times_out(srv: EmbeddedServer, client: RawClient, port: int,
                                    caplog) -> None:
    """A new failover after one that ended: it alone listens to the clock (the first left
    nothing), and it times out when the clock passes its deadline."""
    before = sum("never caught up" in record.getMessage() for record in caplog.records)
    assert client.call("SET", "k", "again") == b"OK"
    assert client.call("FAILOVER", "TO", "127.0.0.1", str(port), "TIMEOUT",
                       str(TIMEOUT_MS)) == b"OK"
    assert len(_failover_hooks(srv)) == 2
    srv.advance_clock(SHORT_MS + PAST_MS)
    assert _state(client) == "no-failover"
    assert sum("never caught up" in record.getMessage()
               for record in caplog.records) == before + 1
    assert _failover_hooks(srv) == []


def test_a_target_caught_up_in_time_leaves_nothing_on_the_clock(srv, target, caplog):
    """The target acknowledges the whole stream before the deadline: the failover goes on,
    the target accepts it, and nothing of it is left on the clock."""
    caplog.set_level(logging.INFO, logger="minired.replication")
    target_port = target.getsockname()[1]
    client, replica = _waiting_on_silent_replica(srv, target_port)
    conn = None
    try:
        assert client.call("FAILOVER", "TO", "127.0.0.1", str(target_port), "TIMEOUT",
                           str(TIMEOUT_MS)) == b"OK"
        srv.advance_clock(SHORT_MS)
        offset = int(info_field(client, "replication", "master_repl_offset"))
        replica.sock.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%d\r\n"
                             % (len(str(offset)), offset))
        wait_until(lambda: _state(client) == "failover-in-progress", "the target caught up")
        assert _failover_hooks(srv) == []
        conn, argv = _psync_to(target)
        conn.sendall(b"+CONTINUE %s\r\n" % (b"f" * 40))
        wait_until(lambda: _state(client) == "no-failover", "the failover done")
        assert client.call("ROLE")[0] == b"slave"
        assert _failover_hooks(srv) == []
        # A master again, with a replica again (the new ID dropped the first one).
        assert client.call("REPLICAOF", "NO", "ONE") == b"OK"
        replica.close()
        replica = SilentReplica(srv.port, target_port)
        wait_until(lambda: target_port in _online_ports(client), "the silent replica back")
        _fails_over_again_and_times_out(srv, client, target_port, caplog)
    finally:
        if conn is not None:
            conn.close()
        client.close()
        replica.close()


def test_failover_abort_leaves_nothing_on_the_clock(srv, caplog):
    caplog.set_level(logging.INFO, logger="minired.replication")
    client, replica = _waiting_on_silent_replica(srv, 7777)
    try:
        assert client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT",
                           str(TIMEOUT_MS)) == b"OK"
        srv.advance_clock(SHORT_MS)
        assert client.call("FAILOVER", "ABORT") == b"OK"
        assert _failover_hooks(srv) == []
        _fails_over_again_and_times_out(srv, client, 7777, caplog)
    finally:
        client.close()
        replica.close()


def test_shutdown_leaves_nothing_of_a_waiting_failover():
    srv = EmbeddedServer(time_control=True).start()
    try:
        client, replica = _waiting_on_silent_replica(srv, 7777)
        assert client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT",
                           str(TIMEOUT_MS)) == b"OK"
        assert len(_failover_hooks(srv)) == 2
        client.close()
        replica.close()
    finally:
        srv.stop()
    server = srv.server  # (its loop stopped: read from here)
    assert failover.current(server) is not None  # (the failover died with the server)
    assert [hook for hook in [*server.clock.listeners, *server.hooks.shutdown]
            if isinstance(getattr(hook, "__self__", None), failover.Failover)] == []
    assert failover.current(server).timer is None
    server.clock.advance(SHORT_MS + PAST_MS)  # (nothing listens: the failover stays as it was)
    assert failover.state_name(server) == "waiting-for-sync"



@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_a_timeout_that_overflows_the_deadline_gives_up_at_once(kind):
    """Redis adds TIMEOUT to mstime() in a long long: near 2^63 the deadline wraps into the past
    and the failover is aborted at once (within a cron tick). minired answers the same."""
    server = start_server(kind)
    client = RawClient(server.port)
    replica = None
    try:
        replica = SilentReplica(server.port, 7777)
        wait_until(lambda: 7777 in _online_ports(client), "the silent replica online")
        client.call("SET", "k", "v")
        assert client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT",
                           str((1 << 63) - 1)) == b"OK"
        wait_until(lambda: _state(client) == "no-failover", "the failover given up")
        assert client.call("SET", "k", "w") == b"OK"
    finally:
        if replica is not None:
            replica.close()
        client.close()
        server.stop()
