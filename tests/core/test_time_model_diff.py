"""The time model, against real Redis 7.0.15: when a key counts as expired, and at which instant.

Redis (db.c keyIsExpired) expires a key once `now > when`, where `now` is the instant the
running script started (scriptTimeSnapshot), else the instant the outermost running command
started (call() caches it while server.fixed_time_expire counts nested calls), else the fresh
time; nothing expires while loading. New deadlines (SET PX, EXPIRE) and TTL's remainder count
from the fresh time (mstime()). A write looks its key up first (lookupKeyWrite), so a key whose
time passed is deleted before the write and nothing of it, its TTL included, survives.

Every sequence here is deterministic: time is made to pass with DEBUG SLEEP (which blocks the
whole server, so it passes for sure and nothing else runs meanwhile), expiry is judged inside
one EXEC or one script, or the active expiry cycle is off (DEBUG SET-ACTIVE-EXPIRE 0); the
`now == when` boundary is checked on minired with its wall clock frozen.
"""
from __future__ import annotations

import time

import pytest

from tests.support.differential import Differential
from tests.support.respclient import Err, RawClient
from tests.support.servers import MiniredProcess, RedisServer, debug_server_pair


@pytest.fixture(scope="module")
def servers():
    with debug_server_pair(time_control=True) as pair:
        yield pair


@pytest.fixture
def d(servers):
    redis, mini = servers
    pair = Differential(redis.port, mini.port)
    pair.both("FLUSHALL")
    pair.both("SCRIPT", "FLUSH")
    pair.both("FUNCTION", "FLUSH")
    pair.both("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        yield pair
    finally:
        pair.both("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        pair.both("CONFIG", "SET", "maxmemory", "0")
        pair.both("CONFIG", "SET", "busy-reply-threshold", "5000")
        pair.close()


def _sleep(d: Differential, seconds: str = "0.01") -> None:
    """Let time pass on both servers for sure (each is blocked for at least `seconds`)."""
    d.check("DEBUG", "SLEEP", seconds)


# --- one command, one instant ------------------------------------------------------------------

def test_exec_runs_at_the_instant_it_began(d):
    d.check("MULTI")
    d.check("SET", "k", "v", "PX", "20")
    d.check("DEBUG", "SLEEP", "0.05")
    d.check("GET", "k")        # still there: the transaction began before its deadline
    d.check("INCR", "n")
    d.check("PTTL", "k")       # TTL counts from the fresh time: 0, never negative
    d.check("EXISTS", "k")
    reply = d.check("EXEC")
    assert reply[2] == b"v" and reply[4] == 0 and reply[5] == 1
    d.check("EXISTS", "k")     # the next command is a new instant
    d.check("GET", "k")


def test_exec_writes_keep_a_ttl_passed_during_the_transaction(d):
    d.check("MULTI")
    d.check("SET", "a", "1", "PX", "20")
    d.check("RPUSH", "l", "x")
    d.check("PEXPIRE", "l", "20")
    d.check("DEBUG", "SLEEP", "0.05")
    d.check("INCR", "a")
    d.check("RPUSH", "l", "y")
    d.check("APPEND", "a", "0")
    d.check("LRANGE", "l", "0", "-1")
    d.check("GET", "a")
    d.check("PTTL", "a")
    d.check("EXEC")
    d.check("EXISTS", "a", "l")
    d.check("DBSIZE")


def test_exec_watched_key_expiring_during_sleep_before_exec(d):
    d.check("SET", "w", "v", "PX", "20")
    d.check("WATCH", "w")
    _sleep(d, "0.05")
    d.check("MULTI")
    d.check("PING")
    d.check("EXEC")            # expired since WATCH: the transaction fails


# --- a script, one instant ---------------------------------------------------------------------

_BUSY_PUSH = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
redis.call('RPUSH', KEYS[1], 'first')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local pushes = 0
while true do
  local now = redis.call('TIME')
  if now[1] * 1000000 + now[2] - start > tonumber(ARGV[2]) then break end
  redis.call('RPUSH', KEYS[1], 'x')
  pushes = pushes + 1
end
return {pushes > 0 and 1 or 0, redis.call('LLEN', KEYS[1]) - pushes,
        redis.call('LINDEX', KEYS[1], 0), redis.call('PTTL', KEYS[1])}
"""


def test_eval_runs_at_the_instant_it_began(d):
    # The list's TTL (20 ms) passes while the script goes on pushing for 60 ms: the script
    # still sees the list, first element and all; only its TTL's remainder reads 0.
    d.check("EVAL", _BUSY_PUSH, "1", "l", "20", "60000")
    d.check("EXISTS", "l")     # after the script the key is gone
    d.check("LLEN", "l")


def test_eval_debug_sleep_inside(d):
    script = """
    redis.call('SET', KEYS[1], 'v', 'PX', 20)
    redis.call('DEBUG', 'SLEEP', '0.05')
    return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('INCR', KEYS[2]),
            redis.call('EXISTS', KEYS[1])}
    """
    d.check("EVAL", script, "2", "k", "n")
    d.check("GET", "k")


def test_script_inside_exec_takes_its_own_instant(d):
    # A script's instant is taken when it starts (mstime()), not the transaction's: after the
    # sleep the key is expired for the script, while still live for EXEC's own commands.
    d.check("MULTI")
    d.check("SET", "k", "v", "PX", "20")
    d.check("DEBUG", "SLEEP", "0.05")
    d.check("GET", "k")
    d.check("EVAL", "return redis.call('GET', KEYS[1])", "1", "k")
    d.check("GET", "k")
    d.check("EXEC")


def test_fcall_runs_at_the_instant_it_began(d):
    library = """#!lua name=timelib
    redis.register_function('busy_push', function(keys, args)
    """ + _BUSY_PUSH.replace("KEYS", "keys").replace("ARGV", "args") + """
    end)
    redis.register_function('sleepy', function(keys, args)
      redis.call('SET', keys[1], 'v', 'PX', 20)
      redis.call('DEBUG', 'SLEEP', '0.05')
      return {redis.call('GET', keys[1]), redis.call('EXISTS', keys[1])}
    end)
    """
    d.check("FUNCTION", "LOAD", library)
    d.check("FCALL", "busy_push", "1", "l", "20", "60000")
    d.check("EXISTS", "l")
    d.check("FCALL", "sleepy", "1", "k")
    d.check("EXISTS", "k")


# --- writes to a key whose time has passed act on a new key -------------------------------------

_DUMPED = "<DUMP of src>"  # RESTORE's payload: real Redis's DUMP of src, made in the test

# (setup, write, checks): setup gives the key a value and a 1 ms TTL, DEBUG SLEEP lets it pass
# (the expiry cycle is off), then the write must find no key and leave no TTL behind.
_WRITES = [
    (["SET", "k", "0", "PX", "1"], ["SET", "k", "v2", "KEEPTTL"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["SET", "k", "v2", "GET"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["SET", "k", "v2", "XX"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["SET", "k", "v2", "NX"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["SETNX", "k", "v2"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["MSETNX", "k", "v2", "k2", "v3"], [["MGET", "k", "k2"]]),
    (["SET", "k", "0", "PX", "1"], ["GETSET", "k", "v2"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["GETEX", "k", "PERSIST"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["GETDEL", "k"], [["GET", "k"]]),
    (["SET", "k", "abc", "PX", "1"], ["APPEND", "k", "de"], [["GET", "k"]]),
    (["SET", "k", "abc", "PX", "1"], ["SETRANGE", "k", "1", "Z"], [["GET", "k"]]),
    (["SET", "k", "10", "PX", "1"], ["INCR", "k"], [["GET", "k"]]),
    (["SET", "k", "10", "PX", "1"], ["DECRBY", "k", "3"], [["GET", "k"]]),
    (["SET", "k", "10", "PX", "1"], ["INCRBYFLOAT", "k", "1.5"], [["GET", "k"]]),
    (["SET", "k", "\xff", "PX", "1"], ["SETBIT", "k", "7", "1"], [["GET", "k"]]),
    (["SET", "k", "\xff", "PX", "1"], ["BITFIELD", "k", "INCRBY", "u8", "0", "1"], [["GET", "k"]]),
    (["PFADD", "k", "a", "b"], ["PFADD", "k", "c"], [["PFCOUNT", "k"]]),
    (["HSET", "k", "f", "1", "g", "2"], ["HSET", "k", "f", "9"], [["HGETALL", "k"]]),
    (["HSET", "k", "f", "1"], ["HINCRBY", "k", "f", "5"], [["HGETALL", "k"]]),
    (["HSET", "k", "f", "1"], ["HSETNX", "k", "f", "5"], [["HGETALL", "k"]]),
    (["RPUSH", "k", "a", "b"], ["RPUSH", "k", "c"], [["LRANGE", "k", "0", "-1"]]),
    (["RPUSH", "k", "a", "b"], ["LPUSHX", "k", "c"], [["LRANGE", "k", "0", "-1"]]),
    (["RPUSH", "k", "a", "b"], ["LINSERT", "k", "BEFORE", "a", "c"], [["LLEN", "k"]]),
    (["SADD", "k", "a", "b"], ["SADD", "k", "c"], [["SCARD", "k"]]),
    (["ZADD", "k", "1", "a"], ["ZINCRBY", "k", "2", "a"], [["ZRANGE", "k", "0", "-1", "WITHSCORES"]]),
    (["XADD", "k", "1-1", "f", "v"], ["XADD", "k", "1-1", "f", "v"], [["XLEN", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["EXPIRE", "k", "100"], [["EXISTS", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["PERSIST", "k"], [["EXISTS", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["RESTORE", "k", "0", _DUMPED], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["RENAMENX", "src", "k"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["COPY", "src", "k"], [["GET", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["SORT", "list", "STORE", "k"], [["LRANGE", "k", "0", "-1"]]),
    (["SET", "k", "0", "PX", "1"], ["SUNIONSTORE", "k", "set"], [["SCARD", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["LMOVE", "list", "k", "LEFT", "LEFT"], [["LRANGE", "k", "0", "-1"]]),
    (["SET", "k", "0", "PX", "1"], ["SMOVE", "set", "k", "m"], [["SMEMBERS", "k"]]),
    (["SET", "k", "0", "PX", "1"], ["BITOP", "OR", "k", "src"], [["GET", "k"]]),
]


@pytest.mark.parametrize("setup,write,checks", _WRITES,
                         ids=[f"{i}-{w[0]}-{w[-1]}" for i, (_, w, _) in enumerate(_WRITES)])
def test_write_to_a_key_just_expired_makes_a_new_key(d, setup, write, checks):
    d.check("SET", "src", "s")
    payload = d.redis.call("DUMP", "src")
    write = [payload if word == _DUMPED else word for word in write]
    d.check("RPUSH", "list", "3", "1", "2")
    d.check("SADD", "set", "m")
    d.check(*setup)
    if "PX" not in setup:
        d.check("PEXPIRE", "k", "1")
    _sleep(d)
    d.check(*write)
    for check in checks:
        d.check(*check)
    d.check("PTTL", "k")
    d.check("EXISTS", "k")
    d.check("DBSIZE")


def test_move_into_a_database_where_the_key_just_expired(d):
    d.check("SELECT", "1")
    d.check("SET", "k", "old", "PX", "1")
    d.check("SELECT", "0")
    d.check("SET", "k", "new")
    _sleep(d)
    d.check("MOVE", "k", "1")
    d.check("SELECT", "1")
    d.check("GET", "k")
    d.check("PTTL", "k")
    d.check("FLUSHDB")
    d.check("SELECT", "0")


# --- reading without deleting, and what deletes ----------------------------------------------------

def test_keys_skips_expired_keys_but_leaves_them(d):
    d.check("SET", "e", "1", "PX", "1")
    d.check("SET", "live", "1")
    _sleep(d)
    d.check("DBSIZE")                 # the expired key is still there
    d.check("KEYS", "*")
    d.check("DBSIZE")                 # KEYS deleted nothing
    d.check("SCAN", "0")
    d.check("DBSIZE")                 # SCAN deletes what it finds expired
    d.check("DEL", "live")
    d.check("SET", "e", "1", "PX", "1")
    _sleep(d)
    d.check("DBSIZE")
    d.check("RANDOMKEY")              # finds only an expired key, which it deletes
    d.check("DBSIZE")
    d.check("SET", "e", "1", "PX", "1")
    _sleep(d)
    d.check("TTL", "e")
    d.check("DBSIZE")


def test_watch_of_an_already_expired_key(d):
    # (multi.tcl "WATCH stale keys should not fail EXEC" and what follows it)
    d.check("SET", "x", "foo", "PX", "1")
    _sleep(d)
    d.check("WATCH", "x")
    d.check("DBSIZE")                 # WATCH deletes nothing
    d.check("EXISTS", "x")            # ...the lookup does, which is no change to the watcher
    d.check("MULTI")
    d.check("PING")
    d.check("EXEC")
    d.check("SET", "x", "foo", "PX", "1")
    _sleep(d)
    d.check("WATCH", "x")
    d.check("SET", "x", "bar")        # a write to it is a change
    d.check("MULTI")
    d.check("PING")
    d.check("EXEC")


@pytest.mark.parametrize("layout", ["stale-then-none", "none-then-stale", "stale-both", "live"])
def test_swapdb_and_watched_keys(d, layout):
    d.check("SELECT", "1")
    if layout in ("stale-then-none", "stale-both"):
        d.check("SET", "x", "foo", "PX", "1")
    if layout == "live":
        d.check("SET", "x", "foo")
    d.check("SELECT", "0")
    if layout in ("none-then-stale", "stale-both"):
        d.check("SET", "x", "bar", "PX", "1")
    _sleep(d)
    d.check("SELECT", "1")
    d.check("WATCH", "x")
    d.check("SWAPDB", "0", "1")
    d.check("MULTI")
    d.check("PING")
    d.check("EXEC")
    d.check("DBSIZE")
    d.check("FLUSHALL")
    d.check("SELECT", "0")


def test_flushdb_and_a_watched_expired_key(d):
    d.check("SET", "x", "foo", "PX", "1")
    _sleep(d)
    d.check("WATCH", "x")
    d.check("FLUSHDB")
    d.check("MULTI")
    d.check("PING")
    d.check("EXEC")


# --- memory and script timeouts inside MULTI (multi.tcl) -------------------------------------------

def test_commands_queued_over_maxmemory_are_refused(d, servers):
    other = Differential(*(server.port for server in servers))  # (multi.tcl's r2)
    try:
        d.check("SET", "x", "value")
        other.check("CONFIG", "SET", "maxmemory", "1")
        d.check("MULTI")
        d.check_error("SET", "x", "1")     # OOM: queuing takes memory too
        d.check_error("GET", "x")
        d.check("DISCARD")
        d.check("PING")
        other.check("CONFIG", "SET", "maxmemory", "0")
        d.check("MULTI")
        d.check("GET", "x")
        d.check("PING")
        other.check("CONFIG", "SET", "maxmemory", "1")
        d.check("EXEC")                    # only reads queued: it runs
        other.check("CONFIG", "SET", "maxmemory", "0")
        d.check("MULTI")
        d.check("SET", "x", "1")
        d.check("GET", "x")
        other.check("CONFIG", "SET", "maxmemory", "1")
        d.check_error("EXEC")              # EXECABORT ... OOM
        other.check("CONFIG", "SET", "maxmemory", "0")
        d.check("PING")
        d.check("GET", "x")
    finally:
        other.both("CONFIG", "SET", "maxmemory", "0")
        other.close()


def _until(client: RawClient, done, what: str) -> None:
    deadline = time.monotonic() + 30
    while not done(client.call("PING")):
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_multi_during_a_busy_script_then_killed(servers):
    # multi.tcl "MULTI and script timeout": MULTI passes while a script is busy, the INCR
    # sent meanwhile is refused, so once the script is killed EXEC aborts the transaction.
    replies = []
    for port in (server.port for server in servers):
        main, runner, other = RawClient(port), RawClient(port), RawClient(port)
        try:
            main.call("FLUSHALL")
            main.call("CONFIG", "SET", "busy-reply-threshold", "10")
            main.call("SET", "xx", "1")
            runner.send("EVAL", "while true do end", "0")
            _until(main, lambda reply: isinstance(reply, Err), "the script never became busy")
            seen = [other.call("MULTI"), other.call("INCR", "xx"), main.call("SCRIPT", "KILL")]
            _until(main, lambda reply: reply == b"PONG", "the script was never killed")
            seen += [runner.read(), other.call("INCR", "xx"), other.call("EXEC"),
                     main.call("GET", "xx"), other.call("PING", "asdf")]
            main.call("CONFIG", "SET", "busy-reply-threshold", "5000")
            replies.append(seen)
        finally:
            for client in (main, runner, other):
                client.close()
    assert replies[1] == replies[0]
    assert replies[0][5] == Err("EXECABORT Transaction discarded because of previous errors.")


# --- loading: nothing expires -------------------------------------------------------------------

def test_aof_replay_expires_nothing_until_loaded(tmp_path):
    # PEXPIREAT in the past, then INCR: while loading the key is kept (checkAlreadyExpired and
    # keyIsExpired both answer no), so INCR finds 5 and keeps the old TTL; once loaded the key
    # is expired. Expiring during the load would leave k = 1 without a TTL instead.
    commands = [["SELECT", "0"], ["SET", "k", "5"], ["PEXPIREAT", "k", "1000"], ["INCR", "k"],
                ["SET", "live", "1"], ["PEXPIREAT", "live", "1000"], ["PERSIST", "live"]]
    aof = b"".join(b"*%d\r\n" % len(argv) + b"".join(
        b"$%d\r\n%s\r\n" % (len(word), word.encode()) for word in argv) for argv in commands)
    results = []
    for name, make in (("redis", RedisServer), ("minired", MiniredProcess)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "appendonly.aof").write_bytes(aof)
        with make("--appendonly", "yes", "--dir", str(folder)) as server:
            client = RawClient(server.port)
            try:
                results.append([client.call("EXISTS", "k"), client.call("GET", "k"),
                                client.call("GET", "live"), client.call("PTTL", "live")])
            finally:
                client.close()
    assert results[1] == results[0]
    assert results[0] == [0, None, b"1", -1]


# --- the boundary: a key lives through the millisecond of its deadline ----------------------------

@pytest.fixture
def frozen_time(monkeypatch):
    """Stop minired's clocks at a whole millisecond: the wall clock the keyspace reads
    (keyspace._now_ns), and the monotonic clock a command's instant is worked back from (the
    keyspace Clock's readings), so no time passes within a command either; `set(ms)` moves the
    wall clock."""
    from minired.data import keyspace

    now = {"ns": (time.time_ns() // 1_000_000) * 1_000_000}
    monkeypatch.setattr(keyspace, "_now_ns", lambda: now["ns"])
    monkeypatch.setattr(keyspace, "_perf_ns", lambda: 1_000_000_000)
    monkeypatch.setattr(keyspace, "_C_CLOCK", False)  # (the compiled build's C reads)

    class Frozen:
        @staticmethod
        def ms() -> int:
            return now["ns"] // 1_000_000

        @staticmethod
        def set(ms: int) -> None:
            now["ns"] = ms * 1_000_000

    return Frozen


def test_now_equal_to_deadline_is_not_expired(frozen_time):
    # Redis: keyIsExpired returns `now > when`; TTL at that instant is `when - mstime()` = 0;
    # the expiry cycle (activeExpireCycleTryExpire) also deletes only when `now > when`.
    from minired.data.keyspace import Keyspace

    keyspace = Keyspace(2)
    db = keyspace[0]
    when = frozen_time.ms() + 100
    for key in (b"read", b"cycle", b"write"):
        db.set(key, b"v")
        db.set_expiry(key, when)
    frozen_time.set(when)
    assert db.get(b"read") == b"v"
    assert keyspace.active_expire() == 0
    assert db.expiry(b"cycle") == when
    db.set(b"write", b"v2", keep_ttl=True)
    assert db.expiry(b"write") == when          # still alive: KEEPTTL keeps its TTL
    assert list(db.keys()) == [b"read", b"cycle", b"write"]
    frozen_time.set(when + 1)
    assert list(db.keys()) == []
    assert len(db) == 3
    assert db.get(b"read") is None
    assert keyspace.active_expire() == 2
    assert len(db) == 0


def test_now_equal_to_deadline_through_the_server(frozen_time):
    from minired.embed import EmbeddedServer

    with EmbeddedServer(port=0, time_control=True) as server:
        client = RawClient(server.port)
        try:
            server.call(lambda: setattr(server.server, "active_expire_enabled", False))
            when = frozen_time.ms() + 1000
            assert client.call("SET", "k", "v", "PXAT", str(when)) == b"OK"
            frozen_time.set(when)
            assert [client.call("PTTL", "k"), client.call("GET", "k")] == [0, b"v"]
            # EXPIRE/PEXPIREAT at the current instant deletes at once (checkAlreadyExpired:
            # `when <= now`), unlike a lookup.
            assert client.call("PEXPIREAT", "k", str(when)) == 1
            assert client.call("EXISTS", "k") == 0
            assert client.call("SET", "k", "v", "PXAT", str(when + 5)) == b"OK"
            assert client.call("MINIRED", "ADVANCE", "5") == when + 5
            assert client.call("GET", "k") == b"v"
            assert client.call("MINIRED", "ADVANCE", "1") == when + 6
            assert client.call("GET", "k") is None
        finally:
            client.close()


def test_advance_inside_exec_keeps_the_transaction_instant(servers):
    _, mini = servers
    client = RawClient(mini.port)
    try:
        client.call("FLUSHALL")
        client.call("SET", "k", "v", "PX", "60000")
        client.call("MULTI")
        client.call("MINIRED", "ADVANCE", "120000")
        client.call("GET", "k")
        client.call("PTTL", "k")
        assert client.call("EXEC")[1:] == [b"v", 0]
        assert client.call("GET", "k") is None
    finally:
        client.call("FLUSHALL")
        mini.call(lambda: setattr(mini.server.clock, "offset_ms", 0))
        client.close()

