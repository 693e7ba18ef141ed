"""The network faults toxiproxy users know (MINIRED FAULT: DELAY ... JITTER, BANDWIDTH, SLICE,
CUT, TIMEOUT, SLOW-CLOSE, RESET, REFUSE, STALL-ACCEPT), each seen by redis-py: the error an
application gets without retries, and the success redis-py's Retry with backoff reaches. Time is
asserted only as a lower bound a timer guarantees (a paced reply cannot arrive before its
pauses are over), or as an order; randomness only ever comes from a SEED."""
from __future__ import annotations

import random
import socket
import time

import pytest
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from minired.embed import SubprocessServer
from minired.protocol.errors import RedisError as MiniredError
from tests.support.fault_server import fault_server_fixtures
from tests.support.respclient import Err, RawClient

srv, _clean = fault_server_fixtures()


def _plain(srv, **options) -> redis.Redis:
    """A client that gives up at the first error, so each fault shows itself."""
    return redis.Redis(port=srv.port, retry=None, **options)


def _retrying(srv, retries: int = 3, **options) -> redis.Redis:
    """A client with redis-py's Retry and a (jitter-free, so deterministic) backoff."""
    return redis.Redis(port=srv.port, retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries),
                       **options)


def _read_until_closed(sock: socket.socket) -> tuple[bytes, BaseException | None]:
    """Every byte the server sends until it closes the connection, and how it closed it: None
    for a clean close (EOF), the exception for a reset."""
    sock.settimeout(10)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError as exc:
            return data, exc
        if not chunk:
            return data, None
        data += chunk


def _reply_bytes(value: bytes) -> int:
    """The length of a RESP2 bulk string reply of value."""
    return len(b"$%d\r\n" % len(value)) + len(value) + 2


# --- DELAY ... JITTER --------------------------------------------------------------------------

def test_delay_with_jitter_holds_each_reply_by_its_seeded_draw(srv):
    srv.faults.add("DELAY", 150, command="get", jitter=100, seed=7)
    draws = random.Random(7)
    expected = [max(0, 150 + draws.randint(-100, 100)) for _ in range(4)]
    assert len(set(expected)) > 1  # the jitter does move the delay
    r = _plain(srv)
    r.set("k", "v")
    for ms in expected:
        start = time.monotonic()
        assert r.get("k") == b"v"
        assert time.monotonic() - start >= ms / 1000


def test_delay_with_jitter_past_the_socket_timeout_is_retried(srv):
    """redis-py times out, drops the connection and sends the GET again on a new one; the
    rule fired once (COUNT 1), so the second try is answered at once."""
    r = _retrying(srv, socket_timeout=0.1)
    r.set("k", "v")
    rule = srv.faults.add("DELAY", 1000, command="get", jitter=200, seed=1, count=1)
    with pytest.raises(redis.TimeoutError):
        _plain(srv, socket_timeout=0.1).get("k")
    assert rule.fired == 1
    rule = srv.faults.add("DELAY", 1000, command="get", jitter=200, seed=1, count=1)
    assert r.get("k") == b"v"
    assert rule.fired == 1


# --- BANDWIDTH and SLICE: complete, only slow ---------------------------------------------------

def test_bandwidth_limits_the_reply_rate_and_the_reply_is_complete(srv):
    value = b"x" * 4000
    r = _plain(srv, socket_timeout=5)
    r.set("k", value)
    srv.faults.add("BANDWIDTH", 20_000, command="get", count=1)  # 200-byte pieces, 10 ms apart
    start = time.monotonic()
    assert r.get("k") == value
    pieces = -(-_reply_bytes(value) // 200)
    assert time.monotonic() - start >= (pieces - 1) * 0.010


def test_bandwidth_keeps_later_replies_behind_and_a_short_socket_timeout_survives(srv):
    """redis-py's socket_timeout is per read: a slow but steady reply never trips it."""
    # 2.5 s of reply against a 1.5 s timeout: far from the 10 ms between pieces even when a
    # busy machine holds the server for a moment.
    value = b"y" * 50_000
    _plain(srv).set("k", value)
    srv.faults.add("BANDWIDTH", 20_000, command="get", count=1)  # 200 bytes every 10 ms
    r = _plain(srv, socket_timeout=1.5)
    pipe = r.pipeline(transaction=False)
    pipe.get("k").ping()
    start = time.monotonic()
    assert pipe.execute() == [value, True]  # the PING answered after the whole reply
    assert time.monotonic() - start > 1.5  # longer than the socket timeout, all told


def test_slice_sends_the_reply_in_pieces_with_pauses(srv):
    value = b"z" * 1000
    _plain(srv).set("k", value)
    srv.faults.add("SLICE", 100, 40, command="get", count=1)
    raw = RawClient(srv.port)
    start = time.monotonic()
    raw.send("GET", "k")
    raw.send("PING")
    assert raw.read() == value  # the rest, complete
    assert raw.read() == b"PONG"  # after it
    pieces = -(-_reply_bytes(value) // 100)
    assert time.monotonic() - start >= (pieces - 1) * 0.040
    raw.close()


def test_slice_through_redis_py_with_retry_is_just_slower(srv):
    value = b"s" * 500
    r = _retrying(srv, socket_timeout=1)
    r.set("k", value)
    rule = srv.faults.add("SLICE", 50, 20, command="get", count=1)
    start = time.monotonic()
    assert r.get("k") == value
    assert time.monotonic() - start >= 10 * 0.020
    assert rule.fired == 1


# --- CUT ---------------------------------------------------------------------------------------

def test_cut_sends_n_bytes_of_the_reply_then_closes(srv):
    _plain(srv).set("k", "0123456789" * 10)
    srv.faults.add("CUT", 7, command="get", count=1)
    raw = RawClient(srv.port)
    raw.send("GET", "k")
    assert _read_until_closed(raw.sock) == (b"$100\r\n0", None)
    raw.close()


def test_cut_after_running_a_retried_incr_runs_twice(srv):
    """CUT runs the command: redis-py's retry sends it again, the at-least-once hazard."""
    srv.faults.add("CUT", 2, command=["incr", "incrby"], count=1)
    with pytest.raises(redis.ConnectionError):
        _plain(srv).incr("plain")
    assert _plain(srv).get("plain") == b"1"
    srv.faults.add("CUT", 2, command=["incr", "incrby"], count=1)
    assert _retrying(srv).incr("n") == 2
    assert _plain(srv).get("n") == b"2"


# --- TIMEOUT and SLOW-CLOSE ---------------------------------------------------------------------

def test_timeout_answers_nothing_then_closes_after_ms(srv):
    """Unlike HANG, the connection ends by itself: a client with no socket timeout gets a
    ConnectionError, not a hang. The command does not run."""
    r = _plain(srv)
    srv.faults.add("TIMEOUT", 200, command=["incr", "incrby"], count=1)
    start = time.monotonic()
    with pytest.raises(redis.ConnectionError):
        r.incr("n")
    assert time.monotonic() - start >= 0.2
    assert _plain(srv).get("n") is None


def test_timeout_retried_runs_the_command_once(srv):
    srv.faults.add("TIMEOUT", 100, command=["incr", "incrby"], count=1)
    start = time.monotonic()
    assert _retrying(srv).incr("n") == 1
    assert time.monotonic() - start >= 0.1


def test_slow_close_answers_then_holds_the_close(srv):
    """QUIT is answered at once, and the connection closes only ms later."""
    srv.faults.add("SLOW-CLOSE", 250, command="quit", count=1)
    raw = RawClient(srv.port)
    start = time.monotonic()
    raw.send("QUIT")
    assert _read_until_closed(raw.sock) == (b"+OK\r\n", None)
    assert time.monotonic() - start >= 0.25
    raw.close()


def test_slow_close_of_a_killed_client_stalls_it_until_the_close(srv):
    """The marked connection, killed, reads nothing and closes ms later: the application's
    next call waits for that close, then fails (without retries) or reconnects (with)."""
    admin = _plain(srv)
    for client, outcome in ((_plain(srv, client_name="victim"), redis.ConnectionError),
                            (_retrying(srv, client_name="victim"), b"v")):
        admin.set("k", "v")
        srv.faults.add("SLOW-CLOSE", 300, command="ping", client_name="victim", count=1)
        assert client.ping()
        victim = next(c for c in admin.client_list() if c["name"] == "victim")
        killed = time.monotonic()
        assert admin.client_kill_filter(_id=victim["id"]) == 1
        if outcome is redis.ConnectionError:
            with pytest.raises(redis.ConnectionError):
                client.get("k")
        else:
            assert client.get("k") == outcome
        assert time.monotonic() - killed >= 0.3


# --- RESET -------------------------------------------------------------------------------------

def test_reset_is_a_tcp_reset_not_a_clean_close(srv):
    srv.faults.add("RESET", command="get", count=1)
    raw = RawClient(srv.port)
    raw.send("GET", "k")
    data, how = _read_until_closed(raw.sock)
    assert data == b"" and isinstance(how, ConnectionResetError)
    raw.close()
    srv.faults.add("DROP", command="get", count=1)  # DROP, for contrast: a clean EOF
    raw = RawClient(srv.port)
    raw.send("GET", "k")
    assert _read_until_closed(raw.sock) == (b"", None)
    raw.close()


def test_reset_seen_by_redis_py_and_retried(srv):
    srv.faults.add("RESET", command=["incr", "incrby"], count=1)
    with pytest.raises(redis.ConnectionError):
        _plain(srv).incr("n")
    assert _plain(srv).get("n") is None  # RESET cuts before the command runs
    rule = srv.faults.add("RESET", command=["incr", "incrby"], count=2)
    assert _retrying(srv).incr("n") == 1  # two resets, then the third try runs once
    assert rule.fired == 2


def test_reset_with_a_seeded_probability_repeats_its_pattern(srv):
    def pattern() -> list[bool]:
        srv.faults.reset()
        srv.faults.add("RESET", command="echo", probability=0.5, seed=11)
        outcome = []
        for _ in range(12):
            try:
                _plain(srv).echo("x")
                outcome.append(False)
            except redis.ConnectionError:
                outcome.append(True)
        return outcome

    first = pattern()
    assert first == pattern() and 0 < sum(first) < 12


# --- REFUSE and STALL-ACCEPT: new connections --------------------------------------------------

def test_refuse_resets_new_connections_and_retries_get_through(srv):
    admin = _plain(srv)
    admin.ping()  # connected before the rule: untouched by it
    srv.faults.add("REFUSE", count=1)
    raw = socket.create_connection(("127.0.0.1", srv.port))
    data, how = _read_until_closed(raw)  # accepted, then reset before a byte is read
    assert data == b"" and isinstance(how, ConnectionResetError)
    raw.close()
    rule = srv.faults.add("REFUSE", count=2)
    with pytest.raises(redis.ConnectionError):
        _plain(srv).ping()
    assert _retrying(srv).ping()  # the second refusal, then a connection that is accepted
    assert rule.fired == 2 and srv.faults.list() == []
    assert admin.ping()


def test_refuse_for_a_window_then_accepts(srv):
    added = time.monotonic()  # (before: the rule's timer starts when the server adds it)
    srv.faults.add("REFUSE", for_ms=200)
    r = _retrying(srv, retries=60)  # up to 60 tries, 100 ms apart at most
    assert r.ping()
    assert time.monotonic() - added >= 0.2  # no connection is accepted inside the window
    assert srv.faults.list() == []  # the rule ended by itself


def test_stall_accept_leaves_new_connections_unread_until_the_rule_ends(srv):
    rule = srv.faults.add("STALL-ACCEPT", for_ms=60_000)
    raw = RawClient(srv.port)
    raw.send("PING")  # unread while the rule lasts, answered once it ends
    with pytest.raises(redis.TimeoutError):
        _plain(srv, socket_timeout=0.1).ping()
    assert rule.fired == 2
    assert rule.remove()
    assert raw.read() == b"PONG"
    assert _plain(srv, socket_timeout=5).ping()
    raw.close()


def test_stall_accept_retried_waits_the_window_out(srv):
    added = time.monotonic()
    srv.faults.add("STALL-ACCEPT", for_ms=300)
    assert _retrying(srv, retries=30, socket_timeout=0.05).ping()
    assert time.monotonic() - added >= 0.3


def test_stall_accept_count_and_del_release(srv):
    rule = srv.faults.add("STALL-ACCEPT", for_ms=60_000, count=1)
    stalled = RawClient(srv.port)
    stalled.send("PING")
    assert _plain(srv, socket_timeout=5).ping()  # past its COUNT: accepted as usual
    assert rule.fired == 1
    assert rule.remove()  # DEL ends the stall
    assert stalled.read() == b"PONG"
    stalled.close()


# --- bad arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize("words", [
    ("DELAY", "-1"), ("DELAY", "1.5"), ("DELAY", "60001"), ("DELAY", "99999999999999999999999"),
    ("DELAY", "10", "JITTER", "-3"), ("DELAY", "10", "JITTER", "60001"), ("DELAY", "x"),
    ("BANDWIDTH",), ("BANDWIDTH", "0"), ("BANDWIDTH", "-5"), ("BANDWIDTH", "1e3"),
    ("BANDWIDTH", str(1 << 40)),
    ("SLICE", "10"), ("SLICE", "0", "10"), ("SLICE", "10", "-1"), ("SLICE", "10", "70000"),
    ("CUT",), ("CUT", "-1"), ("CUT", "abc"), ("CUT", str(1 << 31)),
    ("TIMEOUT",), ("TIMEOUT", "-1"), ("TIMEOUT", "60001"), ("TIMEOUT", "٣"),
    ("SLOW-CLOSE", "-1"), ("SLOW-CLOSE", "1000000"), ("RESET", "5"),
    ("REFUSE",), ("REFUSE", "COMMAND", "get", "COUNT", "1"), ("REFUSE", "FOR", "0"),
    ("REFUSE", "FOR", "60001"), ("STALL-ACCEPT",), ("STALL-ACCEPT", "COUNT", "3"),
    ("STALL-ACCEPT", "KEY", "a*", "FOR", "100"), ("HANG", "FOR", "-1"),
    ("DROP", "COUNT", "-1"), ("DROP", "COUNT", "1.5"), ("DROP", "COUNT", "1" * 30),
    ("DROP", "AFTER", "-2"), ("BANDWIDTH", "100", "JITTER", "5"), ("CUT", "3", "SEED", "1"), ("TIMEOUT", "10", "IN-SCRIPT", "yes"),
])
def test_bad_arguments_are_refused_with_an_error_and_add_nothing(srv, words):
    raw = RawClient(srv.port)
    reply = raw.call("MINIRED", "FAULT", "ADD", *words)
    assert isinstance(reply, Err) and reply.message.startswith("ERR MINIRED FAULT ADD: "), reply
    assert raw.call("MINIRED", "FAULT", "LIST") == []
    assert raw.call("PING") == b"PONG"  # never a wedge
    raw.close()


def test_bad_argument_errors_name_the_argument_and_its_range(srv):
    raw = RawClient(srv.port)

    def add(*words):
        return raw.call("MINIRED", "FAULT", "ADD", *words)

    assert add("DELAY", "-1") == Err(
        "ERR MINIRED FAULT ADD: DELAY's ms must be an integer from 0 to 60000, got '-1'")
    assert add("SLICE", "10", "x") == Err(
        "ERR MINIRED FAULT ADD: SLICE's pause ms must be an integer from 0 to 60000, got 'x'")
    assert add("BANDWIDTH", "0") == Err("ERR MINIRED FAULT ADD: BANDWIDTH's bytes per second "
                                        "must be an integer from 1 to 1073741824, got '0'")
    assert add("SLICE", "10") == Err(
        "ERR MINIRED FAULT ADD: SLICE needs SLICE's bytes and SLICE's pause ms")
    assert add("REFUSE", "COMMAND", "get") == Err(
        "ERR MINIRED FAULT ADD: REFUSE acts on new connections, before any command: "
        "only COUNT, AFTER, PROBABILITY, SEED and FOR apply")
    assert add("REFUSE") == Err(
        "ERR MINIRED FAULT ADD: REFUSE needs FOR <ms> or COUNT <n> (it must end by itself)")
    assert add("STALL-ACCEPT", "COUNT", "1") == Err(
        "ERR MINIRED FAULT ADD: STALL-ACCEPT needs FOR <ms> (it must end by itself)")
    assert add("DROP", "COUNT", "0") == Err(
        "ERR MINIRED FAULT ADD: COUNT must be an integer from 1 to 9223372036854775807, got '0'")
    assert add("CUT", "3", "JITTER", "5") == Err("ERR MINIRED FAULT ADD: JITTER does not apply to CUT")
    assert add("RESET", "SEED", "5") == Err(
        "ERR MINIRED FAULT ADD: SEED goes with PROBABILITY or JITTER")
    assert add("STALL", "100000000000") == Err(
        "ERR MINIRED FAULT ADD: STALL is at most 60000 ms (it stops the whole server); "
        "use DELAY or HANG to wait longer")
    raw.close()


def test_for_ends_any_rule_by_itself(srv):
    r = _plain(srv)
    added = time.monotonic()
    srv.faults.add("ERROR", "ERR for a while", command="ping", for_ms=150)
    with pytest.raises(redis.ResponseError):
        r.ping()
    deadline = time.monotonic() + 10
    while srv.faults.list() and time.monotonic() < deadline:
        time.sleep(0.01)  # waiting for the rule's own timer (bounded), not asserting on time
    assert srv.faults.list() == [] and time.monotonic() - added >= 0.15
    assert r.ping()


def test_python_api_rejects_what_the_wire_rejects(srv):
    with pytest.raises(MiniredError):
        srv.faults.add("CUT", -1)
    with pytest.raises(TypeError):
        srv.faults.add("CUT", 1, jitterr=3)


# --- SubprocessServer's helper -----------------------------------------------------------------

def test_subprocess_server_has_the_same_faults_helper():
    with SubprocessServer(fault_injection=True) as server:
        faults = server.faults
        r = redis.Redis(port=server.port, retry=None)
        r.set("k", "v")
        with faults.add("RESET", command="get", count=1) as rule:
            with pytest.raises(redis.ConnectionError):
                r.get("k")
            assert rule.fired == 1  # (the rule is gone: its COUNT)
        assert r.get("k") == b"v"  # reconnected
        refuse = faults.add("REFUSE", for_ms=60_000)
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=server.port, retry=None).ping()
        assert refuse.matched == 1
        assert [entry[b"id"] for entry in faults.list()] == [refuse.id]
        assert faults.kill_clients() >= 1  # r's connection; never the helper's own
        faults.reset()  # the helper still reaches the server while REFUSE lasted
        assert faults.list() == []
        assert redis.Redis(port=server.port, retry=None).ping()
        with pytest.raises(redis.ResponseError):
            faults.add("CUT", "-1")
    with SubprocessServer() as server, pytest.raises(RuntimeError):
        assert server.faults is None
