"""CLIENT LIST / CLIENT INFO's query buffer figures (qbuf, qbuf-free) against real Redis, and
the clientsCron resizing behind them (minired/engine/querybuf.py), which takes seconds of idleness
and is checked on the model itself."""
from __future__ import annotations

import re

import pytest

from minired.engine import querybuf


def _qbuf(listing: bytes, name: bytes) -> tuple[str, str]:
    line = next(line for line in bytes(listing).split(b"\n") if b" name=" + name + b" " in line)
    found = re.search(rb"qbuf=(\d+) qbuf-free=(\d+)", line)
    return found.group(1).decode(), found.group(2).decode()


def test_client_info_shows_the_read_being_served(diff):
    # "CLIENT INFO" is 26 bytes in RESP: the buffer holds it while it runs.
    theirs, ours = diff.both("CLIENT", "INFO")
    assert re.search(rb"qbuf=\d+ qbuf-free=\d+", bytes(theirs)).group(0) == \
        re.search(rb"qbuf=\d+ qbuf-free=\d+", bytes(ours)).group(0) == b"qbuf=26 qbuf-free=20448"


@pytest.mark.parametrize("value_size", [100, 20_000, 40_000, 400_000])
def test_query_buffer_after_a_command(diff, connect, value_size):
    """After a read, Redis's buffer is 16 KiB as jemalloc rounds it; a big argument (32 KiB or
    more) leaves a buffer of exactly its size (seen before clientsCron's next visits)."""
    other = connect()
    other.check("CLIENT", "SETNAME", "qb")
    other.check("SET", "x", "A" * value_size)
    listings = diff.both("CLIENT", "LIST")
    assert _qbuf(listings[1], b"qb") == _qbuf(listings[0], b"qb")


def test_pipelined_commands_show_the_whole_read(diff):
    """Redis trims its buffer after the whole read: a command sees the ones read with it."""
    theirs, ours = (client.pipeline([("CLIENT", "SETNAME", "p"), ("CLIENT", "INFO")])[1]
                    for client in (diff.redis, diff.minired))
    assert _qbuf(ours, b"p") == _qbuf(theirs, b"p") == ("62", "20412")


class _Conn:
    def __init__(self) -> None:
        self.qb_length = self.qb_alloc = self.qb_peak = self.qb_bulk = self.qb_tick = 0
        self.qb_next_tick = 0.0


def test_sds_room_is_jemallocs_usable_size_less_the_header():
    # The figures real Redis shows for these requests (16 KiB reads, 40000 and 400000 bytes).
    assert [querybuf.sds_room(n) for n in (16384, 40002, 400002)] == [20474, 40954, 458742]


def test_an_idle_client_loses_its_buffer_after_two_seconds():
    conn = _Conn()
    querybuf.before_read(conn, 100.0, 100.0)
    conn.qb_length = 0
    assert querybuf.figures(conn, 102.5, 100.0) == (0, 20474)
    assert querybuf.figures(conn, 103.05, 100.0) == (0, 0)  # idle > 2 s at a cron visit
    querybuf.before_read(conn, 103.2, 100.0)
    assert querybuf.figures(conn, 103.2, 103.2) == (0, 20474)


def test_a_big_buffer_is_cut_to_the_recent_peak():
    conn = _Conn()
    conn.qb_alloc, conn.qb_peak, conn.qb_tick = 458742, 400002, 1000  # a 400000-byte SET
    # The next visit: the peak since the last one is the big argument itself: no change.
    assert querybuf.figures(conn, 100.1, 100.0) == (0, 458742)
    # A 128-byte read, then the next visit cuts the buffer down to that peak.
    conn.qb_peak = max(conn.qb_peak, 128)
    assert querybuf.figures(conn, 100.2, 100.15) == (0, 128)


def _flags_and_cmd(listing: bytes, name: bytes) -> tuple[str, str]:
    line = next(line for line in bytes(listing).split(b"\n") if b" name=" + name + b" " in line)
    found = re.search(rb" flags=(\S+) .* cmd=(\S+) ", line)
    return found.group(1).decode(), found.group(2).decode()


# Steps of a watched client (W: run by another client): after each, CLIENT LIST's flags and
# cmd for it, as Redis shows them.
FLAG_STEPS = [
    ("GET",), ("NOSUCH",), ("CONFIG", "NOSUCH"), ("CONFIG", "GET"), ("CONFIG",),
    ("CLIENT", "NO-EVICT", "on"), ("SUBSCRIBE", "ch"), ("GET", "x"), ("UNSUBSCRIBE",),
    ("WATCH", "k"), ("W", "SET", "k", "1"), ("MULTI",), ("GET",), ("DISCARD",),
    ("CLIENT", "NO-EVICT", "off"), ("WATCH", "a"), ("W", "FLUSHDB"), ("UNWATCH",),
    ("WATCH", "b"), ("W", "SWAPDB", "0", "1"), ("PING",), ("W", "SWAPDB", "0", "1"),
]


def test_flags_and_command_shown(diff, connect):
    """Flags d (a WATCHed key changed) and e (CLIENT NO-EVICT), and cmd after a refusal: the
    command Redis looked up, whatever its arity; NULL for an unknown command or subcommand."""
    watched = connect()
    watched.check("CLIENT", "SETNAME", "w")
    for step in FLAG_STEPS:
        if step[0] == "W":
            diff.check(*step[1:])
        else:
            watched.check(*step)
        theirs, ours = diff.both("CLIENT", "LIST")
        assert _flags_and_cmd(ours, b"w") == _flags_and_cmd(theirs, b"w"), step
    watched.check("UNWATCH")
    watched.check("CLIENT", "NO-EVICT", "off")
