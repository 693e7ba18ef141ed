"""Hostile and malformed input: the server answers Redis's protocol errors, keeps serving other
clients, and never allocates from a length header before the data arrives."""
from __future__ import annotations

import socket
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient, encode_command

from .helpers import read_until_closed, rss_of


def _ping_ok(port: int) -> bool:
    client = RawClient(port, timeout=5)
    try:
        return client.call("PING") == b"PONG"
    finally:
        client.close()


# Deterministic malformed inputs: minired must send exactly what Redis sends before closing.
MALFORMED = [
    b"*x\r\n",
    b"*-1\r\nPING\r\n",                     # a negative count is an empty command in Redis
    b"*1\r\n$-1\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$2147483648000\r\nx",
    b"*2\r\n$3\r\nGET\r\n:1\r\n",
    b"*2\r\n$3\r\nGET\r\n*1\r\n",
    b"*1\r\n+PING\r\n",
    b"*1048577\r\n",
    b"*99999999999999999999\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nvv\r\n",   # bulk longer than announced
    b"PING \"unbalanced\r\n",
    b"PING 'a'b\r\n",
    b"\"a\"b\r\n",
    b"*" + b"9" * 70000,                     # a count line past the inline limit
    b"*1\r\n$" + b"9" * 70000,
    b"A" * 70000,                            # an inline request past 64 KB without newline
    b"\r\n\r\n\n\nPING\r\n",                 # empty lines are skipped
    b"*0\r\nPING\r\n",
    b"PING\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
    # Lengths as string2ll reads them: no leading zero, sign, space, underscore or "-0".
    b"*1\r\n$04\r\nPING\r\n",
    b"*01\r\n$4\r\nPING\r\n",
    b"*1\r\n$+4\r\nPING\r\n",
    b"*+1\r\n$4\r\nPING\r\n",
    b"*1\r\n$ 4\r\nPING\r\n",
    b"*1 \r\n$4\r\nPING\r\n",
    b"*1_0\r\n",
    b"*1\r\n$-0\r\n\r\n",
    b"*-01\r\nPING\r\n",
    b"*00\r\nPING\r\n",
    b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n",  # the two bytes after a bulk are not checked
]


@pytest.mark.parametrize("payload", MALFORMED, ids=[repr(p[:24]) for p in MALFORMED])
def test_malformed_input_answered_as_redis(real_redis, mini, payload):
    theirs = _answer(real_redis.port, payload)
    ours = _answer(mini.port, payload)
    assert ours == theirs
    assert _ping_ok(mini.port)


def _answer(port: int, payload: bytes) -> bytes:
    """What the server says to payload; a connection left open (incomplete input) is shut
    from our side after a moment."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        sock.settimeout(0.3)
        data = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return data + b"<closed>"
                data += chunk
        except socket.timeout:
            return data + b"<open>"
        except ConnectionResetError:
            return data + b"<closed>"


_resp_piece = st.one_of(
    st.sampled_from([b"*", b"$", b"\r\n", b"\n", b"\r", b"-", b"+", b":", b"\"", b"'", b"\\x",
                     b"PING", b"SET", b"GET", b"*1\r\n", b"*2\r\n", b"$3\r\n", b"$-1\r\n",
                     b"$500000000\r\n", b"*1048576\r\n", b"0", b"9" * 12, b" "]),
    st.binary(min_size=1, max_size=40),
    st.integers(-(2**70), 2**70).map(lambda n: b"%d" % n),
)
_junk = st.lists(_resp_piece, min_size=1, max_size=30).map(b"".join)


@settings(max_examples=60)
@given(chunks=st.lists(_junk, min_size=1, max_size=4))
def test_random_junk_never_hurts_the_server(mini, chunks):
    with socket.create_connection(("127.0.0.1", mini.port), timeout=5) as sock:
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except OSError:
                break  # the server already closed on a protocol error
    assert _ping_ok(mini.port)


@settings(max_examples=25)
@given(args=st.lists(st.binary(max_size=30), min_size=1, max_size=6),
       cut=st.integers(min_value=1, max_value=200))
def test_truncated_frames_wait_for_the_rest(mini, args, cut):
    """A valid command cut anywhere and sent in two writes is still one command."""
    frame = encode_command(["ECHO", b"".join(args)])
    cut = min(cut, len(frame) - 1)
    client = RawClient(mini.port)
    try:
        client.send_raw(frame[:cut])
        time.sleep(0.002)
        client.send_raw(frame[cut:])
        assert client.read() == b"".join(args)
    finally:
        client.close()


def test_junk_from_many_connections_at_once(mini):
    payloads = [b"*1\r\n$-7\r\n", b"\x00\xff" * 5000, b"*3\r\n$3\r\nSET\r\n", b"*1\r\n$400000000\r\n",
                b"PING\r\n" * 500, b"'" * 10, b"*2\r\n$4\r\nECHO\r\n$5\r\nhel"]
    failures: list[BaseException] = []

    def hammer(index: int) -> None:
        try:
            for round_ in range(10):
                with socket.create_connection(("127.0.0.1", mini.port), timeout=5) as sock:
                    sock.sendall(payloads[(index + round_) % len(payloads)])
        except BaseException as exc:  # reported to the test thread
            failures.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert _ping_ok(mini.port)


def test_hundreds_of_thousands_of_commands_in_one_write(mini):
    count = 200_000
    with socket.create_connection(("127.0.0.1", mini.port), timeout=30) as sock:
        sender = threading.Thread(target=sock.sendall, args=(b"PING\r\n" * count + b"QUIT\r\n",))
        sender.start()
        data = read_until_closed(sock, timeout=60)
        sender.join()
    assert data == b"+PONG\r\n" * count + b"+OK\r\n"


def test_length_headers_do_not_allocate():
    """200 clients each announce a 500 MB bulk and send nothing more: resident memory of the
    server must not move by more than a few MB."""
    with SubprocessServer() as srv:
        pid = srv.proc.pid
        assert _ping_ok(srv.port)
        before = rss_of(pid)
        socks = []
        try:
            for _ in range(200):
                sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
                sock.sendall(b"*1\r\n$500000000\r\n" + b"x" * 100)
                socks.append(sock)
            assert _ping_ok(srv.port)  # every header has been read by now
            after = rss_of(pid)
        finally:
            for sock in socks:
                sock.close()
        assert after - before < 16 * 1024 * 1024, (before, after)
        assert _ping_ok(srv.port)


def test_bulk_arriving_slowly_is_assembled_once(mini):
    """A 4 MB value sent in 4 KB pieces arrives intact (and quickly: no rescan per piece)."""
    value = bytes(range(256)) * (4 * 4096)
    frame = encode_command(["SET", "big", value])
    client = RawClient(mini.port, timeout=30)
    try:
        started = time.monotonic()
        for i in range(0, len(frame), 4096):
            client.send_raw(frame[i:i + 4096])
        assert client.read() == b"OK"
        assert client.call("STRLEN", "big") == len(value)
        assert time.monotonic() - started < 10
        client.call("DEL", "big")
    finally:
        client.close()
