"""INFO against a real Redis 7.0: every field Redis shows, in Redis's order, and the values that
a command sequence makes deterministic (hits and misses, saves, scripts, subscriptions, errors,
expiries, socket reads and writes).

Exceptions, by name: minired_version and python_version are minired's own (Server).
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from minired.embed import EmbeddedServer
from minired.features.metrics import SAMPLES, Rate
from tests.support.differential import Differential
from tests.support.respclient import RawClient
from tests.support.servers import (
    RedisServer,
    debug_server_pair,
    redis_server_binary,
    start_on_free_port,
    terminate,
)
from tests.support.waiting import wait_until

MINIRED_ONLY = {"minired_version", "python_version"}
# Sections whose lines are fixed fields (the others list commands, errors, databases).
FIELD_SECTIONS = ("Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
                  "Modules", "Cluster")


def parse_info(text: bytes) -> dict[str, list[tuple[str, str]]]:
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            current = sections.setdefault(line[2:], [])
        elif line:
            name, _, value = line.partition(":")
            current.append((name, value))
    return sections


def field_names(text: bytes, section: str) -> list[str]:
    return [name for name, _ in parse_info(text).get(section, []) if name not in MINIRED_ONLY]


def fields(client: RawClient, section: str = "everything") -> dict[str, str]:
    found: dict[str, str] = {}
    for pairs in parse_info(client.call("INFO", section)).values():
        found.update(pairs)
    return found


def both_fields(diff, section: str = "everything") -> tuple[dict, dict]:
    return fields(diff.redis, section), fields(diff.minired, section)


def commandstats(client: RawClient) -> dict[str, list[str]]:
    """INFO commandstats without the times: command -> calls, rejected_calls, failed_calls."""
    stats = parse_info(client.call("INFO", "commandstats")).get("Commandstats", [])
    return {name: [part for part in value.split(",") if not part.startswith("usec")]
            for name, value in stats}


def assert_same(diff, *names: str, section: str = "everything") -> None:
    theirs, ours = both_fields(diff, section)
    assert {n: ours.get(n) for n in names} == {n: theirs.get(n) for n in names}, diff.log[-5:]


# --- names and order -----------------------------------------------------------------------------

@pytest.mark.parametrize("request_", [("everything",), ("all",), ()])
def test_field_names_and_order_match_redis(diff, request_):
    theirs, ours = diff.both("INFO", *request_)
    redis_sections = list(parse_info(theirs))
    assert list(parse_info(ours)) == redis_sections
    for section in FIELD_SECTIONS:
        if section in redis_sections:
            assert field_names(ours, section) == field_names(theirs, section), section


def test_each_section_alone_matches_redis(diff):
    for section in FIELD_SECTIONS:
        theirs, ours = diff.both("INFO", section.lower())
        assert field_names(ours, section) == field_names(theirs, section), section


def test_fixed_values_of_absent_features_are_a_fresh_redis_values(diff):
    """Defragmentation, replication, lazy loading, I/O threads: idle in both. (Not what the
    shared Redis's history moves: forks after a BGSAVE, lazily freed objects, reply buffers,
    MIGRATE's cached sockets.)"""
    theirs, ours = both_fields(diff)
    for name in ("current_cow_peak", "current_fork_perc", "rdb_current_bgsave_time_sec",
                 "aof_rewrite_scheduled", "aof_last_bgrewrite_status", "aof_last_write_status",
                 "module_fork_in_progress", "total_net_repl_input_bytes",
                 "instantaneous_input_repl_kbps", "sync_full", "evicted_clients",
                 "active_defrag_hits", "current_active_defrag_time", "io_threaded_reads_processed",
                 "mem_replication_backlog", "active_defrag_running", "lazyfree_pending_objects",
                 "loading", "async_loading", "redis_git_sha1", "redis_mode", "atomicvar_api",
                 "io_threads_active", "role", "repl_backlog_size", "cluster_enabled",
                 "second_repl_offset"):
        assert ours[name] == theirs[name], name


# --- counters after the same commands ------------------------------------------------------------

def test_resetstat_resets_the_same_counters(diff):
    diff.check("GET", "missing")
    diff.check("SET", "k", "v")
    diff.check("GET", "k")
    diff.check("LPUSH", "k", "x")  # an error reply
    diff.check("CONFIG", "RESETSTAT")
    assert_same(diff, "total_connections_received", "total_commands_processed",
                "keyspace_hits", "keyspace_misses", "expired_keys", "total_error_replies",
                "unexpected_error_replies", "rejected_connections", "evicted_keys",
                "total_reads_processed", "total_writes_processed")


# Reads count (GET, EXISTS, TYPE, TTL, MGET, LRANGE, HGET, the sources of SUNIONSTORE, SET ..
# GET, a script's reads, a transaction's); writes (SET, INCR, LPUSH, DEL ...) do not.
HIT_AND_MISS_SEQUENCE = [
    ("SET", "s", "v"), ("GET", "s"), ("GET", "nope"), ("EXISTS", "s", "nope", "s"),
    ("TYPE", "s"), ("TYPE", "nope"), ("TTL", "s"), ("PTTL", "nope"), ("STRLEN", "s"),
    ("MGET", "s", "nope", "s"), ("INCR", "n"), ("APPEND", "s", "x"), ("SETNX", "s", "y"),
    ("SET", "s", "w", "GET"), ("SET", "new", "w", "GET"), ("GETSET", "s", "v"),
    ("GETEX", "nope"), ("GETRANGE", "s", "0", "1"), ("RPUSH", "l", "a", "b"),
    ("LRANGE", "l", "0", "-1"), ("LRANGE", "nope", "0", "-1"), ("LLEN", "l"), ("LPOP", "l"),
    ("LINDEX", "l", "0"), ("LPOS", "l", "b"), ("HSET", "h", "f", "v"), ("HGET", "h", "f"),
    ("HGET", "nope", "f"), ("HGETALL", "h"), ("HINCRBY", "h", "n", "1"), ("HMGET", "h", "f"),
    ("SADD", "st", "a"), ("SISMEMBER", "st", "a"), ("SINTER", "st", "nope"),
    ("SUNIONSTORE", "d", "st", "nope"), ("SMOVE", "st", "st2", "a"), ("ZADD", "z", "1", "a"),
    ("ZSCORE", "z", "a"), ("ZRANGE", "z", "0", "-1"), ("ZUNIONSTORE", "d2", "2", "z", "nope"),
    ("ZINCRBY", "z", "1", "a"), ("GET", "l"), ("LRANGE", "s", "0", "1"),
    ("EVAL", "return redis.call('GET', KEYS[1])", "1", "s"),
    ("EVAL", "return redis.call('GET', KEYS[1])", "1", "nope"),
    ("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "s"),
    [("MULTI",), ("GET", "s"), ("INCR", "n"), ("EXEC",)],
    ("PFADD", "p", "a"), ("PFCOUNT", "p", "nope"), ("PFMERGE", "p2", "p", "nope"),
    ("SORT", "l", "BY", "w_*"), ("COPY", "s", "s3"), ("DUMP", "s"), ("OBJECT", "ENCODING", "s"),
    ("TOUCH", "s", "nope"), ("DEL", "s3"), ("RENAME", "s", "s4"), ("EXPIRE", "s4", "100"),
    ("BITCOUNT", "s4"), ("SETBIT", "b", "1", "1"), ("BITOP", "AND", "d3", "s4", "nope"),
    ("LCS", "s4", "s4"), ("XADD", "x", "1-1", "f", "v"), ("XRANGE", "x", "-", "+"),
    ("XLEN", "x"), ("XREAD", "STREAMS", "x", "nope", "0", "0"), ("KEYS", "*"), ("SCAN", "0"),
    ("DBSIZE",), ("MEMORY", "USAGE", "s4"),
]


def test_keyspace_hits_and_misses_count_read_lookups_as_redis_does(diff):
    diff.check("CONFIG", "RESETSTAT")
    for step in HIT_AND_MISS_SEQUENCE:
        for command in step if isinstance(step, list) else [step]:  # (a transaction: one step)
            diff.both(*command)
        theirs, ours = both_fields(diff, "stats")
        assert (ours["keyspace_hits"], ours["keyspace_misses"]) == (
            theirs["keyspace_hits"], theirs["keyspace_misses"]), step


def test_expired_keys_lazy_and_active():
    # (a pair of its own: the shared servers refuse DEBUG, and with the active cycle still on
    # the first key could expire either way)
    with debug_server_pair() as (real, mini):
        diff = Differential(real.port, mini.port)
        try:
            _expire_lazily_then_actively(diff)
        finally:
            diff.close()


def _expire_lazily_then_actively(diff: Differential) -> None:
    diff.check("CONFIG", "RESETSTAT")
    assert diff.check("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
    diff.check("SET", "lazy", "v", "PX", "20")
    time.sleep(0.05)
    assert diff.check("DBSIZE") == 1  # still there: only a lookup expires it now
    diff.check("GET", "lazy")
    assert_same(diff, "expired_keys", "keyspace_misses", section="stats")
    diff.check("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    diff.check("SET", "active", "v", "PX", "20")
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while time.monotonic() < deadline:
        theirs, ours = both_fields(diff, "stats")
        if theirs["expired_keys"] == ours["expired_keys"] == "2":
            break
        time.sleep(0.05)
    assert_same(diff, "expired_keys", "keyspace_misses", section="stats")


def test_error_replies(diff):
    diff.check("CONFIG", "RESETSTAT")
    diff.check("SET", "s", "v")
    diff.check("LPUSH", "s", "x")
    diff.check("NOSUCHCOMMAND")
    diff.check("GET")
    diff.check("EVAL", "return redis.call('GET', KEYS[1])", "2", "s")
    assert_same(diff, "total_error_replies", "unexpected_error_replies",
                "dump_payload_sanitizations", section="stats")
    assert parse_info(diff.minired.call("INFO", "errorstats")) == parse_info(
        diff.redis.call("INFO", "errorstats"))


def test_commandstats_calls(diff):
    diff.check("CONFIG", "RESETSTAT")
    for command in (("SET", "a", "1"), ("GET", "a"), ("LPUSH", "a", "x"), ("CONFIG", "GET", "hz"),
                    ("GET", "nope")):
        diff.both(*command)

    assert commandstats(diff.minired) == commandstats(diff.redis)


# Redis counts each call() in total_commands_processed (and in each command's calls): a
# script's and an EXEC's commands count; one refused before it runs (unknown, wrong arity,
# DEBUG while enable-debug-command is no, NOAUTH, queued by MULTI) does not.
LUA_SET_GET = "redis.call('SET', 'a', '1') return redis.call('GET', 'a')"
CALL_COUNTING_SEQUENCES = {
    "a read": [("GET", "k")],
    "unknown": [("NOSUCH",)],
    "wrong arity": [("GET",)],
    "unknown subcommand": [("CONFIG", "NOSUCH")],
    "subcommand arity": [("CONFIG", "GET")],
    "a failed call": [("SET", "s", "x"), ("LPUSH", "s", "x"), ("SET", "k", "v", "XYZ")],
    "a script's calls": [("EVAL", LUA_SET_GET, "0")],
    "a script's calls, the last failing": [
        ("EVAL", "redis.call('SET', 's', 'x') return redis.call('LPUSH', 's', 'y')", "0")],
    "a script's pcall refused": [("EVAL", "return redis.pcall('NOSUCH')", "0"),
                                 ("EVAL", "return redis.pcall('GET')", "0")],
    "a script that does not compile": [("EVAL", "return (", "0"), ("EVALSHA", "a" * 40, "0")],
    "a script's loop": [("EVAL", "for i = 1, 10 do redis.call('INCR', 'n') end", "0")],
    "a function": [("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', "
                    "function(keys, args) return redis.call('PING') end)"), ("FCALL", "f", "0")],
    "a transaction": [("MULTI",), ("SET", "k", "v"), ("GET", "k"), ("EXEC",)],
    "a transaction with a script": [("MULTI",), ("EVAL", LUA_SET_GET, "0"), ("EXEC",)],
    "a transaction with a failing command": [("MULTI",), ("SET", "s", "x"), ("LPUSH", "s", "x"),
                                             ("EXEC",)],
    "a transaction with a failing script": [
        ("MULTI",), ("EVAL", "return redis.call('LPUSH', 's', 'y')", "0"), ("SET", "s", "x"),
        ("EVAL", "return redis.call('LPUSH', 's', 'y')", "0"), ("EXEC",)],
    "a transaction refused": [("MULTI",), ("GET",), ("NOSUCH",), ("SET", "k", "1"), ("EXEC",)],
    "a transaction discarded": [("MULTI",), ("SET", "k", "v"), ("DISCARD",)],
    "a transaction nested": [("MULTI",), ("MULTI",), ("EXEC",)],
    "a transaction aborted by WATCH": [("WATCH", "w"), ("SET", "w", "1"), ("MULTI",),
                                       ("GET", "w"), ("EXEC",)],
    "a blocking pop served at once": [("RPUSH", "l", "a"), ("BLPOP", "l", "0")],
    "a blocking pop timing out": [("BLPOP", "none", "0.01")],
    "protected commands": [("DEBUG", "SLEEP", "0"), ("MODULE", "LOAD", "x"), ("MODULE", "LIST")],
    "protected commands queued": [("MULTI",), ("DEBUG", "HELP"), ("GET", "x"), ("EXEC",),
                                  ("MULTI",), ("MODULE", "UNLOAD", "x"), ("EXEC",)],
}


@pytest.mark.parametrize("sequence", CALL_COUNTING_SEQUENCES.values(),
                         ids=CALL_COUNTING_SEQUENCES.keys())
def test_what_counts_as_a_call(diff, sequence):
    diff.check("CONFIG", "RESETSTAT")
    for command in sequence:
        diff.check(*command)
    assert_same(diff, "total_commands_processed", section="stats")
    assert commandstats(diff.minired) == commandstats(diff.redis)


def test_refused_before_authentication_for_a_protected_command(diff):
    """DEBUG and MODULE LOAD are refused for what they are before NOAUTH, and not counted."""
    diff.check("CONFIG", "SET", "requirepass", "secret")
    try:
        strangers = RawClient(diff.redis_port), RawClient(diff.minired_port)
        try:
            for command in (("DEBUG", "SLEEP", "0"), ("MODULE", "LOAD", "x"), ("GET", "k")):
                theirs, ours = (client.call(*command) for client in strangers)
                assert ours == theirs, command
        finally:
            for client in strangers:
                client.close()
        diff.check("AUTH", "secret")
        assert commandstats(diff.minired) == commandstats(diff.redis)
    finally:
        diff.check("CONFIG", "SET", "requirepass", "")


def test_an_aof_replay_counts_no_calls(tmp_path):
    """Redis leaves statistics alone while it loads the AOF: after a restart, INFO counts only
    what clients sent since (minired counted every replayed command as a call)."""
    counted = []
    for name, program in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        for run in range(2):
            proc, port = start_on_free_port(
                lambda port: [*program, "--port", str(port), "--dir", str(directory), "--save", "",
                              "--appendonly", "yes", "--appendfsync", "always"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                client = RawClient(port)
                if run == 0:
                    for command in (("SET", "a", "1"), ("EVAL", "redis.call('INCR', 'n')", "0"),
                                    ("MULTI",), ("SET", "b", "2"), ("EXEC",)):
                        client.call(*command)
                else:
                    assert client.call("MGET", "a", "n", "b") == [b"1", b"1", b"2"]
                    # (without PING: the start-up wait's first ones may be refused, LOADING)
                    calls = commandstats(client)
                    del calls["cmdstat_ping"]
                    counted.append((fields(client, "stats")["total_commands_processed"], calls))
                client.close()
            finally:
                terminate(proc)
    assert counted[1] == counted[0]


def test_socket_reads_and_writes(diff):
    diff.check("CONFIG", "RESETSTAT")
    for _ in range(5):
        diff.check("PING")
    assert_same(diff, "total_reads_processed", "total_writes_processed",
                "total_commands_processed", section="stats")


def test_scripts_and_functions(diff):
    assert_same(diff, "number_of_cached_scripts", "number_of_functions", "number_of_libraries")
    diff.check("SCRIPT", "LOAD", "return 1")
    diff.check("SCRIPT", "LOAD", "return 1")
    diff.check("EVAL", "return 2", "0")
    diff.check("FUNCTION", "LOAD", "#!lua name=lib\n"
               "redis.register_function('f1', function() return 1 end)\n"
               "redis.register_function('f2', function() return 2 end)")
    assert_same(diff, "number_of_cached_scripts", "number_of_functions", "number_of_libraries")
    _, ours = both_fields(diff, "memory")
    assert int(ours["used_memory_vm_eval"]) > 0 and int(ours["used_memory_scripts_eval"]) > 0
    assert int(ours["used_memory_vm_total"]) == (int(ours["used_memory_vm_eval"])
                                                 + int(ours["used_memory_vm_functions"]))
    diff.check("SCRIPT", "FLUSH")
    diff.check("FUNCTION", "FLUSH")
    assert_same(diff, "number_of_cached_scripts", "number_of_functions", "number_of_libraries")


def test_subscriptions(diff, connect):
    subscriber = connect()
    subscriber.check("SUBSCRIBE", "c1", "c2")
    subscriber.check("PSUBSCRIBE", "p*")
    other = connect()
    other.check("SSUBSCRIBE", "shard1")
    other.check("SSUBSCRIBE", "shard2")
    assert_same(diff, "pubsub_channels", "pubsub_patterns", "pubsubshard_channels",
                section="stats")
    other.check("SUNSUBSCRIBE", "shard1")
    assert_same(diff, "pubsubshard_channels", section="stats")


# --- persistence, on servers of this test's own with save points --------------------------------

@pytest.fixture(scope="module")
def saving_pair(tmp_path_factory):
    redis_server = RedisServer("--save", "3600 1000000").start()
    minired_server = EmbeddedServer(dir=str(tmp_path_factory.mktemp("minired-info")),
                                    save="3600 1000000").start()
    try:
        yield redis_server, minired_server
    finally:
        minired_server.stop()
        redis_server.stop()


def test_changes_since_last_save_and_saves(saving_pair):
    from tests.support.differential import Differential

    pair = Differential(saving_pair[0].port, saving_pair[1].port)
    try:
        for command in (("SET", "a", "1"), ("SET", "b", "2"), ("INCR", "a"), ("DEL", "b")):
            pair.check(*command)
        assert_same(pair, "rdb_changes_since_last_save", section="persistence")
        pair.check("SAVE")
        names = ("rdb_changes_since_last_save", "rdb_saves", "rdb_last_bgsave_status",
                 "rdb_last_bgsave_time_sec", "rdb_bgsave_in_progress")
        assert_same(pair, *names, section="persistence")
        pair.check("SET", "c", "3")
        pair.check("BGSAVE")
        deadline = time.monotonic() + 30  # generous: returns as soon as it holds
        while time.monotonic() < deadline:
            theirs, ours = both_fields(pair, "persistence")
            if theirs["rdb_bgsave_in_progress"] == ours["rdb_bgsave_in_progress"] == "0":
                break
            time.sleep(0.05)
        # Whole wall-clock seconds, as Redis's time(NULL): 1 if the save crossed a second.
        timed = ("rdb_last_bgsave_time_sec",)
        assert_same(pair, *(name for name in names if name not in timed), section="persistence")
        assert {theirs[timed[0]], ours[timed[0]]} <= {"0", "1"}
        # With the AOF on, Redis adds the AOF's sizes.
        pair.check("CONFIG", "SET", "appendonly", "yes")
        theirs, ours = pair.both("INFO", "persistence")
        assert field_names(ours, "Persistence") == field_names(theirs, "Persistence")
    finally:
        pair.both("CONFIG", "SET", "appendonly", "no")
        pair.close()


# --- minired only ------------------------------------------------------------------------------

def test_info_leaves_the_script_engine_unloaded():
    with EmbeddedServer() as server:
        client = RawClient(server.port)
        try:
            text = client.call("INFO", "everything")
            assert b"number_of_cached_scripts:0" in text
        finally:
            client.close()
        assert server.call(lambda: server.server.features.scripting) is None


def test_instantaneous_ops_per_sec_is_sampled(mini_raw):
    def sampled() -> bool:
        """Some traffic, then whether a sample (one per 100 ms server tick) has counted it."""
        mini_raw.pipeline([("PING",)] * 200)
        stats = fields(mini_raw, "stats")
        return (int(stats["instantaneous_ops_per_sec"]) > 0
                and float(stats["instantaneous_input_kbps"]) > 0)

    wait_until(sampled, "a sample of the PINGs' rate", interval=0.05)


def test_rate_is_the_mean_of_the_last_samples():
    rate = Rate(0, 0)
    rate.track(100, 50)  # 500 per second
    assert rate.mean() == 500 // SAMPLES
    for step in range(2, SAMPLES + 2):
        rate.track(step * 100, 50 + (step - 1) * 10)  # 100 per second
    assert rate.mean() == 100
    rate.track(SAMPLES * 100 + 300, 3)  # the counter went back: CONFIG RESETSTAT
    assert rate.mean() == 0


REJECTIONS = {
    "arity": [["GET", "a", "b"]],
    "container arity": [["CLIENT"]],
    "unknown subcommand": [["CLIENT", "NOPE"]],
    "arity while queuing": [["MULTI"], ["GET"], ["EXEC"]],
    "no_multi": [["MULTI"], ["WATCH", "x"], ["EXEC"]],
    "subscribe context": [["SUBSCRIBE", "ch"], ["GET", "a"]],
    "arity in a script": [["EVAL", "return redis.call('get', 'a', 'b')", "0"]],
    "unknown in a script": [["EVAL", "return redis.call('nosuch')", "0"]],
    "oom": [["CONFIG", "SET", "maxmemory", "1"], ["SET", "a", "b"],
            ["CONFIG", "SET", "maxmemory", "0"]],
}


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_rejected_commands_are_counted_as_redis_counts_them(real_redis, mini, name):
    """Refused before running (Redis's rejectCommand): an error reply in errorstats, and the
    command's rejected_calls in commandstats."""
    def counters(port):
        client, admin = RawClient(port), RawClient(port)
        try:
            admin.call("CONFIG", "RESETSTAT")
            for command in REJECTIONS[name]:
                client.call(*command)
            info = fields(admin)
            return {key: value.split(",usec=")[0] + value[value.index(",rejected"):]
                    if key.startswith("cmdstat_") else value
                    for key, value in info.items()
                    if key.startswith(("cmdstat_", "errorstat_", "total_error_replies"))
                    and key not in ("cmdstat_config", "cmdstat_info")}
        finally:
            client.close()
            admin.close()
    assert counters(mini.port) == counters(real_redis.port)
