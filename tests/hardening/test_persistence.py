"""Graceful (and not so graceful) restarts with data: the AOF survives kill -9, snapshots
round-trip every type with its TTL, and everything stays off unless asked for."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from minired.embed import EmbeddedServer, SubprocessServer
from minired.features.rdb_format import crc64
from minired.protocol import errors
from tests.support.respclient import Err, RawClient
from tests.support.servers import (
    free_port,
    redis_server_binary,
    start_on_free_port,
    terminate,
    wait_for_ping,
)
from tests.support.waiting import wait_blocked, wait_until


def _kill9(server: SubprocessServer) -> None:
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(5)
    server.proc.stdout.close()


def test_persistence_is_off_by_default(tmp_path):
    """No save points and no AOF: nothing on the write path, nothing written on its own; SAVE
    writes dump.rdb into `dir`, an embedded server's own directory unless one is given."""
    with EmbeddedServer() as srv:
        client = RawClient(srv.port)
        client.call("SET", "k", "v")
        assert srv.server.propagate is None and srv.server.sync_before_reply is None
        directory = srv.server.features.persistence.directory
        assert os.listdir(directory) == []
        assert client.call("SAVE") == b"OK"
        assert os.listdir(directory) == ["dump.rdb"]
        assert b"rdb_changes_since_last_save:0" in client.call("INFO", "persistence")
        client.close()
    assert not os.path.exists(directory)  # (removed at stop)
    with EmbeddedServer(dir=str(tmp_path)) as srv:
        client = RawClient(srv.port)
        client.call("SET", "k", "v")
        assert srv.server.sync_before_reply is None
        assert b"rdb_changes_since_last_save:1" in client.call("INFO", "persistence")
        assert os.listdir(tmp_path) == []
        assert client.call("SAVE") == b"OK"
        client.close()
    assert os.listdir(tmp_path) == ["dump.rdb"]


def test_aof_always_survives_kill9(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always")
    server = SubprocessServer(*args).start()
    try:
        client = redis.Redis(port=server.port)
        for i in range(200):
            client.set(f"k{i}", i)
        client.rpush("list", *range(10))
        client.hset("hash", mapping={"a": 1, "b": 2})
        client.set("ttl", "x", px=600_000)
        pipe = client.pipeline(transaction=True)
        pipe.incr("counter").incr("counter")
        pipe.execute()
        _kill9(server)
    finally:
        server.stop()
    with SubprocessServer(*args) as again:
        client = redis.Redis(port=again.port)
        assert client.dbsize() == 204
        assert client.get("k199") == b"199" and client.get("counter") == b"2"
        assert client.lrange("list", 0, -1) == [str(i).encode() for i in range(10)]
        assert 590_000 < client.pttl("ttl") <= 600_000


def test_aof_replays_non_deterministic_writes_exactly(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes", appendfsync="always",
                        time_control=True) as srv:
        client = redis.Redis(port=srv.port)
        client.sadd("s", *range(50))
        popped = client.spop("s", 10)
        client.set("e", "v")
        client.expire("e", 100)
        client.set("px", "v", px=50_000)
        client.execute_command("SETEX", "sx", 30, "v")
        client.set("gone", "v")
        client.expire("gone", -1)
        stream_id = client.xadd("st", {"f": "v"})
        client.eval("redis.call('SADD', KEYS[1], 'from-script') "
                    "return redis.call('SPOP', KEYS[1])", 1, "lua")
        state = _dataset(client)
        ttls = {k: client.pttl(k) for k in (b"e", b"px", b"sx")}
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert _dataset(client) == state
        assert not (set(popped) & client.smembers("s"))
        assert client.xrange("st")[0][0] == stream_id
        for key, before in ttls.items():
            assert before - 1500 < client.pttl(key) <= before


def _dataset(client: redis.Redis) -> dict:
    out = {}
    for key in client.keys():
        kind = client.type(key)
        if kind == b"string":
            out[key] = client.get(key)
        elif kind == b"list":
            out[key] = client.lrange(key, 0, -1)
        elif kind == b"set":
            out[key] = client.smembers(key)
        elif kind == b"hash":
            out[key] = client.hgetall(key)
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            out[key] = client.xrange(key)
    return out


def test_blocked_pop_is_logged_when_served(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes", appendfsync="always") as srv:
        waiter, pusher = RawClient(srv.port), RawClient(srv.port)
        waiter.send("BLMOVE", "jobs", "active", "LEFT", "RIGHT", "0")
        wait_blocked(pusher)
        pusher.call("RPUSH", "jobs", "j1", "j2")
        assert waiter.read() == b"j1"
        waiter.close()
        pusher.close()
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert client.lrange("jobs", 0, -1) == [b"j2"]
        assert client.lrange("active", 0, -1) == [b"j1"]


def test_torn_aof_tail_is_cut_and_torn_transaction_dropped(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes", appendfsync="always") as srv:
        client = redis.Redis(port=srv.port)
        client.set("a", "1")
        pipe = client.pipeline(transaction=True)
        pipe.set("b", "2").set("c", "3")
        pipe.execute()
    path = tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof"
    data = path.read_bytes()
    exec_at = data.rindex(b"*1\r\n$4\r\nEXEC\r\n")
    path.write_bytes(data[:exec_at] + b"*3\r\n$3\r\nSET\r\n$1\r\nd")  # EXEC lost, tail torn
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert client.get("a") == b"1"
        assert client.exists("b", "c", "d") == 0
        client.set("after", "1")
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        assert redis.Redis(port=srv.port).get("after") == b"1"


def test_snapshot_round_trip_of_every_type(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), time_control=True) as srv:
        client = redis.Redis(port=srv.port)
        client.set("str", b"\x00binary\r\n")
        client.set("int", 12345, px=700_000)
        client.rpush("list", *range(100))
        client.sadd("set", "a", "b", "c")
        client.hset("hash", mapping={"f1": "v1", "f2": "v2"})
        client.zadd("zset", {"m1": 1.5, "m2": -2, "m3": float("inf")})
        client.xadd("stream", {"f": "v"}, id="1-1")
        client.xadd("stream", {"g": "w"}, id="2-1")
        raw = RawClient(srv.port)
        raw.call("SELECT", "3")
        raw.call("SET", "in-db3", "x")
        raw.close()
        client.set("expired", "x", px=100)
        srv.advance_clock(200)
        state = _dataset(client)
        assert client.save() is True
        saved_at = client.lastsave()
    with EmbeddedServer(dir=str(tmp_path)) as srv:
        client = redis.Redis(port=srv.port)
        assert _dataset(client) == state and b"expired" not in state
        assert 600_000 < client.pttl("int") <= 700_000
        assert redis.Redis(port=srv.port, db=3).get("in-db3") == b"x"
        assert client.lastsave() >= saved_at


def test_bgsave_shutdown_save_and_save_points(tmp_path):
    server = SubprocessServer("--dir", str(tmp_path), "--save", "1 1").start()
    try:
        client = redis.Redis(port=server.port)
        client.set("a", "1")
        deadline = time.monotonic() + 30  # generous: returns as soon as it holds
        while not (tmp_path / "dump.rdb").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "dump.rdb").exists(), "the save point did not fire"
        while client.info("persistence")["rdb_bgsave_in_progress"]:  # its child is reaped
            time.sleep(0.05)
        raw = RawClient(server.port)
        assert raw.call("BGSAVE") == b"Background saving started"
        client.set("b", "2")
        raw.send("SHUTDOWN", "SAVE")
        server.proc.wait(5)
    finally:
        server.stop()
    with SubprocessServer("--dir", str(tmp_path)) as again:
        client = redis.Redis(port=again.port)
        assert client.mget("a", "b") == [b"1", b"2"]
        client.set("c", "3")
        raw = RawClient(again.port)
        raw.send("SHUTDOWN", "NOSAVE")
        again.proc.wait(5)
    with SubprocessServer("--dir", str(tmp_path)) as third:
        assert redis.Redis(port=third.port).get("c") is None


def test_sigterm_saves_when_save_points_are_set(tmp_path):
    server = SubprocessServer("--dir", str(tmp_path), "--save", "3600 1").start()
    try:
        redis.Redis(port=server.port).set("k", "v")
        server.proc.terminate()
        server.proc.wait(5)
    finally:
        server.stop()
    with SubprocessServer("--dir", str(tmp_path)) as again:
        assert redis.Redis(port=again.port).get("k") == b"v"


def test_save_errors(tmp_path):
    with EmbeddedServer(dir=str(tmp_path / "missing")) as srv:
        client = RawClient(srv.port)
        assert client.call("SAVE") == Err("ERR")
        assert client.call("SAVE", "x") == Err("ERR wrong number of arguments for 'save' command")
        assert client.call("BGSAVE", "NOW") == Err("ERR syntax error")
        client.close()


def test_appendonly_can_be_turned_on_at_runtime(tmp_path):
    with EmbeddedServer(dir=str(tmp_path)) as srv:
        client = redis.Redis(port=srv.port)
        client.set("before", "1")
        assert client.config_set("appendonly", "yes")
        engine = srv.server.features.persistence
        # As in Redis, the AOF is on once the background rewrite it started wrote the data's
        # base (writes meanwhile go to a temporary file, renamed into place at its end).
        client.set("during", "2")
        wait_until(lambda: engine.aof_state == "on", "the AOF's first rewrite done")
        client.set("after", "2")
        assert client.config_set("appendonly", "no")
        wait_until(lambda: engine.aof_file is None, "the AOF closed")
        client.set("not-logged", "3")
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert client.mget("before", "during", "after", "not-logged") == [b"1", b"2", b"2", None]


def test_an_aof_directory_that_cannot_be_made(tmp_path):
    """A file where the AOF directory should be: start-up exits 1 with Redis's log line, and
    CONFIG SET appendonly yes answers Redis's error and leaves appendonly off (differential)."""
    message = "Can't open or create append-only dir appendonlydir: Not a directory"
    for name in ("redis", "minired"):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "appendonlydir").write_text("a file, not a directory")
        if name == "minired":
            started = _start_minired(directory, "--appendonly", "yes")
        else:
            started = subprocess.run([redis_server_binary(), "--port", str(free_port()),
                                      "--dir", str(directory), "--save", "",
                                      "--appendonly", "yes"],
                                     capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
        assert started.returncode == 1, name
        assert message in (started.stdout + started.stderr).decode(), name
    replies = {}
    with EmbeddedServer(dir=str(tmp_path / "minired")) as srv:
        client = RawClient(srv.port)
        replies["minired"] = (client.call("CONFIG", "SET", "appendonly", "yes"),
                              client.call("CONFIG", "GET", "appendonly"))
        client.close()
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                      "--dir", str(tmp_path / "redis")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        replies["redis"] = (client.call("CONFIG", "SET", "appendonly", "yes"),
                            client.call("CONFIG", "GET", "appendonly"))
        client.close()
    finally:
        terminate(proc)
    assert replies["minired"] == replies["redis"]
    assert replies["minired"][0] == Err("ERR CONFIG SET failed (possibly related to argument "
                                        "'appendonly') - Unable to turn on AOF. Check server logs.")


def _misconf_session(port: int, directory) -> list:
    """A failed BGSAVE (dump.rdb made a directory) with save points set, then what is refused
    and what lifts the refusal."""
    client = RawClient(port)
    out = [client.call("SET", "a", "1")]
    (directory / "dump.rdb" / "x").mkdir(parents=True)
    out.append(client.call("BGSAVE"))
    deadline = time.monotonic() + 20
    while b"rdb_bgsave_in_progress:0" not in client.call("INFO", "persistence") or \
            b"rdb_last_bgsave_status:ok" in client.call("INFO", "persistence"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for command in [("SET", "b", "1"), ("PING",), ("GET", "a"),
                    ("EVAL", "return redis.call('set','x','1')", "0"),
                    ("EVAL", "#!lua\nreturn redis.call('set','x','1')", "0"),
                    ("EVAL", "return redis.call('get','x')", "0"),
                    ("MULTI",), ("SET", "a", "2"), ("EXEC",),
                    ("CONFIG", "SET", "stop-writes-on-bgsave-error", "no"), ("SET", "c", "1"),
                    ("CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"), ("SET", "c", "1"),
                    ("CONFIG", "SET", "save", ""), ("SET", "c", "2"),
                    ("CONFIG", "SET", "save", "3600 1"), ("SAVE",), ("SET", "d", "1")]:
        out.append(client.call(*command))
    (directory / "dump.rdb" / "x").rmdir()
    (directory / "dump.rdb").rmdir()
    out += [client.call("SAVE"), client.call("SET", "e", "1"), client.call("PING")]
    client.close()
    return out


def test_stop_writes_on_bgsave_error(tmp_path):
    """After a failed BGSAVE, with save points set and stop-writes-on-bgsave-error yes, writes
    and PING answer Redis's MISCONF error until a save succeeds (differential)."""
    replies = {}
    (tmp_path / "redis").mkdir()
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "3600 1",
                      "--dir", str(tmp_path / "redis")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        replies["redis"] = _misconf_session(port, tmp_path / "redis")
    finally:
        terminate(proc)
    (tmp_path / "minired").mkdir()
    with SubprocessServer("--dir", str(tmp_path / "minired"), "--save", "3600 1") as server:
        replies["minired"] = _misconf_session(server.port, tmp_path / "minired")
    assert replies["minired"] == replies["redis"]
    assert Err(errors.MISCONF_BGSAVE) in replies["minired"]


# --- files that cannot be loaded in full: refused, left alone --------------------------------------

def _redis_dump(tmp_path, build) -> bytes:
    """A dump.rdb written by redis-server after `build(client)`."""
    directory = tmp_path / "redis-made"
    directory.mkdir()
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--dir", str(directory),
                      "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        build(client)
        client.save()
    finally:
        terminate(proc)
    return (directory / "dump.rdb").read_bytes()


def _start_minired(directory, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minired", "--port", "0", "--dir", str(directory),
                           *extra], capture_output=True, timeout=15, stdin=subprocess.DEVNULL)


def _some_data(client: redis.Redis) -> None:
    client.set("important", "do not lose me")
    client.rpush("list", *range(300))
    client.xadd("stream", {"f": "v"})


@pytest.mark.parametrize("damage", ["truncated", "bit flip", "newer version", "other program",
                                    "empty"])
def test_a_file_that_cannot_be_read_stops_start_up_and_is_left_alone(tmp_path, damage):
    data = _redis_dump(tmp_path, _some_data)
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "bit flip":
        data = data[:60] + bytes([data[60] ^ 0x40]) + data[61:]
    elif damage == "newer version":
        data = b"REDIS0011" + data[9:]
    elif damage == "other program":
        data = b"PK\x03\x04 not a redis file at all" * 10
    else:
        data = b""
    path = tmp_path / "dump.rdb"
    path.write_bytes(data)
    result = _start_minired(tmp_path, "--save", "3600 1")
    assert result.returncode != 0
    assert path.read_bytes() == data and sorted(os.listdir(tmp_path)) == ["dump.rdb", "redis-made"]
    message = result.stdout.decode()  # the log, on stdout as Redis's
    expected = {"truncated": "Short read or OOM loading DB", "bit flip": "",
                "newer version": "Can't handle RDB format version 11",
                "other program": "Wrong signature trying to load DB from file",
                "empty": "Short read or OOM loading DB"}[damage]
    assert expected in message, message


def test_a_wrong_checksum_is_logged_as_redis_logs_it(tmp_path):
    """integration/rdb corrupts the CRC64 at a file's end and waits for `CRC error` in the log:
    both servers refuse the file with the same checksum line and the same reason."""
    data = _redis_dump(tmp_path, _some_data)
    data = data[:-8] + b"foobar00"
    logs = {}
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "dump.rdb").write_bytes(data)
        started, logs[name] = _start_up([*command, "--dir", str(directory), "--save", ""])
        assert not started

    def messages(log: str) -> list[str]:
        return [line.split(" ", 5)[5] for line in log.splitlines()
                if re.match(r"\d+:[MCS] .* [#*.-] ", line)]

    checksum = [m for m in messages(logs["redis"]) if m.startswith("# Wrong RDB checksum")]
    assert checksum and checksum[0] in messages(logs["minired"])
    assert checksum[0].endswith("Aborting now.")
    assert "-> RDB CRC error" in logs["minired"]


def _start_up(argv: list) -> tuple[bool, str]:
    """Whether the server started (answered PING; then stopped) or exited, and its log."""
    port = free_port()
    proc = subprocess.Popen([*argv, "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    try:
        while proc.poll() is None:
            assert time.monotonic() < deadline, "neither started nor exited"
            try:  # (PortTaken, a RuntimeError, if another process answers there)
                wait_for_ping(port, timeout=0.2, proc=proc)
            except RuntimeError:
                continue
            return True, ""
        return False, proc.communicate(timeout=15)[0].decode(errors="replace")
    finally:
        terminate(proc)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("sanitize", ["no", "clients", "yes"])
def test_sanitize_dump_payload_yes_checks_the_file_deeply(tmp_path, sanitize):
    """An intset out of order passes the shallow check, not the deep one: with
    sanitize-dump-payload yes (only: clients spares loading) start-up stops, as Redis's does."""
    data = _redis_dump(tmp_path, lambda client: client.sadd("ints", 1, 2, 3))
    assert data.count(b"\x01\x00\x02\x00\x03\x00") == 1
    body = data[:-8].replace(b"\x01\x00\x02\x00\x03\x00", b"\x03\x00\x02\x00\x01\x00")
    results = {}
    for name, program in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "dump.rdb").write_bytes(body + struct.pack("<Q", crc64(body)))
        started, log = _start_up([*program, "--dir", str(directory), "--save", "",
                                  "--sanitize-dump-payload", sanitize])
        assert started or "Intset integrity check failed" in log, (name, log)
        results[name] = started
    assert results == {"redis": sanitize != "yes", "minired": sanitize != "yes"}


def test_a_truncated_aof_stops_start_up_unless_aof_load_truncated(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes", appendfsync="always") as srv:
        client = redis.Redis(port=srv.port)
        client.set("a", "1")
        client.set("b", "2")
    path = tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof"
    data = path.read_bytes()[:-3]
    path.write_bytes(data)
    result = _start_minired(tmp_path, "--appendonly", "yes", "--aof-load-truncated", "no")
    assert result.returncode != 0 and b"Unexpected end of file" in result.stdout
    assert path.read_bytes() == data
    at = data.index(b"*")  # not a cut: bytes that are no command, where a command starts
    path.write_bytes(data[:at] + b"garbage\r\n" + data[at:])
    result = _start_minired(tmp_path, "--appendonly", "yes")
    assert result.returncode != 0 and b"Bad file format" in result.stdout


def _aof_start_on(directory, command: list) -> tuple:
    """Start a server on `directory` (appendonly yes, aof-load-truncated yes), write once, stop
    it: (GET foo, the AOF directory's files, the manifest)."""
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--dir", str(directory), "--save", "",
                      "--appendonly", "yes", "--aof-load-truncated", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        value = client.get("foo")
        client.incr("foo")
        client.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    finally:
        terminate(proc)
    aof_dir = directory / "appendonlydir"
    return (value, sorted(os.listdir(aof_dir)),
            (aof_dir / "appendonly.aof.manifest").read_text(),
            (aof_dir / "appendonly.aof.1.incr.aof").read_bytes())


def test_aof_start_appends_to_the_incr_file_the_manifest_names(tmp_path):
    """A manifest with an incr file and no base (the suite's hand-made AOFs): Redis opens that
    file at start (cut to its last whole command) and writes no base."""
    aof = (b"*2\r\n$4\r\nincr\r\n$3\r\nfoo\r\n" * 5 + b"*1\r\n$5\r\nmulti\r\n"
           + b"*2\r\n$4\r\nincr\r\n$3\r\nfoo\r\n")
    results = []
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        aof_dir = tmp_path / name / "appendonlydir"
        aof_dir.mkdir(parents=True)
        (aof_dir / "appendonly.aof.1.incr.aof").write_bytes(aof)
        (aof_dir / "appendonly.aof.manifest").write_text(
            "file appendonly.aof.1.incr.aof seq 1 type i\n")
        results.append(_aof_start_on(tmp_path / name, command))
    assert results[1] == results[0]
    assert results[0][0] == b"5"


_LOG_PREFIX = re.compile(r"^\d+:[CM] \d\d [A-Z][a-z]{2} \d{4} [\d:.]+ [.\-*#] ", re.M)


@pytest.mark.parametrize("manifest", [
    "", "file appendonly.aof.1.incr.aof seq 1 type i\n\n",
    "file appendonly.aof.1.incr.aof seq 1\n", "file appendonly.aof.1.incr.aof seq 1 type i",
    "file appendonly.aof.1.incr.aof seq 1 type i x\n", "file dir/x seq 1 type b\n",
    "file appendonly.aof.1.incr.aof type i seq 1 type i " + "x" * 1100 + "\n",
    "file appendonly.aof.1.incr.aof seq 1 type x\n",
])
def test_manifest_errors_are_redis_s(tmp_path, manifest):
    """aofLoadManifestFromFile's refusals: the same exit and the same log lines as Redis."""
    outputs = []
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        aof_dir = tmp_path / name / "appendonlydir"
        aof_dir.mkdir(parents=True)
        (aof_dir / "appendonly.aof.1.incr.aof").write_bytes(b"")
        (aof_dir / "appendonly.aof.manifest").write_text(manifest)
        result = subprocess.run([*command, "--port", str(free_port()), "--dir",
                                 str(tmp_path / name), "--appendonly", "yes", "--save", ""],
                                capture_output=True, text=True, timeout=30,
                                stdin=subprocess.DEVNULL)
        log = _LOG_PREFIX.sub("", result.stdout)
        start = log.index("*** FATAL AOF MANIFEST FILE ERROR ***")
        outputs.append((result.returncode, log[start:].strip()))
    assert outputs[1] == outputs[0]


def _start_on_aof_files(directory, command: list, files: dict) -> tuple:
    """Start a server (appendonly yes) on `files` (paths relative to `directory`): whether it
    started, GET k, the files it leaves, its last log line if it did not start."""
    for path, data in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(data)
    port = free_port()
    proc = subprocess.Popen([*command, "--port", str(port), "--dir", str(directory), "--save", "",
                             "--appendonly", "yes"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    client = redis.Redis(port=port)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    wait_until(lambda: proc.poll() is not None or answers(), "the server's start or exit")
    if proc.poll() is not None:
        out = proc.communicate(timeout=10)[0]
        return False, _LOG_PREFIX.sub("", out).strip().splitlines()[-1]
    value: bytes | str | None = "the connection was lost before GET answered"
    try:
        value = client.get("k")
        client.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    finally:
        terminate(proc)
    return True, value, sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


_SET_K = b"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n"


@pytest.mark.parametrize("case", ["a file the manifest names is missing",
                                  "an interrupted upgrade of an old-style AOF"])
def test_aof_files_at_start_as_redis(tmp_path, case):
    if case.startswith("a file"):
        files = {"appendonlydir/appendonly.aof.manifest":
                 b"file appendonly.aof.1.base.aof seq 1 type b\n"
                 b"file appendonly.aof.1.incr.aof seq 1 type i\n",
                 "appendonlydir/appendonly.aof.1.base.aof": _SET_K}
    else:  # the manifest was written, the file not yet moved into the directory
        files = {"appendonlydir/appendonly.aof.manifest": b"file appendonly.aof seq 1 type b\n",
                 "appendonly.aof": _SET_K}
    outcomes = [_start_on_aof_files(tmp_path / name, command, files)
                for name, command in (("redis", [redis_server_binary()]),
                                      ("minired", [sys.executable, "-m", "minired"]))]
    assert outcomes[1] == outcomes[0]


def test_a_failed_aof_load_serves_nothing_while_the_process_ends(tmp_path):
    """The AOF cannot load (a file its manifest names is missing): redis-server exits without
    serving a command, and minired answers -LOADING at most, never from the empty dataset it
    holds while it winds down. It used to answer PONG (a GET nil, a SET OK) in that moment,
    which test_aof_files_at_start_as_redis hit now and then under load."""
    (tmp_path / "appendonlydir").mkdir()
    (tmp_path / "appendonlydir/appendonly.aof.manifest").write_bytes(
        b"file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n")
    (tmp_path / "appendonlydir/appendonly.aof.1.base.aof").write_bytes(_SET_K)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "minired", "--port", str(port), "--dir",
                             str(tmp_path), "--save", "", "--appendonly", "yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    replies = []
    try:
        while proc.poll() is None:  # knock as often as the machine allows, until the exit
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                    sock.sendall(b"PING\r\nGET k\r\n")
                    replies.append(sock.recv(1000))
            except OSError:
                time.sleep(0.0005)
    finally:
        terminate(proc)
    assert proc.returncode == 1
    assert all(not reply or reply.startswith(b"-LOADING") for reply in replies), replies


# --- kill -9 at any moment of a save --------------------------------------------------------------

def _fill(client: redis.Redis, generation: int) -> None:
    pipe = client.pipeline(transaction=False)
    for i in range(10_000):
        pipe.set(f"key:{i}", f"{generation}-" + "v" * 200)
    pipe.set("generation", generation)
    pipe.execute()


def test_kill9_during_a_save_leaves_the_old_or_the_new_file(tmp_path):
    """SAVE writes in the server, BGSAVE in a forked child: either is killed with SIGKILL at
    some moment of its write, and the dump.rdb left is always a whole file, the old or the new
    (each attempt's server loads what the last one left)."""
    args = ("--dir", str(tmp_path))
    on_disk = 0  # the generations the file may hold: the last one known saved, or the next
    attempts = [("SAVE", 0.0), ("BGSAVE", 0.02), ("SAVE", 0.08), ("BGSAVE", 0.2), ("SAVE", 1.0)]
    for attempt, (how, delay) in enumerate([*attempts, ("", 0)], 1):
        server = SubprocessServer(*args).start()
        try:
            client = redis.Redis(port=server.port)
            loaded = int(client.get("generation") or 0)
            assert loaded in (on_disk, attempt - 1), (loaded, on_disk, attempt)
            on_disk = loaded
            if not how:
                break
            _fill(client, attempt)
            raw = RawClient(server.port)
            raw.send(how)
            time.sleep(delay)
            if how == "BGSAVE":  # the child writing the file is the one killed
                for pid in _children(server.proc.pid):
                    os.kill(pid, signal.SIGKILL)
            _kill9(server)
        finally:
            server.stop()
        for name in os.listdir(tmp_path):  # a temp-<pid>.rdb may stay, as Redis's does
            if name != "dump.rdb":
                assert name.startswith("temp-") and name.endswith(".rdb"), name
                os.unlink(tmp_path / name)
        if (tmp_path / "dump.rdb").exists():
            check = subprocess.run(["redis-check-rdb", str(tmp_path / "dump.rdb")],
                                   capture_output=True)
            assert check.returncode == 0, check.stdout
    assert on_disk == len(attempts)  # the last SAVE, given a second, finished


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


# --- the AOF both ways with Redis -----------------------------------------------------------------

def _aof_dataset(client: redis.Redis) -> None:
    client.set("s", "v", px=900_000)
    client.rpush("l", *range(10))
    client.hset("h", mapping={"a": 1})
    client.sadd("set", "x", "y")
    client.zadd("z", {"m": 1.5})
    client.xadd("st", {"f": "v"}, id="1-1")
    client.xgroup_create("st", "g", id="0")
    client.xreadgroup("g", "c", {"st": ">"})
    client.incr("counter")
    pipe = client.pipeline(transaction=True)
    pipe.incr("counter").lpush("l", "in-multi")
    pipe.execute()


def _aof_view(client: redis.Redis) -> dict:
    view = _dataset(client)
    view["ttl-set"] = client.pttl("s") > 800_000
    view["pending"] = client.xpending("st", "g")["pending"]
    return view


def test_minired_aof_loads_into_redis_and_back(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes", appendfsync="always") as srv:
        client = redis.Redis(port=srv.port)
        _aof_dataset(client)
        assert client.bgrewriteaof()
        client.set("after-rewrite", "1")
        deadline = time.monotonic() + 30  # generous: returns as soon as it holds
        while client.info("persistence")["aof_rewrite_in_progress"] and time.monotonic() < deadline:
            time.sleep(0.05)
        client.set("after-rewrite-done", "2")
        expected = _aof_view(client)
    files = sorted(os.listdir(tmp_path / "appendonlydir"))
    assert files == ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof",
                     "appendonly.aof.manifest"], files
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--dir", str(tmp_path),
                      "--save", "", "--appendonly", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        assert _aof_view(client) == expected
        client.set("written-by-redis", "3")
        client.rpush("l", "from-redis")
        expected = _aof_view(client)
    finally:
        terminate(proc)
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        assert _aof_view(redis.Redis(port=srv.port)) == expected


def test_a_plain_appendonly_aof_is_taken_in_as_redis_7_does(tmp_path):
    commands = b"".join(
        b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)
        for argv in ([b"SET", b"k", b"v"], [b"RPUSH", b"l", b"a", b"b"]))
    (tmp_path / "appendonly.aof").write_bytes(commands)
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert client.get("k") == b"v" and client.lrange("l", 0, -1) == [b"a", b"b"]
    assert (tmp_path / "appendonlydir" / "appendonly.aof").read_bytes() == commands
    manifest = (tmp_path / "appendonlydir" / "appendonly.aof.manifest").read_text()
    assert manifest.splitlines()[0] == "file appendonly.aof seq 1 type b"


def test_a_snapshot_of_earlier_minired_still_loads(tmp_path):
    """minired before RDB files wrote `#minired-snapshot 1` and RESTORE commands: such a
    dump.rdb loads, and the next save replaces it with an RDB file."""
    with EmbeddedServer() as srv:
        client = redis.Redis(port=srv.port)
        client.rpush("l", "a", "b")
        payload = client.dump("l")
    now = int(time.time() * 1000)
    legacy = (b"#minired-snapshot 1\n#TS:%d\n" % now
              + b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"
              + b"*5\r\n$7\r\nRESTORE\r\n$1\r\nl\r\n$13\r\n%d\r\n$%d\r\n%s\r\n$6\r\nABSTTL\r\n"
              % (now + 600_000, len(payload), payload))
    (tmp_path / "dump.rdb").write_bytes(legacy)
    with EmbeddedServer(dir=str(tmp_path)) as srv:
        client = redis.Redis(port=srv.port)
        assert client.lrange("l", 0, -1) == [b"a", b"b"] and client.pttl("l") > 590_000
        client.save()
    assert (tmp_path / "dump.rdb").read_bytes().startswith(b"REDIS0010")


def test_debug_reload_round_trips_through_dump_rdb(tmp_path):
    with EmbeddedServer(dir=str(tmp_path), enable_debug_command="yes") as srv:
        client = redis.Redis(port=srv.port)
        client.xadd("st", {"f": "v"}, id="1-1")
        client.xgroup_create("st", "g", id="0")
        client.zadd("z", {"a": 1.5})
        client.set("ttl", "v", px=500_000)
        before = _dataset(client)
        assert client.execute_command("DEBUG", "RELOAD") == b"OK"
        assert _dataset(client) == before and client.pttl("ttl") > 490_000
        assert client.xinfo_groups("st")[0]["name"] == b"g"
        raw = RawClient(srv.port)
        assert raw.call("DEBUG", "RELOAD", "BOGUS") == Err(
            "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
        os.unlink(tmp_path / "dump.rdb")
        assert raw.call("DEBUG", "RELOAD", "NOSAVE") == Err("ERR Error trying to load the RDB dump")
        raw.close()


def test_flushall_with_save_points_saves_the_empty_dataset(tmp_path):
    server = SubprocessServer("--dir", str(tmp_path), "--save", "3600 1").start()
    try:
        client = redis.Redis(port=server.port)
        client.set("k", "v")
        client.save()
        client.flushall()
        assert client.info("persistence")["rdb_changes_since_last_save"] == 0  # as Redis
        _kill9(server)
    finally:
        server.stop()
    with SubprocessServer("--dir", str(tmp_path)) as again:
        assert redis.Redis(port=again.port).dbsize() == 0


def test_empty_keys_in_a_file_are_skipped_and_logged_as_redis_does(tmp_path):
    """The suite's corrupt_empty_keys.rdb (containers an old Redis saved empty): no key loaded,
    each skipped with Redis's log line, and the count on the 'Done loading' line."""
    asset = next(Path(__file__).resolve().parents[1].glob(
        "redis_tcl/vendor/*/tests/assets/corrupt_empty_keys.rdb"))
    logs = {}
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        shutil.copy(asset, directory / "dump.rdb")
        proc, port = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--dir", str(directory),
                          "--save", "", "--logfile", str(directory / "log.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert redis.Redis(port=port).dbsize() == 0
        finally:
            terminate(proc)
        logs[name] = [line.split(" ", 5)[5] for line in
                      (directory / "log.txt").read_text().splitlines()
                      if "empty key" in line or "Done loading RDB" in line]
    assert logs["minired"] == logs["redis"]
    assert logs["redis"][-1].endswith("empty keys skipped: 9.")


def test_turning_the_aof_off_kills_its_rewrite_child_as_redis_does(tmp_path):
    """unit/aofrw: CONFIG SET appendonly no during a (slowed) rewrite stops the child at once,
    with Redis's log line, and no rewrite is left running."""
    logged = {}
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        proc, port = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--dir", str(directory),
                          "--save", "", "--appendonly", "yes",
                          "--logfile", str(directory / "log.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            client.set("k", "v")
            client.config_set("rdb-key-save-delay", 10_000_000)
            client.bgrewriteaof()
            assert client.info("persistence")["aof_rewrite_in_progress"] == 1
            client.config_set("appendonly", "no")
            assert client.info("persistence")["aof_rewrite_in_progress"] == 0
            client.close()
        finally:
            terminate(proc)
        logged[name] = [re.sub(r"\d+$", "<pid>", line.split(" ", 5)[5])
                        for line in (directory / "log.txt").read_text().splitlines()
                        if "Killing" in line]
    assert logged["minired"] == logged["redis"] == ["* Killing running AOF rewrite child: <pid>"]
