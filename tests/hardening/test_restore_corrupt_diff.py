"""RESTORE of corrupt payloads (a valid checksum over damaged contents): wherever Redis 7.0.15
answers "ERR Bad data format", minired answers the same.

Payloads are DUMPs of every encoding, cut short, with a byte changed or a byte inserted, then
given a correct CRC64 footer, so the checksum does not catch them. With sanitize-dump-payload
no (the default) Redis takes some damaged payloads (it does not check a listpack's or intset's
contents deeply) and may even crash on one: such a payload is not counted, and a dead Redis is
started again. minired refuses some that Redis takes; it never takes one Redis refuses."""
from __future__ import annotations

import contextlib
import random
import struct
import subprocess

import redis

from minired.embed import SubprocessServer
from minired.features.rdb_format import NO_COMPRESSION, crc64, encode_string
from tests.support.servers import redis_server_binary, start_on_free_port, terminate

BUILDERS = [
    lambda c: c.set("src", "hello world"),
    lambda c: c.set("src", 12345),
    lambda c: c.set("src", "x" * 300),
    lambda c: c.rpush("src", *range(20)),
    lambda c: c.hset("src", mapping={f"f{i}": i for i in range(10)}),
    lambda c: c.hset("src", mapping={f"f{i}": "v" * 100 for i in range(200)}),
    lambda c: c.sadd("src", *range(10)),
    lambda c: c.sadd("src", "a", "b", "c"),
    lambda c: c.zadd("src", {f"m{i}": i for i in range(10)}),
    lambda c: c.zadd("src", {f"m{i}" * 20: i for i in range(200)}),
    # (an ID of its own: an ID from the clock would make other bytes each run)
    lambda c: c.xadd("src", {"f": "v"}, id="1764950000000-0"),
]


class Redis:
    def __init__(self) -> None:
        self.proc = None
        self.client = None
        self.start()

    def start(self) -> None:
        if self.proc is not None:
            terminate(self.proc)
        self.proc, port = start_on_free_port(
            lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                          "--appendonly", "no"],
            stdout=subprocess.DEVNULL)
        self.client = redis.Redis(port=port)


def _damaged(rng: random.Random, payload: bytes) -> bytes:
    body = bytearray(payload[:-10])  # (the last 10 bytes: RDB version and CRC64)
    version = payload[-10:-8]
    kind = rng.random()
    if kind < 0.4:
        body = body[:rng.randrange(1, len(body))]
    elif kind < 0.7:
        body[rng.randrange(len(body))] = rng.randrange(256)
    else:
        body.insert(rng.randrange(len(body)), rng.randrange(256))
    body += version
    return bytes(body) + struct.pack("<Q", crc64(bytes(body)))


def _restore(client: redis.Redis, payload: bytes) -> str:
    client.delete("dst")
    try:
        client.restore("dst", 0, payload)
    except redis.ResponseError as exc:
        return str(exc)
    return "OK"


def _value(client: redis.Redis):
    """The restored key's contents, in a form that does not depend on hash order."""
    kind = client.type("dst")
    if kind == b"list":
        return client.lrange("dst", 0, -1)
    if kind == b"set":
        return sorted(client.smembers("dst"))
    if kind == b"hash":
        return sorted(client.hgetall("dst").items())
    if kind == b"zset":  # (Redis keeps a listpack's members in their order, even when it
        # is not the scores' order; minired sorts them: the same members and scores)
        return sorted(client.zrange("dst", 0, -1, withscores=True))
    if kind == b"stream":  # (XLEN: the length as loaded, which need not count the entries)
        return client.xlen("dst"), client.xrange("dst")
    return kind, client.get("dst") if kind == b"string" else None


def test_minired_refuses_every_payload_redis_refuses():
    rng = random.Random(20260)
    real = Redis()
    refused_by_both = 0
    try:
        with SubprocessServer() as server:
            mini = redis.Redis(port=server.port)
            for _ in range(400):
                real.client.delete("src")
                rng.choice(BUILDERS)(real.client)
                payload = _damaged(rng, real.client.dump("src"))
                try:
                    expected = _restore(real.client, payload)
                except redis.ConnectionError:  # Redis crashed on it: not comparable
                    real.start()
                    continue
                if expected == "OK":
                    continue  # Redis took it without checking: minired may refuse it
                assert _restore(mini, payload) == expected, payload
                refused_by_both += 1
    finally:
        terminate(real.proc)
    assert refused_by_both > 100


def _ziplist(entries: list[bytes]) -> bytes:
    """A ziplist (RDB 9 and older) of short strings: prevlen, 6-bit length, the bytes."""
    body, tail, previous = b"", 10, 0
    for entry in entries:
        tail = 10 + len(body)
        encoded = bytes((previous, len(entry))) + entry
        body += encoded
        previous = len(encoded)
    return struct.pack("<IIH", 11 + len(body), tail, len(entries)) + body + b"\xff"


def _ziplist_payload(rdb_type: int, entries: list[bytes]) -> bytes:
    """A DUMP payload of RDB version 9 (which RESTORE still takes) holding a ziplist."""
    body = bytes((rdb_type,)) + encode_string(_ziplist(entries), NO_COMPRESSION) + b"\x09\x00"
    return body + struct.pack("<Q", crc64(body))


# More encodings for the sanitizing run: intsets of wider integers, quicklists of mixed
# entries, streams with deleted entries and entries of other fields, and RDB 9 ziplists.
SANITIZE_SOURCES = [lambda c, build=build: (build(c), c.dump("src"))[1] for build in BUILDERS] + [
    lambda c: (c.sadd("src", *range(-70000, -69990)), c.dump("src"))[1],
    lambda c: (c.sadd("src", *(2**40 + i for i in range(5))), c.dump("src"))[1],
    lambda c: (c.rpush("src", "a", 1, -5000, 2**31, 2**60, "b" * 70), c.dump("src"))[1],
    lambda c: (c.xadd("src", {"f": "v"}, id="1-1"), c.xadd("src", {"g": 1, "h": 2}, id="2-1"),
               c.xadd("src", {"f": "w"}, id="3-1"), c.xdel("src", "2-1"), c.dump("src"))[-1],
    lambda c: _ziplist_payload(10, [b"a", b"bb", b"ccc", b"dddd"]),
    lambda c: _ziplist_payload(13, [b"f1", b"v1", b"f2", b"v2"]),
    lambda c: _ziplist_payload(12, [b"m1", b"1", b"m2", b"2.5"]),
]


@contextlib.contextmanager
def _sanitizing_pair():
    """A redis-server (restartable after a crash) and a minired, both sanitizing payloads."""
    real = Redis()
    try:
        with SubprocessServer() as server:
            mini = redis.Redis(port=server.port)
            for client in (real.client, mini):
                client.config_set("sanitize-dump-payload", "yes")
            yield real, mini
    finally:
        terminate(real.proc)


def test_sanitized_restore_answers_as_redis():
    """With sanitize-dump-payload yes on both, Redis checks payloads deeply (listpack, ziplist
    and intset integrity, entry counts, order, duplicates): minired answers every damaged
    payload as Redis does, taking what it takes with the same value."""
    rng = random.Random(20261)
    outcomes = {"refused": 0, "taken": 0}
    mismatches = []
    with _sanitizing_pair() as (real, mini):
        for _ in range(1500):
            real.client.delete("src")
            payload = _damaged(rng, rng.choice(SANITIZE_SOURCES)(real.client))
            try:
                expected = _restore(real.client, payload)
            except redis.ConnectionError:  # (none expected while sanitizing)
                real.start()
                real.client.config_set("sanitize-dump-payload", "yes")
                mismatches.append(("redis crashed", payload))
                continue
            actual = _restore(mini, payload)
            if actual != expected:
                mismatches.append((expected, actual, payload))
                continue
            if expected == "OK":
                if _value(real.client) != _value(mini):
                    mismatches.append(("values differ", payload))
                outcomes["taken"] += 1
            else:
                outcomes["refused"] += 1
    assert not mismatches, mismatches[:5]
    assert outcomes["refused"] > 100 and outcomes["taken"] > 10, outcomes


def _answers_by_mode(port: int, payload: bytes) -> dict:
    client = redis.Redis(port=port)
    client.acl_setuser("trusted", enabled=True, nopass=True, commands=["+@all"], keys=["*"])
    client.execute_command("ACL", "SETUSER", "trusted", "skip-sanitize-payload")
    trusted = redis.Redis(port=port, username="trusted", password="any")
    answers = {}
    for mode in ("no", "clients", "yes"):
        client.config_set("sanitize-dump-payload", mode)
        answers[mode] = (_restore(client, payload), _restore(trusted, payload))
    client.config_set("sanitize-dump-payload", "no")
    return answers


def test_every_byte_of_a_payload_changed_answers_as_redis():
    """Every byte of a stream's and of an LZF string's payload set to the values that change
    how Redis reads it (a length's special encodings, listpack integer edges), sanitized:
    minired takes and refuses what Redis does, and takes it with the same value. Redis reads
    a special encoding as a count's low 6 bits, a stream's length as the file says, entries
    in the listpack's order, and an LZF string of plain length 0 as empty."""
    mismatches = []
    with _sanitizing_pair() as (real, mini):
        for source in SANITIZE_SOURCES[10:11] + SANITIZE_SOURCES[14:15] + [
                lambda c: (c.set("src", "x" * 300), c.dump("src"))[1]]:
            real.client.delete("src")
            payload = source(real.client)
            body, version = payload[:-10], payload[-10:-8]
            for pos in range(len(body)):
                for byte in (0, 0x3F, 0x40, 0x7F, 0x80, 0xC0, 0xC1, 0xFF):
                    changed = body[:pos] + bytes((byte,)) + body[pos + 1:] + version
                    damaged = changed + struct.pack("<Q", crc64(changed))
                    expected = _restore(real.client, damaged)
                    if _restore(mini, damaged) != expected or (
                            expected == "OK" and _value(real.client) != _value(mini)):
                        mismatches.append((pos, byte, expected, damaged))
    assert not mismatches, mismatches[:5]


def test_sanitize_clients_spares_users_with_skip_sanitize_payload():
    """An intset out of order passes the shallow check and fails the deep one: with clients,
    the default user's RESTORE is checked deeply, a skip-sanitize-payload user's is not; with
    yes, both are (differential)."""
    intset = struct.pack("<II", 2, 2) + struct.pack("<hh", 5, 3)
    body = b"\x0b" + encode_string(intset, NO_COMPRESSION) + b"\x0a\x00"
    payload = body + struct.pack("<Q", crc64(body))
    real = Redis()
    try:
        expected = _answers_by_mode(real.client.connection_pool.connection_kwargs["port"],
                                    payload)
        with SubprocessServer() as server:
            assert _answers_by_mode(server.port, payload) == expected
    finally:
        terminate(real.proc)
    assert expected == {"no": ("OK", "OK"), "clients": ("Bad data format", "OK"),
                        "yes": ("Bad data format", "Bad data format")}


def _sanitizations(client: redis.Redis) -> int:
    return client.info("stats")["dump_payload_sanitizations"]


def test_dump_payload_sanitizations_counts_as_redis():
    """INFO dump_payload_sanitizations counts each listpack, intset and stream node checked
    deeply (each quicklist node; ziplists, always checked, are not counted): the same count
    for every kind of payload, restored with sanitize-dump-payload yes."""
    real = Redis()
    counts = {}
    try:
        real.client.config_set("list-max-listpack-size", 4)
        real.client.config_set("stream-node-max-entries", 2)
        payloads = []
        for source in SANITIZE_SOURCES:
            real.client.delete("src")
            payloads.append(source(real.client))
        with SubprocessServer() as server:
            mini = redis.Redis(port=server.port)
            for name, client in (("redis", real.client), ("minired", mini)):
                client.config_set("sanitize-dump-payload", "yes")
                counts[name] = []
                for payload in payloads:
                    before = _sanitizations(client)
                    assert _restore(client, payload) == "OK", name
                    counts[name].append(_sanitizations(client) - before)
    finally:
        terminate(real.proc)
    assert counts["minired"] == counts["redis"]
    assert sum(counts["redis"]) >= 10 and max(counts["redis"]) >= 2  # (quicklist, stream nodes)


def test_ziplists_are_checked_deeply_without_sanitizing():
    """Redis converts an RDB 9 ziplist to a listpack entry by entry, checking it deeply whatever
    sanitize-dump-payload says: damaged ziplists get the same answers from both servers."""
    rng = random.Random(20262)
    ziplists = SANITIZE_SOURCES[-3:]
    real = Redis()
    mismatches = []
    try:
        with SubprocessServer() as server:
            mini = redis.Redis(port=server.port)
            for _ in range(300):
                payload = _damaged(rng, rng.choice(ziplists)(real.client))
                expected = _restore(real.client, payload)
                if _restore(mini, payload) != expected or (
                        expected == "OK" and _value(real.client) != _value(mini)):
                    mismatches.append(payload)
    finally:
        terminate(real.proc)
    assert not mismatches, mismatches[:5]


NAN_ZSET = (b"\x05\x0A\x02\x5F\x39\x00\x00\x00\x00\x00\x00\x22\x40\xC0\x08\x00\x00\x00\x00\x00"
            b"\x00\x20\x40\x02\x5F\x37\x00\x00\x00\x00\x00\x00\x1C\x40\xC0\x06\x00\x00\x00\x00"
            b"\x00\x00\x18\x40\x02\x5F\x35\x00\x00\x00\x00\x00\x00\x14\x40\xC0\x04\x00\x00\x00"
            b"\x00\x00\x00\x10\x40\x02\x5F\x33\x00\x00\x00\x00\x00\x00\x08\x40\xC0\x02\x00\x00"
            b"\x00\x00\x00\x00\x00\x40\x02\x5F\x31\x00\x00\x00\x00\x00\x55\xF0\x7F\xC0\x00\x00"
            b"\x00\x00\x00\x00\x00\x00\x00\x0A\x00\xEC\x94\x86\xD8\xFD\x5C\x5F\xD8")


def test_a_sorted_set_with_a_nan_score_is_refused_unsanitized():
    """rdbLoadObject refuses a NaN score whatever sanitize-dump-payload says (corrupt-dump's
    'zset zslInsert with a NAN score')."""
    from tests.support.servers import RedisServer

    answers = []
    with RedisServer("--enable-debug-command", "yes") as real, \
            SubprocessServer("--enable-debug-command", "yes") as server:
        for port in (real.port, server.port):
            client = redis.Redis(port=port)
            client.config_set("sanitize-dump-payload", "no")
            client.execute_command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
            answers.append((_restore(client, NAN_ZSET), client.exists("dst")))
    assert answers[1] == answers[0]
    assert "Bad data format" in str(answers[0][0])
