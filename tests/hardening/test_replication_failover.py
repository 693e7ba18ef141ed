"""FAILOVER (a coordinated failover from a master to one of its replicas), against a real
redis-server.

The argument errors, ABORT, TIMEOUT and INFO's master_failover_state are compared reply for
reply with Redis's: the failover waits on a replica of our own (a socket) that never
acknowledges, so its state is the test's to decide, not the machine's speed; a target of our
own answers the PSYNC it is sent. Then real failovers: minired to a minired replica, to a
Redis replica, and Redis to a minired replica, where the roles swap, the data stays and the
old master continues from its new master without a full sync.
"""
from __future__ import annotations

import socket
import time

import pytest

from minired.embed import SubprocessServer
from tests.support.fake_replica import SilentReplica
from tests.support.respclient import Err, RawClient, call_once, read_line
from tests.support.servers import RedisServer, free_port, start_server
from tests.support.waiting import (
    blocked_clients,
    info_field,
    wait_blocked,
    wait_caught_up,
    wait_link_up,
    wait_until,
)
from tests.support.workload import held_data


def _read_command(sock: socket.socket, buffer: bytearray) -> list[bytes]:
    """One multibulk command from a raw socket."""
    header = read_line(sock, buffer)
    assert header.startswith(b"*"), header
    argv = []
    for _ in range(int(header[1:])):
        size = int(read_line(sock, buffer)[1:])
        while len(buffer) < size + 2:
            chunk = sock.recv(65536)
            assert chunk, "the connection closed"
            buffer += chunk
        argv.append(bytes(buffer[:size]))
        del buffer[:size + 2]
    return argv


def _psync_to(target: socket.socket) -> tuple[socket.socket, list[bytes]]:
    """The target's side of a failover: accept the master's link, answer its handshake, and
    return the connection with the PSYNC it sent."""
    target.settimeout(30)
    conn, _ = target.accept()
    conn.settimeout(30)
    buffer = bytearray()
    while True:
        argv = _read_command(conn, buffer)
        if argv[0].upper() == b"PSYNC":
            return conn, argv
        conn.sendall(b"+PONG\r\n" if argv[0].upper() == b"PING" else b"+OK\r\n")


def _online_ports(client: RawClient) -> set[int]:
    """The listening ports of the replicas INFO shows online."""
    text = client.call("INFO", "replication").decode()
    return {int(line.split(",port=")[1].split(",")[0]) for line in text.splitlines()
            if line.startswith("slave") and "state=online" in line}


def _failover_state(client: RawClient) -> str:
    return info_field(client, "replication", "master_failover_state")


def _wait_state(client: RawClient, state: str) -> None:
    wait_until(lambda: _failover_state(client) == state, f"master_failover_state {state}")


# --- the replies, side by side with Redis's -----------------------------------------------------

def _argument_errors(kind: str) -> list:
    """FAILOVER's errors, without replicas, with one (on the master and on the replica), and
    the PSYNC ... FAILOVER a target refuses."""
    master = start_server(kind)
    replica = start_server(kind)
    client, other = RawClient(master.port), RawClient(replica.port)
    seen = []
    try:
        port = str(replica.port)
        for argv in (("FAILOVER",), ("FAILOVER", "TO", "127.0.0.1", port), ("FAILOVER", "ABORT"),
                     ("FAILOVER", "ABORT", "NOW"), ("FAILOVER", "TIMEOUT", "0"),
                     ("FAILOVER", "TIMEOUT", "-5"), ("FAILOVER", "TIMEOUT", "soon"),
                     ("FAILOVER", "TO", "127.0.0.1", "invalidport"), ("FAILOVER", "TO", "h"),
                     ("FAILOVER", "FORCE", "FORCE"), ("FAILOVER", "TIMEOUT", "5", "TIMEOUT", "5"),
                     ("FAILOVER", "TO", "a", "1", "TO", "b", "2"), ("FAILOVER", "NOW"),
                     ("FAILOVER", "TIMEOUT", "9223372036854775808"),
                     ("COMMAND", "GETKEYSANDFLAGS", "FAILOVER", "TAKEOVER"),
                     ("COMMAND", "INFO", "FAILOVER"),
                     ("PSYNC", "?", "-1", "FAILOVER")):
            seen.append(client.call(*argv))
        assert other.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        wait_link_up(replica.port)
        wait_until(lambda: replica.port in _online_ports(client), "the replica online")
        for argv in (("FAILOVER", "FORCE", "TIMEOUT", "100"),
                     ("FAILOVER", "TO", "127.0.0.1", port, "FORCE"),
                     ("FAILOVER", "TO", "invalidhost", port),
                     ("FAILOVER", "TO", "127.0.0.1", str(replica.port + 1)),
                     ("FAILOVER", "TO", "127.0.0.1", port, "TIMEOUT", "0")):
            seen.append(client.call(*argv))
        seen.append(other.call("FAILOVER", "TO", "127.0.0.1", port))
        seen.append(other.call("PSYNC", "0" * 40, "1", "FAILOVER"))
        seen.append(_failover_state(client))
        seen.append(info_field(other, "replication", "master_link_status"))
        return seen
    finally:
        client.close()
        other.close()
        replica.stop()
        master.stop()


def test_failover_argument_errors_are_redis_s():
    assert _argument_errors("minired") == _argument_errors("redis")


def _announced_addresses(kind: str) -> list:
    """Replicas that announce an address (replica-announce-ip): INFO and ROLE name them by it,
    and FAILOVER TO finds them by it, not by their connection's."""
    master = start_server(kind)
    replicas = [RedisServer("--replica-announce-ip", "10.1.2.3").start(),
                SubprocessServer("--replica-announce-ip", "10.1.2.4").start()]
    client = RawClient(master.port)
    try:
        for replica in replicas:
            assert call_once(replica.port, "REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        ports = {replica.port for replica in replicas}
        wait_until(lambda: _online_ports(client) == ports, "the replicas online")
        text = client.call("INFO", "replication").decode()
        shown = sorted(line.split("ip=")[1].split(",")[0] for line in text.splitlines()
                       if line.startswith("slave"))
        roles = sorted(entry[0] for entry in client.call("ROLE")[2])
        redis_port, minired_port = (str(replica.port) for replica in replicas)
        return [shown, roles,
                client.call("FAILOVER", "TO", "127.0.0.1", redis_port),
                client.call("FAILOVER", "TO", "127.0.0.1", minired_port)]
    finally:
        client.close()
        for replica in replicas:
            replica.stop()
        master.stop()


def test_replicas_are_named_by_the_address_they_announce():
    seen = _announced_addresses("minired")
    assert seen == _announced_addresses("redis")
    assert seen[0] == ["10.1.2.3", "10.1.2.4"]


def _abort_and_timeout(kind: str) -> list:
    """A failover waiting for a replica that never catches up: its state, what it refuses,
    the writes it holds (a CLIENT UNPAUSE does not release them), ABORT, and TIMEOUT without
    FORCE giving up."""
    master = start_server(kind)
    client, writer = RawClient(master.port), RawClient(master.port)
    replica = SilentReplica(master.port, 7777)
    seen = []
    try:
        wait_until(lambda: 7777 in _online_ports(client), "the silent replica online")
        client.call("SET", "k", "v")  # (the master's offset passes the replica's)
        for argv in (("FAILOVER", "TO", "localhost", "7777"),
                     ("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT", "60000")):
            seen.append(client.call(*argv))
        seen.append(_failover_state(client))
        for argv in (("FAILOVER",), ("FAILOVER", "TO", "127.0.0.1", "7777"),
                     ("REPLICAOF", "127.0.0.1", "7777"), ("GET", "k"), ("PSYNC", "?", "-1"),
                     ("SYNC",)):
            seen.append(call_once(master.port, *argv))
        writer.send("SET", "k", "w")
        wait_blocked(client)
        seen.append(client.call("CLIENT", "UNPAUSE"))
        seen.append(blocked_clients(client))  # (the failover's pause holds the write still)
        seen.append(client.call("FAILOVER", "ABORT"))
        seen.append(writer.read())
        seen.append(_failover_state(client))
        seen.append(client.call("FAILOVER", "ABORT"))
        # TIMEOUT without FORCE: the wait ends, the failover is aborted.
        seen.append(client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT", "100"))
        _wait_state(client, "no-failover")
        seen.append(client.call("FAILOVER", "TIMEOUT", "100"))  # (to any replica)
        _wait_state(client, "no-failover")
        seen.append(client.call("SET", "k", "x"))
        seen.append(client.call("ROLE")[0])
        seen.append(info_field(client, "stats", "sync_partial_ok"))
        return seen
    finally:
        replica.close()
        client.close()
        writer.close()
        master.stop()


def _pings_during_pauses(kind: str) -> list:
    """Whether the master's PINGs (every second here) move its offset while writes are held:
    by CLIENT PAUSE (they do), by a failover with a TIMEOUT (they do not: the target is to
    catch up with an offset that holds still), by one without (they do)."""
    master = start_server(kind, "--repl-ping-replica-period", "1")
    client = RawClient(master.port)
    replica = SilentReplica(master.port, 7777)

    def offset() -> int:
        return int(info_field(client, "replication", "master_repl_offset"))

    def pinged(since: int) -> bool:
        wait_until(lambda: offset() > since, "a PING during the pause")
        return True

    seen = []
    try:
        wait_until(lambda: 7777 in _online_ports(client), "the silent replica online")
        seen.append(client.call("CLIENT", "PAUSE", "60000", "WRITE"))
        seen.append(pinged(offset()))
        seen.append(client.call("CLIENT", "UNPAUSE"))
        client.call("SET", "k", "v")  # (the master's offset passes the replica's)
        seen.append(client.call("FAILOVER", "TO", "127.0.0.1", "7777", "TIMEOUT", "60000"))
        held = offset()
        time.sleep(2.5)  # (two and more PING periods: none may come)
        seen.append(offset() == held)
        seen.append(client.call("FAILOVER", "ABORT"))
        seen.append(client.call("FAILOVER", "TO", "127.0.0.1", "7777"))
        seen.append(pinged(offset()))
        seen.append(client.call("FAILOVER", "ABORT"))
        return seen
    finally:
        replica.close()
        client.close()
        master.stop()


def test_pings_go_on_during_a_pause_but_not_a_failover_with_a_timeout():
    seen = _pings_during_pauses("minired")
    assert seen == _pings_during_pauses("redis")
    assert seen == [b"OK", True, b"OK", b"OK", True, b"OK", b"OK", True, b"OK"]


def test_failover_abort_and_timeout_as_redis():
    seen = _abort_and_timeout("minired")
    assert seen == _abort_and_timeout("redis")
    assert seen[1] == b"OK" and seen[2] == "waiting-for-sync"


def _forced_to_a_refusing_target(kind: str) -> list:
    """FORCE after the TIMEOUT: the master becomes its target's replica and asks it
    `PSYNC <replid> <offset+1> FAILOVER`; a target that refuses aborts the failover, and the
    master is one again, under a new ID that keeps the old one as replid2."""
    target = socket.socket()
    target.bind(("127.0.0.1", free_port()))
    target.listen(1)
    target_port = target.getsockname()[1]
    master = start_server(kind)
    client = RawClient(master.port)
    replica = SilentReplica(master.port, target_port)
    seen = []
    try:
        wait_until(lambda: target_port in _online_ports(client), "the silent replica online")
        client.call("SET", "k", "v")
        replid = info_field(client, "replication", "master_replid").encode()
        offset = int(info_field(client, "replication", "master_repl_offset"))
        seen.append(client.call("FAILOVER", "TO", "127.0.0.1", str(target_port), "TIMEOUT", "50",
                                "FORCE"))
        conn, argv = _psync_to(target)
        seen.append(argv == [b"PSYNC", replid, b"%d" % (offset + 1), b"FAILOVER"])
        seen.append(_failover_state(client))
        seen.append(client.call("ROLE")[0])
        conn.sendall(b"-ERR not now\r\n")
        _wait_state(client, "no-failover")
        seen.append(client.call("ROLE")[0])
        seen.append(info_field(client, "replication", "master_replid2").encode() == replid)
        seen.append(info_field(client, "replication", "master_replid").encode() != replid)
        seen.append(client.call("SET", "k", "w"))
        conn.close()
        return seen
    finally:
        replica.close()
        client.close()
        target.close()
        master.stop()


def test_a_refused_psync_failover_aborts_as_redis():
    seen = _forced_to_a_refusing_target("minired")
    assert seen == _forced_to_a_refusing_target("redis")
    assert seen[1] is True and seen[2] == "failover-in-progress"


# --- real failovers ------------------------------------------------------------------------------

@pytest.mark.parametrize("master_kind,target_kind",
                         [("minired", "minired"), ("minired", "redis"), ("redis", "minired")])
def test_failover_swaps_the_roles_and_keeps_the_data(master_kind, target_kind):
    """FAILOVER TO the target: the target is the master, the old master its replica having
    continued (no full sync), another replica following; writes go on, on the new master."""
    master = start_server(master_kind)
    target = start_server(target_kind)
    other = SubprocessServer().start()
    client, new, third = RawClient(master.port), RawClient(target.port), RawClient(other.port)
    try:
        client.call("SET", "a", "1")
        client.call("SELECT", "1")
        client.call("RPUSH", "l", "x", "y")
        for server in (new, third):
            assert server.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        for port in (target.port, other.port):
            wait_link_up(port)
        wait_until(lambda: _online_ports(client) == {target.port, other.port},
                   "the replicas online")
        client.call("SET", "b", "2")
        assert client.call("FAILOVER", "TO", "127.0.0.1", str(target.port)) == b"OK"
        wait_until(lambda: _failover_state(client) == "no-failover"
                   and client.call("ROLE")[0] == b"slave", "the failover done")
        assert new.call("ROLE")[0] == b"master"
        wait_link_up(master.port)
        assert info_field(new, "stats", "sync_partial_ok") == "1"
        assert info_field(new, "stats", "sync_full") == "0"
        assert client.call("SET", "c", "3") == Err(
            "READONLY You can't write against a read only replica.")
        assert new.call("SET", "c", "3") == b"OK"
        # The other replica follows the old master, now the new one's replica.
        wait_link_up(other.port)
        wait_caught_up(target.port, master.port)
        wait_caught_up(master.port, other.port)
        assert held_data(master.port) == held_data(target.port) == held_data(other.port)
        assert new.call("GET", "c") == b"3"
    finally:
        for connection in (client, new, third):
            connection.close()
        for server in (other, target, master):
            server.stop()


def _role_change_seen_by_blocked_clients(kind: str) -> tuple:
    """What a blocked BLPOP and a write held by CLIENT PAUSE see when their server becomes a
    replica (REPLICAOF host port): the first is told and closed, the second runs afterwards."""
    master, server = start_server(kind), start_server(kind)
    admin, blocked, held = RawClient(server.port), RawClient(server.port), RawClient(server.port)
    try:
        blocked.send("BLPOP", "list", "0")
        wait_blocked(admin)
        assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"OK"
        held.send("LPUSH", "other", "x")
        wait_until(lambda: b"cmd=lpush" in admin.call("CLIENT", "LIST"),
                   "the LPUSH held by the pause")
        assert admin.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"OK"
        told = blocked.read_until_closed()
        assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        after_pause = held.read()
        errorstats = admin.call("INFO", "errorstats").decode().split()
        blpop = [line for line in admin.call("INFO", "commandstats").decode().split()
                 if line.startswith("cmdstat_blpop:")]
        return (told, after_pause, sorted(line for line in errorstats if "UNBLOCKED" in line),
                [field for line in blpop for field in line.split(":", 1)[1].split(",")
                 if field.startswith(("calls", "failed_calls"))])
    finally:
        for client in (admin, blocked, held):
            client.close()
        server.stop()
        master.stop()


def test_blocked_clients_are_told_when_their_server_becomes_a_replica():
    seen = _role_change_seen_by_blocked_clients("minired")
    assert seen == _role_change_seen_by_blocked_clients("redis")
    assert seen[0] == (b"-UNBLOCKED force unblock from blocking operation, instance state "
                       b"changed (master -> replica?)\r\n")
