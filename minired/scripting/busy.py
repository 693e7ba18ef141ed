"""Serving the network while a script runs past busy-reply-threshold (Redis's
processEventsWhileBlocked).

Scripts run inline on the event-loop thread, so while one runs the loop cannot serve anyone.
Once a run is past the threshold, the script's count hook calls `service()` every ~100k Lua
instructions: it polls the listening sockets and every idle client connection without blocking,
feeds what arrives to that connection's own parser (so no byte is lost or reordered), and answers
the commands through dispatch as usual: meanwhile dispatch refuses every command not flagged
allow-busy (SCRIPT KILL, FUNCTION KILL/STATS, SHUTDOWN NOSAVE, AUTH, HELLO, MULTI, ...) with
BUSY, as Redis's processCommand does, so a refused EXEC ends its transaction. Connections accepted meanwhile get a
client right away, on a small transport of our own, and are handed to the loop when the run ends.
"""
from __future__ import annotations

import logging
import os
import select
import socket
from typing import TYPE_CHECKING, Any

from minired.engine import dispatch
from minired.engine.server import ClientProtocol
from minired.protocol import errors, resp

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.scripting.engine import Run, ScriptEngine

log = logging.getLogger("minired")

_READ_SIZE = 65536


class _BusyTransport:
    """The transport of a connection accepted during a busy run, until the loop adopts it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.unsent = bytearray()
        self.closing = False

    def write(self, data: bytes) -> None:
        if self.closing:
            return
        if not self.unsent:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.closing = True
                return
            data = data[sent:]
        self.unsent += data

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        try:
            if name == "socket":
                return self.sock
            if name == "peername":
                return self.sock.getpeername()
            if name == "sockname":
                return self.sock.getsockname()
        except OSError:
            return default
        return default

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return len(self.unsent)

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class BusyService:
    def __init__(self, server: "Server", engine: "ScriptEngine") -> None:
        self.server = server
        self.engine = engine
        self.listeners: list[socket.socket] = []
        self.adopted: list[tuple[Any, _BusyTransport]] = []
        self.run: "Run | None" = None

    # --- the busy period -------------------------------------------------------------------------

    def begin(self, run: "Run") -> None:
        self.run = run
        # From now on dispatch refuses every command not flagged allow_busy, at the point of
        # its checks where Redis's processCommand does (after AUTH and ACL, before MULTI
        # queuing; a refused EXEC ends its transaction).
        # (A script replayed from the AOF: clients are told the server is loading, as Redis's
        # processCommand checks server.loading first.)
        dispatch.set_busy(self.server, errors.LOADING if self.server.clock.loading
                          else errors.BUSY if run.eval_mode else errors.BUSY_FUNCTION)
        self.adopted = []
        self.listeners = []
        for listener in self.server.listeners:
            for transport_socket in listener.sockets or ():
                try:
                    # A duplicate of the loop's listening socket: same queue, our own object.
                    sock = socket.fromfd(transport_socket.fileno(), transport_socket.family,
                                         transport_socket.type)
                    sock.setblocking(False)
                except OSError:
                    continue
                self.listeners.append(sock)

    def end(self, run: "Run") -> None:
        """The run is over: give connections accepted meanwhile to the loop."""
        self.run = None
        dispatch.set_busy(self.server, None)
        for sock in self.listeners:
            sock.close()
        self.listeners = []
        loop = self.server.loop
        for protocol, transport in self.adopted:
            if transport.closing or loop is None or self.server.shutdown_requested:
                transport.sock.close()
                protocol.connection_lost(None)
                continue
            leftover = bytes(transport.unsent)
            task = loop.create_task(loop.connect_accepted_socket(lambda p=protocol: p,
                                                                 transport.sock))
            if leftover:
                task.add_done_callback(lambda _t, p=protocol, data=leftover: p._write(data))
        self.adopted = []

    def service(self) -> None:
        """Poll once, without blocking, and answer whatever arrived."""
        run = self.run
        if run is None:
            return
        if self.server.outbox_queue:  # replies held for the loop's next round, which is not soon
            self.server.flush_replies()
        watched: dict[int, Any] = {}
        for client in list(self.server.clients.values()):
            protocol = getattr(client, "connection", None)
            if (protocol is None or client is run.caller or client.closing
                    or client.blocked is not None or protocol.pending or client.fd < 0):
                continue
            watched[client.fd] = protocol
        listeners = {sock.fileno(): sock for sock in self.listeners}
        try:
            readable, _, _ = select.select(list(watched) + list(listeners), [], [], 0)
        except (OSError, ValueError):
            return
        for fd in readable:
            if fd in listeners:
                self._accept(listeners[fd])
            else:
                self._read(watched[fd], fd)

    # --- connections -----------------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            sock.setblocking(False)
            transport = _BusyTransport(sock)
            protocol = ClientProtocol(self.server)
            protocol.connection_made(transport)
            if protocol.client is None or transport.closing:
                sock.close()
                continue
            self.adopted.append((protocol, transport))

    def _read(self, protocol: Any, fd: int) -> None:
        client = protocol.client
        try:
            data = os.read(fd, _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            # End of stream: the loop notices it once the run is over; stop polling this one.
            # A replica is let go now, as Redis frees it while blocked: the script may be
            # waiting for INFO to show it gone (min-replicas-to-write).
            client.closing = True
            if client.flags == "S" and self.server.features.replication is not None:
                self.server.features.replication.forget(client)
            for adopted, transport in self.adopted:
                if adopted is protocol:
                    transport.closing = True
            return
        self.server.stats.net_input_bytes += len(data)
        parser = protocol.parser
        parser.feed(data)
        commands = parser.parse()
        out: list[bytes] = []
        for argv in commands:
            reply = dispatch.execute(client, argv)
            resp.encode_into(reply, client.protocol, out)
            if protocol.echo is not None:
                protocol.append_echo(out)
            if client.close_after_reply or client.closing:
                break
        if out:
            protocol.write_now(b"".join(out))
        if client.close_after_reply:
            protocol._close()
            client.closing = True
