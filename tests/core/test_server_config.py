"""CONFIG GET/SET/RESETSTAT/REWRITE/HELP against real Redis, and the settings minired honours."""
from __future__ import annotations

import pytest

from minired.embed import EmbeddedServer
from minired.engine.config import ALIASES, PARAMS, Config, ConfigError
from tests.support.respclient import Err, Map, RawClient

# Parameters whose value depends on how each server was started, not on defaults.
_STARTUP_DEPENDENT = {"port", "bind", "dir", "time-control", "fault-injection", "save",
                      "appendfilename", "enable-debug-command", "loglevel", "temporary-dir"}
_REDIS_HAS_NOT = {"time-control", "fault-injection", "temporary-dir"}


@pytest.fixture
def restore_config(real_redis, mini):
    """Put back every parameter a test changed, on both servers."""
    names = [name for name in PARAMS if name not in _REDIS_HAS_NOT]
    saved = {}
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        reply = client.call("CONFIG", "GET", *names)
        saved[port] = dict(zip(reply[::2], reply[1::2]))
        client.close()
    yield
    for port, values in saved.items():
        client = RawClient(port)
        for name, value in values.items():
            if PARAMS[name.decode()].mode == "mutable":
                client.call("CONFIG", "SET", name, value)
        client.close()


def test_defaults_match_redis(diff):
    names = [n for n in PARAMS if n not in _STARTUP_DEPENDENT and n not in _REDIS_HAS_NOT]
    diff.check("CONFIG", "GET", *names, pairs=True)
    diff.check("CONFIG", "GET", *ALIASES, pairs=True)


def test_get_patterns_and_literal_names(diff):
    diff.check("CONFIG", "GET", "MAXMEMORY")           # a literal name is echoed as given
    diff.check("CONFIG", "GET", "lua-time-limit")
    diff.check("CONFIG", "GET", "no-such-param")
    diff.check("CONFIG", "GET", "maxmemory-p*", "*-policy", pairs=True)
    diff.check("CONFIG", "GET", "hash-max-*", pairs=True)
    diff.check("CONFIG", "GET", "*ziplist*", pairs=True)
    diff.check("CONFIG", "GET")


def test_get_resp3_is_a_map(diff):
    diff.hello(3)
    reply = diff.check("CONFIG", "GET", "maxmemory", "timeout")
    assert isinstance(reply, Map)


@pytest.mark.parametrize("name,value", [
    ("maxmemory", "1mb"), ("maxmemory", "100kb"), ("maxmemory", "1k"), ("maxmemory", "abc"),
    ("maxmemory", "-1"), ("maxmemory", "1.5"),
    ("maxmemory-policy", "ALLKEYS-LRU"), ("maxmemory-policy", "bad"),
    ("maxclients", "0"), ("maxclients", "-1"), ("maxclients", "x"),
    ("timeout", "-1"), ("timeout", "+5"), ("timeout", "05"), ("timeout", "99999999999"),
    ("hz", "0"), ("hz", "1000"), ("hz", "abc"),
    ("appendonly", "YES"), ("appendonly", "maybe"), ("appendfsync", "always"),
    ("proto-max-bulk-len", "10"), ("proto-max-bulk-len", "2mb"),
    ("proto-max-bulk-len", "99999999999999999999"),
    ("busy-reply-threshold", "-1"), ("lua-time-limit", "100"),
    ("notify-keyspace-events", "KEA"), ("notify-keyspace-events", "Kx"),
    ("notify-keyspace-events", "gE$"), ("notify-keyspace-events", "AnK"),
    ("notify-keyspace-events", "Q"), ("notify-keyspace-events", ""),
    ("save", "3600 1 300 100"), ("save", "1 2 3"), ("save", "a b"), ("save", "-1 2"),
    ("save", ""), ("loglevel", "foo"), ("loglevel", "warning"),
    ("slowlog-log-slower-than", "-2"), ("list-max-listpack-size", "-2147483649"),
    ("hash-max-listpack-value", "1kb"), ("stream-node-max-entries", "0"),
    ("client-output-buffer-limit", "pubsub 1mb 2mb 60"),
    ("client-output-buffer-limit", "normal 1 2"),
    ("client-output-buffer-limit", "bogus 1 2 3"),
    ("protected-mode", "no"), ("replica-read-only", "x"),
    ("databases", "4"), ("daemonize", "yes"), ("io-threads", "2"), ("unixsocket", "/tmp/x"),
    ("dir", "/tmp"), ("dbfilename", "x.rdb"), ("no-such-param", "1"),
])
def test_set_then_get_matches_redis(diff, restore_config, name, value):
    diff.check("CONFIG", "SET", name, value)
    if name not in _STARTUP_DEPENDENT:
        diff.check("CONFIG", "GET", name)


def test_set_several_and_all_or_nothing(diff, restore_config):
    diff.check("CONFIG", "SET", "maxmemory", "2mb", "maxmemory-policy", "allkeys-lru")
    diff.check("CONFIG", "GET", "maxmemory*", pairs=True)
    diff.check("CONFIG", "SET", "maxmemory", "3mb", "timeout", "-1")
    diff.check("CONFIG", "GET", "maxmemory")            # unchanged: the pair set failed
    diff.check("CONFIG", "SET", "maxmemory", "1", "maxmemory", "2")
    diff.check("CONFIG", "SET", "maxmemory", "1", "MAXMEMORY", "2")
    diff.check("CONFIG", "SET", "maxmemory", "1", "lua-time-limit", "5", "busy-reply-threshold", "6")
    diff.check("CONFIG", "SET", "maxmemory", "0", "x")
    diff.check("CONFIG", "SET", "maxmemory")
    diff.check("CONFIG", "SET", "maxmemory", "0", "nope", "1")


def test_other_subcommands(diff):
    diff.check("CONFIG", "REWRITE")
    diff.check("CONFIG", "RESETSTAT")
    diff.check("CONFIG", "RESETSTAT", "x")
    diff.check("CONFIG", "FOO")
    diff.check("CONFIG")
    theirs, ours = diff.both("CONFIG", "HELP")
    assert ours[0] == theirs[0] and len(ours) > 5


def test_resetstat_clears_info_counters(mini_raw):
    mini_raw.call("SET", "k", "v")
    mini_raw.call("NO-SUCH-COMMAND")
    assert mini_raw.call("CONFIG", "RESETSTAT") == b"OK"
    stats = mini_raw.call("INFO", "commandstats", "errorstats", "stats")
    assert b"cmdstat_set:" not in stats
    assert b"errorstat_" not in stats
    assert b"total_error_replies:0" in stats


def _server(**config) -> tuple[EmbeddedServer, RawClient]:
    server = EmbeddedServer(**config).start()
    return server, RawClient(server.port)


def test_requirepass_applies_to_new_connections():
    server, admin = _server()
    try:
        assert admin.call("CONFIG", "SET", "requirepass", "s3cret") == b"OK"
        assert admin.call("PING") == b"PONG"               # this connection stays authenticated
        fresh = RawClient(server.port)
        assert fresh.call("GET", "k") == Err("NOAUTH Authentication required.")
        assert fresh.call("AUTH", "wrong").message.startswith("WRONGPASS")
        assert fresh.call("AUTH", "s3cret") == b"OK"
        assert fresh.call("PING") == b"PONG"
        fresh.close()
    finally:
        admin.close()
        server.stop()


def test_proto_max_bulk_len_applies_to_new_connections():
    # Connected clients get the new limit too: see tests/hardening/test_protocol_limits_live.py.
    server, admin = _server()
    try:
        assert admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"OK"
        fresh = RawClient(server.port)
        fresh.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
        assert fresh.read() == Err("ERR Protocol error: invalid bulk length")
        fresh.close()
        assert admin.call("SET", "k", "x" * 900_000) == b"OK"
    finally:
        admin.close()
        server.stop()


def test_maxclients_refuses_connections_over_the_limit():
    server, admin = _server()
    try:
        assert admin.call("CONFIG", "SET", "maxclients", "1") == b"OK"
        fresh = RawClient(server.port)
        assert fresh.read() == Err("ERR max number of clients reached")
        fresh.close()
    finally:
        admin.close()
        server.stop()


def test_lua_time_limit_is_busy_reply_threshold():
    config = Config()
    config.set("lua-time-limit", "250")
    assert config.busy_reply_threshold_ms == 250
    assert config.get("busy-reply-threshold") == "250"


def test_startup_values_are_checked_and_normalized():
    assert Config(maxmemory="1mb").get("maxmemory") == "1048576"
    assert Config(notify_keyspace_events="KEA").get("notify-keyspace-events") == "AKE"
    with pytest.raises(ConfigError, match="maxclients"):
        Config(maxclients="-5")
    with pytest.raises(ConfigError, match="unknown"):
        Config(no_such_param="1")
