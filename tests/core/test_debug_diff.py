"""DEBUG against Redis 7.0.15, both servers started with enable-debug-command yes.

DIGEST and DIGEST-VALUE must agree byte for byte on the same data (Redis's own AOF/RDB tests
compare digests taken before and after a reload), so they are checked over generated datasets
of every type and encoding, with TTLs and several databases. PROTOCOL's replies are compared as
raw bytes in RESP2 and RESP3; POPULATE by the keys and values it makes; OBJECT by its shape
(the address and LRU clock differ by nature); HELP, errors and the switches by their replies.
"""
from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minired.embed import EmbeddedServer
from tests.support.differential import Differential
from tests.support.respclient import Err, RawClient
from tests.support.servers import debug_server_pair, start_on_free_port, terminate


@pytest.fixture(scope="module")
def debug_servers():
    with debug_server_pair() as pair:
        yield pair


@pytest.fixture
def diff(debug_servers):
    real, mini = debug_servers
    pair = Differential(real.port, mini.port)
    pair.check("FLUSHALL")
    try:
        yield pair
    finally:
        pair.check("FLUSHALL")
        pair.close()


def _digests_agree(diff, keys=()):
    for key in keys:  # key by key first: a difference then names its key
        diff.check("DEBUG", "DIGEST-VALUE", key)
    if keys:
        diff.check("DEBUG", "DIGEST-VALUE", *keys)
    return diff.check("DEBUG", "DIGEST")


# --- DIGEST --------------------------------------------------------------------------------------

def test_empty_dataset_digest_is_all_zeros(diff):
    assert _digests_agree(diff) == b"0" * 40
    diff.check("DEBUG", "DIGEST-VALUE", "missing", "other")
    diff.check("DEBUG", "DIGEST-VALUE")


def test_digest_of_each_type_and_encoding(diff):
    diff.check("SET", "int", "12345")
    diff.check("SET", "embstr", "hello")
    diff.check("SET", "raw", "x" * 100)
    diff.check("SET", "binary", b"\x00\xff\r\n")
    diff.check("RPUSH", "list", "a", "1", "b" * 70, "-5")
    diff.check("SADD", "intset", "1", "2", "-3")
    diff.check("SADD", "set", "a", "b", "c")
    diff.check("HSET", "hash", "f", "v", "n", "1")
    diff.check("HSET", "bighash", "f", "v" * 100)
    diff.check("ZADD", "zset", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "0.1", "e")
    diff.check("ZADD", "bigzset", "1e300", "m" * 100, "3", "n", "-2.5e-7", "z")
    diff.check("ZADD", "zset", "-0", "negzero")  # (a skiplist keeps -0: minired does not)
    diff.check("XADD", "stream", "1-1", "f", "v", "g", "w")
    diff.check("XADD", "stream", "2-0", "f", "v2")
    diff.check("XADD", "stream", "3-7", "other", "1")
    diff.check("XDEL", "stream", "2-0")
    diff.check("XADD", "emptystream", "5-5", "f", "v")
    diff.check("XDEL", "emptystream", "5-5")
    diff.check("PFADD", "hll", "a", "b", "c")
    keys = ["int", "embstr", "raw", "binary", "list", "intset", "set", "hash", "bighash", "zset",
            "bigzset", "stream", "emptystream", "hll", "missing"]
    _digests_agree(diff, keys)


def test_digest_counts_ttls_and_databases(diff):
    diff.check("SET", "k", "v")
    before = _digests_agree(diff, ["k"])
    diff.check("EXPIRE", "k", "1000")
    after = _digests_agree(diff, ["k"])
    assert before != after
    diff.check("PEXPIRE", "k", "999999")  # the deadline itself is not digested
    assert _digests_agree(diff, ["k"]) == after
    diff.check("SELECT", "9")
    diff.check("SET", "k", "v")
    diff.check("EXPIRE", "k", "1000")
    _digests_agree(diff, ["k"])
    diff.check("MOVE", "k", "3")
    _digests_agree(diff)
    diff.check("SELECT", "0")


def test_digest_depends_on_list_order_not_set_order(diff):
    diff.check("RPUSH", "l1", "a", "b")
    diff.check("RPUSH", "l2", "b", "a")
    diff.check("SADD", "s1", "a", "b")
    diff.check("SADD", "s2", "b", "a")
    first = diff.check("DEBUG", "DIGEST-VALUE", "l1", "l2", "s1", "s2")
    assert first[0] != first[1] and first[2] == first[3]


def _random_member(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.3:
        return str(rng.randint(-10**6, 10**6)).encode()
    if kind < 0.4:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
    return b"m%d" % rng.randint(0, 10**9) * rng.choice((1, 1, 1, 9))


def _random_score(rng: random.Random) -> str:
    return rng.choice((str(rng.randint(-100, 100)), repr(rng.uniform(-1e6, 1e6)),
                       "%.3f" % rng.random(), repr(rng.random() * 10 ** rng.randint(-300, 300))))


def _generate(diff, rng: random.Random, size: int) -> list[str]:
    keys = []
    for i in range(size):
        key = "key:%d" % i
        kind = rng.randrange(6)
        count = rng.choice((1, 3, 10, 200, 600))
        members = [_random_member(rng) for _ in range(count)]
        if kind == 0:
            diff.check("SET", key, members[0])
        elif kind == 1:
            diff.check("RPUSH", key, *members)
        elif kind == 2:
            diff.check("SADD", key, *members)
        elif kind == 3:
            fields = [x for m in members for x in (m, _random_member(rng))]
            diff.check("HSET", key, *fields)
        elif kind == 4:
            pairs = [x for m in members for x in (_random_score(rng), m)]
            diff.check("ZADD", key, *pairs)
        else:
            for n in range(min(count, 50)):
                fields = [x for m in members[:rng.randint(1, 4)] for x in (m, b"v%d" % n)]
                diff.check("XADD", key, "%d-%d" % (n // 3 + 1, n % 3), *fields)
        if rng.random() < 0.3:
            diff.check("EXPIRE", key, rng.randint(100, 10**6))
        keys.append(key)
    return keys


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_digest_of_generated_datasets(diff, seed):
    rng = random.Random(seed)
    for db in (0, 2):
        diff.check("SELECT", db)
        keys = _generate(diff, rng, 40)
        _digests_agree(diff, keys)
    diff.check("SELECT", "0")


# --- POPULATE ------------------------------------------------------------------------------------

def test_populate(diff):
    diff.check("SET", "key:1", "kept")
    diff.check("DEBUG", "POPULATE", "5")
    diff.check("DEBUG", "POPULATE", "3", "p", "3")
    diff.check("DEBUG", "POPULATE", "2", "z", "20")
    diff.check("DEBUG", "POPULATE", "0")
    diff.check("MGET", "key:0", "key:1", "key:4", "p:0", "p:2", "z:1")
    diff.check("DBSIZE")
    _digests_agree(diff)
    diff.check("DEBUG", "POPULATE", "-1")
    diff.check("DEBUG", "POPULATE", "x")
    diff.check("DEBUG", "POPULATE", "1", "q", "-1")
    diff.check("DEBUG", "POPULATE", "1", "q", "x")
    diff.check("DEBUG", "POPULATE", "1", "q", "1", "extra")


# --- PROTOCOL ------------------------------------------------------------------------------------

PROTOCOL_TYPES = ("string", "integer", "double", "bignum", "null", "array", "set", "map",
                  "attrib", "push", "verbatim", "true", "false", "nope")


def _raw_reply(port: int, protocol: int, *argv: str) -> bytes:
    """The bytes a server sends for argv, up to the PONG sent after it as an end marker."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        request = b"HELLO %d\r\n" % protocol
        sock.sendall(request)
        data = b""
        hello_end = b"modules\r\n*0\r\n"
        while not data.endswith(hello_end):
            data += sock.recv(65536)
        sock.sendall((" ".join(argv) + "\r\nPING\r\n").encode())
        reply = b""
        while not reply.endswith(b"+PONG\r\n"):
            chunk = sock.recv(65536)
            assert chunk, reply
            reply += chunk
        return reply


@pytest.mark.parametrize("protocol", [2, 3])
def test_protocol_replies_are_redis_bytes(debug_servers, protocol):
    real, mini = debug_servers
    for name in PROTOCOL_TYPES:
        expected = _raw_reply(real.port, protocol, "DEBUG", "PROTOCOL", name)
        assert _raw_reply(mini.port, protocol, "DEBUG", "PROTOCOL", name) == expected, name


# --- OBJECT, HTSTATS -----------------------------------------------------------------------------

_VARYING = re.compile(rb"at:0x[0-9a-f]+|lru:\d+|lru_seconds_idle:\d+")


def _object_shape(reply):
    return _VARYING.sub(b"", reply) if isinstance(reply, bytes) else reply


def test_object_line(diff):
    diff.check("SET", "small", "5")
    diff.check("SET", "embstr", "hello")
    diff.check("SET", "raw", "y" * 60)
    diff.check("RPUSH", "list", "a", "b", "c", "12345")
    diff.check("RPUSH", "biglist", *["e%d" % i for i in range(2000)])
    diff.check("HSET", "hash", "f", "v")
    diff.check("SADD", "set", "1", "2")
    diff.check("ZADD", "zset", "1", "a")
    diff.check("ZADD", "bigzset", "1", "a" * 100)
    diff.check("SADD", "bigset", "a", "b")
    diff.check("XADD", "stream", "1-1", "f", "v")
    diff.check("SET", "long", "z" * 1000)  # LZF-compressed in the serialized length
    for key in ("small", "embstr", "raw", "list", "biglist", "hash", "set", "zset", "bigzset",
                "bigset", "stream", "long", "missing"):
        # (no HyperLogLog: PFADD makes a raw string in Redis, which minired cannot tell apart)
        expected, actual = diff.both("DEBUG", "OBJECT", key)
        assert _object_shape(actual) == _object_shape(expected), key
    diff.check("SET", "counter", "20000")  # incr.tcl: INCR changes the value in place
    before = diff.minired.call("DEBUG", "OBJECT", "counter").split()[1]
    diff.check("INCR", "counter")
    assert diff.minired.call("DEBUG", "OBJECT", "counter").split()[1] == before
    line = diff.minired.call("DEBUG", "OBJECT", "embstr")
    assert re.match(rb"Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:6 "
                    rb"lru:\d+ lru_seconds_idle:\d+$", line)


def test_sdslen(diff):
    for key, value in (("k1", "abc"), ("k2", "x" * 44), ("k3", "x" * 45), ("k" * 40, "x" * 300),
                       ("k5", "123"), ("k6", "x" * 5000), ("k" * 300, "y" * 70000)):
        diff.check("SET", key, value)
        diff.check("DEBUG", "SDSLEN", key)
    diff.check("RPUSH", "list", "a")
    diff.check("DEBUG", "SDSLEN", "list")
    diff.check("DEBUG", "SDSLEN", "missing")


def test_htstats(diff):
    diff.check("DEBUG", "HTSTATS", "0")  # empty: no stats, both tables
    diff.check("DEBUG", "HTSTATS", "16")
    diff.check("DEBUG", "HTSTATS", "-1")
    diff.check("DEBUG", "HTSTATS", "x")
    diff.check("HSET", "small", "f", "v")
    diff.check("DEBUG", "HTSTATS-KEY", "small")
    diff.check("DEBUG", "HTSTATS-KEY", "missing")
    diff.check("SADD", "set", "a", "b", "c")
    expected, actual = diff.both("DEBUG", "HTSTATS-KEY", "set")  # (a bulk string in RESP2)
    assert b"number of elements: 3" in actual and b" table size: 4\n" in actual
    assert expected.splitlines()[:3] == actual.splitlines()[:3]


# --- HELP, errors, switches ----------------------------------------------------------------------

def test_help_and_unknown_subcommands(diff):
    diff.check("DEBUG", "HELP")
    diff.check("DEBUG", "help")
    diff.check("DEBUG", "NOPE")
    diff.check("DEBUG", "HELP", "extra")
    diff.check("DEBUG", "DIGEST", "extra")
    diff.check("DEBUG", "OBJECT")
    diff.check("DEBUG", "SLEEP")
    diff.check("DEBUG", "ERROR", "custom error\nwith newline")
    diff.check("DEBUG", "LISTPACK", "missing")
    diff.check("DEBUG", "QUICKLIST", "missing")
    diff.check("RPUSH", "list", "a")
    diff.check("HSET", "hash", "f", "v")
    diff.check("DEBUG", "LISTPACK", "list")
    diff.check("DEBUG", "QUICKLIST", "hash")
    diff.check("DEBUG", "STRUCTSIZE")
    # (STRINGMATCH-TEST runs Redis's fuzzer for seconds: minired's is checked alone)
    assert diff.minired.call("DEBUG", "STRINGMATCH-TEST") == b"Apparently Redis did not crash: test passed"
    # (Redis would exec itself anew: minired answers with Redis's text for a failed restart)
    assert diff.minired.call("DEBUG", "RESTART") == Err(
        "ERR failed to restart the server. Check server logs.")
    diff.check("DEBUG", "CLIENT-EVICTION")
    diff.check("DEBUG", "CLUSTERLINK", "KILL", "to", "x")
    diff.check("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "x")
    diff.check("DEBUG", "DROP-CLUSTER-PACKET-FILTER", "-1")


def test_switches_answer_as_redis(diff):
    for argv in (("QUICKLIST-PACKED-THRESHOLD", "1b"), ("QUICKLIST-PACKED-THRESHOLD", "0"),
                 ("QUICKLIST-PACKED-THRESHOLD", "5gb"), ("QUICKLIST-PACKED-THRESHOLD", "abc"),
                 ("QUICKLIST-PACKED-THRESHOLD", "4095mb"),
                 ("SET-SKIP-CHECKSUM-VALIDATION", "0"), ("AOF-FLUSH-SLEEP", "0"),
                 ("PAUSE-CRON", "0"), ("SET-ACTIVE-EXPIRE", "1"), ("LEAK", "x"), ("LOG", "hi"),
                 ("SET-DISABLE-DENY-SCRIPTS", "0"), ("CHANGE-REPL-ID",),
                 ("REPLYBUFFER", "PEAK-RESET-TIME", "100"),
                 ("REPLYBUFFER", "PEAK-RESET-TIME", "never"),
                 ("REPLYBUFFER", "PEAK-RESET-TIME", "reset"),
                 ("REPLYBUFFER", "PEAK-RESET-TIME", "x"), ("REPLYBUFFER", "RESIZING", "1"),
                 ("REPLYBUFFER", "FOO", "1"), ("REPLYBUFFER", "RESIZING")):
        diff.check("DEBUG", *argv)


def test_disable_deny_scripts_lets_scripts_call_debug(diff):
    script = "return redis.call('debug', 'protocol', 'string')"
    diff.check("EVAL", script, "0")
    diff.check("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")
    try:
        assert diff.check("EVAL", script, "0") == b"Hello World"
    finally:
        diff.check("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
    diff.check("EVAL", script, "0")


def test_skip_checksum_validation_for_restore(diff):
    diff.check("SET", "k", "value")
    payload = diff.check("DUMP", "k")
    corrupt = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    diff.check("RESTORE", "copy", "0", corrupt)
    diff.check("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
    try:
        diff.check("RESTORE", "copy", "0", corrupt)
        diff.check("GET", "copy")
    finally:
        diff.check("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0")


def test_debug_stays_off_without_enable_debug_command(real_redis, mini):
    pair = Differential(real_redis.port, mini.port)
    try:
        pair.check("DEBUG", "DIGEST")
        pair.check("DEBUG", "PROTOCOL", "string")
    finally:
        pair.close()


def test_digest_survives_debug_reload(tmp_path):
    """DEBUG RELOAD keeps the dataset (and so its digest), through dump.rdb."""
    with EmbeddedServer(port=0, enable_debug_command="yes", dir=str(tmp_path),
                        save="") as server:
        client = RawClient(server.port)
        client.call("RPUSH", "l", "a", "b")
        client.call("ZADD", "z", "1.5", "m")
        client.call("SET", "t", "v", "EX", "1000")
        client.call("XADD", "s", "1-1", "f", "v")
        before = client.call("DEBUG", "DIGEST")
        assert client.call("DEBUG", "RELOAD") == b"OK"
        assert client.call("DEBUG", "DIGEST") == before
        assert client.call("DEBUG", "RELOAD", "BAD") == Err(
            "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
        client.close()


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("lua_resp", [2, 3])
def test_protocol_replies_through_scripts(debug_servers, protocol, lua_resp):
    """Scripts read DEBUG PROTOCOL's replies (with SET-DISABLE-DENY-SCRIPTS 1) as Redis's Lua
    conversion gives them, and return them to RESP2 and RESP3 clients."""
    real, mini = debug_servers
    for port in (real.port, mini.port):
        assert RawClient(port).call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1") == b"OK"
    try:
        for name in PROTOCOL_TYPES:
            if name == "push":
                continue  # scripts cannot take a push reply (Redis asserts)
            script = "\"redis.setresp(%d);return redis.call('debug','protocol','%s')\"" % (
                lua_resp, name)
            expected = _raw_reply(real.port, protocol, "EVAL", script, "0")
            assert _raw_reply(mini.port, protocol, "EVAL", script, "0") == expected, name
    finally:
        for port in (real.port, mini.port):
            RawClient(port).call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")


_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])  # this checkout's minired, from any cwd


@pytest.mark.parametrize("sub,signum,line", [
    ("SEGFAULT", signal.SIGSEGV, b"crashed by signal: 11"),
    ("PANIC", signal.SIGABRT, b"Guru Meditation: DEBUG PANIC called at Unix time"),
    ("ASSERT", signal.SIGABRT, b"=== ASSERTION FAILED ==="),
])
def test_crashes_log_a_bug_report_and_die_of_the_signal(tmp_path, sub, signum, line):
    """As Redis: the crash report's opening in the log (what logging.tcl waits for), then the
    process ends by the signal (no reply)."""
    with open(tmp_path / "log", "wb") as log_file:
        proc, port = start_on_free_port(
            lambda port: [sys.executable, "-m", "minired", "--port", str(port),
                          "--enable-debug-command", "yes"],
            stdout=log_file, stderr=subprocess.STDOUT, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": _SOURCE_ROOT})
    try:
        client = RawClient(port)
        client.send("DEBUG", sub)
        assert proc.wait(timeout=30) == -signum
        client.close()
    finally:
        terminate(proc)
    report = (tmp_path / "log").read_bytes()
    assert b"=== REDIS BUG REPORT START: Cut & paste starting from here ===" in report
    assert line in report


def test_pause_cron_stops_the_background_expiry():
    with EmbeddedServer(port=0, enable_debug_command="yes") as server:
        client = RawClient(server.port)
        assert client.call("DEBUG", "PAUSE-CRON", "1") == b"OK"
        client.call("SET", "k", "v", "PX", "1")
        time.sleep(0.3)  # several sweep intervals: none may run
        assert client.call("DBSIZE") == 1  # expired, but not swept
        assert client.call("DEBUG", "PAUSE-CRON", "0") == b"OK"
        deadline = time.monotonic() + 10
        while client.call("DBSIZE") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert client.call("DBSIZE") == 0  # the sweep runs again
        client.close()


def test_reload_without_save_points(diff):
    """Without save points or an AOF, DEBUG RELOAD round-trips the dataset through dump.rdb in
    `dir` (an embedded server's own directory), as Redis's does: the data and its digest
    survive; NOSAVE loads the file the last save left."""
    diff.check("RPUSH", "l", "a", "b")
    diff.check("ZADD", "z", "1.5", "m")
    diff.check("HSET", "h", "f", "v")
    diff.check("SET", "t", "v", "EX", "1000")
    diff.check("XADD", "s", "1-1", "f", "v")
    before = _digests_agree(diff)
    diff.check("DEBUG", "RELOAD")
    assert _digests_agree(diff) == before
    diff.check("SET", "extra", "1")
    diff.check("DEBUG", "RELOAD", "NOFLUSH", "MERGE")
    diff.check("GET", "extra")
    diff.check("SET", "later", "1")
    diff.check("DEBUG", "RELOAD", "NOSAVE")  # the file of the last RELOAD: no "later"
    diff.check("EXISTS", "later")
    assert _digests_agree(diff) != before
