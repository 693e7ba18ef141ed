"""A replica of the test's own, on a raw socket, for what a real replica will not do."""
from __future__ import annotations

import socket

from tests.support.respclient import read_line


class SilentReplica:
    """A replica of our own: it attaches with PSYNC (or, `psync=False`, the older SYNC, as
    `redis-cli --rdb` does), announcing `listening_port`, reads its snapshot and never
    acknowledges anything, so a failover to it waits for as long as the test wants, and a
    master with a repl-timeout sees it go silent."""

    def __init__(self, master_port: int, listening_port: int, psync: bool = True) -> None:
        self.sock = socket.create_connection(("127.0.0.1", master_port), timeout=30)
        buffer = bytearray()
        for command in (b"REPLCONF listening-port %d\r\n" % listening_port,
                        b"REPLCONF capa psync2\r\n"):
            self.sock.sendall(command)
            assert read_line(self.sock, buffer) == b"+OK"
        if psync:
            self.sock.sendall(b"PSYNC ? -1\r\n")
            assert read_line(self.sock, buffer).startswith(b"+FULLRESYNC")
        else:
            self.sock.sendall(b"SYNC\r\n")
        size = int(read_line(self.sock, buffer)[1:])
        while len(buffer) < size:
            buffer += self.sock.recv(65536)

    def closed_by_master(self) -> bool:
        """Whether the master closed the connection (what it sent since is read and dropped)."""
        self.sock.setblocking(False)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except BlockingIOError:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.sock.setblocking(True)

    def close(self) -> None:
        self.sock.close()
