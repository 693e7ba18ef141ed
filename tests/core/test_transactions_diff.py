"""MULTI / EXEC / DISCARD / WATCH / UNWATCH against real Redis, including aborts caused by
other connections, expiry and flushes."""
from __future__ import annotations

import time

import pytest

from tests.support.differential import Differential
from tests.support.respclient import Err, NullArray


@pytest.fixture
def other(real_redis, mini):
    """A second connection to each server."""
    pair = Differential(real_redis.port, mini.port)
    yield pair
    pair.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request, diff):
    diff.hello(request.param)
    return request.param


def test_queue_and_exec(diff, proto):
    diff.check("MULTI")
    diff.check("SET", "k", "v")
    diff.check("RPUSH", "l", "a", "b")
    diff.check("LRANGE", "l", 0, -1)
    diff.check("GET", "k")
    diff.check("EXEC")
    diff.check("MULTI")
    diff.check("EXEC")  # empty transaction


def test_runtime_errors_inside_exec_do_not_stop_it(diff, proto):
    diff.check("SET", "s", "v")
    diff.check("MULTI")
    diff.check("LPUSH", "s", "x")  # WRONGTYPE when run
    diff.check("INCR", "s")
    diff.check("LPOP", "s", -1)
    diff.check("SET", "after", "1")
    diff.check("EXEC")
    diff.check("GET", "after")


def test_queuing_errors_abort_with_execabort(diff):
    diff.check("MULTI")
    diff.check("SET", "k", "v")
    diff.check_error("NOSUCHCOMMAND", "x")
    diff.check("SET", "k2", "v")  # still queued after the error
    diff.check_error("EXEC")
    diff.check("EXISTS", "k", "k2")
    diff.check_error("EXEC")  # the transaction is gone
    diff.check("MULTI")
    diff.check_error("GET")  # arity
    diff.check_error("EXEC")
    diff.check("MULTI")
    diff.check_error("LPUSH", "l")
    diff.check_error("DISCARD", "extra")
    diff.check("DISCARD")
    diff.check("MULTI")
    diff.check_error("EXEC", "extra")  # EXEC's own arity error flags the transaction too
    diff.check_error("EXEC")


def test_state_errors(diff, proto):
    diff.check_error("EXEC")
    diff.check_error("DISCARD")
    diff.check("MULTI")
    diff.check_error("MULTI")  # not fatal to the transaction
    diff.check_error("WATCH", "k")  # nor is this
    diff.check("SET", "k", "1")
    diff.check("EXEC")
    diff.check("MULTI")
    diff.check("INCR", "k")
    diff.check("DISCARD")
    diff.check("GET", "k")
    diff.check("UNWATCH")
    diff.check_error("WATCH")
    diff.check_error("UNWATCH", "x")
    diff.check_error("MULTI", "x")


def test_commands_inside_multi_that_run_at_once(diff):
    diff.check("MULTI")
    diff.check("SET", "a", "1")
    diff.check("UNWATCH")  # queued, not run at once
    diff.check("SELECT", 1)
    diff.check("SET", "a", "2")
    diff.check("EXEC")
    diff.check("GET", "a")
    diff.check("SELECT", 0)
    diff.check("GET", "a")


def test_watched_key_changed_by_another_client_aborts(diff, other, proto):
    diff.check("SET", "k", "1")
    diff.check("WATCH", "k")
    other.check("SET", "k", "2")
    diff.check("MULTI")
    diff.check("SET", "k", "3")
    diff.check("EXEC")
    diff.check("GET", "k")
    # EXEC unwatched: the next transaction runs.
    diff.check("MULTI")
    diff.check("SET", "k", "4")
    diff.check("EXEC")


def test_change_while_queued_aborts(diff, other):
    diff.check("RPUSH", "l", "a")
    diff.check("WATCH", "l", "other")
    diff.check("MULTI")
    diff.check("LPOP", "l")
    other.check("RPUSH", "l", "b")
    diff.check("EXEC")
    diff.check("LRANGE", "l", 0, -1)


def test_own_change_before_multi_aborts(diff):
    diff.check("WATCH", "k")
    diff.check("SET", "k", "mine")
    diff.check("MULTI")
    diff.check("GET", "k")
    diff.check("EXEC")


@pytest.mark.parametrize("change", [
    ("DEL", "k"), ("EXPIRE", "k", 100), ("PERSIST", "k"), ("RPUSH", "k", "z"), ("LPOP", "k"),
    ("LSET", "k", 0, "z"), ("LTRIM", "k", 0, -1), ("LINSERT", "k", "BEFORE", "a", "z"),
    ("LREM", "k", 0, "a"), ("RPOPLPUSH", "k", "k"), ("LMOVE", "k", "other", "LEFT", "LEFT"),
    ("RENAME", "k", "k2"), ("FLUSHDB",), ("FLUSHALL",), ("SWAPDB", 0, 1),
    # Changes that change nothing must not abort.
    ("LREM", "k", 0, "nope"), ("LINSERT", "k", "BEFORE", "nope", "z"), ("LPUSHX", "missing", "z"),
    ("DEL", "missing"), ("LPOP", "k", 0), ("GET", "other"), ("LRANGE", "k", 0, -1),
])
def test_what_touches_a_watched_key(diff, other, change):
    diff.check("RPUSH", "k", "a", "b")
    diff.check("PEXPIRE", "k", 100_000)
    diff.check("WATCH", "k")
    other.check(*change)
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_watching_a_missing_key(diff, other):
    diff.check("WATCH", "missing")
    other.check("DEL", "missing")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")
    diff.check("WATCH", "missing")
    other.check("RPUSH", "missing", "now")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_watched_key_that_expires_aborts(diff, proto):
    diff.check("SET", "k", "v")
    diff.check("PEXPIRE", "k", 1)
    diff.check("SET", "k2", "v", "PX", 30)
    diff.check("WATCH", "k2")
    time.sleep(0.05)
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_watched_key_already_expired_at_watch(diff):
    diff.check("SET", "k", "v", "PX", 1)
    time.sleep(0.02)
    diff.check("WATCH", "k")
    diff.check("GET", "k")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_unwatch_and_discard_forget_watches(diff, other):
    diff.check("WATCH", "a", "b", "a")
    diff.check("UNWATCH")
    other.check("SET", "a", "1")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")
    diff.check("WATCH", "a")
    diff.check("MULTI")
    diff.check("DISCARD")
    other.check("SET", "a", "2")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_exec_abort_also_unwatches(diff, other):
    diff.check("WATCH", "a")
    other.check("SET", "a", "1")
    diff.check("MULTI")
    assert diff.check("EXEC") is NullArray
    other.check("SET", "a", "2")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")
    diff.check("WATCH", "a")
    diff.check("MULTI")
    diff.check_error("NOSUCH")
    diff.check_error("EXEC")
    other.check("SET", "a", "3")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_watch_is_per_database(diff, other):
    diff.check("SELECT", 2)
    diff.check("WATCH", "k")
    other.check("SET", "k", "db0")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")
    diff.check("WATCH", "k")
    other.check("SELECT", 2)
    other.check("SET", "k", "db2")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_execabort_wins_over_dirty_watch(diff, other):
    diff.check("WATCH", "k")
    other.check("SET", "k", "1")
    diff.check("MULTI")
    diff.check_error("NOSUCH")
    assert isinstance(diff.check("EXEC"), Err)


def test_reset_leaves_the_transaction(diff, other):
    diff.check("WATCH", "k")
    diff.check("MULTI")
    diff.check("SET", "k", "1")
    diff.check("RESET")
    diff.check_error("EXEC")
    other.check("SET", "k", "2")
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")


def test_nothing_runs_between_queued_commands(diff, other):
    """EXEC is atomic: another client's commands sent at the same time run before or after
    the whole transaction, never between its commands."""
    diff.check("MULTI")
    for n in range(50):
        diff.check("RPUSH", "l", n)
    diff.check("LRANGE", "l", 0, -1)
    ours = [str(n).encode() for n in range(50)]
    for client, other_client in ((diff.redis, other.redis), (diff.minired, other.minired)):
        other_client.send_raw(b"".join(b"*3\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$5\r\nother\r\n"
                                       for _ in range(20)))
        replies = client.call("EXEC")
        for _ in range(20):
            other_client.read()
        seen = replies[-1]
        start = seen.index(b"0")
        assert seen[start:start + 50] == ours
        assert len(seen) == 50 + seen.count(b"other")


def test_a_refused_exec_ends_the_transaction(diff, other):
    """Whatever refuses EXEC (its arity, an ACL rule; BUSY in tests/scripting/test_busy_diff.py)
    discards the transaction and says why, inside MULTI or not, as execCommandAbort does."""
    diff.check("CONFIG", "RESETSTAT")
    diff.check("EXEC", "extra")
    diff.check("MULTI")
    diff.check("SET", "k", "v")
    diff.check("EXEC", "extra")
    diff.check("PING", "out of MULTI")
    other.check("ACL", "SETUSER", "noexec", "on", "nopass", "+@all", "~*", "-exec")
    try:
        diff.check("AUTH", "noexec", "x")
        diff.check("WATCH", "k")
        diff.check("MULTI")
        diff.check("SET", "k", "v")
        diff.check("EXEC")
        diff.check("PING", "out of MULTI")
        diff.check("EXEC")
        diff.check("AUTH", "default", "x")
    finally:
        other.both("ACL", "DELUSER", "noexec")
    diff.check("EXISTS", "k")
    diff.check("INFO", "errorstats")


def test_exec_of_a_queued_script_that_may_write_is_refused_like_a_write(real_redis, mini):
    """An EVAL whose shebang does not say no-writes counts as a write at EXEC (Redis's
    evalGetCommandFlags): refused with EXECABORT when writes are refused meanwhile; one without
    a shebang, or with no-writes, runs."""
    from tests.support.respclient import RawClient

    replies = []
    for port in (real_redis.port, mini.port):
        admin, client = RawClient(port), RawClient(port)
        seen = []
        for body in ("#!lua\nreturn 1", "#!lua flags=no-writes\nreturn 2", "return 3"):
            client.call("MULTI")
            seen.append(client.call("EVAL", body, "0"))
            admin.call("CONFIG", "SET", "min-replicas-to-write", "1")
            seen.append(client.call("EXEC"))
            admin.call("CONFIG", "SET", "min-replicas-to-write", "0")
        replies.append(seen)
        admin.close()
        client.close()
    assert replies[1] == replies[0]
