"""What CLIENT LIST reports of a connection's query buffer (qbuf, qbuf-free), by Redis's rules.

minired's parser holds a connection's unparsed bytes as Python bytes, so the figure that means
something is the query buffer Redis would have for the same input: `qbuf` is the bytes of the
read being served (the command running included, as Redis trims its buffer only after the
whole read) or, between reads, the bytes of an incomplete command; `qbuf-free` is the room an
sds string sized by Redis 7.0's rules would have left, as jemalloc rounds allocations:

- a read into a buffer smaller than PROTO_IOBUF_LEN (16 KiB) makes room for 16 KiB exactly;
  otherwise the buffer grows greedily (doubling) when less than 16 KiB is free;
- an argument of PROTO_MBULK_BIG_ARG (32 KiB) or more gets a buffer of exactly its size, and
  the buffer left once it is parsed is a new one of that size;
- clientsCron visits every client each 100 ms: a buffer wasting more than 4 KiB is emptied when
  its client has been idle over 2 seconds, or cut down to the peak since the last visit when it
  is over PROTO_RESIZE_THRESHOLD (32 KiB) and more than twice that peak.

The connection (server.ClientProtocol) keeps the figures in C fields; a read calls in here only
when a cron visit is due, the buffer is below 16 KiB, or the read is large or incomplete, and
the visits missed between reads are replayed then (at most two differ).
"""
from __future__ import annotations

from typing import Any

IOBUF_LEN = 16 * 1024  # PROTO_IOBUF_LEN
BIG_ARG = 32 * 1024  # PROTO_MBULK_BIG_ARG
RESIZE_THRESHOLD = 32 * 1024  # PROTO_RESIZE_THRESHOLD
_MAX_PREALLOC = 1024 * 1024  # SDS_MAX_PREALLOC
_CRON_HZ = 10  # clientsCron visits each client every 100 ms (with few clients)
# A read this many commands long is not searched for big arguments (pipelines of small ones).
_SCAN_COMMANDS = 64


def jemalloc_size(n: int) -> int:
    """The size jemalloc's size class for an n-byte request gives (x86-64: 16-byte quantum,
    four classes per doubling)."""
    if n <= 8:
        return 8
    if n <= 16:
        return 16
    step = max(1 << ((n - 1).bit_length() - 3), 16)
    return (n + step - 1) // step * step


def sds_room(size: int) -> int:
    """sdsalloc() of an sds string made to hold `size` bytes (sdsMakeRoomFor, sdsnewlen): the
    allocator's usable size less the header of the sds type `size` needs and the terminator."""
    header = 3 if size < 1 << 8 else 5 if size < 1 << 16 else 9 if size < 1 << 32 else 17
    return jemalloc_size(header + size + 1) - header - 1


def before_read(conn: Any, now: float, last_interaction: float) -> None:
    """A read arrives: the cron visits since the last one, then the room the read makes."""
    _visit(conn, now, last_interaction)
    if conn.qb_alloc < IOBUF_LEN:
        # sdsMakeRoomForNonGreedy(querybuf, PROTO_IOBUF_LEN), and the peak it reserves
        size = conn.qb_length + IOBUF_LEN
        conn.qb_alloc = sds_room(size)
        conn.qb_peak = max(conn.qb_peak, size)


def after_parse(conn: Any, parser: Any, commands: list, total: int) -> None:
    """A large or incomplete read was parsed: big arguments, commands longer than the buffer
    (Redis reads them in several reads), and the bytes left waiting."""
    if len(commands) <= _SCAN_COMMANDS:
        longest = 0
        for argv in reversed(commands):
            big = [len(arg) for arg in argv if len(arg) >= BIG_ARG]
            if big:
                # The parsed argument keeps the buffer it filled; the client gets a new one
                # of the same size, "assuming another fat argument comes next".
                conn.qb_alloc = sds_room(big[-1] + 2)
                conn.qb_peak = max(conn.qb_peak, big[-1] + 2)
                longest = 0
                break
            longest = max(longest, sum(len(arg) + 16 for arg in argv))
        while longest > conn.qb_alloc:
            conn.qb_alloc = _greedy_room(conn.qb_alloc)  # full: sdsMakeRoomFor, read again
    left = parser.buffered
    conn.qb_bulk = 0
    if not left:
        return
    whole = max(parser._need, left)  # the incomplete command's size, once it has all come
    if whole >= BIG_ARG:
        conn.qb_bulk = whole
        if conn.qb_alloc < whole:
            conn.qb_alloc = sds_room(whole)  # made room for exactly the big argument
        conn.qb_peak = max(conn.qb_peak, whole)
    elif conn.qb_alloc - left < IOBUF_LEN:
        conn.qb_alloc = _greedy_room(left)


def _greedy_room(length: int) -> int:
    """sdsalloc() after sdsMakeRoomFor(querybuf, PROTO_IOBUF_LEN) on `length` bytes."""
    size = length + IOBUF_LEN
    return sds_room(size * 2 if size < _MAX_PREALLOC else size + _MAX_PREALLOC)


def figures(conn: Any, now: float, last_interaction: float) -> tuple[int, int]:
    """(qbuf, qbuf-free) as CLIENT LIST shows them now."""
    _visit(conn, now, last_interaction)
    length = conn.qb_length
    if conn.qb_bulk and conn.parser.buffered:
        # A big argument arriving: Redis has moved what precedes it out of the buffer (the
        # earlier arguments are parsed, the headers dropped), which then holds the argument.
        length = max(length - _bulk_offset(conn.parser, conn.qb_bulk), 0)
    return length, max(conn.qb_alloc - length, 0)


def _bulk_offset(parser: Any, whole: int) -> int:
    """Where the big argument that ends the incomplete command (`whole` bytes with its
    headers and CRLF) starts in the buffer: just after its header `$<size>\r\n`."""
    chunks = parser._chunks
    head = chunks[0] if chunks else b""
    for offset in range(4, min(len(head), 4096)):
        tag = b"$%d\r\n" % (whole - offset - 2)
        if head.endswith(tag, 0, offset):
            return offset
    return 0


def _visit(conn: Any, now: float, last_interaction: float) -> None:
    """clientsCronResizeQueryBuffer, for each 100 ms tick since the last call: a third visit
    would change nothing the last two did not (the last is also the idlest)."""
    tick = int(now * _CRON_HZ)
    passes = tick - conn.qb_tick
    if passes <= 0:
        return
    conn.qb_tick = tick
    conn.qb_next_tick = (tick + 1) / _CRON_HZ
    for ago in range(min(passes, 2) - 1, -1, -1):
        idle = int((tick - ago) / _CRON_HZ - last_interaction)
        length = conn.qb_length
        if conn.qb_alloc - length > 4096:
            if idle > 2:
                conn.qb_alloc = length  # sdsRemoveFreeSpace
            elif conn.qb_alloc > RESIZE_THRESHOLD and conn.qb_alloc // 2 > conn.qb_peak:
                conn.qb_alloc = max(length, conn.qb_peak, conn.qb_bulk)  # sdsResize
        conn.qb_peak = max(length, conn.qb_bulk)
