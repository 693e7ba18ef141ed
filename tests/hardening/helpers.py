"""Shared pieces of the hardening tests: raw sockets that read until the server closes, the
leak check over a server's internal state, and a process's resident memory."""
from __future__ import annotations

import os
import socket
import time


def read_until_closed(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the server sends until it closes the connection (raises on timeout)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def exchange(port: int, payload: bytes, host: str = "127.0.0.1", timeout: float = 5.0) -> bytes:
    """Send payload on a fresh connection and return all the server said before closing."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(payload)
        return read_until_closed(sock, timeout)


def is_closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the server closed the connection within timeout (data sent before is skipped)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def server_state(server) -> dict:
    """Sizes of everything a client can leave behind; run on the server's loop thread."""
    pubsub = server.features.pubsub
    return {
        "clients": len(server.clients),
        "waiters": len(server.blocking.waiters),
        "blocking_keys": sum(len(db.blocking_keys) for db in server.keyspace.dbs),
        "watchers": sum(len(db.watchers) for db in server.keyspace.dbs),
        "channels": len(pubsub.channels),
        "patterns": len(pubsub.patterns),
        "shard_channels": len(pubsub.shard_channels),
    }


def wait_for_state(embedded, expected: dict, timeout: float = 30.0) -> dict:
    """Poll until the server's state equals expected (disconnects are processed asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        state = embedded.call(server_state, embedded.server)
        if state == expected or time.monotonic() > deadline:
            return state
        time.sleep(0.02)


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def non_loopback_ipv4() -> str | None:
    """An IPv4 address of one of this machine's own interfaces that is not loopback (traffic to
    it never leaves the machine). Read from the interfaces themselves: nothing is sent."""
    import fcntl
    import struct

    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(sock.fileno(), siocgifaddr, struct.pack("256s", name[:15].encode()))
            except OSError:
                continue  # no IPv4 address on this interface
            address = socket.inet_ntoa(raw[20:24])
            if not address.startswith("127."):
                return address
    return None
