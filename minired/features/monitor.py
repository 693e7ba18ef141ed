"""MONITOR: every command the server runs, as a line to each monitoring client (Redis's
replicationFeedMonitors).

A line is `+<unix seconds>.<microseconds> [<db> <origin>] "<arg>" "<arg>" ...`, the arguments as
Redis's sdscatrepr quotes them, the origin the client's address (`lua` inside a script, `unix:
<path>` on a unix socket). A command is shown once it has run, with the database it left the
client in, unless it is an admin command (CONFIG, DEBUG, MONITOR itself ...) or was refused
before running (unknown, wrong arity, NOAUTH, queued in a transaction that was discarded).
The script commands (flagged skip_monitor) are shown as they start instead, so that their
scripts' commands follow them. Arguments Redis redacts (AUTH's, HELLO's AUTH pair) read
"(redacted)", as in the slow log (slowlog.redacted).

Nothing here runs unless a client is monitoring: the first MONITOR registers the hooks around
dispatch.call, the last one to stop removes them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minired.engine import client_reply, dispatch
from minired.engine.client_info import on_unix_socket
from minired.engine.slowlog import redacted

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.table import CommandSpec

_ESCAPES = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\r"): b"\\r",
            ord("\t"): b"\\t", ord("\a"): b"\\a", ord("\b"): b"\\b"}
# Printable ASCII stands for itself; everything else as \xHH, as sdscatrepr writes it.
_QUOTED = [_ESCAPES.get(byte) or (bytes([byte]) if 32 <= byte <= 126 else b"\\x%02x" % byte)
           for byte in range(256)]


def quote(arg: bytes) -> bytes:
    if arg.isalnum():  # the common case: nothing to escape
        return b'"' + arg + b'"'
    return b'"' + b"".join([_QUOTED[byte] for byte in arg]) + b'"'


def _origin(c: "Client") -> bytes:
    server = c.server
    engine = server.features.scripting
    if engine is not None and c is engine.client:
        return b"lua"
    if on_unix_socket(c):
        return b"unix:" + (server.config.get("unixsocket") or "").encode()
    return c.addr.encode()


def feed(c: "Client", argv: list, own_line_after_reply: bool = True) -> None:
    """Send the line for argv, run by c, to every monitoring client."""
    server = c.server
    now_us = server.clock.us()
    seconds, micros = divmod(now_us, 1_000_000)
    line = b"+%d.%06d [%d %b] %b\r\n" % (seconds, micros, c.db_index, _origin(c),
                                        b" ".join([quote(arg) for arg in redacted(argv)]))
    for monitor in list(server.features.monitors):
        if monitor.closing or monitor.reply_mode & client_reply.SILENCED:
            continue  # (CLIENT REPLY OFF silences a monitor's lines too)
        connection = monitor.connection
        if monitor is c and connection is not None and own_line_after_reply:
            # Its own command: Redis queues the reply first, and the reply is encoded only once
            # the command returns, so the line waits for it (ClientProtocol._run).
            if connection.echo is None:
                connection.echo = []
            connection.echo.append(line)
        else:
            monitor.send_encoded(line)


def before(c: "Client", spec: "CommandSpec", argv: list) -> None:
    """The script commands are shown as they start (evalCommand feeds the monitors itself)."""
    if "skip_monitor" in spec.flags:
        feed(c, argv, own_line_after_reply=False)


def after(c: "Client", spec: "CommandSpec", argv: list) -> None:
    flags = spec.flags
    if "admin" not in flags and "skip_monitor" not in flags:
        feed(c, argv)


def start(c: "Client") -> bool:
    """MONITOR: c receives every command from now on, until it leaves or RESETs. False if it
    was monitoring already."""
    server = c.server
    monitors = server.features.monitors  # the monitoring clients, from the first MONITOR
    if monitors is None:
        monitors = server.features.monitors = []
    if c in monitors:
        return False
    hooks = server.hooks
    hooks.add(hooks.disconnect, stop)  # leaving, or RESET, ends monitoring
    hooks.add(hooks.before_call, before)
    hooks.add(hooks.after_call, after)
    monitors.append(c)
    dispatch.use_extras()
    c.flags = "O"  # CLIENT LIST's flag for a monitor, and dispatch.execute's cheap test for one
    return True


def stop(c: "Client") -> None:
    server = c.server
    monitors = server.features.monitors
    if monitors and c in monitors:
        monitors.remove(c)
        c.flags = ""
        if not monitors:  # the last one left: commands are no longer formatted
            server.hooks.before_call.remove(before)
            server.hooks.after_call.remove(after)
