"""MIGRATE's connections to other servers: Redis's migrate_cached_sockets (cluster.c).

A connection to host:port is opened by the first MIGRATE to it and kept for the next ones (with
the database it last SELECTed, so a MIGRATE to the same database sends no SELECT), at most 64 of
them (a random one is closed to make room), and closed once idle for more than 10 seconds: a
timer checks every second while any is cached, as serverCron does. INFO's
migrate_cached_sockets counts them.

The I/O is synchronous, with MIGRATE's timeout on each step, as in Redis: MIGRATE is atomic
(nothing else runs between the DUMP of a key and its deletion once the target acknowledged
it) and it runs inside MULTI and scripts, where a command cannot wait for the loop. Other
clients wait for it as they wait in Redis, at most the timeout per step. A target served by
the same event loop would time out (IOERR); the nodes of minired's own cluster are reached
without the network (commands/cluster.py).
"""
from __future__ import annotations

import errno
import random
import select
import socket
from typing import TYPE_CHECKING, Any

from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server

CACHE_ITEMS = 64  # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL = 10  # MIGRATE_SOCKET_CACHE_TTL, seconds
CHUNK = 64 * 1024  # the request goes out in 64K writes, each within the timeout
LINE_MAX = 1023  # connSyncReadLine into a 1024-byte buffer


class TransferError(Exception):
    """A socket error or timeout while writing (writing=True) or reading a reply."""

    def __init__(self, writing: bool, timed_out: bool) -> None:
        super().__init__("writing" if writing else "reading")
        self.writing = writing
        self.timed_out = timed_out


class Connection:
    """One cached connection: its socket, the database it last selected (-1: unknown)."""

    __slots__ = ("sock", "last_dbid", "last_use", "_buffer")

    def __init__(self, sock: socket.socket, now: int) -> None:
        self.sock = sock
        self.last_dbid = -1
        self.last_use = now
        self._buffer = b""

    def send(self, data: bytes, timeout_ms: int) -> None:
        sock = self.sock
        sock.settimeout(timeout_ms / 1000)
        view = memoryview(data)
        try:
            for start in range(0, len(data), CHUNK):
                sock.sendall(view[start:start + CHUNK])
        except TimeoutError:
            raise TransferError(True, True) from None
        except OSError:
            raise TransferError(True, False) from None

    def read_line(self, timeout_ms: int) -> bytes:
        """One reply line without its CRLF (syncReadLine), the timeout applying to each read."""
        sock = self.sock
        sock.settimeout(timeout_ms / 1000)
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1:]
                return line.rstrip(b"\r")[:LINE_MAX]
            try:
                data = sock.recv(1 << 16)
            except TimeoutError:
                raise TransferError(False, True) from None
            except OSError:
                raise TransferError(False, False) from None
            if not data:
                raise TransferError(False, False)
            self._buffer += data

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class MigrateSockets:
    """server.features.migrate_sockets: the cached connections by "host:port" (as MIGRATE spelled them)."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.cached: dict[bytes, Connection] = {}
        self._timer: Any = None

    def _now(self) -> int:
        return self.server.clock.ms() // 1000  # server.unixtime

    def get(self, host: bytes, port: bytes, timeout_ms: int) -> Connection:
        """migrateGetSocket: the cached connection, or a new one (IOERR if it cannot be made)."""
        name = host + b":" + port
        conn = self.cached.get(name)
        if conn is not None:
            conn.last_use = self._now()
            return conn
        if len(self.cached) >= CACHE_ITEMS:
            self.cached.pop(random.choice(list(self.cached))).close()
        sock = _connect(host, atoi(port), timeout_ms)
        if sock is None:
            raise RedisError(errors.MIGRATE_CONNECT)
        conn = self.cached[name] = Connection(sock, self._now())
        self._arm()
        return conn

    def close(self, host: bytes, port: bytes) -> None:
        """migrateCloseSocket."""
        conn = self.cached.pop(host + b":" + port, None)
        if conn is not None:
            conn.close()

    def close_all(self) -> None:
        for conn in self.cached.values():
            conn.close()
        self.cached.clear()

    def _arm(self) -> None:
        loop = self.server.loop
        if self._timer is None and loop is not None:
            self._timer = loop.call_later(1.0, self._close_idle)

    def _close_idle(self) -> None:
        """migrateCloseTimedoutSockets, once a second while any connection is cached."""
        self._timer = None
        now = self._now()
        for name, conn in list(self.cached.items()):
            if now - conn.last_use > CACHE_TTL:
                del self.cached[name]
                conn.close()
        if self.cached:
            self._arm()


def _connect(host: bytes, port: int, timeout_ms: int) -> socket.socket | None:
    """connBlockingConnect: a non-blocking connect to the first address that takes it, then a
    wait until the socket is writable. As in Redis, a connect the peer refused after
    EINPROGRESS still counts as made: the error shows when the request is written."""
    try:
        addresses = socket.getaddrinfo(host.decode(errors="replace"), port, socket.AF_UNSPEC,
                                       socket.SOCK_STREAM)
    except (OSError, UnicodeError, OverflowError):
        return None
    for family, kind, proto, _, address in addresses:
        try:
            sock = socket.socket(family, kind, proto)
        except OSError:
            continue
        sock.setblocking(False)
        code = sock.connect_ex(address)
        if code in (0, errno.EINPROGRESS):
            break
        sock.close()
    else:
        return None
    if code:
        _, writable, _ = select.select([], [sock], [], timeout_ms / 1000)
        if not writable:
            sock.close()
            return None
    sock.setblocking(True)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    return sock


def atoi(raw: bytes) -> int:
    """C's atoi, as Redis reads MIGRATE's port: leading digits, 0 without any."""
    digits = raw.strip()
    sign = 1
    if digits[:1] in (b"-", b"+"):
        sign = -1 if digits[:1] == b"-" else 1
        digits = digits[1:]
    end = 0
    while end < len(digits) and digits[end:end + 1].isdigit():
        end += 1
    return sign * int(digits[:end]) if end else 0


def sockets(server: "Server") -> MigrateSockets:
    """The server's MIGRATE connections, made on first use (closed at shutdown)."""
    cache = server.features.migrate_sockets
    if cache is None:
        cache = server.features.migrate_sockets = MigrateSockets(server)
        server.hooks.add(server.hooks.shutdown, cache.close_all)
    return cache


def cached_count(server: "Server") -> int:
    cache = server.features.migrate_sockets
    return 0 if cache is None else len(cache.cached)
