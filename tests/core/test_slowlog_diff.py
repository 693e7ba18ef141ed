"""SLOWLOG against real Redis: what is logged (scripts' and transactions' commands one by one,
EXEC and blocked commands as Redis logs them), entry limits, argument trimming and redaction.

Ids, timestamps and durations differ between two servers: entries are compared by their
arguments, client address shape and client name.
"""
import pytest

from tests.support.differential import Err
from tests.support.respclient import RawClient
from tests.support.waiting import wait_blocked


@pytest.fixture
def slow(diff):
    diff.check("CONFIG", "SET", "slowlog-log-slower-than", "0")
    diff.check("SLOWLOG", "RESET")
    try:
        yield diff
    finally:
        for client in (diff.redis, diff.minired):
            client.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
            client.call("CONFIG", "SET", "slowlog-max-len", "128")
            client.call("SLOWLOG", "RESET")


def _shape(entries):
    def peer(addr: bytes) -> bytes:
        return addr if addr == b"?:0" else b"ip:port"
    return [(entry[3], peer(entry[4]), entry[5]) for entry in entries]


def _check_log(diff, *count):
    theirs, ours = diff.both("SLOWLOG", "GET", *count)
    assert not isinstance(ours, Err), ours
    assert _shape(ours) == _shape(theirs)
    for entry in ours:
        assert isinstance(entry[0], int) and entry[1] > 1_600_000_000 and entry[2] >= 0
    return ours


def test_max_len_get_count_and_reset(slow):
    slow.check("CONFIG", "SET", "slowlog-max-len", "10")
    for _ in range(100):
        slow.check("PING")
    slow.check("SLOWLOG", "LEN")
    for count in ("5", "0", "1", "-1", "10", "100"):
        _check_log(slow, count)
    for bad in ("-2", "-222", "x", "1.5"):
        slow.check("SLOWLOG", "GET", bad)
    slow.check("SLOWLOG", "GET", "1", "2")
    slow.check("CONFIG", "SET", "slowlog-log-slower-than", "100000")
    slow.check("SLOWLOG", "RESET")
    slow.check("PING")
    slow.check("SLOWLOG", "LEN")
    slow.check("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    slow.check("PING")
    slow.check("SLOWLOG", "LEN")


def test_commands_logged_as_sent(slow):
    slow.check("SADD", "set", "a", "b", "c", "d", "e")
    slow.check("SPOP", "set", "10", unordered=True)
    slow.check("GEOADD", "cool-cities", "-122.33207", "47.60621", "Seattle")
    slow.check("GETSET", "a", "5")
    slow.check("INCRBYFLOAT", "A", "1.0")
    slow.check("CLIENT", "SETNAME", "named")
    slow.check("SET", "k", "v")
    _check_log(slow, "-1")


def test_trimming_of_arguments(slow):
    slow.check("SADD", "set", *[str(i) for i in range(3, 34)])
    slow.check("SADD", "set", "foo", "A" * 129)
    slow.check("SADD", "set", *["B" * 200] * 40)
    slow.check("SET", "k", "x" * 128)
    _check_log(slow, "-1")


def test_sensitive_arguments_are_redacted(slow):
    for args in (("AUTH", "a"), ("AUTH", "a", "b"), ("AUTH", "a", "b", "c"),
                 ("HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"), ("HELLO", "2", "AUTH", "u"),
                 ("HELLO", "4", "AUTH", "u", "p"), ("HELLO", "3", "foo", "AUTH", "u", "p"),
                 ("HELLO", "2", "SETNAME", "x", "auth", "a", "b"),
                 ("ACL", "SETUSER", "slowlog test user", "+get", "+set"),
                 ("ACL", "SETUSER", "slowlog-test-user", "+get", "+set"),
                 ("CONFIG", "SET", "masterauth", ""), ("CONFIG", "SET", "MASTERUSER", ""),
                 ("CONFIG", "SET", "requirepass", "", "maxmemory", "0"),
                 ("CONFIG", "SET", "nosuch", "1", "masterauth", "x"),
                 ("CONFIG", "SET", "masterauth", "x", "maxmemory"),
                 # (no such key: NOKEY, nothing is connected to)
                 ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH", "pw"),
                 ("MIGRATE", "h", "1", "nokey", "0", "10", "COPY", "AUTH2", "u", "p", "REPLACE"),
                 ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH"),
                 ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH2", "u"),
                 ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH", "p", "FOO", "AUTH", "q"),
                 ("MIGRATE", "h", "1", "", "0", "10", "AUTH", "p", "KEYS", "a", "AUTH", "x")):
        slow.both(*args)
    try:
        _check_log(slow, "-1")
    finally:
        for client in (slow.redis, slow.minired):
            client.call("HELLO", "2")
            client.call("ACL", "DELUSER", "slowlog-test-user")
            client.call("CONFIG", "SET", "masterauth", "")


def test_scripts_and_transactions_log_each_command(slow):
    slow.check("EVAL", "redis.call('set','a','b') return redis.call('get','a')", "0")
    slow.check("MULTI")
    slow.check("INCR", "n")
    slow.check("LPUSH", "l", "x")
    slow.check("EXEC")
    _check_log(slow, "-1")


def test_blocked_command_is_logged_when_served(slow, real_redis, mini):
    waiters = [RawClient(real_redis.port), RawClient(mini.port)]
    try:
        for waiter in waiters:
            waiter.send("BLPOP", "l", "0")
        for client in (slow.redis, slow.minired):
            while client.call("INFO", "clients").find(b"blocked_clients:1") < 0:
                pass
        slow.check("SLOWLOG", "RESET")
        slow.check("MULTI")
        slow.check("LPUSH", "l", "foo")
        slow.check("EXEC")
        assert waiters[0].read() == waiters[1].read() == [b"l", b"foo"]
        _check_log(slow, "-1")
    finally:
        for waiter in waiters:
            waiter.close()


def test_a_wait_that_times_out_is_not_logged(slow):
    """Redis logs a blocked command when it is served, never when its wait times out
    (replyToBlockedClientTimedOut): the log holds no BLPOP, XREAD or WAIT here."""
    slow.check("BLPOP", "none", "0.01")
    slow.check("XREAD", "BLOCK", "10", "STREAMS", "s", "$")
    slow.check("WAIT", "1", "10")
    _check_log(slow, "-1")


@pytest.mark.parametrize("reason", ["TIMEOUT", "ERROR"])
def test_client_unblock_is_logged_without_arguments(slow, real_redis, mini, reason):
    """Redis 7.0's CLIENT UNBLOCK logs the command it ends after freeing its arguments (an
    entry with none), and counts that command failed whatever the reason."""
    waiters = [RawClient(real_redis.port), RawClient(mini.port)]
    try:
        ids = [waiter.call("CLIENT", "ID") for waiter in waiters]
        slow.check("CONFIG", "RESETSTAT")
        for waiter in waiters:
            waiter.send("BZPOPMIN", "z", "0")
        wait_blocked(slow.redis, slow.minired)
        slow.check("SLOWLOG", "RESET")
        for client, waiter_id in zip((slow.redis, slow.minired), ids):
            assert client.call("CLIENT", "UNBLOCK", waiter_id, reason) == 1
        assert waiters[0].read() == waiters[1].read()
        logs = [_shape(entries) for entries in slow.both("SLOWLOG", "GET", "-1")]
        for log in logs:  # (the two servers number their clients alike only by chance)
            log[0][0][2] = b"<id>"
        assert logs[1] == logs[0]
        assert [args for args, _, _ in logs[0]] == [
            [b"CLIENT", b"UNBLOCK", b"<id>", reason.encode()], [], [b"SLOWLOG", b"RESET"]]
        stats = [[line.split(",usec=")[0] + "," + line.split(",", 3)[3]
                  for line in client.call("INFO", "commandstats").decode().split("\r\n")
                  if line.startswith("cmdstat_bzpopmin")] for client in (slow.redis, slow.minired)]
        assert stats[1] == stats[0]
    finally:
        for waiter in waiters:
            waiter.close()
