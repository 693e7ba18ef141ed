"""What CLIENT LIST, CLIENT INFO and the ACL log say about a client: its one line of fields,
in Redis 7.0's order and spelling."""
from __future__ import annotations

import time

from minired.engine import querybuf


def on_unix_socket(c) -> bool:
    """A unix socket's client has the socket's path as both its addresses (server.py); a TCP
    client's two ports always differ."""
    return bool(c.addr) and c.addr == c.laddr


def _flags(c) -> str:
    """CLIENT LIST's flags, in the order Redis writes them; N for none."""
    flags = c.flags  # "O" for a monitor (MONITOR)
    if c.channels or c.patterns or c.shard_channels:
        flags += "P"
    if c.multi is not None:
        flags += "x"
    if c.blocked is not None:
        flags += "b"
    flags += _tracking_flags(c)
    if on_unix_socket(c):
        flags += "U"
    return flags or "N"


def _user_name(c) -> str:
    return "default" if c.user is None else c.user.name.decode(errors="replace")


def client_info_line(c, current=None, running: str = "") -> str:
    """One line of CLIENT LIST; `current`, the client asking, shows the command it is running."""
    now = time.monotonic()
    multi = len(c.multi) if c.multi is not None else -1
    flags = _flags(c)
    if c is current:
        cmd = running
    else:
        cmd = c.last_command.full_name if c.last_command is not None else "NULL"
    conn = c.connection
    qbuf, qbuf_free = (querybuf.figures(conn, now, c.last_interaction) if conn is not None
                       else (0, 0))
    return (
        f"id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={c.name.decode(errors='replace')} "
        f"age={int(now - c.created)} idle={int(now - c.last_interaction)} flags={flags} "
        f"db={c.db_index} sub={len(c.channels)} psub={len(c.patterns)} ssub={len(c.shard_channels)} multi={multi} "
        f"qbuf={qbuf} qbuf-free={qbuf_free} argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 "
        f"tot-mem=0 events=r cmd={cmd} user={_user_name(c)} redir={_tracking_redirect(c)} "
        f"resp={c.protocol} "
        f"lib-name={c.lib_name.decode(errors='replace')} lib-ver={c.lib_ver.decode(errors='replace')}"
    )




def _tracking_state(c):
    tracking = c.server.tracking  # (hooks.Tracking, from the first CLIENT TRACKING ON)
    return tracking.state(c) if tracking is not None else None


def _tracking_flags(c) -> str:
    """CLIENT LIST's t (tracking), R (broken redirect) and B (broadcasting)."""
    state = _tracking_state(c)
    if state is None:
        return ""
    return "t" + ("R" if state.broken_redirect else "") + ("B" if state.bcast else "")


def _tracking_redirect(c) -> int:
    """CLIENT LIST's redir: -1 when not tracking."""
    state = _tracking_state(c)
    return -1 if state is None else state.redirect
