"""How a reply a fault disrupted leaves its connection (faults.py decides which replies): part
of it, late, a few bytes at a time, or not at all, and how the connection closes after it (a
TCP reset, a slow close).

The connection (the engine's ClientProtocol) hands the reply of a command a fault marked
(client_reply.DISRUPTED) to `FaultInjector.deliver`, which comes here; a blocked command's
late reply comes the same way through `Client.send`. What a fault keeps per connection (the
timer of held output, the pieces still to pace, how the next close goes) is a ConnectionFault
in the connection's `disruption` slot, made at its first disrupted reply; the connection asks
it how to close, and drops it when the peer goes. A connection no fault touched pays nothing.
"""
from __future__ import annotations

import socket
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

from minired.engine import client_reply
from minired.protocol import resp
from minired.protocol.resp import Replies

if TYPE_CHECKING:
    from minired.engine.server import ClientProtocol


class Disruption(Replies):
    """A reply a fault changes on its way out: nothing of it is written unless `send`, only a
    part of it if `partial` (half) or `cut` >= 0 (that many bytes), what is written waits
    `hold_ms` (and everything the connection writes after it), it leaves `slice_bytes` at a
    time `slice_ms` apart if `slice_bytes`, and the connection closes after it if `close`: with
    a TCP reset if `reset`, `slow_close_ms` late if that is set (the next close, whatever
    causes it). Where no connection acts on it (a busy script's answers) it is just the reply
    it holds."""

    __slots__ = ("send", "close", "partial", "hold_ms", "cut", "slice_bytes", "slice_ms",
                 "reset", "slow_close_ms")

    def __init__(self, replies: tuple = (), send: bool = True, close: bool = False,
                 partial: bool = False, hold_ms: int = 0, cut: int = -1, slice_bytes: int = 0,
                 slice_ms: float = 0.0, reset: bool = False, slow_close_ms: int = 0) -> None:
        super().__init__(replies)
        self.send = send
        self.close = close
        self.partial = partial
        self.hold_ms = hold_ms
        self.cut = cut
        self.slice_bytes = slice_bytes
        self.slice_ms = slice_ms
        self.reset = reset
        self.slow_close_ms = slow_close_ms


def deliver(conn: "ClientProtocol", reply: Any, out: list) -> None:
    """Act on a fault's Disruption: append to `out` what of the reply leaves, hold the output
    from there on, or mark the connection to close once `out` is written."""
    client = conn.client
    client.reply_mode &= ~client_reply.DISRUPTED
    if type(reply) is not Disruption:
        # Client tracking may have put its own messages after it: they are dropped with it.
        if type(reply) is resp.Replies and reply and type(reply[0]) is Disruption:
            reply = reply[0]
        else:
            resp.encode_into(reply, client.protocol, out)
            return
    state = of(conn)
    if reply.hold_ms:
        if out:
            conn._write(b"".join(out))
            out.clear()
        state.hold(reply.hold_ms)
    if reply.send:
        if reply.partial or reply.cut >= 0:
            whole = resp.encode(reply, client.protocol)
            out.append(whole[:reply.cut if reply.cut >= 0 else max(1, len(whole) // 2)])
        elif reply.slice_bytes:
            state.pace(resp.encode(reply, client.protocol), reply.slice_bytes, reply.slice_ms,
                       out)
        else:
            resp.encode_into(reply, client.protocol, out)
    if reply.slow_close_ms:
        state.close_mode = reply.slow_close_ms
    if reply.reset:
        state.close_mode = -1
    if reply.close:
        client.close_after_reply = True


def send(conn: "ClientProtocol", reply: Any) -> bool:
    """A blocked command's reply under a fault (Client.send): False if it is no Disruption, for
    the client to send as usual."""
    if type(reply) is not Disruption:
        return False
    out: list = []
    client = conn.client
    client.reply_mode |= client_reply.DISRUPTED
    deliver(conn, reply, out)
    if out:
        conn._write(b"".join(out))
    if client.close_after_reply:
        client.close()
    return True


def reset(conn: "ClientProtocol") -> None:
    """Close with a TCP reset, as a peer that crashed does (RESET, REFUSE)."""
    of(conn).close_mode = -1
    if conn.client is not None:
        conn.client.close()
    else:
        conn._close()


def of(conn: "ClientProtocol") -> "ConnectionFault":
    state = conn.disruption
    if state is None:
        state = conn.disruption = ConnectionFault(conn)
    return state


class ConnectionFault:
    """What faults left on one connection (hooks.ConnectionDisruption)."""

    __slots__ = ("conn", "held", "paced", "close_mode")

    def __init__(self, conn: "ClientProtocol") -> None:
        self.conn = conn
        # A DELAY: the timer that releases the output held in the connection's `outbox`.
        self.held: Any = None
        # A BANDWIDTH or SLICE: the output still to write, as (pause in s, bytes) in order,
        # ahead of what `outbox` holds; `held` is the timer of the next piece.
        self.paced: deque | None = None
        # How the connection's next close goes: 0 clean, -1 a TCP reset (RESET, REFUSE), > 0
        # that many ms late (SLOW-CLOSE).
        self.close_mode = 0

    def hold(self, ms: int) -> None:
        """Hold everything the connection writes for ms (from now, or from the end of a hold
        already running, whichever is later): its `outbox` collects it, out of the server's
        flush queue, until the loop's timer releases it. Other connections are served
        meanwhile."""
        conn = self.conn
        loop = conn.server.loop
        if loop is None:
            return  # driven in-process: there is no loop to wait on
        # (+1 ms: uvloop's clock is read once per pass and its timers count whole milliseconds,
        # so a timer can fire up to a millisecond before the time asked; a DELAY never must)
        when = loop.time() + ms / 1000 + 0.001
        if self.held is not None:
            when = max(when, self.held.when())
            self.held.cancel()
        else:
            conn.flush()  # replies already waiting for this pass leave first
            try:
                conn.server.outbox_queue.remove(conn)
            except ValueError:
                pass
            conn.outbox = []
        self.held = loop.call_at(when, self.release)

    def pace(self, data: bytes, size: int, pause_ms: float, out: list) -> None:
        """Write data `size` bytes at a time, `pause_ms` apart, on the loop's timers; the
        connection's later output waits behind it, as behind a DELAY."""
        conn = self.conn
        loop = conn.server.loop
        if loop is None or len(data) <= size:
            out.append(data)
            return
        pause = pause_ms / 1000
        pieces = deque((pause, data[start:start + size]) for start in range(0, len(data), size))
        if self.held is None:
            out.append(pieces.popleft()[1])  # the first piece leaves with this batch
            conn._write(b"".join(out))
            out.clear()
            self.hold(pause_ms)
            self.paced = pieces
            return
        # Already held or paced: the pieces go after what waits, in order.
        if out:
            conn._write(b"".join(out))
            out.clear()
        if self.paced is None:
            self.paced = deque()
        if conn.outbox:
            self.paced.append((0.0, b"".join(conn.outbox)))
            conn.outbox.clear()
        self.paced.extend(pieces)

    def release(self) -> None:
        conn = self.conn
        self.held = None
        paced = self.paced
        client = conn.client
        if paced:
            # The piece whose pause is over, and those after it that need none; then wait.
            pieces = [paced.popleft()[1]]
            while paced and not paced[0][0]:
                pieces.append(paced.popleft()[1])
            if client is not None and not client.closing:
                conn._send(b"".join(pieces))
            if paced:
                loop = conn.server.loop
                self.held = loop.call_at(loop.time() + paced[0][0] + 0.001, self.release)
                return
        self.paced = None
        held = conn.outbox
        conn.outbox = None
        if held and client is not None and not client.closing:
            conn._write(b"".join(held))

    def close(self) -> bool:
        """The connection is closing: True if the fault closes it its own way (a reset, or
        late); else what a BANDWIDTH or SLICE still paces is put first in the connection's
        outbox, to leave in order with the rest, and False."""
        if self.close_mode:
            self._close_by_fault()
            return True
        if self.paced:
            conn = self.conn
            conn.outbox = [piece for _, piece in self.paced] + (conn.outbox or [])
            self.paced = None
        return False

    def _close_by_fault(self) -> None:
        """A TCP reset (SO_LINGER 0, then close: unsent output is dropped), or a clean close ms
        late, reading nothing meanwhile."""
        conn = self.conn
        mode, self.close_mode = self.close_mode, 0
        transport = conn.transport
        if transport is None or transport.is_closing():
            return
        if mode < 0:
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family != socket.AF_UNIX:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                except OSError:
                    pass
            conn.outbox = None
            transport.abort()
            return
        conn.flush()
        transport.pause_reading()
        loop = conn.server.loop
        if loop is None:
            conn._close()
        else:
            loop.call_at(loop.time() + mode / 1000 + 0.001, conn._close)

    def drop(self) -> None:
        """The connection is gone: its timers stop and what it paced is dropped."""
        self.paced = None
        if self.held is not None:
            self.held.cancel()
            self.held = None
