"""What CLIENT LIST reports of a connection's reply buffer (rbs, rbp), by Redis 7.0's rules.

Redis writes replies into a per-client buffer (the part of a reply that does not fit goes to a
list of blocks) and resizes that buffer from clientsCron, every 100 ms per client
(clientsCronResizeOutputBuffer): to its peak use + 1 (at least PROTO_REPLY_MIN_BYTES) when the
peak is under half its size, to twice its size (at most PROTO_REPLY_CHUNK_BYTES) when the peak
filled it; the peak is reset to what the buffer holds every reply-buffer-peak-reset-time ms.
DEBUG REPLYBUFFER changes both (Server.debug).

minired writes each pass's replies as one piece, so the peak is the largest write (kept in a C
field of the connection, one compare per write), and the cron's visits are replayed when CLIENT
LIST asks, as querybuf.py does for the query buffer.
"""
from __future__ import annotations

from typing import Any

from minired.engine.querybuf import jemalloc_size

MIN_BYTES = 1024  # PROTO_REPLY_MIN_BYTES
CHUNK_BYTES = 16 * 1024  # PROTO_REPLY_CHUNK_BYTES: a new client's buffer
_CRON_MS = 100  # clientsCron visits each client every 100 ms (with few clients)
# Visits replayed at most: from any state, the size has settled by then.
_MAX_VISITS = 16


def figures(conn: Any, now_ms: int, debug: Any) -> tuple[int, int]:
    """(rbs, rbp) as CLIENT LIST shows them now."""
    _visit(conn, now_ms, debug)
    return conn.rb_size, min(conn.rb_peak, conn.rb_size)


def _visit(conn: Any, now_ms: int, debug: Any) -> None:
    tick = now_ms // _CRON_MS
    passes = tick - conn.rb_tick
    if passes <= 0:
        return
    conn.rb_tick = tick
    reset_ms = debug.reply_buffer_peak_reset_ms
    for visit in range(tick - min(passes, _MAX_VISITS) + 1, tick + 1):
        size = conn.rb_size
        peak = min(conn.rb_peak, size)
        if debug.reply_buffer_resizing:
            if size // 2 >= MIN_BYTES and peak < size // 2:
                conn.rb_size = jemalloc_size(max(MIN_BYTES, peak + 1))
            elif size * 2 < CHUNK_BYTES * 2 and peak == size:
                conn.rb_size = jemalloc_size(min(CHUNK_BYTES, size * 2))
        visit_ms = visit * _CRON_MS
        if reset_ms >= 0 and visit_ms - conn.rb_reset_ms >= reset_ms:
            conn.rb_peak = 0  # (the buffer holds nothing between passes)
            conn.rb_reset_ms = visit_ms
