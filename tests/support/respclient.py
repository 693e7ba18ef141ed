"""A raw RESP client for differential tests: sends argv, returns replies with their RESP type kept.

redis-py turns replies into friendly Python values and hides differences that matter (a status
vs. a bulk string, a RESP3 double vs. a bulk, an integer vs. a boolean). This client keeps them:
  Simple(b"OK")        +OK
  Err("ERR ...")       -ERR ...
  int                  :1
  bytes / None         $ bulk / $-1
  NullArray            *-1
  list                 * array
  Map([(k, v), ...])   % map (pairs in order)
  SetReply([...])      ~ set
  Double(b"1.5")       , double (raw text, so formatting is compared too)
  Bool(True)           #t
  Push([...])          > push
  Verbatim(b"txt", b"...")  = verbatim
"""
from __future__ import annotations

import socket
from dataclasses import dataclass


class Simple(bytes):
    def __repr__(self) -> str:
        return f"Simple({bytes(self)!r})"


@dataclass(frozen=True)
class Err:
    message: str


class NullArrayType:
    def __repr__(self) -> str:
        return "NullArray"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NullArrayType)

    def __hash__(self) -> int:
        return 0


NullArray = NullArrayType()


class Map(list):
    def __repr__(self) -> str:
        return f"Map({list.__repr__(self)})"


class SetReply(list):
    def __repr__(self) -> str:
        return f"SetReply({list.__repr__(self)})"


class Push(list):
    def __repr__(self) -> str:
        return f"Push({list.__repr__(self)})"


class Double(bytes):
    def __repr__(self) -> str:
        return f"Double({bytes(self)!r})"


@dataclass(frozen=True)
class Bool:
    value: bool


@dataclass(frozen=True)
class Verbatim:
    fmt: bytes
    text: bytes


def encode_command(args) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = str(a).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(a), a))
    return b"".join(parts)


class RawClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, *args) -> None:
        self.sock.sendall(encode_command(args))

    def call(self, *args):
        self.send(*args)
        return self.read()

    def pipeline(self, commands) -> list:
        self.sock.sendall(b"".join(encode_command(c) for c in commands))
        return [self.read() for _ in commands]

    def read_until_closed(self) -> bytes:
        """Every byte the server sends until it closes the connection, unparsed."""
        received, self.buf = self.buf, b""
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return received
            received += chunk

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Simple(rest)
        if kind == b"-":
            return Err(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return NullArray if n < 0 else [self.read() for _ in range(n)]
        if kind == b"%":
            return Map((self.read(), self.read()) for _ in range(int(rest)))
        if kind == b"~":
            return SetReply(self.read() for _ in range(int(rest)))
        if kind == b">":
            return Push(self.read() for _ in range(int(rest)))
        if kind == b",":
            return Double(rest)
        if kind == b"#":
            return Bool(rest == b"t")
        if kind == b"_":
            return None
        if kind == b"=":
            data = self._exact(int(rest))
            return Verbatim(data[:3], data[4:])
        if kind == b"(":
            return int(rest)
        raise ValueError(f"unexpected reply line {line!r}")


def call_once(port: int, *args):
    """One command on a connection of its own, closed after the reply."""
    client = RawClient(port)
    try:
        return client.call(*args)
    finally:
        client.close()


def read_line(sock: socket.socket, buffer: bytearray) -> bytes:
    """The next reply line from a raw socket (what is read past it stays in `buffer`); the
    empty lines a master sends a replica as keep-alives are skipped."""
    while True:
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection"
            buffer += chunk
        end = buffer.index(b"\n")
        line = bytes(buffer[:end]).rstrip(b"\r")
        del buffer[:end + 1]
        if line:
            return line


def named_socket(port: int, name: str) -> socket.socket:
    """A raw connection that has given itself a CLIENT SETNAME name (to find it in CLIENT LIST)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(encode_command(["CLIENT", "SETNAME", name]))
    assert sock.recv(100) == b"+OK\r\n"
    return sock


def read_full_resync(sock: socket.socket):
    """What a raw replica reads after `PSYNC ? -1`: the +FULLRESYNC line and the RDB, Redis's
    keep-alive newlines before each skipped. Returns (a reader at the stream, the RDB)."""
    sock.settimeout(30)
    reader = sock.makefile("rb")
    line = reader.readline()
    while line == b"\n":
        line = reader.readline()
    assert line.startswith(b"+FULLRESYNC "), line
    line = reader.readline()
    while line == b"\n":
        line = reader.readline()
    return reader, reader.read(int(line[1:]))
