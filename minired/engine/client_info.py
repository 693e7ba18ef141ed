"""What CLIENT LIST, CLIENT INFO and the ACL log say about a client: its one line of fields,
in Redis 7.0's order and spelling."""
from __future__ import annotations

import time

from minired.engine import querybuf, replybuf


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
    if any(record.dirty for record in c.watched):  # a WATCHed key changed: EXEC will fail
        flags += "d"
    if c.close_after_reply:
        flags += "c"
    if on_unix_socket(c):
        flags += "U"
    eviction = c.server.hooks.client_eviction
    if eviction is not None and eviction.exempt(c):
        flags += "e"
    return flags or "N"


def _user_name(c) -> str:
    return "default" if c.user is None else c.user.name.decode(errors="replace")


def client_info_line(c, current=None, running: str = "", argv: list | None = None) -> str:
    """One line of CLIENT LIST; `current`, the client asking, shows the command it is running
    and, given its `argv`, the memory of its arguments (argv-mem, in tot-mem too: Redis frees
    them after the command, so only the client asking has any)."""
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
    rbs, rbp = (replybuf.figures(conn, int(now * 1000), c.server.debug) if conn is not None
                else (replybuf.CHUNK_BYTES, 0))
    multi_mem = multi_memory(c)
    argv_mem = sum(map(len, argv)) if argv is not None and c is current else 0
    return (
        f"id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={c.name.decode(errors='replace')} "
        f"age={int(now - c.created)} idle={int(now - c.last_interaction)} flags={flags} "
        f"db={c.db_index} sub={len(c.channels)} psub={len(c.patterns)} ssub={len(c.shard_channels)} multi={multi} "
        f"qbuf={qbuf} qbuf-free={qbuf_free} argv-mem={argv_mem} multi-mem={multi_mem} rbs={rbs} rbp={rbp} "
        f"obl=0 oll=0 omem={output_bytes(conn) if conn is not None else 0} "
        f"tot-mem={client_memory(c, multi_mem, len(argv) if argv_mem else 0, argv_mem)} events=r cmd={cmd} user={_user_name(c)} redir={_tracking_redirect(c)} "
        f"resp={c.protocol} "
        f"lib-name={c.lib_name.decode(errors='replace')} lib-ver={c.lib_ver.decode(errors='replace')}"
    )




CLIENT_STRUCT = 768  # zmalloc_size(client) of a 64-bit build
_WATCHED_KEY = 24 + 32  # a listNode and a watchedKey
_LIST_NODE = 24  # a pattern's listNode
_DICT_ENTRY = 24  # a channel's dictEntry
_MULTI_CMD = 24  # sizeof(multiCmd)
_RAX_NODE = 4 * 8  # a tracking prefix's radix tree node, as Redis underestimates it


def _slots(n: int) -> int:
    """dictSlots of a dict holding n entries (a power of two, at least 4)."""
    if not n:
        return 0
    size = 4
    while size < n:
        size *= 2
    return size


def multi_memory(c) -> int:
    """multi-mem (multiStateMemOverhead): the queued commands' arguments and entries, and the
    watched keys."""
    memory = len(c.watched) * _WATCHED_KEY
    if c.multi is not None:
        memory += sum(len(arg) for _, argv in c.multi for arg in argv) + len(c.multi) * _MULTI_CMD
    return memory


def client_memory(c, multi_mem: int = -1, argc: int = 0, argv_mem: int = 0) -> int:
    """tot-mem (getClientMemoryUsage): the client structure, its query and reply buffers as
    Redis would size them (querybuf.py, replybuf.py), the replies not written yet, multi-mem,
    the arguments of the command running (argc of them, argv_mem bytes: CLIENT LIST's own),
    and what its subscriptions and tracking prefixes take; what client eviction counts."""
    conn = c.connection
    memory = CLIENT_STRUCT + (multi_memory(c) if multi_mem < 0 else multi_mem)
    memory += argv_mem + argc * 8  # (the strings' lengths and the argv array's pointers)
    if conn is not None:
        memory += conn.qb_alloc + conn.rb_size + output_bytes(conn)
    # (each part looked at only when there is one: client eviction measures a client per
    # command)
    if c.patterns:
        memory += len(c.patterns) * _LIST_NODE
    if c.channels or c.shard_channels:
        for channels in (c.channels, c.shard_channels):
            memory += len(channels) * _DICT_ENTRY + _slots(len(channels)) * 8
    if c.server.tracking is not None:
        state = _tracking_state(c)
        if state is not None:
            memory += len(state.prefixes) * 2 * _RAX_NODE
    return memory


def output_bytes(conn) -> int:
    """omem: the replies not written yet (gathered for this pass, or queued in the transport)."""
    transport = conn.transport
    size = transport.get_write_buffer_size() if transport is not None else 0
    if conn.outbox:
        size += sum(len(part) for part in conn.outbox)
    return size


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
