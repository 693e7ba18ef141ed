"""dump.rdb both ways with Redis 7.0: a dataset with every type and encoding (sizes on both sides of
each encoding threshold, TTLs, binary keys and values, several databases, streams with groups,
PELs and consumers, function libraries) is SAVEd by redis-server, loaded by minired, compared key
by key, SAVEd by minired and loaded by a fresh redis-server, compared again; and the other way,
from a dataset minired built itself. Plus DUMP/RESTORE of streams against Redis's bytes."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import redis

from minired.embed import SubprocessServer
from tests.support.servers import redis_server_binary, start_on_free_port, terminate

LIBRARY = ("#!lua name=rdblib\n"
           "redis.register_function('rdbfunc', function(keys, args) return 1 end)")
DATABASES = (0, 5, 15)


def start_redis(directory: str, *extra: str) -> tuple[subprocess.Popen, int]:
    return start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
                      "--dir", directory, "--save", "", "--appendonly", "no",
                      "--loglevel", "warning", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def build(r: redis.Redis, now_ms: int) -> None:
    """Every type in each of its encodings, and values on both sides of the thresholds."""
    r.set(b"s:int", 12345)
    r.set(b"s:int64", 2**62)
    r.set(b"s:neg", -7)
    r.set(b"s:zero-led", "007")
    r.set(b"s:empty", "")
    r.set(b"s:float", "3.25")
    r.set(b"s:embstr", "x" * 44)
    r.set(b"s:raw", "y" * 45)
    r.set(b"s:compressible", "abc" * 400)
    r.set(b"s:binary", bytes(range(256)) * 3)
    r.set(b"\x00key\xff\r\n with spaces", b"\x00\r\n")
    r.set(b"s:ttl", "v", px=3_600_000)
    r.set(b"s:abs-ttl", "v")
    r.pexpireat(b"s:abs-ttl", now_ms + 7_200_000)
    r.pfadd(b"hll:sparse", *range(50))
    r.pfadd(b"hll:dense", *range(5000))
    r.rpush(b"l:small", 1, -2, "three", 2**40, "x" * 70)
    r.rpush(b"l:128", *range(128))
    r.rpush(b"l:129", *[f"e{i}" for i in range(129)])
    r.rpush(b"l:long-values", *["v" * 9000, "w" * 100, 5])
    r.config_set("list-compress-depth", 1)
    r.rpush(b"l:compressed", *[f"element-{i}-" + "z" * 40 for i in range(600)])
    r.config_set("list-compress-depth", 0)
    r.expire(b"l:small", 5000)
    r.hset(b"h:small", mapping={"a": 1, "b": "two", "c": -3})
    r.hset(b"h:128", mapping={f"f{i}": i for i in range(128)})
    r.hset(b"h:129", mapping={f"f{i}": f"v{i}" for i in range(129)})
    r.hset(b"h:long-value", mapping={"a": "x" * 65, "b": "1"})
    r.hset(b"h:binary", mapping={b"\x00\xff": b"\r\n"})
    r.sadd(b"set:int16", *range(-5, 20))
    r.sadd(b"set:int32", 70000, -70000, 1)
    r.sadd(b"set:int64", 2**40, -(2**40))
    r.sadd(b"set:512", *range(512))
    r.sadd(b"set:513", *range(513))
    r.sadd(b"set:strings", "a", "b", "c", "")
    r.zadd(b"z:small", {"a": 1, "b": 2.5, "c": float("inf"), "d": float("-inf"), "e": -0.5,
                        "f": 1e300, "g": 5e-324})
    r.zadd(b"z:128", {f"m{i}": i / 7 for i in range(128)})
    r.zadd(b"z:129", {f"m{i}": i * 3 for i in range(129)})
    r.zadd(b"z:long-member", {"m" * 65: 1, "short": 2})
    r.pexpire(b"z:129", 9_000_000)
    # Streams: several macro nodes (100 entries each), deletions, groups, PELs, consumers.
    r.xadd(b"st:big", {"a": 1, "b": "x"}, id="1-1")
    r.xadd(b"st:big", {"a": 2, "c": "y"}, id="1-2")
    for i in range(250):
        r.xadd(b"st:big", {"f": i, "g": "v" * (i % 30)}, id=f"{i + 2}-0")
    r.xdel(b"st:big", "1-2", "100-0", "101-0")
    r.xgroup_create(b"st:big", "g1", id="0")
    r.xgroup_create(b"st:big", "g2", id="$")
    r.xgroup_create(b"st:big", "g3", id="50-0")
    r.xreadgroup("g1", "alice", {b"st:big": ">"}, count=5)
    r.xreadgroup("g1", "bob", {b"st:big": ">"}, count=3)
    r.xack(b"st:big", "g1", "3-0")
    r.xclaim(b"st:big", "g1", "carol", 0, ["4-0"])
    r.xgroup_createconsumer(b"st:big", "g3", "idle-consumer")
    r.xadd(b"st:empty", {"a": 1}, id="5-5")
    r.xdel(b"st:empty", "5-5")
    r.xgroup_create(b"st:empty", "g", id="$")
    r.xadd(b"st:trimmed", {"a": 1}, id="1-0")
    for i in range(2, 40):
        r.xadd(b"st:trimmed", {"a": i}, id=f"{i}-0", maxlen=10, approximate=False)
    r.execute_command("XSETID", b"st:trimmed", "1000-0")
    for db in DATABASES[1:]:
        other = r.connection_pool.connection_kwargs
        c = redis.Redis(host=other["host"], port=other["port"], db=db)
        c.set(b"db-key", db)
        c.set(b"db-ttl", "t", px=1_800_000)
        c.rpush(b"db-list", "a", "b")
    r.function_load(LIBRARY)


def snapshot(port: int) -> dict:
    """Everything a client can see of the data, per database and key (times are absolute)."""
    out: dict = {}
    for db in DATABASES:
        r = redis.Redis(port=port, db=db, protocol=2)
        for key in sorted(r.keys(b"*")):
            kind = r.type(key).decode()
            item: dict = {"type": kind, "pexpiretime": r.execute_command("PEXPIRETIME", key)}
            if kind == "string":
                item["value"] = r.get(key)
            elif kind == "list":
                item["value"] = r.lrange(key, 0, -1)
            elif kind == "set":
                item["value"] = sorted(r.smembers(key))
            elif kind == "hash":
                item["value"] = sorted(r.hgetall(key).items())
            elif kind == "zset":
                item["value"] = r.zrange(key, 0, -1, withscores=True)
            elif kind == "stream":
                full = r.xinfo_stream(key, full=True)
                for radix in ("radix-tree-keys", "radix-tree-nodes"):
                    full.pop(radix, None)
                item["value"] = full
                item["xpending"] = [(g["name"], r.xpending(key, g["name"]))
                                    for g in r.xinfo_groups(key)]
            out[(db, key)] = item
    functions = redis.Redis(port=port, protocol=2).execute_command("FUNCTION", "LIST", "WITHCODE")
    out["functions"] = functions
    return out


def encodings(port: int) -> dict:
    r = redis.Redis(port=port)
    return {key: r.object("encoding", key) for key in r.keys(b"*")}


def _save(port: int) -> None:
    assert redis.Redis(port=port).save() is True


@pytest.fixture
def workdir(tmp_path):
    for name in ("redis1", "minired", "redis2"):
        (tmp_path / name).mkdir()
    return tmp_path


def test_redis_dump_loads_into_minired_and_back(workdir):
    proc, port = start_redis(str(workdir / "redis1"))
    try:
        r = redis.Redis(port=port)
        now_ms = int(r.execute_command("TIME")[0]) * 1000
        build(r, now_ms)
        original = snapshot(port)
        original_encodings = encodings(port)
        _save(port)
    finally:
        terminate(proc)
    shutil.copy(workdir / "redis1" / "dump.rdb", workdir / "minired" / "dump.rdb")
    with SubprocessServer("--dir", str(workdir / "minired")) as mini:
        assert snapshot(mini.port) == original
        os.unlink(workdir / "minired" / "dump.rdb")
        _save(mini.port)
    shutil.copy(workdir / "minired" / "dump.rdb", workdir / "redis2" / "dump.rdb")
    proc, port = start_redis(str(workdir / "redis2"))
    try:
        assert snapshot(port) == original
        assert encodings(port) == original_encodings
    finally:
        terminate(proc)


def test_minired_dataset_loads_into_redis(workdir):
    with SubprocessServer("--dir", str(workdir / "minired")) as mini:
        r = redis.Redis(port=mini.port)
        build(r, int(r.execute_command("TIME")[0]) * 1000)
        made = snapshot(mini.port)
        _save(mini.port)
    shutil.copy(workdir / "minired" / "dump.rdb", workdir / "redis2" / "dump.rdb")
    proc, port = start_redis(str(workdir / "redis2"))
    try:
        assert snapshot(port) == made
    finally:
        terminate(proc)


def test_bgsave_file_loads_into_redis(workdir):
    with SubprocessServer("--dir", str(workdir / "minired")) as mini:
        r = redis.Redis(port=mini.port)
        build(r, int(r.execute_command("TIME")[0]) * 1000)
        made = snapshot(mini.port)
        before = r.lastsave()
        assert r.bgsave()
        while r.info("persistence")["rdb_bgsave_in_progress"]:
            pass
        info = r.info("persistence")
        assert info["rdb_last_bgsave_status"] == "ok" and info["rdb_changes_since_last_save"] == 0
        assert r.lastsave() >= before
    shutil.copy(workdir / "minired" / "dump.rdb", workdir / "redis2" / "dump.rdb")
    proc, port = start_redis(str(workdir / "redis2"))
    try:
        assert snapshot(port) == made
    finally:
        terminate(proc)


# --- DUMP / RESTORE of streams -------------------------------------------------------------------

def _stream(r, key: bytes) -> None:
    r.xadd(key, {"a": 1, "b": "hello"}, id="1-1")
    r.xadd(key, {"a": 2, "b": "world"}, id="1-2")
    r.xadd(key, {"other": "fields"}, id="5-0")
    for i in range(230):
        r.xadd(key, {"f": f"v{i}", "n": i * 1000, "z": "x" * (i % 70)}, id=f"{10 + i * 100_000}-{i}")
    r.xadd(key, {"a": 1}, id="18446744073709551615-5")


def test_stream_dump_payload_is_redis_s(diff, real_redis, mini):
    for server in (real_redis, mini):
        _stream(redis.Redis(port=server.port), b"st")
    ours = redis.Redis(port=mini.port).dump(b"st")
    theirs = redis.Redis(port=real_redis.port).dump(b"st")
    assert ours == theirs


def test_stream_restore_both_ways(diff, real_redis, mini):
    r, m = redis.Redis(port=real_redis.port), redis.Redis(port=mini.port)
    for server in (r, m):
        _stream(server, b"st")
        server.xdel(b"st", "5-0")
        server.xgroup_create(b"st", "g", id="0")
        server.xreadgroup("g", "c1", {b"st": ">"}, count=4)
        server.xack(b"st", "g", "1-1")
    m.restore(b"from-redis", 0, r.dump(b"st"))
    r.restore(b"from-minired", 0, m.dump(b"st"))
    for server in (r, m):
        server.restore(b"own", 0, server.dump(b"st"))

    def view(server, key):
        full = server.xinfo_stream(key, full=True)
        for field in ("radix-tree-keys", "radix-tree-nodes", "groups"):
            full.pop(field)
        return full, server.xrange(key), server.xpending_range(key, "g", "-", "+", 100)

    def same(a, b):
        # Delivery times differ between the two servers; the rest must not.
        (fa, ra, pa), (fb, rb, pb) = a, b
        strip = [{k: v for k, v in p.items() if k != "time_since_delivered"} for p in pa]
        strip_b = [{k: v for k, v in p.items() if k != "time_since_delivered"} for p in pb]
        return fa == fb and ra == rb and strip == strip_b

    assert same(view(m, b"from-redis"), view(r, b"st"))
    assert same(view(r, b"from-minired"), view(m, b"st"))
    assert same(view(m, b"own"), view(m, b"st"))
    assert same(view(r, b"own"), view(r, b"st"))
    # The empty stream of a group-only key survives too.
    diff.check("XADD", "e", "5-1", "a", "1")
    diff.check("XDEL", "e", "5-1")
    diff.check("DUMP", "e")
    diff.check("RESTORE", "e2", "0", diff.both("DUMP", "e")[0])
    diff.check("XINFO", "STREAM", "e2")


def _compact_values(r) -> None:
    mixed = [["a", "bb" * 50, 12345, "c" * 300][(i * 7) % 4] for i in range(2000)]
    r.hset(b"h", mapping={"a": 1, "b": "two", "c": -300000, "d": "x" * 64})
    r.hdel(b"h", "b")
    r.hset(b"h", "a", "updated")
    r.zadd(b"z", {"a": 1, "b": 2.5, "c": float("inf"), "d": float("-inf"), "e": -0.0,
                  "f": 1 / 7, "g": 1e300, "h": 5e-324, "i": -12345678, "j": 2**53})
    r.zadd(b"z:skiplist", {f"m{i}": i / 3 for i in range(300)})
    r.sadd(b"s16", 1, 2, 3, -5)
    r.sadd(b"s32", 70000, -1)
    r.sadd(b"s64", 2**40, 7)
    r.sadd(b"s512", *range(512))
    r.rpush(b"l", *range(10))
    r.rpush(b"l:nodes", *[f"element-{i}" * 3 for i in range(3000)])
    r.rpush(b"l:big-element", "x" * 9000, "y", "z" * 100)
    r.rpush(b"l:mixed", *mixed)
    r.lpush(b"l:lpush", *range(300))
    r.set(b"s:compressible", "abc" * 100)


def test_dump_payloads_are_redis_s_bytes(diff, real_redis, mini):
    """Values in Redis's compact encodings (listpack hashes and sorted sets, intsets, quicklists
    of listpacks), a skiplist, LZF strings: DUMP gives Redis's bytes, and RESTORE of each
    server's payload on the other gives the same value back."""
    for server in (real_redis, mini):
        _compact_values(redis.Redis(port=server.port))
    keys = [b"h", b"z", b"z:skiplist", b"s16", b"s32", b"s64", b"s512", b"l", b"l:nodes",
            b"l:big-element", b"l:mixed", b"l:lpush", b"s:compressible"]
    r, m = redis.Redis(port=real_redis.port), redis.Redis(port=mini.port)
    for key in keys:
        _same_bytes(key, r.dump(key), m.dump(key))
    for key in keys:
        r.restore(key + b":copy", 0, m.dump(key))
        m.restore(key + b":copy", 0, r.dump(key))
        _same_bytes(key + b":copy", r.dump(key + b":copy"), m.dump(key + b":copy"))
        diff.check("OBJECT", "ENCODING", key + b":copy")


def _same_bytes(key: bytes, theirs: bytes, ours: bytes) -> None:
    if theirs != ours:  # (the payloads are long: say where they part)
        at = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b),
                  min(len(theirs), len(ours)))
        pytest.fail(f"DUMP {key!r}: {len(theirs)} bytes from Redis, {len(ours)} from minired, "
                    f"first difference at {at}: {theirs[at:at + 16]!r} / {ours[at:at + 16]!r}")


# --- the RDB files of Redis's own test suite (older versions and encodings) ---------------------

ASSETS = os.path.join(os.path.dirname(__file__), "..", "redis_tcl", "vendor", "redis-tests-7.0.15",
                      "tests", "assets")


ASSET_FILES = ["encodings.rdb", "hash-zipmap.rdb", "hash-ziplist.rdb", "list-quicklist.rdb",
               "zset-ziplist.rdb", "scriptbackup.rdb", "corrupt_empty_keys.rdb"]


def test_redis_test_suite_rdb_files_load_as_in_redis(tmp_path):
    """RDB versions before 10 with ziplists, zipmaps, old quicklists, string-scored sorted sets
    and the 'lua' aux field: what minired loads is what Redis 7.0 loads (each file loaded by
    DEBUG RELOAD NOSAVE into one server of each)."""
    views: dict = {}
    for side in ("redis", "minired"):
        (tmp_path / side).mkdir()
    proc, port = start_redis(str(tmp_path / "redis"), "--enable-debug-command", "yes")
    try:
        for name in ASSET_FILES:
            shutil.copy(os.path.join(ASSETS, name), tmp_path / "redis" / "dump.rdb")
            redis.Redis(port=port).execute_command("DEBUG", "RELOAD", "NOSAVE")
            views[name] = snapshot(port)
    finally:
        terminate(proc)
    with SubprocessServer("--dir", str(tmp_path / "minired"), "--enable-debug-command",
                          "yes") as mini:
        for name in ASSET_FILES:
            shutil.copy(os.path.join(ASSETS, name), tmp_path / "minired" / "dump.rdb")
            redis.Redis(port=mini.port).execute_command("DEBUG", "RELOAD", "NOSAVE")
            assert snapshot(mini.port) == views[name], name
    assert sum(len(view) for view in views.values()) > 20


def test_a_plain_aof_with_an_rdb_preamble_loads_as_in_redis(tmp_path):
    """Redis's rdb-preamble.aof: one appendonly.aof, an RDB image then commands (Redis 4-6's
    aof-use-rdb-preamble), taken in as the base of the multi-part AOF."""
    views = []
    for side in ("redis", "minired"):
        (tmp_path / side).mkdir()
        shutil.copy(os.path.join(ASSETS, "rdb-preamble.aof"), tmp_path / side / "appendonly.aof")
    proc, port = start_redis(str(tmp_path / "redis"), "--appendonly", "yes")
    try:
        views.append(snapshot(port))
    finally:
        terminate(proc)
    with SubprocessServer("--dir", str(tmp_path / "minired"), "--appendonly", "yes") as mini:
        views.append(snapshot(mini.port))
    assert views[0] == views[1] and len(views[0]) > 1
    assert sorted(os.listdir(tmp_path / "minired" / "appendonlydir")) == sorted(
        os.listdir(tmp_path / "redis" / "appendonlydir"))


# --- an AOF written by Redis 7.0 ------------------------------------------------------------------

def _loose(view: dict) -> dict:
    """A snapshot without what replaying an AOF sets to the time of the replay (Redis's own
    replay too): consumers' seen-times and the delivery times of entries no XCLAIM carried."""
    out = {}
    for key, item in view.items():
        if isinstance(item, dict) and item.get("type") == "stream":
            item = dict(item, value=dict(item["value"]))
            groups = []
            for group in item["value"].get("groups", []):
                group = dict(group)
                group["pel"] = [entry[:2] + entry[3:] for entry in group.get("pending", [])]
                group.pop("pending", None)
                group["consumers"] = [
                    {k: v for k, v in c.items() if k not in ("seen-time", "pending")}
                    for c in group.get("consumers", [])]
                groups.append(group)
            item["value"]["groups"] = groups
        out[key] = item
    return out


def test_redis_aof_loads_into_minired(tmp_path):
    (tmp_path / "redis").mkdir()
    proc, port = start_redis(str(tmp_path / "redis"), "--appendonly", "yes", "--appendfsync",
                             "always")
    try:
        r = redis.Redis(port=port)
        r.set("s", "v", ex=1000)
        r.set("p", "v", px=500_000)
        r.incr("n")
        r.incrbyfloat("f", 1.5)
        r.setrange("s2", 5, "x")
        r.rpush("l", *range(20))
        r.lpop("l", 3)
        r.hset("h", mapping={"a": 1, "b": 2})
        r.sadd("set", *range(10))
        r.spop("set", 3)
        r.zadd("z", {"a": 1, "b": 2})
        r.zincrby("z", 5, "a")
        r.pfadd("hll", "a", "b")
        r.expire("h", 3000)
        r.xadd("st", {"f": "v"})
        r.xadd("st", {"f": "w"}, maxlen=10)
        r.xgroup_create("st", "g", id="0")
        r.xreadgroup("g", "alice", {"st": ">"}, count=1)
        r.xclaim("st", "g", "bob", 0, [r.xrange("st")[0][0]])
        r.eval("redis.call('SET', KEYS[1], 'from-lua') return redis.call('INCR', KEYS[2])", 2,
               "lua", "n")
        pipe = r.pipeline(transaction=True)
        pipe.set("m1", 1).rename("m1", "m2").getex("m2", px=70_000)
        pipe.execute()
        r.function_load(LIBRARY)
        redis.Redis(port=port, db=5).set("in-db5", "x")
    finally:
        terminate(proc)
    # The control is Redis replaying its own AOF (a replay does not redo everything: an
    # XREADGROUP is logged as an XCLAIM, which leaves a group's entries-read unknown).
    proc, port = start_redis(str(tmp_path / "redis"), "--appendonly", "yes")
    try:
        expected = snapshot(port)
    finally:
        terminate(proc)
    (tmp_path / "minired").mkdir()
    shutil.copytree(tmp_path / "redis" / "appendonlydir", tmp_path / "minired" / "appendonlydir")
    with SubprocessServer("--dir", str(tmp_path / "minired"), "--appendonly", "yes") as mini:
        assert _loose(snapshot(mini.port)) == _loose(expected)


def test_the_fallback_crc64_is_redis_s():
    """Without anycrc, CRC64 is computed by a table loop: the same numbers (Redis's own test
    vector from crc64.c, and chunked updates)."""
    from minired.features import rdb_format

    assert rdb_format._crc64_python(b"123456789") == 0xE9C6D914C4B8D9CA == rdb_format.crc64(b"123456789")
    data = bytes(range(256)) * 40
    assert rdb_format._crc64_python(data[1000:], rdb_format._crc64_python(data[:1000])) == rdb_format.crc64(data)
