"""DBSIZE, FLUSH*, TIME, LASTSAVE, SAVE/BGSAVE, SHUTDOWN, DEBUG, ROLE, MEMORY, SLOWLOG, LATENCY
and INFO: differential where Redis's reply is deterministic, behavioural elsewhere."""
from __future__ import annotations

import os
import time

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import Err, RawClient, Verbatim


def test_dbsize_and_flush(diff):
    diff.check("DBSIZE")
    diff.check("SET", "a", "1")
    diff.check("SET", "b", "2")
    diff.check("DBSIZE")
    diff.check("DBSIZE", "x")
    diff.check("FLUSHDB", "x")
    diff.check("FLUSHDB", "ASYNC", "SYNC")
    diff.check("SELECT", "1")
    diff.check("SET", "c", "3")
    diff.check("FLUSHDB", "sync")
    diff.check("DBSIZE")
    diff.check("SELECT", "0")
    diff.check("DBSIZE")
    diff.check("FLUSHALL", "ASYNC")
    diff.check("DBSIZE")
    diff.check("FLUSHALL", "x")


def test_time_shape_and_clock(diff, mini):
    theirs, ours = diff.both("TIME")
    assert [type(x) for x in ours] == [type(x) for x in theirs] == [bytes, bytes]
    assert abs(int(ours[0]) - int(theirs[0])) < 5 and 0 <= int(ours[1]) < 1_000_000
    diff.check("TIME", "x")
    before = int(diff.minired.call("TIME")[0])
    diff.minired.call("MINIRED", "ADVANCE", "3600000")
    assert int(diff.minired.call("TIME")[0]) - before >= 3600


def test_lastsave_role_and_errors(diff):
    theirs, ours = diff.both("LASTSAVE")
    assert type(ours) is int and abs(ours - time.time()) < 3600
    diff.check("LASTSAVE", "x")
    diff.check("ROLE")
    diff.check("ROLE", "x")
    diff.check("BGSAVE", "x")
    diff.check("SAVE", "x")
    diff.check("SHUTDOWN", "FOO")
    diff.check("SHUTDOWN", "NOSAVE", "SAVE")
    diff.check("SHUTDOWN", "ABORT", "NOW")
    diff.check("SHUTDOWN", "ABORT")


def _changes_since_save(client) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])


def _wait_for_background_save(client) -> None:
    deadline = time.monotonic() + 30
    while b"rdb_bgsave_in_progress:1" in client.call("INFO", "persistence"):
        assert time.monotonic() < deadline, "BGSAVE did not end"
        time.sleep(0.01)


def test_save_and_bgsave_without_save_points_write_dump_rdb_as_redis(diff, mini):
    """No save points, no AOF: SAVE and BGSAVE still write dump.rdb into `dir` (an embedded
    server's own directory), as Redis's do; redis-py's own suite runs BGSAVE so."""
    snapshot = mini.server.features.persistence.snapshot_path
    if os.path.exists(snapshot):
        os.unlink(snapshot)
    diff.check("SET", "k", "v")
    diff.check("SAVE")
    assert os.path.getsize(snapshot) > 0
    assert _changes_since_save(diff.redis) == _changes_since_save(diff.minired) == 0
    diff.check("MSET", "a", "1", "b", "2")
    assert _changes_since_save(diff.redis) == _changes_since_save(diff.minired) == 2
    os.unlink(snapshot)
    diff.check("BGSAVE")
    for client in (diff.redis, diff.minired):
        _wait_for_background_save(client)
    assert os.path.exists(snapshot)
    assert _changes_since_save(diff.redis) == _changes_since_save(diff.minired) == 0
    diff.check("INFO", "keyspace")


def test_debug_is_off_by_default_like_redis(diff):
    diff.check("DEBUG", "SLEEP", "0")
    diff.check("DEBUG", "HELP")
    diff.check("DEBUG")


def test_debug_when_enabled():
    with EmbeddedServer(enable_debug_command="yes") as server:
        client = RawClient(server.port)
        assert client.call("DEBUG", "SLEEP", "0") == b"OK"
        assert client.call("DEBUG", "SLEEP", "abc") == b"OK"      # atof, as Redis
        started = time.monotonic()
        assert client.call("DEBUG", "SLEEP", "0.05") == b"OK"
        assert time.monotonic() - started >= 0.05
        assert client.call("DEBUG", "ERROR", "OOPS it broke") == Err("OOPS it broke")
        assert client.call("DEBUG", "SLEEP") == Err(
            "ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.")
        assert client.call("DEBUG", "NOPE") == Err(
            "ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try DEBUG HELP.")
        assert client.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
        assert server.server.active_expire_enabled is False
        client.call("SET", "k", "v")
        now = server.call(server.server.clock.ms)
        server.call(server.server.keyspace[0].set_expiry, b"k", now + 1)
        time.sleep(0.3)  # several sweep intervals
        assert client.call("DBSIZE") == 1                       # no background expiry
        assert client.call("GET", "k") is None                   # lazy expiry still works
        assert client.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == b"OK"
        client.close()


def test_debug_local_allows_loopback():
    with EmbeddedServer(enable_debug_command="local") as server:
        client = RawClient(server.port)
        assert client.call("DEBUG", "SLEEP", "0") == b"OK"
        client.close()


def test_memory_slowlog_latency(diff):
    diff.check("SET", "k", "v")
    diff.check("MEMORY", "USAGE", "nokey")
    diff.check("MEMORY", "USAGE", "k", "SAMPLES")
    diff.check("MEMORY", "USAGE", "k", "SAMPLES", "x")
    diff.check("MEMORY", "USAGE", "k", "FOO", "1")
    for samples in ("-1", "-9223372036854775808"):  # negative: a syntax error
        diff.check("MEMORY", "USAGE", "k", "SAMPLES", samples)
        diff.check("MEMORY", "USAGE", "nokey", "SAMPLES", samples)
    diff.check("MEMORY", "USAGE", "k", "SAMPLES", "1", "SAMPLES", "-2")
    diff.check("MEMORY", "USAGE", "k", "SAMPLES", "1", "FOO")
    diff.check("MEMORY", "USAGE", "nokey", "SAMPLES", "1", "SAMPLES", "0")
    assert type(diff.minired.call("MEMORY", "USAGE", "k", "SAMPLES", "1", "samples", "0")) is int
    diff.check("MEMORY", "PURGE")
    diff.check("MEMORY", "NOPE")
    ours = diff.minired.call("MEMORY", "USAGE", "k")
    assert type(ours) is int and ours > 0
    diff.both("SLOWLOG", "RESET")  # slow commands of earlier tests (PFSELFTEST) differ in time
    diff.check("SLOWLOG", "GET")
    diff.check("SLOWLOG", "GET", "-1")
    diff.check("SLOWLOG", "GET", "-2")
    diff.check("SLOWLOG", "GET", "x")
    diff.check("SLOWLOG", "GET", "1", "2")
    diff.check("SLOWLOG", "LEN", "x")
    diff.check("SLOWLOG", "RESET")
    diff.check("SLOWLOG", "FOO")
    diff.check("LATENCY", "LATEST")
    diff.check("LATENCY", "LATEST", "x")
    diff.check("LATENCY", "HISTORY", "command")
    diff.check("LATENCY", "HISTORY")
    diff.check("LATENCY", "FOO")
    diff.check("LOLWUT", "VERSION", "x")


def _info(client, *sections) -> dict[str, str]:
    text = client.call("INFO", *sections)
    if isinstance(text, Verbatim):
        text = text.text
    fields = {}
    for line in text.decode().split("\r\n"):
        if line and not line.startswith("#"):
            name, _, value = line.partition(":")
            fields[name] = value
    return fields


def _titles(client, *sections) -> list[bytes]:
    return [line for line in client.call("INFO", *sections).split(b"\r\n") if line.startswith(b"#")]


@pytest.mark.parametrize("sections", [(), ("all",), ("everything",), ("default",),
                                      ("server", "clients"), ("CLUSTER", "foo", "cluster"),
                                      ("foo",), ("default", "commandstats"), ("keyspace",)])
def test_info_sections_match_redis(diff, sections):
    theirs, ours = _titles(diff.redis, *sections), _titles(diff.minired, *sections)
    assert ours == theirs


def test_info_exact_text(diff):
    diff.check("INFO", "cluster")
    diff.check("INFO", "foo")
    diff.check("INFO", "cluster", "keyspace")
    diff.check("SET", "a", "1")
    diff.check("SELECT", "3")
    diff.check("SET", "b", "2")
    diff.check("INFO", "keyspace")
    diff.hello(3)
    diff.check("INFO", "cluster")


def test_info_keyspace_expires_and_avg_ttl(mini, mini_raw):
    mini_raw.call("SET", "a", "1")
    mini_raw.call("SET", "b", "2")
    now = mini.call(mini.server.clock.ms)
    mini.call(mini.server.keyspace[0].set_expiry, b"b", now + 100_000)
    db0 = _info(mini_raw, "keyspace")["db0"]
    keys, expires, avg_ttl = (part.split("=")[1] for part in db0.split(","))
    assert (keys, expires) == ("2", "1")
    assert 90_000 < int(avg_ttl) <= 100_000


def test_info_fields_clients_rely_on(diff, mini):
    theirs, ours = _info(diff.redis, "everything"), _info(diff.minired, "everything")
    assert ours["redis_version"] == "7.0.15"
    missing = {name for name in (
        "redis_version", "redis_mode", "process_id", "tcp_port", "uptime_in_seconds",
        "connected_clients", "blocked_clients", "maxclients", "used_memory", "used_memory_human",
        "used_memory_peak", "maxmemory", "maxmemory_human", "maxmemory_policy", "loading",
        "rdb_last_save_time", "aof_enabled", "total_connections_received",
        "total_commands_processed", "expired_keys", "evicted_keys", "total_error_replies",
        "role", "connected_slaves", "used_cpu_sys", "used_cpu_user", "cluster_enabled",
    ) if name not in ours}
    assert not missing
    extra = {name for name in set(ours) - set(theirs)
             if not name.startswith(("cmdstat_", "errorstat_", "latency_percentiles_usec_"))}
    assert extra <= {"minired_version", "python_version", "mem_allocator"}
    assert ours["tcp_port"] == str(mini.port)
    assert ours["redis_mode"] == "standalone" and ours["role"] == "master"
    assert ours["maxmemory_policy"] == "noeviction"
    # used_memory is Redis's allocator figure, modelled (a fresh Redis counts ~900 KB); the
    # process's resident size is used_memory_rss.
    assert int(ours["used_memory"]) > 800_000 and int(ours["used_memory_rss"]) > 1_000_000


def test_info_counts_commands_and_errors(mini):
    client = RawClient(mini.port)
    try:
        client.call("CONFIG", "RESETSTAT")
        client.call("SET", "k", "v")
        client.call("GET", "k")
        client.call("NO-SUCH-COMMAND")
        client.call("GET")
        stats = _info(client, "commandstats", "errorstats", "stats", "clients")
        assert stats["cmdstat_set"].startswith("calls=1,usec=")
        assert stats["cmdstat_get"].split(",")[0] == "calls=1"
        # GET with no argument is refused for its arity: a rejected call, as in Redis.
        assert stats["cmdstat_get"].endswith(",rejected_calls=1,failed_calls=0")
        assert stats["errorstat_ERR"] == "count=2"
        assert stats["total_error_replies"] == "2"
        assert int(stats["connected_clients"]) >= 1
    finally:
        client.close()


def _blocking_command():
    from minired.startup import COMMANDS

    for name in (b"blpop", b"brpop", b"bzpopmin", b"bzpopmax"):
        if name in COMMANDS:
            return name.decode()
    pytest.skip("no blocking command is registered yet")


def test_info_blocked_clients(mini):
    name = _blocking_command()
    client, blocked = RawClient(mini.port), RawClient(mini.port)
    try:
        blocked.send(name.upper(), "never-written", "0")
        deadline = time.monotonic() + 30  # generous: returns as soon as it holds
        while _info(client, "clients")["blocked_clients"] != "1":
            assert time.monotonic() < deadline, "the client never showed as blocked"
            time.sleep(0.01)
        assert _info(client, "clients")["clients_in_timeout_table"] == "0"
    finally:
        blocked.close()
        client.close()


def test_info_memory_human_format():
    from minired.commands.info import human_bytes as _human

    assert [_human(n) for n in (0, 1023, 1024, 1536, 1048576, 1073741824)] == [
        "0B", "1023B", "1.00K", "1.50K", "1.00M", "1.00G"]


def test_shutdown_over_the_wire_stops_the_server():
    server = EmbeddedServer().start()
    client = RawClient(server.port)
    client.send("SHUTDOWN", "NOSAVE")
    with pytest.raises(ConnectionError):
        client.read()  # like Redis: the connection closes, no reply
    client.close()
    server._thread.join(5)
    assert not server._thread.is_alive()
    with pytest.raises(OSError):
        RawClient(server.port).call("PING")
