"""A real Redis replays minired's append-only files to exactly minired's data.

Hypothesis draws workloads over every type (TTLs that pass mid-run through short PX and DEBUG
SLEEP, streams with consumer groups and pending entries, blocking commands served by a push,
scripts, MULTI, a second database, a BGREWRITEAOF now and then) and runs them on one minired
with the AOF on. After each, a copy of minired's appendonlydir is loaded by redis-server 7.0.15,
and every key of databases 0 and 1 must have the same type, value and absolute expiry time
(PEXPIRETIME) there; streams are compared through XINFO STREAM FULL, groups, PELs, delivery
times and counts included. redis-check-aof must accept the files.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time

import pytest
import redis

from minired.embed import SubprocessServer
from tests.support.respclient import Err, RawClient
from tests.support.servers import (
    RedisServer,
    redis_server_binary,
    start_on_free_port,
    terminate,
)
from tests.support.waiting import info_field, wait_until
from tests.support.workload import (
    SCENARIOS,
    dataset,
    drawn_workloads,
    held_data,
    normalized_stream,
    run_workload,
    workload_clients,
)


@pytest.fixture(scope="module")
def minired_aof(tmp_path_factory):
    directory = tmp_path_factory.mktemp("minired-aof")
    server = SubprocessServer("--dir", str(directory), "--appendonly", "yes",
                              "--enable-debug-command", "yes").start()
    try:
        yield server, directory
    finally:
        server.stop()


def _replayed_by_redis(directory, copy) -> tuple:
    """Start redis-server on a copy of minired's files: its databases 0 and 1, and functions."""
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(directory / "appendonlydir", copy / "appendonlydir")
    check = subprocess.run(["redis-check-aof", str(copy / "appendonlydir" /
                                                   "appendonly.aof.manifest")],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "is valid" in check.stdout, check.stdout + check.stderr
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                      "--appendonly", "yes", "--dir", str(copy),
                      "--appenddirname", "appendonlydir", "--logfile", str(copy / "redis.log")])
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 30
        while client.info("persistence")["loading"]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        client.close()
        return held_data(port)
    finally:
        terminate(proc)


def _run_and_replay(server, directory, copy, actions) -> None:
    """Run the actions on minired (after the common setup), then assert that redis-server,
    loading a copy of minired's files, holds the same databases 0 and 1 and functions."""
    clients = workload_clients(server.port)
    try:
        run_workload(clients, actions, server.port)
        # Every short TTL has passed; looking the keys up deletes them (logged as DEL).
        expected = held_data(server.port)
        # (each reply above came after what it logged was in the file)
        replayed = _replayed_by_redis(directory, copy)
    finally:
        for client in clients.values():
            client.close()
    assert replayed == expected


@pytest.mark.skipif(not shutil.which("redis-check-aof"), reason="redis-tools not installed")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_rewrite_replays_in_redis(minired_aof, tmp_path, name):
    server, directory = minired_aof
    _run_and_replay(server, directory, tmp_path / "copy", SCENARIOS[name])


@pytest.fixture(scope="module")
def minired_aof_as_commands(tmp_path_factory):
    """AOF bases written as commands (aof-use-rdb-preamble no), with `#TS:` lines."""
    directory = tmp_path_factory.mktemp("minired-aof-commands")
    server = SubprocessServer("--dir", str(directory), "--appendonly", "yes",
                              "--aof-use-rdb-preamble", "no", "--aof-timestamp-enabled", "yes",
                              "--enable-debug-command", "yes").start()
    try:
        yield server, directory
    finally:
        server.stop()


@pytest.mark.skipif(not shutil.which("redis-check-aof"), reason="redis-tools not installed")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_rewrite_replays_in_redis_from_a_command_base_with_timestamps(
        minired_aof_as_commands, tmp_path, name):
    """Each scenario ends with a BGREWRITEAOF: the base it leaves is `.base.aof`, commands
    after a `#TS:` line, which redis-check-aof accepts and redis-server loads to the same data."""
    server, directory = minired_aof_as_commands
    _run_and_replay(server, directory, tmp_path / "copy", [*SCENARIOS[name], ("rewrite", None)])
    manifest = (directory / "appendonlydir" / "appendonly.aof.manifest").read_text()
    base = manifest.split()[1]
    assert base.endswith(".base.aof"), manifest
    assert (directory / "appendonlydir" / base).read_bytes().startswith(b"#TS:")


@pytest.mark.skipif(not shutil.which("redis-check-aof"), reason="redis-tools not installed")
@drawn_workloads(max_examples=20)
def test_redis_replays_minired_aof_to_the_same_data(minired_aof, tmp_path, actions):
    server, directory = minired_aof
    _run_and_replay(server, directory, tmp_path / "copy", actions)


def test_dataset_comparison_sees_a_difference():
    """The comparison is not vacuous: a TTL, a PEL delivery count, a value each count."""
    a = {b"k": (b"string", b"v", 1000)}
    assert a != {b"k": (b"string", b"v", 1001)}
    assert normalized_stream([b"length", 1, b"groups", [[b"name", b"g", b"consumers", [
        [b"name", b"c", b"seen-time", 5, b"pel-count", 1]]]]]) != normalized_stream(
        [b"length", 1, b"groups", [[b"name", b"g", b"consumers", [
            [b"name", b"c", b"seen-time", 5, b"pel-count", 2]]]]])


def _aof_dir(directory, records: bytes) -> None:
    """A multi-part AOF directory of one incremental file holding records."""
    aof = directory / "appendonlydir"
    aof.mkdir(parents=True)
    (aof / "appendonly.aof.manifest").write_text("file appendonly.aof.1.incr.aof seq 1 type i\n")
    (aof / "appendonly.aof.1.incr.aof").write_bytes(records)


def _records(*commands) -> bytes:
    out = []
    for argv in commands:
        if isinstance(argv, bytes):  # an annotation line
            out.append(argv)
            continue
        out.append(b"*%d\r\n" % len(argv))
        for arg in argv:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(out)


def test_no_key_expires_while_the_aof_loads_as_in_redis(tmp_path):
    """Absolute times in the past count only once loaded (keyIsExpired and checkAlreadyExpired
    answer no while Redis loads): a key whose TTL passed since it was logged is not recreated
    without its TTL by the writes logged after it."""
    now = int(time.time() * 1000)
    records = _records(
        ("SELECT", 0),
        ("SET", "a", "1", "PXAT", now - 60_000), ("INCR", "a"),
        ("SET", "b", "1", "PXAT", now + 10**8), ("INCR", "b"),
        ("RPUSH", "c", "x"), ("PEXPIREAT", "c", now - 60_000), ("RPUSH", "c", "y"),
        ("SET", "d", "v"), ("RESTORE", "e", now - 60_000,
                            b"\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce", "ABSTTL"),
        ("GETEX", "d", "PXAT", now - 60_000), ("APPEND", "d", "w"))
    found = {}
    for name in ("redis", "minired"):
        directory = tmp_path / name
        _aof_dir(directory, records)
        if name == "redis":
            proc, port = start_on_free_port(
                lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                              "--appendonly", "yes", "--dir", str(directory),
                              "--logfile", str(directory / "redis.log")])
            try:
                found[name] = dataset(redis.Redis(port=port))
            finally:
                terminate(proc)
        else:
            with SubprocessServer("--dir", str(directory), "--appendonly", "yes") as server:
                found[name] = dataset(redis.Redis(port=server.port))
    assert found["minired"] == found["redis"]
    assert found["minired"] == {b"b": (b"string", b"2", now + 10**8)}


def test_relative_ttls_of_an_older_redis_aof_count_from_loading(tmp_path):
    """Redis 6 logged SET ... EX and SETEX as sent: they count from the time of loading."""
    _aof_dir(tmp_path, _records(("SELECT", 0), ("SET", "a", "v", "EX", 1000),
                                ("SETEX", "b", 1000, "v"), ("SET", "c", "v"), ("EXPIRE", "c", 1000),
                                ("RESTORE", "d", 1_000_000, b"\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce")))
    started = int(time.time() * 1000)
    with SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes") as server:
        client = redis.Redis(port=server.port)
        for key in ("a", "b", "c", "d"):
            deadline = client.execute_command("PEXPIRETIME", key)
            assert started + 1_000_000 <= deadline <= int(time.time() * 1000) + 1_000_000, key


def test_minired_files_with_clock_lines_still_load(tmp_path):
    """minired before this release logged relative TTLs after `#MS:<unix ms>` lines: loading
    keeps each TTL counted from the time it was logged."""
    logged_at = int(time.time() * 1000) - 50_000
    _aof_dir(tmp_path, _records(b"#MS:%d\r\n" % logged_at, ("SELECT", 0),
                                ("SET", "k", "v", "PX", 100_000), ("SET", "gone", "v", "PX", 10_000),
                                ("INCR", "n")))
    with SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes") as server:
        client = redis.Redis(port=server.port)
        assert client.execute_command("PEXPIRETIME", "k") == logged_at + 100_000
        assert client.exists("gone") == 0 and client.get("n") == b"1"


# Commands whose records minired writes as Redis 7.0.15 writes them, byte for byte once the
# times are set aside (the stream group reads, where minired logs more, are left out).
SAME_RECORDS = [
    ("SET", "k", "old", "PX", "1"), ("DEBUG", "SLEEP", "0.01"), ("APPEND", "k", "new"),
    ("SET", "s", "v", "EX", "100"), ("SETEX", "a", "100", "v"),
    ("GETEX", "s", "PX", "5000"), ("GETEX", "s", "PERSIST"), ("GETEX", "s", "EXAT", "100"),
    ("EXPIRE", "a", "1000", "NX"), ("EXPIREAT", "a", "100"), ("GETDEL", "a"),
    ("SADD", "st", "a", "b", "c", "d", "e"), ("SPOP", "st", "10"), ("SADD", "one", "a"),
    ("SPOP", "one"),
    ("INCRBYFLOAT", "f", "1.5"), ("HINCRBYFLOAT", "h", "f", "2.5"),
    ("RPUSH", "l", "a", "b", "c"), ("BLPOP", "l", "0"), ("BLMPOP", "0", "1", "l", "RIGHT", "COUNT", "5"),
    ("RPUSH", "l", "x", "y"), ("BLMOVE", "l", "l2", "LEFT", "RIGHT", "0"),
    ("ZADD", "z", "1", "a", "2", "b", "3", "c"), ("BZPOPMIN", "z", "0"),
    ("BZMPOP", "0", "1", "z", "MAX", "COUNT", "1"), ("RPUSH", "l", "q"), ("BRPOPLPUSH", "l", "l3", "0"),
    ("LMPOP", "1", "l2", "LEFT", "COUNT", "2"), ("XADD", "x", "MAXLEN", "~", "1", "5-1", "f", "v"),
    ("EVAL", "redis.call('set','e1','1') redis.call('incr','e1') return 1", "0"),
    ("EVAL", "redis.call('set','e2','1') return 1", "0"),
    ("CONFIG", "SET", "lazyfree-lazy-expire", "yes"), ("SET", "u", "1", "PX", "1"),
    ("DEBUG", "SLEEP", "0.01"), ("GET", "u"), ("SET", "b", "1"), ("EXPIRE", "b", "-1"),
    ("GETSET", "g", "1"), ("getset", "g", "2"), ("SET", "g", "3", "GET"),
    ("set", "g", "4", "KEEPTTL", "get"), ("SET", "g", "5", "GET", "XX"),
    ("SET", "g", "6", "NX", "GET"), ("SET", "g", "7", "GET", "EX", "100"),
]


# A transaction with a script in it: one MULTI/EXEC in the file.
TRANSACTION = [("MULTI",), ("SET", "m", "1"),
               ("EVAL", "redis.call('set', 'n', '1') redis.call('incr', 'n')", "0"),
               ("INCR", "m"), ("EXEC",)]


def _records_of(directory) -> list:
    """The records of the incremental AOF files, each number that is a time in ms as 'T'."""
    from minired.features.aof_records import read_records
    out = []
    for path in sorted((directory / "appendonlydir").glob("*.incr.aof")):
        for _, record in read_records(path.read_bytes()):
            out.append([b"T" if arg.isdigit() and len(arg) >= 12 else arg for arg in record])
    return out


def test_records_are_the_ones_redis_writes(tmp_path):
    found = {}
    for name in ("redis", "minired"):
        directory = tmp_path / name
        directory.mkdir()
        args = ("--appendonly", "yes", "--dir", str(directory), "--enable-debug-command", "yes")
        if name == "redis":
            proc, port = start_on_free_port(
                lambda port: [redis_server_binary(), "--port", str(port), "--save", "", *args],
                stdout=subprocess.DEVNULL)
            try:
                client = redis.Redis(port=port)
                for command in SAME_RECORDS:
                    client.execute_command(*command)
                for command in TRANSACTION:
                    client.execute_command(*command)
            finally:
                terminate(proc)
        else:
            with SubprocessServer(*args) as server:
                client = redis.Redis(port=server.port)
                for command in SAME_RECORDS:
                    client.execute_command(*command)
                for command in TRANSACTION:
                    client.execute_command(*command)
        found[name] = _records_of(directory)
    assert found["minired"] == found["redis"]


def test_set_repl_keeps_a_script_s_writes_out_of_the_aof(tmp_path):
    """redis.set_repl(redis.REPL_NONE) or REPL_REPLICA: the script's writes from then on are not
    logged, so a restart does not bring them back (as in Redis); REPL_AOF and REPL_ALL log."""
    script = ("redis.call('SET', 'before', '1') redis.set_repl(tonumber(ARGV[1])) "
              "redis.call('SET', KEYS[1], '1') redis.set_repl(redis.REPL_ALL) "
              "redis.call('INCR', 'after') return 1")
    found = {}
    for name in ("redis", "minired"):
        directory = tmp_path / name
        directory.mkdir()
        args = ("--appendonly", "yes", "--dir", str(directory))
        for restart in (False, True):
            if name == "redis":
                proc, port = start_on_free_port(
                    lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                                  *args],
                    stdout=subprocess.DEVNULL)
                try:
                    client = redis.Redis(port=port)
                    while client.info("persistence")["loading"]:
                        time.sleep(0.01)
                    if not restart:
                        for flag, key in enumerate(("none", "aof", "replica", "all")):
                            client.eval(script, 1, key, flag)
                    found[name, restart] = dataset(client)
                finally:
                    terminate(proc)
            else:
                with SubprocessServer(*args) as server:
                    client = redis.Redis(port=server.port)
                    if not restart:
                        for flag, key in enumerate(("none", "aof", "replica", "all")):
                            client.eval(script, 1, key, flag)
                    found[name, restart] = dataset(client)
    assert found["minired", False] == found["redis", False]
    assert found["minired", True] == found["redis", True]
    assert set(found["minired", True]) == {b"before", b"aof", b"all", b"after"}


def _folder(path) -> dict[str, bytes]:
    return {file.name: re.sub(rb"#TS:\d+", b"#TS:", file.read_bytes())
            for file in sorted(path.iterdir())}


def _aof_files(command: list[str], directory, setup: list[tuple]) -> tuple[dict, dict]:
    """The AOF files (times left out) a server leaves after the setup, and after a rewrite."""
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "", "--appendonly", "yes",
                      "--dir", str(directory)],
        stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        for argv in setup:
            client.execute_command(*argv)
        before = _folder(directory / "appendonlydir")
        client.execute_command("BGREWRITEAOF")
        deadline = time.monotonic() + 20
        while True:
            info = client.info("persistence")
            if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
                break
            assert time.monotonic() < deadline
            time.sleep(0.01)
        client.close()
    finally:
        terminate(proc)
    return before, _folder(directory / "appendonlydir")


MINIRED = [sys.executable, "-m", "minired"]


def test_timestamps_and_a_command_base_are_written_as_redis_writes_them(tmp_path):
    """aof-timestamp-enabled and aof-use-rdb-preamble no: a `#TS:` line before the first record
    of the incremental file (feedAppendOnlyFile), and after a rewrite a `.base.aof` of commands
    after a `#TS:` line (rewriteAppendOnlyFileRio), byte for byte as Redis writes them once the
    times are set aside. (One key per database: the order of keys is each server's own.)"""
    setup = [("CONFIG", "SET", "aof-timestamp-enabled", "yes"),
             ("CONFIG", "SET", "aof-use-rdb-preamble", "no"),
             ("RPUSH", "l", *range(70)), ("SELECT", "1"), ("ZADD", "z", "1.5", "a", "inf", "b"),
             ("SELECT", "2"), ("HSET", "h", "f", "v"), ("PEXPIREAT", "h", 4102444800000),
             ("SELECT", "3"), ("XADD", "s", "1-1", "a", "b"), ("XGROUP", "CREATE", "s", "g", "0"),
             ("XGROUP", "CREATECONSUMER", "s", "g", "c"), ("SELECT", "4"), ("SET", "k", "v")]
    found = {}
    for name, command in (("redis", [redis_server_binary()]), ("minired", MINIRED)):
        (tmp_path / name).mkdir()
        found[name] = _aof_files(command, tmp_path / name, setup)
    (minired_before, minired_after), (redis_before, redis_after) = found["minired"], found["redis"]
    incr = "appendonly.aof.1.incr.aof"
    assert minired_before[incr] == redis_before[incr]
    assert minired_before[incr].startswith(b"#TS:\r\n*2\r\n$6\r\nSELECT")
    assert sorted(minired_after) == sorted(redis_after) == [
        "appendonly.aof.2.base.aof", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]
    assert minired_after == redis_after
    assert minired_after["appendonly.aof.2.base.aof"].startswith(b"#TS:\r\n*2\r\n$6\r\nSELECT")


def test_a_slow_script_replayed_by_debug_loadaof_answers_loading(tmp_path):
    """integration/aof's 'EVAL timeout with slow verbatim Lua script from AOF': while DEBUG
    LOADAOF replays a script past busy-reply-threshold, other clients are answered LOADING (not
    BUSY: Redis's processCommand checks server.loading first), 'Slow script detected' is
    logged, and the script's write is there once the load ends."""
    script = "redis.call('set',KEYS[1],'y'); for i=1,200000 do redis.call('ping') end return 'ok'"
    with SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes", "--lua-time-limit", "1",
                          "--aof-use-rdb-preamble", "no", "--enable-debug-command", "yes",
                          "--logfile", str(tmp_path / "log.txt")) as server:
        (tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof").write_bytes(
            _records(("SELECT", 9), ("EVAL", script, 1, "x")))
        loader = redis.Redis(port=server.port, db=9)
        other = RawClient(server.port, timeout=300)
        done = threading.Event()
        replies = []

        def load():
            replies.append(loader.execute_command("DEBUG", "LOADAOF"))
            done.set()

        thread = threading.Thread(target=load)
        thread.start()
        errors_seen = set()
        while not done.is_set():
            reply = other.call("PING")
            if isinstance(reply, Err):
                errors_seen.add(reply.message.split()[0])
                break
        thread.join(timeout=300)
        other.close()
        assert replies == [b"OK"]
        assert errors_seen == {"LOADING"}
        assert loader.get("x") == b"y"
        assert "Slow script detected" in (tmp_path / "log.txt").read_text()


def _loadaof_with_a_library_in_the_base(client: RawClient) -> tuple:
    """FUNCTION LOAD, a rewrite (the library goes into the base), a write after it, then DEBUG
    LOADAOF: its reply, the data and the libraries loaded back."""
    assert client.call("FUNCTION", "LOAD", "#!lua name=lib\n"
                       "redis.register_function('f', function() return 1 end)") == b"lib"
    assert client.call("SET", "a", "1") == b"OK"
    client.call("BGREWRITEAOF")
    wait_until(lambda: info_field(client, "persistence", "aof_rewrite_in_progress") == "0"
               and info_field(client, "persistence", "aof_rewrite_scheduled") == "0",
               "the rewrite done")
    assert client.call("SET", "b", "2") == b"OK"
    reply = client.call("DEBUG", "LOADAOF")
    return reply, client.call("MGET", "a", "b"), client.call("FCALL", "f", 0)


def test_debug_loadaof_empties_the_function_libraries_first(tmp_path):
    """DEBUG LOADAOF empties the data and the libraries (emptyData with EMPTYDB_NO_FLAGS)
    before loading: a library the base holds loads back instead of failing as a duplicate."""
    results = []
    with RedisServer("--appendonly", "yes", "--enable-debug-command", "yes") as real:
        client = RawClient(real.port)
        results.append(_loadaof_with_a_library_in_the_base(client))
        client.close()
    with SubprocessServer("--dir", str(tmp_path), "--appendonly", "yes",
                          "--enable-debug-command", "yes") as server:
        client = RawClient(server.port)
        results.append(_loadaof_with_a_library_in_the_base(client))
        client.close()
    assert results[0] == results[1] == (b"OK", [b"1", b"2"], 1)
