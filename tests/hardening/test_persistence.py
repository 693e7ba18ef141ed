"""Graceful (and not so graceful) restarts with data: the AOF survives kill -9, snapshots
round-trip every type with its TTL, and everything stays off unless asked for."""
from __future__ import annotations

import os
import signal
import time

import redis

from minired.embed import EmbeddedServer, SubprocessServer
from tests.support.respclient import Err, RawClient


def _kill9(server: SubprocessServer) -> None:
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(5)
    server.proc.stdout.close()


def test_persistence_is_off_by_default(tmp_path):
    with EmbeddedServer(dir=str(tmp_path)) as srv:
        client = RawClient(srv.port)
        client.call("SET", "k", "v")
        assert srv.server.propagate is None and srv.server.sync_before_reply is None
        client.close()
    assert os.listdir(tmp_path) == []


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


def test_aof_everysec_loses_at_most_about_a_second(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes")  # everysec is the default
    server = SubprocessServer(*args).start()
    try:
        client = redis.Redis(port=server.port)
        acknowledged = 0
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            client.set(f"k{acknowledged}", acknowledged)
            acknowledged += 1
        acknowledged_at = time.monotonic()
        _kill9(server)
    finally:
        server.stop()
    with SubprocessServer(*args) as again:
        client = redis.Redis(port=again.port)
        kept = client.dbsize()
        assert all(client.get(f"k{i}") == str(i).encode() for i in range(kept))  # a prefix
        rate = acknowledged / (acknowledged_at - started)
        assert acknowledged - kept <= rate * 1.0 + 50, (acknowledged, kept)


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
        time.sleep(0.1)
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
        deadline = time.monotonic() + 5
        while not (tmp_path / "dump.rdb").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "dump.rdb").exists(), "the save point did not fire"
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
        deadline = time.monotonic() + 3
        while srv.server.propagate is None and time.monotonic() < deadline:
            time.sleep(0.05)
        client.set("after", "2")
        assert client.config_set("appendonly", "no")
        time.sleep(0.3)
        client.set("not-logged", "3")
    with EmbeddedServer(dir=str(tmp_path), appendonly="yes") as srv:
        client = redis.Redis(port=srv.port)
        assert client.mget("before", "after", "not-logged") == [b"1", b"2", None]
