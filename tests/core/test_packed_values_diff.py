"""Small collections loaded from dump.rdb stay packed until a lookup meets them
(minired/data/packed.py). Every way a value is read without a lookup (DEBUG DIGEST and
DIGEST-VALUE, DEBUG OBJECT, SAVE, the AOF rewrite, the memory figure) must give what the
unpacked value gives, and every command what Redis answers: checked against redis-server right
after DEBUG RELOAD, before anything else touches the keys."""
from __future__ import annotations

import os

import pytest

from minired.data.packed import PACK_LIMIT, Packed, live, pack
from minired.data.quicklist import QuickList
from minired.data.zset import ZSet
from tests.support.respclient import RawClient
from tests.support.servers import debug_server_pair
from tests.support.waiting import info_field, wait_until

# key -> the command that makes it, in both servers: each type packed and, one element over
# PACK_LIMIT, not packed.
_SOURCES = {
    b"h:small": ["HSET", "h:small", "b", "2", "a", "1", "\x00bin", "\r\n", "n", "-17"],
    b"h:limit": ["HSET", "h:limit", *[x for i in range(PACK_LIMIT) for x in (f"f{i}", i)]],
    b"h:over": ["HSET", "h:over", *[x for i in range(PACK_LIMIT + 1) for x in (f"f{i}", i)]],
    b"h:long": ["HSET", "h:long", "f", "v" * 100],
    b"s:ints": ["SADD", "s:ints", *range(-5, 20, 3)],
    b"s:text": ["SADD", "s:text", *[f"member{i}" for i in range(12)]],
    b"s:over": ["SADD", "s:over", *range(PACK_LIMIT + 1)],
    b"z:small": ["ZADD", "z:small", "0", "zero", "-0", "negzero", "1.5", "b", "1.5", "a",
                 "-inf", "low", "+inf", "high", "3", "c"],
    b"z:limit": ["ZADD", "z:limit", *[x for i in range(PACK_LIMIT) for x in (i % 7, f"m{i}")]],
    b"z:long": ["ZADD", "z:long", "1", "m" * 100],
    b"l:small": ["RPUSH", "l:small", "1", "-2", "three", str(2**40), "", "x" * 70],
    b"l:over": ["RPUSH", "l:over", *range(PACK_LIMIT + 1)],
    b"str": ["SET", "str", "plain"],
    # every integer width of a listpack and an intset, at its edges
    b"h:wide": ["HSET", "h:wide", "127", "128", "-4096", "4095", "32767", "-32768",
                str(2**23 - 1), str(-2**31), str(2**63 - 1), str(-2**63), "007", "1.0"],
    b"s:wide": ["SADD", "s:wide", str(2**40), "-1", str(-2**63)],
    b"l:wide": ["RPUSH", "l:wide", "127", "128", "-4096", "4095", str(2**31), str(-2**63),
                str(2**64), "-0", "+1", " 1"],
    b"z:wide": ["ZADD", "z:wide", str(2**53), "a", "1e-300", "b", "-1.5e10", "c", "4095", "d"],
}
_TTL_KEYS = (b"h:small", b"z:small", b"l:small")


def _reads(key: bytes) -> list[list]:
    """Commands whose replies show a key's whole value, type and encoding."""
    kind = key[:1]
    reads = [["TYPE", key], ["OBJECT", "ENCODING", key], ["PEXPIRETIME", key]]
    if key not in (b"s:text", b"s:over"):  # (a hash table set's order is Redis's own)
        reads.append(["DUMP", key])
    if kind == b"h":
        reads += [["HGETALL", key], ["HSCAN", key, "0", "COUNT", "1000"], ["HLEN", key]]
    elif kind == b"s":
        reads += [["SCARD", key], ["SISMEMBER", key, "2"]]
    elif kind == b"z":
        reads += [["ZRANGE", key, "0", "-1", "WITHSCORES"], ["ZSCAN", key, "0", "COUNT", "1000"],
                  ["ZSCORE", key, "negzero"]]
    elif kind == b"l":
        reads += [["LRANGE", key, "0", "-1"], ["LLEN", key]]
    return reads


def _fill(client: RawClient) -> None:
    for argv in _SOURCES.values():
        client.call(*argv)
    for key in _TTL_KEYS:
        client.call("PEXPIREAT", key, 4_000_000_000_000)


def _db0(mini):
    return mini.server.keyspace[0]


@pytest.fixture
def loaded(tmp_path):
    """redis-server and minired holding the same keys, both just after DEBUG RELOAD."""
    with debug_server_pair(dir=str(tmp_path), save="") as (real, mini):
        clients = RawClient(real.port), RawClient(mini.port)
        for client in clients:
            _fill(client)
            assert client.call("DEBUG", "RELOAD") == b"OK"
        yield real, mini, clients
        for client in clients:
            client.close()


def test_reload_packs_only_small_collections(loaded):
    _, mini, _ = loaded
    data = mini.call(lambda: dict(_db0(mini).data))
    packed = {key for key, value in data.items() if type(value) is Packed}
    assert packed == {b"h:small", b"h:limit", b"h:long", b"s:ints", b"s:text", b"z:small",
                      b"z:limit", b"z:long", b"l:small", b"h:wide", b"s:wide", b"l:wide",
                      b"z:wide"}


def test_what_reads_the_dictionary_directly_sees_the_unpacked_value(loaded, tmp_path):
    _, mini, (redis_client, mini_client) = loaded
    # (DEBUG DIGEST-VALUE and DEBUG OBJECT read the dictionary without a lookup)
    assert mini_client.call("DEBUG", "DIGEST") == redis_client.call("DEBUG", "DIGEST")
    for key in _SOURCES:
        assert (mini_client.call("DEBUG", "DIGEST-VALUE", key)
                == redis_client.call("DEBUG", "DIGEST-VALUE", key)), key
        fields = mini_client.call("DEBUG", "OBJECT", key).split()
        expected = redis_client.call("DEBUG", "OBJECT", key).split()
        assert [f for f in fields if f.startswith(b"encoding:")] == \
            [f for f in expected if f.startswith(b"encoding:")], key
    memory = int(info_field(mini_client, "memory", "used_memory"))
    # SAVE and the AOF rewrite write packed values: each written file, loaded, gives the digest
    assert mini_client.call("SAVE") == b"OK"
    assert mini.call(lambda: type(_db0(mini).data[b"h:small"])) is Packed  # (still packed)
    assert mini_client.call("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert mini_client.call("DEBUG", "DIGEST") == redis_client.call("DEBUG", "DIGEST")
    assert mini_client.call("CONFIG", "SET", "aof-use-rdb-preamble", "no") == b"OK"
    assert mini_client.call("CONFIG", "SET", "appendonly", "yes") == b"OK"
    wait_until(lambda: info_field(mini_client, "persistence", "aof_rewrite_in_progress") == "0"
               and info_field(mini_client, "persistence", "aof_rewrite_scheduled") == "0",
               "the AOF rewritten")
    assert mini_client.call("DEBUG", "LOADAOF") == b"OK"
    assert mini_client.call("DEBUG", "DIGEST") == redis_client.call("DEBUG", "DIGEST")
    # the memory figure is the unpacked values' (a lookup changes what minired holds, not it)
    assert mini_client.call("CONFIG", "SET", "appendonly", "no") == b"OK"
    assert mini_client.call("DEBUG", "RELOAD") == b"OK"
    assert int(info_field(mini_client, "memory", "used_memory")) == memory
    for key in _SOURCES:
        mini_client.call("EXISTS", key)
    assert int(info_field(mini_client, "memory", "used_memory")) == memory


def test_redis_server_loads_a_save_of_packed_values(loaded):
    real, mini, (redis_client, mini_client) = loaded
    digest = redis_client.call("DEBUG", "DIGEST")
    assert mini_client.call("SAVE") == b"OK"
    assert mini.call(lambda: type(_db0(mini).data[b"z:small"])) is Packed  # (written packed)
    directory, filename = mini_client.call("CONFIG", "GET", "dir")[1], \
        mini_client.call("CONFIG", "GET", "dbfilename")[1]
    real_dir = redis_client.call("CONFIG", "GET", "dir")[1]
    real_file = redis_client.call("CONFIG", "GET", "dbfilename")[1]
    redis_client.call("FLUSHALL")
    with open(os.path.join(directory, filename), "rb") as source, \
            open(os.path.join(real_dir, real_file), "wb") as target:
        target.write(source.read())
    assert redis_client.call("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert redis_client.call("DEBUG", "DIGEST") == digest
    for key in _TTL_KEYS:
        assert redis_client.call("PEXPIRETIME", key) == 4_000_000_000_000


def test_commands_on_packed_values_answer_as_redis(loaded):
    _, mini, (redis_client, mini_client) = loaded
    scan = ["SCAN", "0", "COUNT", "1000"]
    for type_name in ("hash", "set", "zset", "list", "string"):
        assert sorted(mini_client.call(*scan, "TYPE", type_name)[1]) == \
            sorted(redis_client.call(*scan, "TYPE", type_name)[1])
    for key in _SOURCES:
        for argv in _reads(key):
            assert mini_client.call(*argv) == redis_client.call(*argv), argv
    assert sorted(mini_client.call("SMEMBERS", "s:text")) == \
        sorted(redis_client.call("SMEMBERS", "s:text"))
    assert mini_client.call("SMEMBERS", "s:ints") == redis_client.call("SMEMBERS", "s:ints")
    assert not mini.call(lambda: [k for k, v in _db0(mini).data.items() if type(v) is Packed])


def test_writes_and_moves_of_packed_values(loaded):
    _, _, (redis_client, mini_client) = loaded
    writes = [["HSET", "h:small", "c", "3"], ["SREM", "s:ints", "1"], ["ZINCRBY", "z:small", "2", "a"],
              ["LPUSH", "l:small", "new"], ["RENAME", "h:limit", "h:renamed"],
              ["COPY", "z:limit", "z:copy"], ["MOVE", "s:text", "3"], ["GETDEL", "h:long"],
              ["DEL", "z:long"], ["SORT", "l:small", "ALPHA"]]
    for argv in writes:
        assert mini_client.call(*argv) == redis_client.call(*argv), argv
    assert mini_client.call("DEBUG", "DIGEST") == redis_client.call("DEBUG", "DIGEST")


def test_pack_round_trips_each_type():
    zset = ZSet.from_scores({b"a": 1.5, b"b": -0.0, b"c": float("-inf")})
    values = [{b"f": b"v", b"a": b""}, {b"1", b"x"}, QuickList([b"a", b"", b"c"]), zset]
    for value in values:
        packed = pack(value)
        assert type(packed) is Packed and packed.kind is type(value)
        unpacked = packed.unpacked()
        assert type(unpacked) is type(value)
        if type(value) is ZSet:
            assert list(unpacked.order) == list(value.order)
            assert unpacked.scores == value.scores
        elif type(value) is set:  # (a set's order depends on its insertion history and hash seed)
            assert unpacked == value
        else:
            assert list(unpacked) == list(value)
    assert pack(b"string") == b"string"
    big = {b"%d" % i: b"" for i in range(PACK_LIMIT + 1)}
    assert pack(big) is big


def _decoded(rdb_type: int, payload: bytes, packing: bool):
    """decode_object of the payload, or the error it raises (class, text)."""
    from minired.features import rdb, rdb_format

    try:
        value = rdb.decode_object(rdb_type, rdb_format.Reader(payload), packing)
    except rdb_format.BadData as exc:
        return type(exc), str(exc)
    return live(value) if packing else value


def _same_value(a, b) -> bool:
    if type(a) is ZSet:
        return type(b) is ZSet and list(a.order) == list(b.order) and a.scores == b.scores
    if type(a) is QuickList:
        return type(b) is QuickList and list(a) == list(b)
    return type(a) is type(b) and a == b


def test_a_file_s_listpacks_and_intsets_load_packed_as_they_load_unpacked():
    """A load keeps a small hash or sorted set listpack, an intset, or a list's only listpack
    node, as the file's bytes: it must accept and refuse exactly what the unpacked load does,
    with the same error, and unpack to the same value."""
    from minired.features import rdb, rdb_containers, rdb_format

    lp = rdb_containers.listpack
    string = rdb_format.encode_string

    def quicklist(*nodes):
        return rdb_format.encode_length(len(nodes)) + b"".join(
            rdb_format.encode_length(kind) + string(blob) for kind, blob in nodes)

    truncated = lp([b"f", b"v"])[:-3] + b"\xff"
    hashes = [lp([b"f", b"v", b"g", 7]), lp([b"5", b"x", 5, b"y"]),  # "5" twice: a duplicate
              lp([b"a", b"1", b"a", b"2"]), lp([b"f", b"v", b"g"]), lp([]), truncated,
              lp([x for i in range(PACK_LIMIT) for x in (b"f%d" % i, i)]),
              lp([x for i in range(PACK_LIMIT + 1) for x in (b"f%d" % i, i)]),
              lp([b"f" * 5000, b"v" * 70000, -(2**63), 2**62]), b"\x00" * 7]
    zsets = [lp([b"a", 1, b"b", b"1.5", b"c", b"-inf"]), lp([b"a", 1, b"a", 2]),
             lp([b"a", b"nan"]), lp([b"a", 1, b"b"]), lp([]), lp([b"x", b"12abc"]),
             lp([x for i in range(PACK_LIMIT + 1) for x in (b"m%d" % i, i)])]
    intsets = [b"\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00",
               b"\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x01\x00",  # (a duplicate, unsanitized)
               b"\x02\x00\x00\x00\x00\x00\x00\x00", b"\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00",
               b"\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00"]
    lists = [quicklist((2, lp([b"a", 1, b"", -(2**63)]))), quicklist((2, lp([]))),
             quicklist((1, b"plain")), quicklist((2, lp([b"a"])), (2, lp([b"b"]))),
             quicklist((2, lp(list(range(PACK_LIMIT + 1))))), quicklist((2, truncated)),
             quicklist((3, lp([b"a"]))), quicklist(), rdb_format.encode_length(1)]
    cases = ([(rdb_format.TYPE_HASH_LISTPACK, string(blob)) for blob in hashes]
             + [(rdb_format.TYPE_ZSET_LISTPACK, string(blob)) for blob in zsets]
             + [(rdb_format.TYPE_SET_INTSET, string(blob)) for blob in intsets]
             + [(rdb_format.TYPE_LIST_QUICKLIST_2, payload) for payload in lists])
    packed_kinds = set()
    for rdb_type, payload in cases:
        unpacked = _decoded(rdb_type, payload, False)
        packed = _decoded(rdb_type, payload, True)
        assert _same_value(packed, unpacked), (rdb_type, payload[:40], packed, unpacked)
        try:
            value = rdb.decode_object(rdb_type, rdb_format.Reader(payload), True)
        except rdb_format.BadData:
            continue
        if type(value) is Packed:
            packed_kinds.add(value.kind)
            assert _same_value(value.unpacked(), unpacked)
    # (lists of other shapes are packed as before: their values marshaled)
    assert packed_kinds == {rdb.HashListpack, rdb.ZSetListpack, rdb.SetIntset, rdb.ListListpack,
                            QuickList}


def test_a_save_writes_a_loaded_listpack_as_the_live_value_would_be_written():
    """SAVE writes a value still held as its file's listpack as it is, only where encode_value
    would choose that encoding for the live value (the same limits, every one at its edge),
    and then the bytes are the ones the live value gives (listpacks as Redis writes them: a
    sorted set's in order; one that is not is written back as it came, as Redis does)."""
    from minired.features import rdb, rdb_containers, rdb_format

    lp = rdb_containers.listpack
    string = rdb_format.encode_string
    payloads = [
        (rdb_format.TYPE_HASH_LISTPACK, string(lp([b"f", b"v" * 64, b"g", 123456789012, b"h", -5]))),
        (rdb_format.TYPE_HASH_LISTPACK, string(lp([x for i in range(4) for x in (b"f%d" % i, i)]))),
        (rdb_format.TYPE_ZSET_LISTPACK, string(lp([b"z", b"-inf", b"a", 1, b"m" * 64, b"1.5"]))),
        (rdb_format.TYPE_LIST_QUICKLIST_2, rdb_format.encode_length(1) + rdb_format.encode_length(2)
         + string(lp([b"x" * 1000, 1, -(2**40), b""] + [b"y" * 900] * 6))),
        (rdb_format.TYPE_LIST_QUICKLIST_2, rdb_format.encode_length(1) + rdb_format.encode_length(2)
         + string(lp(list(range(5))))),
    ]
    compacts = [rdb.Compact(), rdb.Compact(hash_entries=3, hash_value=63, zset_entries=0),
                rdb.Compact(hash_entries=4, hash_value=12, zset_entries=3, zset_value=63),
                rdb.Compact(list_fill=-1), rdb.Compact(list_fill=4), rdb.Compact(list_fill=5),
                rdb.Compact(list_fill=11), rdb.Compact(list_fill=10)]
    as_loaded = 0
    for rdb_type, payload in payloads:
        packed = rdb.decode_object(rdb_type, rdb_format.Reader(payload), True)
        assert type(packed) is Packed
        for compact in compacts:
            for compress_from in (rdb_format.COMPRESS_AS_REDIS, 1 << 40):
                written = rdb.encode_value(packed, compress_from, compact)
                assert written == rdb.encode_value(packed.unpacked(), compress_from, compact), \
                    (rdb_type, [getattr(compact, name) for name in rdb.Compact.__slots__])
            as_loaded += rdb._written_as_loaded(packed, 0, compact) is not None
        assert rdb.encode_value(packed) == rdb.encode_value(packed.unpacked())  # (DUMP: no compact)
    assert as_loaded >= 12


def test_redis_s_own_listpacks_are_written_back_as_redis_writes_them(tmp_path):
    """Redis's dump.rdb loaded into minired (each small collection held as Redis's listpack or
    intset), then SAVE: each packed key's bytes are the ones its live value gives, and Redis
    loads minired's file to its own digest."""
    from minired.features import rdb, rdb_format

    with debug_server_pair(dir=str(tmp_path), save="") as (real, mini):
        redis_client, mini_client = RawClient(real.port), RawClient(mini.port)
        _fill(redis_client)
        digest = redis_client.call("DEBUG", "DIGEST")
        assert redis_client.call("SAVE") == b"OK"
        real_file = os.path.join(*(redis_client.call("CONFIG", "GET", name)[1].decode()
                                   for name in ("dir", "dbfilename")))
        mini_file = os.path.join(str(tmp_path), "dump.rdb")
        with open(real_file, "rb") as source, open(mini_file, "wb") as target:
            target.write(source.read())
        assert mini_client.call("DEBUG", "RELOAD", "NOSAVE") == b"OK"
        assert mini_client.call("DEBUG", "DIGEST") == digest

        def compare() -> list:
            compact = rdb.Compact()
            kinds = []
            for key, value in _db0(mini).data.items():
                if type(value) is Packed:
                    kinds.append(value.kind.__name__)
                    assert (rdb.encode_value(value, rdb_format.COMPRESS_AS_REDIS, compact)
                            == rdb.encode_value(value.unpacked(), rdb_format.COMPRESS_AS_REDIS,
                                                compact)), key
            return sorted(kinds)

        # (h:long and z:long are a hash table and a skiplist in Redis's file: packed marshaled)
        assert mini.call(compare) == sorted(
            ["HashListpack"] * 3 + ["dict"] + ["SetIntset"] * 2 + ["set"] + ["ZSetListpack"] * 3
            + ["ZSet"] + ["ListListpack"] * 2)
        assert mini_client.call("SAVE") == b"OK"
        redis_client.call("FLUSHALL")
        with open(mini_file, "rb") as source, open(real_file, "wb") as target:
            target.write(source.read())
        assert redis_client.call("DEBUG", "RELOAD", "NOSAVE") == b"OK"
        assert redis_client.call("DEBUG", "DIGEST") == digest
        for key in _SOURCES:
            for argv in _reads(key):
                assert mini_client.call(*argv) == redis_client.call(*argv), argv
        redis_client.close()
        mini_client.close()
