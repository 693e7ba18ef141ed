"""Blocking list commands against real Redis, with several connections per server: who is
served, in which order, with what, and when (timeouts, CLIENT UNBLOCK, disconnects, MULTI,
scripts)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.differential import Differential
from tests.support.respclient import Err, NullArray, RawClient, Verbatim, encode_command
from tests.support.waiting import blocked_clients, wait_blocked


@pytest.fixture
def connect(diff, real_redis, mini):
    """connect() -> one more connection to each server (a Differential), closed after the test."""
    opened: list[Differential] = []

    def open_pair() -> Differential:
        pair = Differential(real_redis.port, mini.port)
        opened.append(pair)
        return pair

    yield open_pair
    for pair in opened:
        pair.close()
    wait_blocked(diff.redis, diff.minired, count=0)


def block(diff, pair: Differential, *args, already_blocked: int = 0) -> None:
    """Send a blocking command on `pair` and wait until it is blocked on both servers."""
    pair.redis.send(*args)
    pair.minired.send(*args)
    wait_blocked(diff.redis, diff.minired, count=already_blocked + 1)


def test_clients_blocked_on_one_key_are_served_in_order(diff, connect):
    waiters = [connect() for _ in range(4)]
    for n, pair in enumerate(waiters):
        block(diff, pair, "BLPOP", "q", 0, already_blocked=n)
    diff.check("RPUSH", "q", "a", "b", "c")
    assert [pair.read_both() for pair in waiters[:3]] == [[b"q", b"a"], [b"q", b"b"], [b"q", b"c"]]
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("LLEN", "q")
    diff.check("LPUSH", "q", "d")
    waiters[3].read_both()
    diff.check("EXISTS", "q")


def test_several_keys_served_from_the_key_that_became_ready(diff, connect):
    first, second, third = connect(), connect(), connect()
    block(diff, first, "BLPOP", "k1", "k2", 0)
    block(diff, second, "BRPOP", "k2", "k1", 0, already_blocked=1)
    block(diff, third, "BLPOP", "k1", 0, already_blocked=2)
    # Inside a transaction k2 is written first, so its waiters are served first.
    diff.check("MULTI")
    diff.check("RPUSH", "k2", "x", "y")
    diff.check("RPUSH", "k1", "z", "w")
    diff.check("EXEC")
    first.read_both()
    second.read_both()
    third.read_both()
    diff.check("LRANGE", "k1", 0, -1)
    diff.check("LRANGE", "k2", 0, -1)


def test_waiters_on_different_keys_in_write_order(diff, connect):
    pairs = [connect() for _ in range(3)]
    block(diff, pairs[0], "BLPOP", "a", 0)
    block(diff, pairs[1], "BLPOP", "b", 0, already_blocked=1)
    block(diff, pairs[2], "BLMPOP", 0, 2, "a", "b", "RIGHT", "COUNT", 2, already_blocked=2)
    diff.check("MULTI")
    diff.check("RPUSH", "b", "b1", "b2", "b3")
    diff.check("RPUSH", "a", "a1")
    diff.check("EXEC")
    for pair in pairs:
        pair.read_both()
    diff.check("LRANGE", "a", 0, -1)
    diff.check("LRANGE", "b", 0, -1)


def test_blmove_into_intermediate_list(diff, connect):
    """RQ's pattern: a worker moves a job from the queue into its own processing list."""
    worker, watcher = connect(), connect()
    block(diff, worker, "BLMOVE", "queue", "processing", "RIGHT", "LEFT", 0)
    block(diff, watcher, "BLPOP", "processing", 0, already_blocked=1)
    diff.check("LPUSH", "queue", "job-1")
    assert worker.read_both() == b"job-1"
    # The move made "processing" ready in the same pass: its waiter got the job too.
    assert watcher.read_both() == [b"processing", b"job-1"]
    diff.check("EXISTS", "queue", "processing")
    block(diff, worker, "BRPOPLPUSH", "queue", "processing", 0)
    diff.check("RPUSH", "queue", "job-2", "job-3")
    worker.read_both()
    diff.check("LRANGE", "queue", 0, -1)
    diff.check("LRANGE", "processing", 0, -1)


def test_blmove_target_of_wrong_type_ends_the_wait(diff, connect):
    worker = connect()
    block(diff, worker, "BLMOVE", "src", "dst", "LEFT", "RIGHT", 0)
    diff.check("SET", "dst", "string")
    diff.check("RPUSH", "src", "job")
    assert isinstance(worker.read_both(), Err)
    diff.check("LRANGE", "src", 0, -1)


def test_key_of_another_type_keeps_waiting(diff, connect):
    waiter = connect()
    block(diff, waiter, "BLPOP", "k", 0)
    diff.check("SET", "k", "string")
    diff.check("SADD", "k2", "member")
    diff.check("RENAME", "k2", "k")
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("DEL", "k")
    diff.check("RPUSH", "k", "v")
    assert waiter.read_both() == [b"k", b"v"]


@pytest.mark.parametrize("protocol", [2, 3])
def test_timeouts(diff, connect, protocol):
    waiter = connect()
    waiter.hello(protocol)
    for args in [("BLPOP", "a", "b", 0.05), ("BRPOP", "a", "0.01"), ("BLMPOP", "0.02", 1, "a", "LEFT"),
                 ("BLMOVE", "a", "b", "LEFT", "RIGHT", 0.03), ("BRPOPLPUSH", "a", "b", "0.001"),
                 ("BLPOP", "a", "0.0001"), ("BLPOP", "a", "1e-2"), ("BLPOP", "a", "0x1p-8")]:
        # A timeout that never fired would fail the read (the connections time out at 10 s).
        waiter.check(*args)


def test_timeout_argument_errors(diff):
    for timeout in ["-1", "-0.0011", "-0.00100000000000000001", "abc", "", " 1", "1 ", "nan", "inf",
                    "-inf", "1e17", "1e400", "1e5000", "1e-5000", "0x", "1e", "1_0", "1,5", "+-1",
                    "9223372036854775808"]:
        diff.check_error("BLPOP", "k", timeout)
        diff.check_error("BLMOVE", "a", "b", "LEFT", "LEFT", timeout)
        diff.check_error("BLMPOP", timeout, 1, "k", "LEFT")
    # Argument errors come before the timeout's.
    diff.check_error("BLMOVE", "a", "b", "UP", "LEFT", "x")
    diff.check_error("BLMPOP", "x", 0, "k", "LEFT")
    diff.check_error("BLMPOP", "x", 1, "k", "UP")
    diff.check_error("BLMPOP", "x", 1, "k", "LEFT", "COUNT", 0)


def test_tiny_negative_timeout_blocks_forever(diff, connect):
    """Redis rounds -0.0005 s (and, in long double, -0.001 s) up to 0 ms: no timeout at all."""
    waiter = connect()
    ids = waiter.redis.call("CLIENT", "ID"), waiter.minired.call("CLIENT", "ID")
    for timeout in ["-0.0005", "-0.001", "-0"]:
        block(diff, waiter, "BLPOP", "k", timeout)
        wait_blocked(diff.redis, diff.minired, count=1)
        assert diff.redis.call("CLIENT", "UNBLOCK", ids[0]) == 1
        assert diff.minired.call("CLIENT", "UNBLOCK", ids[1]) == 1
        waiter.read_both()


@pytest.mark.parametrize("protocol", [2, 3])
def test_client_unblock(diff, connect, protocol):
    waiter = connect()
    waiter.hello(protocol)
    ids = waiter.redis.call("CLIENT", "ID"), waiter.minired.call("CLIENT", "ID")
    for command in [("BLPOP", "k", 0), ("BLMOVE", "k", "d", "LEFT", "LEFT", 0),
                    ("BLMPOP", 0, 1, "k", "LEFT")]:
        for reason in [(), ("TIMEOUT",), ("error",)]:
            block(diff, waiter, *command)
            assert diff.redis.call("CLIENT", "UNBLOCK", ids[0], *reason) == 1
            assert diff.minired.call("CLIENT", "UNBLOCK", ids[1], *reason) == 1
            waiter.read_both()
            wait_blocked(diff.redis, diff.minired, count=0)
    # Not blocked (any more), or no such client.
    assert diff.redis.call("CLIENT", "UNBLOCK", ids[0]) == 0
    assert diff.minired.call("CLIENT", "UNBLOCK", ids[1]) == 0
    diff.check("CLIENT", "UNBLOCK", 999999)
    diff.check_error("CLIENT", "UNBLOCK", "abc")
    diff.check_error("CLIENT", "UNBLOCK", "abc", "later")
    diff.check_error("CLIENT", "UNBLOCK", 1, "later")
    diff.check_error("CLIENT", "UNBLOCK", 1, "timeout", "extra")
    diff.check_error("CLIENT", "UNBLOCK")
    # The unblocked client carries on normally.
    waiter.check("PING")


def test_commands_pipelined_after_a_blocking_one_wait_for_it(diff, connect):
    waiter = connect()
    for client in (waiter.redis, waiter.minired):
        client.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n"
                        b"*2\r\n$4\r\nLLEN\r\n$1\r\nq\r\n")
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("RPUSH", "q", "a", "b")
    assert waiter.read_both() == [b"q", b"a"]
    waiter.read_both()
    assert waiter.read_both() == 1


def test_disconnect_while_blocked_leaves_nothing_behind(diff, connect):
    waiter, other = connect(), connect()
    block(diff, waiter, "BLPOP", "q", 0)
    block(diff, other, "BLMOVE", "q", "dst", "LEFT", "LEFT", 0, already_blocked=1)
    waiter.close()
    other.close()
    wait_blocked(diff.redis, diff.minired, count=0)
    diff.check("RPUSH", "q", "x")
    diff.check("LRANGE", "q", 0, -1)
    diff.check("EXISTS", "dst")


def test_blocking_commands_inside_multi_do_not_block(diff):
    diff.check("RPUSH", "full", "a", "b", "c")
    diff.check("MULTI")
    for args in [("BLPOP", "empty", 0), ("BRPOP", "empty", "full", 0), ("BLMPOP", 0, 1, "empty", "LEFT"),
                 ("BLMOVE", "empty", "d", "LEFT", "LEFT", 0), ("BRPOPLPUSH", "empty", "d", 10),
                 ("BLMOVE", "full", "d", "LEFT", "LEFT", 0), ("BLMPOP", 5, 1, "full", "RIGHT", "COUNT", 5),
                 ("BLPOP", "empty", -1)]:
        diff.check(*args)
    diff.check("EXEC")
    diff.hello(3)
    diff.check("MULTI")
    diff.check("BLPOP", "empty", 0)
    diff.check("BLMOVE", "empty", "d", "LEFT", "LEFT", 0)
    diff.check("EXEC")


def test_pushes_in_a_transaction_serve_waiters_after_it(diff, connect):
    waiter = connect()
    block(diff, waiter, "BLPOP", "q", 0)
    diff.check("MULTI")
    diff.check("RPUSH", "q", "a", "b")
    diff.check("LPOP", "q")
    diff.check("LRANGE", "q", 0, -1)
    diff.check("EXEC")
    assert waiter.read_both() == [b"q", b"b"]
    block(diff, waiter, "BLPOP", "q", 0)
    diff.check("MULTI")
    diff.check("RPUSH", "q", "a")
    diff.check("DEL", "q")
    diff.check("EXEC")
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("RPUSH", "q", "c")
    assert waiter.read_both() == [b"q", b"c"]


def test_pushes_in_a_script_serve_waiters_after_it(diff, connect):
    waiter = connect()
    block(diff, waiter, "BRPOP", "q", 0)
    diff.check("EVAL", "redis.call('rpush', KEYS[1], 'a', 'b'); redis.call('rpop', KEYS[1]);"
               " return redis.call('llen', KEYS[1])", 1, "q")
    assert waiter.read_both() == [b"q", b"a"]
    diff.check("EVAL", "return redis.pcall('blpop', KEYS[1], 0)", 1, "q")
    diff.check("EVAL", "return redis.pcall('blmpop', 0, 1, KEYS[1], 'LEFT')", 1, "q")


def test_waiters_stay_in_their_database(diff, connect):
    waiter = connect()
    waiter.check("SELECT", 1)
    block(diff, waiter, "BLPOP", "k", 0)
    diff.check("RPUSH", "k", "db0")
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("SELECT", 1)
    diff.check("RPUSH", "k", "db1")
    assert waiter.read_both() == [b"k", b"db1"]


def test_flush_then_push_serves_waiter(diff, connect):
    waiter = connect()
    block(diff, waiter, "BLMPOP", 0, 2, "a", "b", "LEFT", "COUNT", 3)
    diff.check("FLUSHALL")
    wait_blocked(diff.redis, diff.minired, count=1)
    diff.check("RPUSH", "b", 1, 2)
    assert waiter.read_both() == [b"b", [b"1", b"2"]]
    diff.check("EXISTS", "b")


def test_watch_sees_the_pop_that_served_a_waiter(diff, connect):
    waiter, watcher = connect(), connect()
    block(diff, waiter, "BLPOP", "q", 0)
    watcher.check("WATCH", "q")
    diff.check("RPUSH", "q", "x")
    waiter.read_both()
    watcher.check("MULTI")
    watcher.check("PING")
    assert watcher.check("EXEC") is NullArray


@pytest.fixture
def private_minired():
    """A minired of this test's own: moving its clock must not disturb the shared server."""
    from minired.embed import EmbeddedServer

    server = EmbeddedServer(port=0, time_control=True).start()
    try:
        yield server
    finally:
        server.stop()


def test_minired_advance_times_out_blocked_clients(private_minired):
    control, waiter = RawClient(private_minired.port), RawClient(private_minired.port)

    try:
        waiter.send("BLPOP", "k", 100)
        wait_blocked(control)
        control.call("MINIRED", "ADVANCE", 50_000)
        assert blocked_clients(control) == 1
        control.call("MINIRED", "ADVANCE", 50_001)
        assert waiter.read() is NullArray
        assert blocked_clients(control) == 0
        # A forever wait ignores the clock.
        waiter.send("BLMOVE", "k", "d", "LEFT", "LEFT", 0)
        wait_blocked(control)
        control.call("MINIRED", "ADVANCE", 10**9)
        assert blocked_clients(control) == 1
        control.call("RPUSH", "k", "v")
        assert waiter.read() == b"v"
    finally:
        waiter.close()
        control.close()


def test_swapdb_serves_waiters_of_the_swapped_in_data(diff, connect):
    waiter = connect()
    waiter.check("SELECT", 1)
    block(diff, waiter, "BLPOP", "k", 0)
    diff.check("RPUSH", "k", "from-db0")
    diff.check("SWAPDB", 0, 1)
    assert waiter.read_both() == [b"k", b"from-db0"]


def test_keys_arriving_by_rename_and_duplicates_in_the_key_list(diff, connect):
    waiter = connect()
    block(diff, waiter, "BRPOP", "k", "k", "other", 0)
    diff.check("RPUSH", "tmp", "a", "b")
    diff.check("RENAME", "tmp", "k")
    assert waiter.read_both() == [b"k", b"b"]
    diff.check("LRANGE", "k", 0, -1)


def test_blmove_rotating_one_list(diff, connect):
    waiter = connect()
    block(diff, waiter, "BLMOVE", "k", "k", "RIGHT", "LEFT", 0)
    diff.check("RPUSH", "k", "a")
    assert waiter.read_both() == b"a"
    diff.check("LRANGE", "k", 0, -1)


def test_push_after_a_timeout_stays_in_the_list(diff, connect):
    waiter = connect()
    for client in (waiter.redis, waiter.minired):
        client.send("BLPOP", "q", "0.05")
        client.send("PING")
    assert waiter.read_both() is NullArray
    waiter.read_both()
    diff.check("RPUSH", "q", "x")
    diff.check("LRANGE", "q", 0, -1)


def test_served_replies_in_resp3(diff, connect):
    waiters = [connect() for _ in range(3)]
    for pair in waiters:
        pair.hello(3)
    block(diff, waiters[0], "BLPOP", "q", 0)
    block(diff, waiters[1], "BLMPOP", 0, 1, "q", "RIGHT", "COUNT", 5, already_blocked=1)
    block(diff, waiters[2], "BLMOVE", "q", "d", "LEFT", "LEFT", 0, already_blocked=2)
    diff.check("RPUSH", "q", "1", "2", "3", "4")
    diff.check("RPUSH", "q", "5")
    for pair in waiters:
        pair.read_both()


_waits = st.sampled_from([
    ("BLPOP", "a", 0), ("BRPOP", "b", "a", 0), ("BLPOP", "c", "b", 0),
    ("BLMPOP", 0, 2, "a", "c", "LEFT", "COUNT", 2), ("BLMPOP", 0, 1, "b", "RIGHT"),
    ("BLMOVE", "a", "b", "LEFT", "RIGHT", 0), ("BLMOVE", "c", "a", "RIGHT", "LEFT", 0),
    ("BRPOPLPUSH", "b", "c", 0),
])
_writes = st.one_of(
    st.tuples(st.sampled_from(["RPUSH", "LPUSH"]), st.sampled_from(["a", "b", "c"]),
              st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3)),
    st.tuples(st.just("MULTI"), st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                                                   st.sampled_from(["v", "w"])),
                                         min_size=1, max_size=3), st.just(None)),
)


@settings(max_examples=12)
@given(waits=st.lists(_waits, min_size=1, max_size=4), writes=st.lists(_writes, max_size=4))
def test_random_waiters_and_writes_match_redis(diff, real_redis, mini, waits, writes):
    diff.both("FLUSHALL")
    pairs = [Differential(real_redis.port, mini.port) for _ in waits]
    try:
        ids = [(pair.redis.call("CLIENT", "ID"), pair.minired.call("CLIENT", "ID")) for pair in pairs]
        for n, (pair, args) in enumerate(zip(pairs, waits)):
            block(diff, pair, *args, already_blocked=n)
        for command, key_or_pushes, elements in writes:
            if command == "MULTI":
                diff.check("MULTI")
                for key, element in key_or_pushes:
                    diff.check("RPUSH", key, element)
                diff.check("EXEC")
            else:
                diff.check(command, key_or_pushes, *elements)
        still_blocked = blocked_clients(diff.redis)
        assert blocked_clients(diff.minired) == still_blocked
        for redis_id, minired_id in ids:
            assert diff.redis.call("CLIENT", "UNBLOCK", redis_id) == \
                diff.minired.call("CLIENT", "UNBLOCK", minired_id)
        for pair in pairs:
            pair.read_both()
        for key in ("a", "b", "c"):
            diff.check("LRANGE", key, 0, -1)
    finally:
        for pair in pairs:
            pair.close()
        wait_blocked(diff.redis, diff.minired, count=0)


def test_push_right_after_killing_a_blocked_client_stays_in_the_list(diff, connect):
    waiter = connect()
    ids = waiter.redis.call("CLIENT", "ID"), waiter.minired.call("CLIENT", "ID")
    block(diff, waiter, "BLPOP", "q", 0)
    for client, client_id in zip((diff.redis, diff.minired), ids):
        assert client.pipeline([("CLIENT", "KILL", "ID", client_id), ("RPUSH", "q", "v")]) == [1, 1]
    diff.check("LRANGE", "q", 0, -1)


def _error_counters(client: RawClient) -> dict[str, str]:
    """errorstats, total_error_replies and the commands' calls/failed_calls (usec aside)."""
    counters = {}
    for section in ("errorstats", "stats", "commandstats"):
        info = client.call("INFO", section)
        text = info.text if isinstance(info, Verbatim) else info
        for line in text.decode().splitlines():
            name, _, value = line.partition(":")
            if name.startswith("errorstat_") or name == "total_error_replies":
                counters[name] = value
            elif name.startswith("cmdstat_") and name not in ("cmdstat_info", "cmdstat_config"):
                counters[name] = ",".join(part for part in value.split(",")
                                          if not part.startswith("usec"))
    return counters


@pytest.mark.parametrize("case", ["nogroup", "unblock-error", "wrongtype"])
def test_a_blocked_command_that_ends_in_an_error_is_counted_once(diff, connect, case):
    """The error a blocked command ends with counts in errorstats, total_error_replies and its
    failed_calls, as Redis's updateStatsOnUnblock does (tests/unit/type/stream-cgroups.tcl)."""
    waiter = connect()
    ids = waiter.redis.call("CLIENT", "ID"), waiter.minired.call("CLIENT", "ID")
    if case == "nogroup":
        diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    diff.check("CONFIG", "RESETSTAT")
    if case == "nogroup":
        block(diff, waiter, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", 0, "STREAMS", "s", ">")
        diff.check("XGROUP", "DESTROY", "s", "g")
    elif case == "unblock-error":
        block(diff, waiter, "BLPOP", "k", 0)
        assert diff.redis.call("CLIENT", "UNBLOCK", ids[0], "ERROR") == 1
        assert diff.minired.call("CLIENT", "UNBLOCK", ids[1], "ERROR") == 1
    else:
        block(diff, waiter, "BLMOVE", "src", "dst", "LEFT", "RIGHT", 0)
        diff.check("SET", "dst", "string")
        diff.check("RPUSH", "src", "job")
    assert isinstance(waiter.read_both(), Err)
    assert _error_counters(diff.minired) == _error_counters(diff.redis)


def _unblock_and_read(diff, waiters: list[Differential]) -> list:
    """How many wait still (the same on both), then their replies once CLIENT UNBLOCK ended
    them: a waiter served earlier has its reply waiting already."""
    still = blocked_clients(diff.redis)
    assert blocked_clients(diff.minired) == still
    for pair in waiters:
        redis_id, minired_id = pair.ids
        assert diff.redis.call("CLIENT", "UNBLOCK", redis_id) == \
            diff.minired.call("CLIENT", "UNBLOCK", minired_id)
    return [still] + [pair.read_both() for pair in waiters]


def _waiter(connect) -> Differential:
    pair = connect()
    pair.ids = pair.redis.call("CLIENT", "ID"), pair.minired.call("CLIENT", "ID")
    return pair


# Found by bench/grammar_fuzz.py --blocking. Redis 7.0 queues a key for its waiters only when
# dbAdd adds it, if some client anywhere blocks for the new value's type (signalKeyAsReady's
# blocked_clients_by_type), and when XADD appends or a stream goes: an overwrite (setKey on an
# existing key: SORT STORE, ZUNIONSTORE) or a change in place wakes no one.
@pytest.mark.parametrize("writes", [
    # The sorted set is queued for no one (nobody waits for a sorted set); SORT STORE then
    # overwrites it with a list: not queued either.
    [("ZADD", "c", 1, "w"), ("SORT", "c", "ALPHA", "STORE", "c")],
    # The list arrives by an overwrite; the push onto it is a change in place.
    [("SET", "c", "s"), ("RPUSH", "x", 1), ("SORT", "x", "STORE", "c"), ("LPUSH", "c", "y")],
    # The same inside a transaction: the list is there when the waiters are served, unqueued.
    [("MULTI",), ("ZADD", "c", 1, "w"), ("SORT", "c", "ALPHA", "STORE", "c"), ("EXEC",)],
])
def test_a_list_that_arrives_by_an_overwrite_wakes_no_one(diff, connect, writes):
    waiter = _waiter(connect)
    block(diff, waiter, "BRPOPLPUSH", "c", "b", 0)
    for args in writes:
        diff.check(*args)
    assert _unblock_and_read(diff, [waiter]) == [1, NullArray]
    diff.check("LRANGE", "c", 0, -1)


def test_a_key_queued_for_a_type_someone_waits_for_serves_its_waiters(diff, connect):
    """With a client blocked for a sorted set elsewhere, ZADD queues the key: the list SORT
    STORE leaves there in the same transaction is served from."""
    list_waiter, zset_waiter = _waiter(connect), _waiter(connect)
    block(diff, list_waiter, "BLPOP", "c", 0)
    block(diff, zset_waiter, "BZPOPMIN", "j", 0, already_blocked=1)
    for args in [("MULTI",), ("ZADD", "c", 1, "w"), ("SORT", "c", "ALPHA", "STORE", "c"),
                 ("EXEC",)]:
        diff.check(*args)
    assert _unblock_and_read(diff, [list_waiter, zset_waiter]) == [1, [b"c", b"w"], NullArray]


def test_zunionstore_over_a_list_wakes_no_sorted_set_waiter(diff, connect):
    waiter = _waiter(connect)
    block(diff, waiter, "BZPOPMIN", "c", 0)
    diff.check("ZADD", "z", 1, "m")
    diff.check("RPUSH", "c", "x")  # queued for no one: nobody waits for a list
    diff.check("ZUNIONSTORE", "c", 1, "z")
    assert _unblock_and_read(diff, [waiter]) == [1, NullArray]


@pytest.mark.parametrize("write", [("XSETID", "s", "8-0"), ("XTRIM", "s", "MAXLEN", 0),
                                   ("XGROUP", "SETID", "s", "g", "0")])
def test_stream_changes_other_than_xadd_wake_no_reader(diff, connect, write):
    """XREAD after 1-0 on a stream whose last ID XSETID moves past it would be answered (with
    no entries) if it were woken: Redis does not wake it."""
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = _waiter(connect)
    block(diff, reader, "XREAD", "BLOCK", 0, "STREAMS", "s", "1-0")
    diff.check(*write)
    assert _unblock_and_read(diff, [reader]) == [1, NullArray]


@pytest.mark.parametrize("writes", [
    [("XADD", "s", "MAXLEN", 0, "1-1", "f", "v")],
    [("MULTI",), ("XADD", "s", "1-1", "f", "v"), ("XDEL", "s", "1-1"), ("EXEC",)],
])
def test_an_xadd_trimmed_at_once_answers_xreadgroup_with_no_entries(diff, connect, writes):
    """Found by bench/grammar_fuzz.py --blocking: Redis serves a woken XREADGROUP reader when
    the stream's last ID is past its group's, whether the entry is still there or not."""
    diff.check("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = _waiter(connect)
    block(diff, reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
    for args in writes:
        diff.check(*args)
    assert _unblock_and_read(diff, [reader]) == [0, [[b"s", []]]]
    diff.check("XINFO", "GROUPS", "s")
    diff.check("XPENDING", "s", "g")


def test_commands_pipelined_behind_a_wait_answer_before_a_kill(diff, connect):
    """Found by bench/grammar_fuzz.py --blocking: Redis runs an unblocked client's pipelined
    commands, and writes their replies, before it reads more input (processUnblockedClients,
    then the writes, in beforeSleep), so a CLIENT KILL sent once CLIENT UNBLOCK answered finds
    them answered. minired (on uvloop) read the KILL first most times and lost the reply."""
    for _ in range(10):
        waiter = _waiter(connect)
        both = (waiter.redis, waiter.minired)
        for client in both:
            client.send_raw(encode_command(["BZPOPMIN", "k", 0])
                            + encode_command(["LRANGE", "k", 0, -1]))
        wait_blocked(diff.redis, diff.minired)
        for client, client_id in zip((diff.redis, diff.minired), waiter.ids):
            assert client.call("CLIENT", "UNBLOCK", client_id) == 1
            assert client.call("CLIENT", "KILL", "ID", client_id) == 1
        assert waiter.read_both() is NullArray
        assert waiter.read_both() == []
        waiter.close()


@pytest.mark.parametrize("other", [("LPUSH", "s", "e1"), None])
def test_swapdb_ends_xreadgroup_where_its_stream_is_no_stream_any_more(diff, connect, other):
    """Redis's SWAPDB first signals, as a stream, every waited key that was a stream and is
    none after the swap (scanDatabaseForDeletedStreams): an XREADGROUP reader ends with an
    error, whether a list or nothing is there now. (Redis's unit/type/stream-cgroups.)"""
    diff.check("SELECT", 2)
    if other is not None:
        diff.check(*other)
    diff.check("SELECT", 1)
    diff.check("XADD", "s", "666", "f", "v")
    diff.check("XGROUP", "CREATE", "s", "g", "$")
    reader = _waiter(connect)
    reader.check("SELECT", 1)
    block(diff, reader, "XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s", ">")
    diff.check("SWAPDB", 1, 2)
    reply = reader.read_both()
    assert isinstance(reply, Err) and "no longer exists" in reply.message


def test_swapdb_leaves_a_list_waiter_whose_key_vanished_waiting(diff, connect):
    diff.check("SELECT", 1)
    waiter = _waiter(connect)
    waiter.check("SELECT", 1)
    block(diff, waiter, "BLPOP", "l", 0)
    diff.check("SELECT", 2)
    diff.check("RPUSH", "l", "x")
    diff.check("SWAPDB", 1, 2)   # the list arrives in db 1: the waiter is served
    assert waiter.read_both() == [b"l", b"x"]
    block(diff, waiter, "BLPOP", "l", 0)
    diff.check("SWAPDB", 1, 2)   # db 1 empty again: nothing to serve
    assert _unblock_and_read(diff, [waiter]) == [1, NullArray]
