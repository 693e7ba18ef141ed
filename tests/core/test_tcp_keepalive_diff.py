"""The `tcp-keepalive` parameter, side by side with Redis: each accepted connection gets
SO_KEEPALIVE with TCP_KEEPIDLE = the value, TCP_KEEPINTVL = a third of it and TCP_KEEPCNT = 3
(anetKeepAlive), none with 0; set at start or with CONFIG SET, which applies to the connections
accepted after it. A client cannot read its server's socket options, so the test takes a
duplicate of each server's end of its connections (pidfd_getfd) and reads them there."""
from __future__ import annotations

import ctypes
import os
import socket

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import NO_SYNC_DELAY, start_server
from tests.support.waiting import info_field, wait_until

_SYS_PIDFD_OPEN, _SYS_PIDFD_GETFD = 434, 438  # (x86-64 and arm64 alike)
_libc = ctypes.CDLL(None, use_errno=True)


def _server_ends(pid: int) -> dict[int, socket.socket]:
    """The server's TCP connections, by the client port at their other end."""
    pidfd = _libc.syscall(_SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        pytest.skip(f"pidfd_open: {os.strerror(ctypes.get_errno())}")
    ends = {}
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except OSError:
                continue  # (closed meanwhile)
            fd = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                pytest.skip(f"pidfd_getfd: {os.strerror(ctypes.get_errno())}")
            sock = socket.socket(fileno=fd)
            try:
                peer = sock.getpeername() if sock.family == socket.AF_INET else None
            except OSError:
                peer = None  # (a listener)
            if peer:
                ends[peer[1]] = sock
            else:
                sock.close()
    finally:
        os.close(pidfd)
    return ends


def _keepalive(sock: socket.socket) -> tuple[int, int, int, int]:
    return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT))


def _scenario(kind: str) -> list[tuple[int, int, int, int]]:
    """Each connection's keep-alive settings: by default, from the command line, then after
    CONFIG SET to 0, to 30, and to a value past the kernel's limit on the idle time (32767)."""
    default, at_start = start_server(kind), start_server(kind, "--tcp-keepalive", "7")
    clients = []

    def connected(server) -> RawClient:
        clients.append(RawClient(server.port))
        assert clients[-1].call("PING") == b"PONG"
        return clients[-1]

    try:
        connected(default)
        admin = connected(at_start)
        for value in ("0", "30", "40000"):
            assert admin.call("CONFIG", "SET", "tcp-keepalive", value) == b"OK"
            connected(at_start)
        seen = []
        for server in (default, at_start):
            ends = _server_ends(server.proc.pid)
            for client in clients:
                port = client.sock.getsockname()[1]
                if client.sock.getpeername()[1] == server.port:
                    seen.append(_keepalive(ends[port]))
            for sock in ends.values():
                sock.close()
        return seen
    finally:
        for client in clients:
            client.close()
        default.stop()
        at_start.stop()


def test_accepted_connections_keep_alive_as_in_redis():
    redis = _scenario("redis")
    kernel_idle, kernel_interval, kernel_count = redis[2][1:]  # (tcp-keepalive 0: untouched)
    assert redis == [(1, 300, 100, 3), (1, 7, 2, 3),
                     (0, kernel_idle, kernel_interval, kernel_count), (1, 30, 10, 3),
                     (1, kernel_idle, kernel_interval, kernel_count)]
    assert _scenario("minired") == redis


@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_a_replica_s_link_to_its_master_keeps_alive(kind):
    """The master client is a client (replicationCreateMasterClient calls createClient), so a
    replica's link gets the same options once it is synced."""
    master = start_server("redis", *NO_SYNC_DELAY)
    replica = start_server(kind, "--tcp-keepalive", "9", "--replicaof", "127.0.0.1",
                           str(master.port))
    client = RawClient(replica.port)
    try:
        wait_until(lambda: info_field(client, "replication", "master_link_status") == "up",
                   "the link up")
        ends = _server_ends(replica.proc.pid)
        try:
            assert _keepalive(ends[master.port]) == (1, 9, 3, 3)
        finally:
            for sock in ends.values():
                sock.close()
    finally:
        client.close()
        replica.stop()
        master.stop()
