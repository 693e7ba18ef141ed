"""Partial resynchronization (PSYNC and the replication backlog), min-replicas-to-write and
replicaof read at start, against a real redis-server.

The PSYNC exchange is compared byte for byte with Redis's: a replica of our own (a socket)
syncs, goes away, and asks to continue from offsets inside and outside the backlog, with the
replication ID, another one, and without `capa psync2`. Then real replicas reconnect both ways
(a redis-server replica of minired, minired a replica of redis-server, and a failover: the
promoted minired continued by its old master) and must continue without a full sync and end
holding the master's data.
"""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from minired.embed import SubprocessServer
from tests.support.respclient import Err, RawClient, read_line
from tests.support.servers import NO_SYNC_DELAY, RedisServer, start_on_free_port, start_server, terminate
from tests.support.waiting import info_field, wait_caught_up, wait_link_up, wait_until
from tests.support.workload import held_data


def _psync(port: int, replid: bytes, offset: int, psync2: bool = True) -> tuple:
    """A replica of our own: PSYNC, then (for a full sync) the RDB read past. The reply line,
    the socket and what was read after the reply (and the RDB)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    buffer = bytearray()
    if psync2:
        sock.sendall(b"REPLCONF capa psync2\r\n")
        assert read_line(sock, buffer) == b"+OK"
    sock.sendall(b"PSYNC %s %d\r\n" % (replid, offset))
    reply = read_line(sock, buffer)
    if reply.startswith(b"+FULLRESYNC"):
        header = read_line(sock, buffer)
        size = int(header[1:])
        while len(buffer) < size:
            buffer += sock.recv(65536)
        del buffer[:size]
    return reply, sock, buffer


def _stream(sock: socket.socket, buffer: bytearray, last: bytes) -> bytes:
    while last not in buffer:
        chunk = sock.recv(65536)
        assert chunk, "the master closed the link"
        buffer += chunk
    return bytes(buffer)


def _exchange(kind: str) -> list:
    """What a master answers the PSYNCs of a replica that went away and came back, with its
    replication ID shown as <id>."""
    server = start_server(kind, "--repl-backlog-size", "16kb", "--repl-ping-replica-period", "3600")
    client = RawClient(server.port)
    seen = []
    try:
        client.call("SET", "before", "1")
        reply, sock, _ = _psync(server.port, b"?", -1)
        _, replid, offset = reply.split()
        offset = int(offset)
        seen.append(reply.replace(replid, b"<id>"))
        client.call("SET", "k", "v")
        client.call("SELECT", "3")
        client.call("RPUSH", "l", "a")
        client.call("SELECT", "0")
        last = b"*3\r\n$3\r\nSET\r\n$3\r\nend\r\n$1\r\n1\r\n"
        client.call("SET", "end", "1")
        seen.append(_stream(sock, bytearray(), last))
        sock.close()
        wait_until(lambda: info_field(client, "replication", "connected_slaves") == "0",
                   "the replica gone")
        # From just after the full sync: the whole stream again; from its end: nothing.
        for start, psync2 in ((offset + 1, True), (offset + 1, False)):
            reply, sock, buffer = _psync(server.port, replid, start, psync2)
            seen.append(reply.replace(replid, b"<id>"))
            seen.append(_stream(sock, buffer, last))
            sock.close()
            wait_until(lambda: info_field(client, "replication", "connected_slaves") == "0",
                       "the replica gone")
        end = int(info_field(client, "replication", "master_repl_offset"))
        for asked in ((replid, end + 1), (replid, end + 2), (b"0" * 40, end + 1),
                      (replid, offset)):
            reply, sock, _ = _psync(server.port, *asked)
            seen.append(reply.split()[0])
            sock.close()
            wait_until(lambda: info_field(client, "replication", "connected_slaves") == "0",
                       "the replica gone")
        # More than the backlog holds: an offset from before it is a full resync.
        replid = info_field(client, "replication", "master_replid").encode()
        end = int(info_field(client, "replication", "master_repl_offset"))
        client.call("SET", "big", "x" * 40_000)
        seen.append(_psync(server.port, replid, end + 1)[0].split()[0])
        # (not repl_backlog_histlen: Redis trims its backlog by whole buffer blocks, sized by
        # its allocator, so it may hold more than repl-backlog-size; minired holds that size)
        for field in ("repl_backlog_active", "repl_backlog_size", "second_repl_offset"):
            seen.append(info_field(client, "replication", field))
        for field in ("sync_full", "sync_partial_ok", "sync_partial_err"):
            seen.append(info_field(client, "stats", field))
        return seen
    finally:
        client.close()
        server.stop()


def test_psync_continues_from_the_backlog_as_redis():
    assert _exchange("minired") == _exchange("redis")


def test_a_redis_replica_continues_from_minired_s_backlog():
    master = SubprocessServer().start()
    replica = RedisServer("--replicaof", "127.0.0.1", str(master.port)).start()
    client = RawClient(master.port)
    try:
        wait_link_up(replica.port)
        client.call("SET", "a", "1")
        assert client.call("CLIENT", "KILL", "TYPE", "replica") == 1
        client.call("SET", "b", "2")  # (written while the replica is away)
        client.call("SELECT", "1")
        client.call("RPUSH", "l", "x")
        wait_until(lambda: info_field(client, "stats", "sync_partial_ok") == "1",
                   "the replica continuing")
        client.call("SET", "c", "3")
        wait_caught_up(master.port, replica.port)
        assert held_data(replica.port) == held_data(master.port)
        assert info_field(client, "stats", "sync_full") == "1"
    finally:
        client.close()
        replica.stop()
        master.stop()


def test_minired_continues_from_a_redis_master_s_backlog_and_after_a_failover():
    master = RedisServer(*NO_SYNC_DELAY).start()
    replica = SubprocessServer().start()
    client, mini = RawClient(master.port), RawClient(replica.port)
    try:
        client.call("SET", "a", "1")
        mini.call("REPLICAOF", "127.0.0.1", str(master.port))
        wait_link_up(replica.port)
        assert client.call("CLIENT", "KILL", "TYPE", "replica") == 1
        client.call("SET", "b", "2")
        wait_until(lambda: info_field(client, "stats", "sync_partial_ok") == "1",
                   "minired continuing after the master dropped it")
        # (the master counts the PSYNC before minired has read its +CONTINUE: until then
        # minired has no master client to kill, as Redis would not)
        wait_link_up(replica.port)
        assert mini.call("CLIENT", "KILL", "TYPE", "master") == 1
        client.call("SELECT", "1")
        client.call("SET", "c", "3")
        wait_until(lambda: info_field(client, "stats", "sync_partial_ok") == "2",
                   "minired continuing after it dropped its master")
        wait_link_up(replica.port)
        assert mini.call("CLIENT", "KILL", f"127.0.0.1:{master.port}") == b"OK"
        client.call("SET", "e", "5")
        wait_until(lambda: info_field(client, "stats", "sync_partial_ok") == "3",
                   "minired continuing after CLIENT KILL <master's address>")
        wait_caught_up(master.port, replica.port)
        assert held_data(replica.port) == held_data(master.port)
        assert info_field(mini, "replication", "repl_backlog_active") == "1"
        # The failover: minired promoted, its old master its replica, continuing.
        old_id = info_field(mini, "replication", "master_replid")
        assert mini.call("REPLICAOF", "NO", "ONE") == b"OK"
        assert info_field(mini, "replication", "master_replid2") == old_id
        mini.call("SET", "d", "4")
        assert client.call("REPLICAOF", "127.0.0.1", str(replica.port)) == b"OK"
        wait_link_up(master.port)
        wait_caught_up(replica.port, master.port)
        assert held_data(master.port) == held_data(replica.port)
        assert info_field(mini, "stats", "sync_partial_ok") == "1"
        assert info_field(mini, "stats", "sync_full") == "0"
    finally:
        client.close()
        mini.close()
        replica.stop()
        master.stop()


# --- min-replicas-to-write ---------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["minired", "redis"])
def test_min_replicas_to_write_counts_the_replicas_acknowledging(kind):
    """Writes are refused with Redis's NOREPLICAS until a replica acknowledges, and again
    once it is gone; the replies are Redis's."""
    master = start_server(kind)
    client = RawClient(master.port)
    try:
        client.call("CONFIG", "SET", "min-replicas-to-write", "1")
        assert client.call("SET", "k", "v") == Err("NOREPLICAS Not enough good replicas to write.")
        assert client.call("GET", "k") is None  # (reads are served)
        assert info_field(client, "replication", "min_slaves_good_slaves") == "0"
        replica = RedisServer("--replicaof", "127.0.0.1", str(master.port)).start()
        try:
            wait_until(lambda: client.call("SET", "k", "v") == b"OK", "a write accepted")
            assert info_field(client, "replication", "min_slaves_good_slaves") == "1"
            client.call("CONFIG", "SET", "min-replicas-to-write", "2")
            wait_until(lambda: isinstance(client.call("SET", "k", "w"), Err),
                       "writes refused with one replica of two")
        finally:
            replica.stop()
        client.call("CONFIG", "SET", "min-replicas-to-write", "1")
        wait_until(lambda: client.call("SET", "k", "v") == Err(
            "NOREPLICAS Not enough good replicas to write."), "writes refused again")
        client.call("CONFIG", "SET", "min-replicas-max-lag", "0")
        assert client.call("SET", "k", "v") == b"OK"  # (a lag of 0 turns the check off)
    finally:
        client.close()
        master.stop()


# --- replicaof at start ------------------------------------------------------------------------

def test_replicaof_in_the_config_file_and_on_the_command_line(tmp_path):
    with RedisServer(*NO_SYNC_DELAY) as master:
        RawClient(master.port).call("SET", "mirrored", "v")
        config = tmp_path / "minired.conf"

        def from_config_file(port: int) -> list[str]:
            config.write_text(f"port {port}\nreplicaof 127.0.0.1 {master.port}\n")
            # (the config file comes first, as redis-server takes it)
            return [sys.executable, "-m", "minired", str(config)]

        from_file, port = start_on_free_port(from_config_file, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
        from_file.port = port
        try:
            from_argv = SubprocessServer("--slaveof", "127.0.0.1", str(master.port)).start()
        except BaseException:
            terminate(from_file)
            raise
        try:
            for replica in (from_file, from_argv):
                wait_link_up(replica.port)
                wait_caught_up(master.port, replica.port)
                client = RawClient(replica.port)
                assert client.call("GET", "mirrored") == b"v"
                assert client.call("SET", "x", "1") == Err(
                    "READONLY You can't write against a read only replica.")
                assert client.call("CONFIG", "GET", "replicaof") == [
                    b"replicaof", b"127.0.0.1 %d" % master.port]
                client.close()
            # CONFIG REWRITE writes where it replicates from, as Redis does.
            client = RawClient(port)
            client.call("REPLICAOF", "NO", "ONE")
            assert client.call("CONFIG", "GET", "replicaof") == [b"replicaof", b""]
            assert client.call("CONFIG", "REWRITE") == b"OK"
            assert "replicaof" not in config.read_text()
            client.call("REPLICAOF", "127.0.0.1", str(master.port))
            assert client.call("CONFIG", "REWRITE") == b"OK"
            assert f"replicaof 127.0.0.1 {master.port}\n" in config.read_text()
            client.close()
        finally:
            terminate(from_file)
            from_argv.stop()
