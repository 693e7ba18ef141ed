"""Clients that do not read their replies, compared with real Redis (unit/maxmemory's cases): the
server reads on and keeps their replies (a client may pipeline everything before it reads
anything); when memory passes maxmemory, clients over maxmemory-clients are evicted before any
key is (processCommand runs evictClients before performEvictions); CLIENT KILL frees a client at
once, its unsent replies dropped (freeClient), whether it reads or not."""
from __future__ import annotations

import re
import socket
import threading
import time

import pytest

from tests.support.respclient import RawClient, encode_command, named_socket
from tests.support.servers import MiniredProcess, RedisServer
from tests.support.waiting import info_field, wait_until


@pytest.fixture(params=("real_redis", "mini"))
def port(request):
    server = request.getfixturevalue(request.param)
    admin = RawClient(server.port)
    admin.call("FLUSHALL")
    admin.call("CONFIG", "RESETSTAT")
    yield server.port
    admin.call("CONFIG", "SET", "maxmemory-clients", "0")
    admin.call("CONFIG", "SET", "maxmemory", "0")
    admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
    admin.call("CLIENT", "NO-EVICT", "off")
    admin.call("FLUSHALL")
    admin.close()


def _client_line(admin: RawClient, name: str) -> str | None:
    for line in admin.call("CLIENT", "LIST").decode().splitlines():
        if f" name={name} " in line:
            return line
    return None


def test_a_pipeline_sent_whole_before_any_reply_is_read_is_answered_whole(port):
    # 16 MB of commands each way: more than the sockets' buffers hold, so a server that
    # stopped reading a client behind on its replies would leave the sender blocked for ever.
    payload = b"x" * 16_384
    count = 1_000
    request = encode_command(["ECHO", payload])
    sock = socket.create_connection(("127.0.0.1", port))
    sent = threading.Event()

    def send_all() -> None:
        try:
            sock.sendall(request * count)
        except OSError:  # (the test gave up waiting and shut the socket)
            return
        sent.set()

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    try:
        # (nothing is read until every command has been sent)
        wait_until(sent.is_set, "every command sent while no reply was read")
        reply = b"$%d\r\n%b\r\n" % (len(payload), payload)
        expected = len(reply) * count
        received = bytearray()
        sock.settimeout(30)
        while len(received) < expected:
            chunk = sock.recv(1 << 20)
            assert chunk, "the server closed the connection"
            received += chunk
        assert bytes(received) == reply * count
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # (wakes a sender still blocked)
        except OSError:
            pass
        sender.join(30)
        sock.close()


def test_clients_over_maxmemory_clients_go_before_keys(port):
    # unit/maxmemory's "eviction due to output buffers of many MGET clients, client eviction:
    # true": 5 MB of keys, 20 clients asking for 100 KB each without reading.
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    for j in range(50):
        admin.call("SETRANGE", str(j), 100_000, "x")
    used = int(info_field(admin, "memory", "used_memory"))
    assert admin.call("CONFIG", "SET", "maxmemory", used + 5 * 1024 * 1024) == b"OK"
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == b"OK"
    assert admin.call("CONFIG", "SET", "maxmemory-clients", "3mb") == b"OK"
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    mget = encode_command(["MGET", "1"])
    # (as the Tcl test does, send until something is evicted or 20 s pass: a fixed number of
    # rounds can all fit in the kernel's socket buffers on a machine that tunes them large)
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            for sock in socks:
                try:
                    sock.sendall(mget)
                except OSError:  # evicted
                    pass
            if int(info_field(admin, "stats", "evicted_clients")):
                break
            assert int(info_field(admin, "stats", "evicted_keys")) == 0, \
                "keys evicted while clients were over maxmemory-clients"
        assert int(info_field(admin, "stats", "evicted_clients")) > 0
        assert int(info_field(admin, "stats", "evicted_keys")) == 0
        assert admin.call("DBSIZE") == 50
    finally:
        for sock in socks:
            sock.close()
        admin.close()


def test_client_kill_frees_a_client_that_does_not_read_at_once(port):
    # A client with megabytes of replies it does not read is gone from CLIENT LIST as soon as
    # CLIENT KILL answers, as a replica stopped with SIGSTOP is in unit/maxmemory's "replica
    # buffer don't induce eviction" (its buffer no longer counted).
    admin = RawClient(port)
    admin.call("SET", "big", "v" * 100_000)
    victim = named_socket(port, "victim")
    victim.sendall(encode_command(["GET", "big"]) * 200)

    def omem() -> int:
        line = _client_line(admin, "victim")
        return int(re.search(r" omem=(\d+)", line).group(1)) if line else 0

    wait_until(lambda: omem() > 1_000_000, "replies waiting for the victim")
    client_id = int(re.search(r"^id=(\d+)", _client_line(admin, "victim")).group(1))
    assert admin.call("CLIENT", "KILL", "ID", client_id) == 1
    assert _client_line(admin, "victim") is None
    victim.close()
    admin.close()


@pytest.fixture(params=(RedisServer, MiniredProcess), ids=("real_redis", "mini"))
def own_port(request):
    """A server of the test's own: a replica attached leaves a backlog the shared ones keep."""
    with request.param("--repl-diskless-sync", "no") as server:
        yield server.port


def test_client_kill_type_replica_frees_a_stopped_replica_and_its_buffer(own_port):
    # unit/maxmemory's "replica buffer don't induce eviction": a replica that stops reading
    # (there, SIGSTOP) holds megabytes of the stream; CLIENT KILL TYPE replica takes it and its
    # buffer (mem_clients_slaves) away at once.
    port = own_port
    admin = RawClient(port)
    replica = socket.create_connection(("127.0.0.1", port))
    try:
        replica.sendall(encode_command(["REPLCONF", "listening-port", "1"]))
        assert replica.recv(100) == b"+OK\r\n"
        replica.sendall(encode_command(["PSYNC", "?", "-1"]))  # and never reads again
        wait_until(lambda: info_field(admin, "replication", "connected_slaves") == "1",
                   "the replica attached")
        for j in range(200):
            admin.call("SET", f"k{j}", "v" * 100_000)
        wait_until(lambda: int(info_field(admin, "memory", "mem_clients_slaves")) > 1_000_000,
                   "the stream waiting for the replica")
        assert admin.call("CLIENT", "KILL", "TYPE", "replica") == 1
        assert info_field(admin, "replication", "connected_slaves") == "0"
        assert info_field(admin, "memory", "mem_clients_slaves") == "0"
    finally:
        replica.close()
        admin.close()
