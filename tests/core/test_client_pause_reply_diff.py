"""CLIENT PAUSE / UNPAUSE and CLIENT REPLY ON|OFF|SKIP, against real Redis.

Each scenario runs on both servers over raw sockets and records what each connection received
and when ("held: the server counts it blocked", "everything after UNPAUSE"); the records must
be equal. Answers are awaited, not given a window; "nothing more within 100 ms" is recorded
only where nothing more is expected, and a loaded machine can only make it truer (ALL pauses,
which nothing ends early, last 2 s: ample time to observe them).
"""
from __future__ import annotations

import socket
import time

import pytest

from tests.support.respclient import encode_command
from tests.support.waiting import wait_until

# Long enough never to end during a test: every test that starts one ends it with UNPAUSE.
LONG_PAUSE_MS = 60_000
QUIET = 0.1  # "not answered within 100 ms"
# Sent after a command whose replies are waited for: held with it, or answered after it.
MARK = ("ECHO", "mark")
MARK_REPLY = b"$4\r\nmark\r\n"


class Conn:
    """A raw connection that reads whatever arrived within a window, as bytes."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, *commands) -> None:
        self.sock.sendall(b"".join(encode_command(c) for c in commands))

    def received(self, wait: float = QUIET) -> bytes:
        """Bytes arriving within `wait` seconds (and right after, while they keep coming)."""
        data = b""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return data + b"<closed>"
                data += chunk
                self.sock.settimeout(0.02)
        except socket.timeout:
            return data

    def until(self, ending: bytes, timeout: float = 5.0) -> bytes:
        """Bytes up to and including `ending`; fails if it does not come within `timeout`."""
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(ending):
            left = deadline - time.monotonic()
            assert left > 0, f"waited for {ending!r}, got {data!r}"
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            assert chunk, f"connection closed; got {data!r}"
            data += chunk
        return data

    def call(self, *args) -> bytes:
        self.send(args)
        return self.until(b"\r\n")

    def close(self) -> None:
        self.sock.close()

    def blocked_clients(self) -> bytes:
        """INFO's blocked_clients line (held clients count as blocked)."""
        self.send(("INFO", "clients"))
        info = self.until(b"\r\n\r\n")
        return next(line for line in info.split(b"\r\n") if line.startswith(b"blocked_clients:"))

    def answered_or_held(self, admin: "Conn") -> bytes | None:
        """The replies up to MARK's (sent last) if the server answers them, or None once it
        counts this connection as blocked: held by a pause (INFO, a read, runs during a WRITE
        pause). Events, not a window, however slowly a loaded machine answers."""
        data = b""

        def settled() -> bool:
            nonlocal data
            data += self.received(0.01)
            return data.endswith(MARK_REPLY) or admin.blocked_clients() == b"blocked_clients:1"

        wait_until(settled, "an answer or a held command")
        return data if data.endswith(MARK_REPLY) else None

    def wait_blocked_clients(self, count: int) -> bytes:
        """Until the server counts `count` blocked clients: another connection's command has
        arrived and is held, or a held connection's disconnect has been handled."""
        return wait_until(lambda: (line := self.blocked_clients()) == b"blocked_clients:%d" % count
                          and line, f"{count} blocked client(s)")


@pytest.fixture
def both(diff, real_redis, mini):
    """Run `scenario(port, connect)` on Redis and on minired and return both records; every
    connection opened is closed, and a pause left behind is ended."""

    def run(scenario):
        records = []
        for port in (real_redis.port, mini.port):
            opened: list[Conn] = []

            def connect(port=port, opened=opened) -> Conn:
                conn = Conn(port)
                opened.append(conn)
                return conn

            try:
                records.append(scenario(connect))
            finally:
                for conn in opened:
                    conn.close()
                admin = Conn(port)
                admin.call("CLIENT", "UNPAUSE")
                admin.close()
        redis_record, minired_record = records
        assert minired_record == redis_record
        return redis_record

    return run


# --- CLIENT PAUSE -------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("CLIENT", "PAUSE"), ("CLIENT", "PAUSE", "abc"), ("CLIENT", "PAUSE", "-1"),
    ("CLIENT", "PAUSE", "1.5"), ("CLIENT", "PAUSE", "+5"), ("CLIENT", "PAUSE", "-0"),
    ("CLIENT", "PAUSE", "0x10"), ("CLIENT", "PAUSE", "99999999999999999999"),
    ("CLIENT", "PAUSE", "10", "foo"), ("CLIENT", "PAUSE", "-1", "foo"),
    ("CLIENT", "PAUSE", "abc", "all"), ("CLIENT", "PAUSE", "10", "write", "extra"),
    ("CLIENT", "UNPAUSE", "x"),
])
def test_pause_argument_errors(diff, args):
    diff.check_error(*args)


def test_pause_zero_and_unpause_without_pause(diff):
    diff.check("CLIENT", "PAUSE", "0", "ALL")
    diff.check("CLIENT", "UNPAUSE")
    diff.check("PING")


def test_write_pause_holds_writes_and_lets_reads_through(both):
    def scenario(connect):
        admin, reader, writer = connect(), connect(), connect()
        record = [admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "write")]
        reader.send(("GET", "k"), ("PING",))
        record.append(reader.until(b"+PONG\r\n"))  # reads are answered during the pause
        # A held write holds the reads pipelined behind it.
        writer.send(("SET", "k", "v"), ("GET", "k"), ("PING",))
        record.append(writer.received())
        record.append(admin.call("CLIENT", "UNPAUSE"))
        record.append(writer.until(b"+PONG\r\n"))
        return record

    record = both(scenario)
    assert record[2] == b""


@pytest.mark.parametrize("args", [
    ("EVAL", "return 1", "0"),
    ("EVAL", "#!lua\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-writes\nreturn 1", "0"),
    ("EVAL", "#!lua flags=bogus\nreturn 1", "0"),
    ("EVALSHA", "x", "0"),
    ("EVAL_RO", "return 1", "0"),
    ("FCALL", "nosuch", "0"),
    ("FCALL_RO", "nosuch", "0"),
    ("PUBLISH", "ch", "m"),
    ("SPUBLISH", "ch", "m"),
    ("WAIT", "0", "0"),
    ("SET", "k"),  # arity errors are answered before the pause is considered
    ("NOSUCH",),
    ("CLIENT", "ID"),
    ("BLPOP", "list", "0.01"),
])
def test_write_pause_holds_what_may_replicate(both, args):
    def scenario(connect):
        admin, client = connect(), connect()
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        client.send(args, MARK)
        during = client.answered_or_held(admin)
        admin.call("CLIENT", "UNPAUSE")
        after = client.until(MARK_REPLY) if during is None else b""
        return ["held" if during is None else "answered", after]

    both(scenario)


def test_write_pause_and_scripts_that_declare_their_flags(both):
    function = ("#!lua name=lib\n"
                "redis.register_function{function_name='ro', callback=function() return 1 end,"
                " flags={'no-writes'}}\n"
                "redis.register_function('rw', function() return 2 end)")

    def scenario(connect):
        admin, ro, rw, by_sha = connect(), connect(), connect(), connect()
        admin.call("FUNCTION", "LOAD", "REPLACE", function)
        sha = admin.call("SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 3").split(b"\r\n")[1]
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        ro.send(("FCALL", "ro", "0"))
        rw.send(("FCALL", "rw", "0"))
        by_sha.send(("EVALSHA", sha, "0"))
        # (The answers are awaited, then whatever more arrives within QUIET is kept.)
        record = [ro.until(b":1\r\n") + ro.received(), rw.received(),
                  by_sha.until(b":3\r\n") + by_sha.received()]
        admin.call("CLIENT", "UNPAUSE")
        record.append(rw.until(b"\r\n"))
        admin.call("FUNCTION", "FLUSH")
        return record

    assert both(scenario)[:3] == [b":1\r\n", b"", b":3\r\n"]


def test_write_pause_and_transactions(both):
    def scenario(connect):
        admin, reads, writes, early = connect(), connect(), connect(), connect()
        early.send(("MULTI",), ("SET", "k", "v"))
        record = [early.until(b"+QUEUED\r\n")]
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        reads.send(("MULTI",), ("GET", "k"), ("PING",), ("EXEC",))
        record.append(reads.until(b"+PONG\r\n"))  # nothing to hold: runs at once
        writes.send(("MULTI",), ("SET", "k", "w"), ("GET", "k"))
        # MULTI answered, the write held before queuing.
        record.append(writes.until(b"+OK\r\n") + writes.received())
        early.send(("EXEC",))  # queued writes: EXEC is held
        record.append(early.received())
        record.append(admin.call("CLIENT", "UNPAUSE"))
        record.append(early.until(b"\r\n+OK\r\n"))
        writes.send(("EXEC",))
        record.append(writes.until(b"$1\r\nw\r\n"))
        return record

    record = both(scenario)
    assert record[2] == b"+OK\r\n" and record[3] == b""


def test_pause_all_holds_every_command_the_pausing_clients_too(both):
    def scenario(connect):
        admin, other = connect(), connect()
        # (Nothing ends an ALL pause early: 2 s leave the checks below ample time on a loaded
        # machine.)
        admin.send(("CLIENT", "PAUSE", 2000, "ALL"), ("PING",))
        record = [admin.until(b"+OK\r\n") + admin.received()]
        other.send(("CLIENT", "UNPAUSE"), ("GET", "k"))  # even UNPAUSE waits for the end
        record.append(other.received())
        record.append(admin.until(b"+PONG\r\n"))
        record.append(other.until(b"$-1\r\n"))
        return record

    assert both(scenario)[:2] == [b"+OK\r\n", b""]


def test_a_later_pause_extends_and_upgrades_never_shortens(both):
    def scenario(connect):
        admin, writer, reader = connect(), connect(), connect()
        admin.send(("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE"), ("CLIENT", "PAUSE", 10, "WRITE"))
        record = [admin.until(b"+OK\r\n+OK\r\n")]
        time.sleep(0.15)
        writer.send(("SET", "k", "v"))  # the shorter pause did not shorten the first
        record.append(writer.received())
        record.append(admin.call("CLIENT", "UNPAUSE"))
        record.append(writer.until(b"+OK\r\n"))
        # A short ALL pause during a longer WRITE one: ALL until the later end.
        # (Nothing ends an ALL pause early, UNPAUSE included: the WRITE pause's 2 s leave the
        # GET below, sent after 0.2 s, ample time to be seen held on a loaded machine.)
        admin.send(("CLIENT", "PAUSE", 2000, "WRITE"), ("CLIENT", "PAUSE", 50, "ALL"))
        record.append(admin.until(b"+OK\r\n+OK\r\n"))
        time.sleep(0.2)  # the ALL pause's own 50 ms are over: at least that long, any longer
        reader.send(("GET", "k"))
        record.append(reader.received())
        record.append(reader.until(b"$1\r\nv\r\n"))
        return record

    record = both(scenario)
    assert record[1] == b"" and record[5] == b""


def test_held_clients_run_in_the_order_they_were_held(both):
    def scenario(connect):
        admin = connect()
        pushers = [connect() for _ in range(3)]
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        for name, pusher in zip("abc", pushers):
            pusher.send(("RPUSH", "order", name))
            assert pusher.received(0.05) == b""
        admin.send(("CLIENT", "UNPAUSE"), ("LRANGE", "order", 0, -1))
        # Commands after UNPAUSE on its own connection run before the released ones.
        record = [admin.until(b"*0\r\n")]
        record += [pusher.until(b"\r\n") for pusher in pushers]
        record.append(admin.call("LRANGE", "order", 0, -1))
        return record

    both(scenario)


def test_held_clients_show_as_blocked_and_may_disconnect(both):
    def scenario(connect):
        admin, held, leaving = connect(), connect(), connect()
        held_id = held.call("CLIENT", "ID")[1:-2]
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        held.send(("MULTI",), ("SET", "k", "v"))
        held.until(b"+OK\r\n")
        leaving.send(("SET", "gone", "1"))
        admin.wait_blocked_clients(2)  # held, and the SET held too
        leaving.close()
        blocked = [admin.wait_blocked_clients(1)]
        admin.send(("CLIENT", "LIST", "ID", held_id))
        listing = admin.until(b"\n\r\n")
        shown = [field for field in listing.split()
                 if field.startswith((b"flags=", b"cmd=", b"multi="))]
        admin.call("CLIENT", "UNPAUSE")
        return [blocked, shown, held.until(b"+QUEUED\r\n"), admin.call("GET", "gone")]

    record = both(scenario)
    assert record[0] == [b"blocked_clients:1"]


def test_client_unblock_leaves_a_held_client_alone(mini):
    # Redis 7.0 crashes here (later versions answer 0): minired only.
    admin, held = Conn(mini.port), Conn(mini.port)
    try:
        held_id = int(held.call("CLIENT", "ID")[1:-2])
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        held.send(("BLPOP", "nothing", "0.05"))
        assert held.received() == b""
        assert admin.call("CLIENT", "UNBLOCK", held_id) == b":0\r\n"
        assert admin.call("CLIENT", "UNBLOCK", held_id, "ERROR") == b":0\r\n"
        admin.call("CLIENT", "UNPAUSE")
        assert held.until(b"*-1\r\n") == b"*-1\r\n"  # the BLPOP ran, then timed out
    finally:
        Conn(mini.port).call("CLIENT", "UNPAUSE")
        admin.close()
        held.close()


def test_keys_do_not_expire_during_a_pause(both):
    def scenario(connect):
        admin = connect()
        admin.send(("SET", "e", "v", "PX", 30), ("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE"))
        record = [admin.until(b"+OK\r\n+OK\r\n")]
        time.sleep(0.3)
        record.append(admin.call("DBSIZE"))  # the active cycle leaves the key in place
        admin.call("CLIENT", "UNPAUSE")
        deadline = time.monotonic() + 30  # generous: returns as soon as it holds
        while admin.call("DBSIZE") != b":0\r\n":
            assert time.monotonic() < deadline, "the key never expired after the pause"
            time.sleep(0.05)
        return record

    assert both(scenario)[1] == b":1\r\n"


def _expired_keys(conn: Conn) -> bytes:
    conn.send(("INFO", "stats"))
    info = conn.until(b"\r\n\r\n")
    return next(line for line in info.split(b"\r\n") if line.startswith(b"expired_keys:"))


def test_a_key_whose_time_passes_during_a_pause_reads_as_missing_and_stays(both):
    """Redis keeps the dataset constant during a pause: lookups hide a key whose time passed
    but delete (and count) it only once the pause ends (tests/unit/pause.tcl)."""
    def scenario(connect):
        admin = connect()
        admin.call("CONFIG", "RESETSTAT")
        admin.send(("MULTI",), ("SET", "e", "v", "PX", 10), ("SET", "f", "v", "PX", 10),
                   ("SET", "kept", "v"), ("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE"), ("EXEC",))
        admin.until(b"+OK\r\n+OK\r\n+OK\r\n+OK\r\n")
        time.sleep(0.05)
        record = [admin.call(*command) for command in (
            ("GET", "e"), ("EXISTS", "e", "f"), ("TTL", "e"), ("PTTL", "f"), ("TYPE", "e"),
            ("DBSIZE",))]
        for command in (("KEYS", "*"), ("SCAN", 0)):
            admin.send(command)
            record.append(admin.until(b"kept\r\n"))
        record.append(_expired_keys(admin))
        admin.call("CLIENT", "UNPAUSE")
        # Both keys read, as pause.tcl forces them: each is then gone and counted, whether the
        # read or the server's active cycle (a timer, in either server) deleted it first.
        record += [admin.call("GET", "e"), admin.call("GET", "f"), _expired_keys(admin)]
        return record

    record = both(scenario)
    assert record[5] == b":3\r\n" and record[8] == b"expired_keys:0"
    assert record[11] == b"expired_keys:2"


# --- CLIENT REPLY -------------------------------------------------------------------------------

END = ("ECHO", "end")  # appended after CLIENT REPLY ON, so each run ends on a known reply


@pytest.mark.parametrize("commands", [
    [("CLIENT", "REPLY", "OFF"), ("SET", "a", "1"), ("GET", "a"), ("NOSUCH",), ("GET", "a", "b"),
     ("CLIENT", "REPLY", "ON"), ("GET", "a")],
    [("CLIENT", "REPLY", "SKIP"), ("SET", "a", "1"), ("GET", "a")],
    [("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "SKIP"), ("PING", "1"), ("PING", "2")],
    [("CLIENT", "REPLY", "OFF"), ("CLIENT", "REPLY", "SKIP"), ("PING", "1")],
    [("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "OFF"), ("PING", "1")],
    [("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "ON"), ("PING", "1")],
    [("CLIENT", "REPLY", "FOO"), ("CLIENT", "REPLY", "OFF"), ("CLIENT", "REPLY", "FOO")],
    [("CLIENT", "REPLY", "SKIP"), ("NOSUCH",), ("PING", "2")],
    [("CLIENT", "REPLY", "SKIP"), ("GET",), ("PING", "2")],
    [("CLIENT", "REPLY", "OFF"), ("HELLO", "3"), ("CLIENT", "REPLY", "ON"), ("PING", "3")],
    [("CLIENT", "REPLY", "OFF"), ("RESET",), ("PING",)],
    [("CLIENT", "REPLY", "SKIP"), ("RESET",), ("PING",)],
    [("CLIENT", "REPLY", "SKIP"), ("EVAL", "return redis.call('client','reply','off')", "0"),
     ("PING",)],
    # Inside a transaction: the EXEC array's header counts replies that never leave, as Redis.
    [("MULTI",), ("CLIENT", "REPLY", "SKIP"), ("PING", "1"), ("EXEC",), ("PING", "2"),
     ("PING", "3")],
    [("MULTI",), ("CLIENT", "REPLY", "OFF"), ("PING", "1"), ("EXEC",), ("PING", "2")],
    [("MULTI",), ("CLIENT", "REPLY", "OFF"), ("PING", "1"), ("CLIENT", "REPLY", "ON"),
     ("PING", "2"), ("EXEC",), ("PING", "3")],
    [("CLIENT", "REPLY", "OFF"), ("MULTI",), ("CLIENT", "REPLY", "ON"), ("PING", "1"),
     ("EXEC",), ("PING", "3")],
    [("MULTI",), ("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "ON"), ("PING", "1"),
     ("EXEC",), ("PING", "3"), ("PING", "4")],
    [("CLIENT", "REPLY", "SKIP"), ("MULTI",), ("CLIENT", "REPLY", "ON"), ("PING", "1"),
     ("EXEC",), ("PING", "3")],
    [("MULTI",), ("PING", "1"), ("CLIENT", "REPLY", "SKIP"), ("EXEC",), ("PING", "3"),
     ("PING", "4")],
    [("MULTI",), ("CLIENT", "REPLY", "SKIP"), ("EXEC",), ("RESET",), ("PING",)],
])
def test_reply_modes_send_the_same_bytes(both, commands):
    def scenario(connect):
        conn = connect()
        conn.send(*commands, ("CLIENT", "REPLY", "ON"), END)
        return conn.until(b"$3\r\nend\r\n")

    both(scenario)


@pytest.mark.parametrize("protocol", [2, 3])
def test_pushes_leave_while_replies_are_off(both, protocol):
    def scenario(connect):
        subscriber, publisher = connect(), connect()
        if protocol == 3:
            subscriber.send(("HELLO", 3))
            subscriber.until(b"*0\r\n")  # the end of HELLO's map (modules, none)
        subscriber.send(("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "ch"))
        record = [subscriber.until(b":1\r\n")]  # the confirmation is a push: it leaves
        publisher.call("PUBLISH", "ch", "m1")
        record.append(subscriber.until(b"m1\r\n"))
        # RESP2 refuses CLIENT REPLY while subscribed: its error is silenced too, and the PING's
        # reply; RESP3 turns replies back on.
        subscriber.send(("CLIENT", "REPLY", "ON"), ("PING",))
        record.append(subscriber.until(b"+PONG\r\n") if protocol == 3 else subscriber.received())
        return record

    both(scenario)


def test_tracking_invalidations_leave_while_replies_are_off(both):
    def scenario(connect):
        reader, writer = connect(), connect()
        reader.send(("HELLO", 3))
        reader.until(b"*0\r\n")  # the end of HELLO's map (modules, none)
        reader.send(("CLIENT", "TRACKING", "ON"), ("GET", "t"))
        record = [reader.until(b"_\r\n")]
        reader.send(("CLIENT", "REPLY", "OFF"))
        writer.call("SET", "t", "1")
        record.append(reader.until(b"t\r\n"))
        reader.send(("GET", "t"), ("CLIENT", "REPLY", "ON"), END)
        record.append(reader.until(b"end\r\n"))
        return record

    both(scenario)


def test_a_blocked_commands_late_reply_is_silenced_too(both):
    def scenario(connect):
        waiting, pusher = connect(), connect()
        waiting.send(("CLIENT", "REPLY", "SKIP"), ("BLPOP", "queue", "0"))
        record = [waiting.received()]
        pusher.call("RPUSH", "queue", "x")
        waiting.send(("PING", "next"))  # SKIP was used up by BLPOP
        record.append(waiting.until(b"next\r\n"))
        waiting.send(("CLIENT", "REPLY", "OFF"), ("BLPOP", "queue", "0"))
        pusher.wait_blocked_clients(1)
        pusher.call("RPUSH", "queue", "y")
        waiting.send(("CLIENT", "REPLY", "ON"), END)
        record.append(waiting.until(b"end\r\n"))
        record.append(pusher.call("LLEN", "queue"))
        return record

    both(scenario)


def test_a_held_command_keeps_the_skip_that_applies_to_it(both):
    def scenario(connect):
        admin, client = connect(), connect()
        admin.call("CLIENT", "PAUSE", LONG_PAUSE_MS, "WRITE")
        client.send(("CLIENT", "REPLY", "SKIP"), ("SET", "k", "v"), ("GET", "k"))
        record = [client.received()]
        admin.call("CLIENT", "UNPAUSE")
        record.append(client.until(b"\r\n"))
        return record

    assert both(scenario) == [b"", b"$1\r\nv\r\n"]


def test_a_monitors_lines_are_silenced_while_replies_are_off(both):
    def scenario(connect):
        monitor, writer = connect(), connect()
        monitor.call("MONITOR")
        monitor.send(("CLIENT", "REPLY", "OFF"))
        writer.call("SET", "m", "1")
        silent = monitor.received()
        monitor.send(("CLIENT", "REPLY", "ON"))
        after = monitor.until(b'"CLIENT" "REPLY" "ON"\r\n')  # (timestamps and ports differ)
        return [silent, after.startswith(b"+OK\r\n+"), after.count(b"\r\n")]

    both(scenario)
