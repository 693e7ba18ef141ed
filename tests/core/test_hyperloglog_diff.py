"""HyperLogLog commands against real Redis: replies, and the exact bytes of the string value
(GET) after every kind of change: sparse growth, promotion to dense, merges, the cached
cardinality PFCOUNT writes back, and corrupted or hand-made values."""
from __future__ import annotations

import random

import pytest

from tests.support.respclient import Err, NullArray

HEADER_DENSE = b"HYLL\x00" + bytes(10) + b"\x80"
HEADER_SPARSE = b"HYLL\x01" + bytes(10) + b"\x80"


def _dense_of(*registers: int) -> bytes:
    """A dense HLL value whose registers repeat the given 4 values."""
    r0, r1, r2, r3 = registers
    group = bytes(((r0 | (r1 << 6)) & 0xFF, ((r1 >> 2) | (r2 << 4)) & 0xFF,
                   ((r2 >> 4) | (r3 << 2)) & 0xFF))
    return HEADER_DENSE + group * 4096


def _elements(start: int, stop: int) -> list[str]:
    return [str(i) for i in range(start, stop)]


def test_sparse_value_grows_byte_for_byte(diff):
    for element in ["a", "b", "c", "a", "", "x" * 100, "\x00", "hello", "world", "ab"]:
        diff.check("PFADD", "h", element)
        diff.check("GET", "h")
    diff.check("PFDEBUG", "DECODE", "h")
    for batch in range(0, 400, 25):
        diff.check("PFADD", "h", *_elements(batch, batch + 25))
        diff.check("GET", "h")
        diff.check("PFDEBUG", "DECODE", "h")
    diff.check("PFDEBUG", "ENCODING", "h")
    diff.check("TYPE", "h")


def test_pfadd_replies(diff):
    diff.check("PFADD", "h")  # creates the key, registers all zero
    diff.check("GET", "h")
    diff.check("PFADD", "h")
    diff.check("PFADD", "h", "a", "b")
    diff.check("PFADD", "h", "a", "b")
    diff.check("PFADD", "h", "a", "z")
    diff.check("PFCOUNT", "h")
    diff.check("PFADD", "h", "a")  # no register rises: the cache stays valid
    diff.check("GET", "h")


def test_promotion_to_dense_by_size(diff):
    for batch in range(0, 4000, 50):
        diff.check("PFADD", "h", *_elements(batch, batch + 50))
        diff.check("GET", "h")
        if batch % 500 == 0:
            diff.check("PFCOUNT", "h")
            diff.check("GET", "h")
    diff.check("PFDEBUG", "ENCODING", "h")
    diff.check("PFADD", "h", "one more")
    diff.check("GET", "h")


def test_counts_match_for_many_elements(diff):
    for start in range(0, 100_000, 2000):
        diff.check("PFADD", "n", *_elements(start, start + 2000))
        if start % 10_000 == 0:
            diff.check("PFCOUNT", "n")
    diff.check("PFCOUNT", "n")
    diff.check("GET", "n")
    rng = random.Random(7)
    for size in (1, 10, 100, 1000, 10_000):
        elements = [rng.randbytes(rng.randrange(0, 40)) for _ in range(size)]
        for start in range(0, size, 1000):
            diff.check("PFADD", f"r{size}", *elements[start:start + 1000])
        diff.check("PFCOUNT", f"r{size}")
        diff.check("GET", f"r{size}")
    diff.check("PFCOUNT", "r10", "r100", "r1000", "n", "missing")
    diff.check("PFCOUNT", "r1", "r10")
    diff.check("PFMERGE", "all", "r1", "r10", "r100", "r1000", "r10000", "n")
    diff.check("PFCOUNT", "all")
    diff.check("GET", "all")


def test_pfmerge_results(diff):
    diff.check("PFADD", "s1", *_elements(0, 50))
    diff.check("PFADD", "s2", *_elements(25, 120))
    diff.check("PFADD", "d1", *_elements(0, 3000))
    diff.check("PFMERGE", "sparse", "s1", "s2")  # sparse sources: a sparse result
    diff.check("GET", "sparse")
    diff.check("PFMERGE", "dense", "s1", "d1")  # one dense source: a dense result
    diff.check("GET", "dense")
    diff.check("PFMERGE", "s1", "s2")  # the destination is a source too
    diff.check("GET", "s1")
    diff.check("PFMERGE", "s2", "missing", "nothing")
    diff.check("GET", "s2")
    diff.check("PFMERGE", "alone")
    diff.check("GET", "alone")
    diff.check("PFMERGE", "empty", "missing")
    diff.check("GET", "empty")
    diff.check("PFCOUNT", "empty")
    diff.check("PFMERGE", "s2", "d1")  # a sparse destination turned dense
    diff.check("GET", "s2")
    diff.check("PFCOUNT", "sparse", "dense", "s2")
    diff.check("PFMERGE", "big", *[f"part{i}" for i in range(5)])
    for i in range(5):
        diff.check("PFADD", f"part{i}", *_elements(i * 300, i * 300 + 400))
    diff.check("PFMERGE", "big", *[f"part{i}" for i in range(5)])  # promoted while merging
    diff.check("GET", "big")
    diff.check("PFCOUNT", "big")


def test_pfmerge_keeps_destination_ttl(diff):
    diff.check("PFADD", "h", "a")
    diff.check("EXPIRE", "h", 1000)
    diff.check("PFMERGE", "h", "missing")
    diff.check("TTL", "h")
    diff.check("PFADD", "h", "b")
    diff.check("TTL", "h")
    diff.check("PFCOUNT", "h")
    diff.check("TTL", "h")


def test_wrong_types(diff):
    diff.check("PFADD", "h", "a")
    diff.check("SET", "s", "hello")
    diff.check("SET", "i", "12345")
    diff.check("RPUSH", "l", "x")
    for key in ("s", "i", "l"):
        diff.check_error("PFADD", key, "a")
        diff.check_error("PFCOUNT", key)
        diff.check_error("PFCOUNT", "h", key)
        diff.check_error("PFMERGE", key, "h")
        diff.check_error("PFMERGE", "h", key)
        diff.check_error("PFDEBUG", "GETREG", key)
    diff.check("GET", "h")
    diff.check("EXISTS", "new")
    diff.check_error("PFMERGE", "new", "h", "l")
    diff.check("EXISTS", "new")


HAND_MADE = {
    "all_ones": _dense_of(1, 1, 1, 1),
    "mixed": _dense_of(0, 5, 17, 2),
    "all_50": _dense_of(50, 50, 50, 50),  # overflows llroundl
    "all_51": _dense_of(51, 51, 51, 51),
    "all_63": HEADER_DENSE + b"\xff" * 12288,  # registers past 51 are ignored by the estimate
    "random_dense": HEADER_DENSE + random.Random(5).randbytes(12288),
    "short_dense": HEADER_DENSE + bytes(100),
    "header_only": HEADER_SPARSE,
    "half_covered": HEADER_SPARSE + b"\x5f\xff",
    "over_covered": HEADER_SPARSE + b"\x7f\xff\x7f\xff",
    "cut_xzero": HEADER_SPARSE + b"\x7f\xff\x40",
    "cut_xzero_short": HEADER_SPARSE + b"\x7f\xfe\x40",
    "one_register_xzero": HEADER_SPARSE + b"\x7f\xfe\x40\x00",
    "val_overflow": HEADER_SPARSE + b"\x7f\xfc\xff\xff",
    "vals": HEADER_SPARSE + b"\x80\x84\x88\x8c\x7f\xfb",
    "bad_encoding": b"HYLL\x02" + bytes(11),
    "valid_cache": b"HYLL\x01" + bytes(3) + b"\x39\x30" + bytes(6) + b"\x7f\xff",
    "unused_bytes": b"HYLL\x01\x07\x08\x09" + bytes(7) + b"\x80\x7f\xff",
    "bad_magic": b"HYLX\x01" + bytes(11) + b"\x7f\xff",
    "too_short": b"HYLL",
}


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_hand_made_and_corrupted_values(diff, name):
    value = HAND_MADE[name]
    operations = [
        ("PFCOUNT", "v"), ("PFCOUNT", "v", "v"), ("PFCOUNT", "missing", "v"),
        ("PFADD", "v", "a", "b", "c", "x" * 100), ("PFADD", "v", *_elements(0, 200)),
        ("PFMERGE", "dest", "v"), ("PFMERGE", "v", "other"), ("PFDEBUG", "DECODE", "v"),
        ("PFDEBUG", "GETREG", "v"), ("PFDEBUG", "TODENSE", "v"), ("PFDEBUG", "ENCODING", "v"),
    ]
    for operation in operations:
        diff.check("SET", "v", value)
        diff.check("SET", "other", HAND_MADE["all_ones"])
        diff.check(*operation)
        diff.check("GET", "v")
        diff.check("GET", "dest")
        diff.check("DEL", "dest")
        diff.check("PFCOUNT", "v")
        diff.check("GET", "v")


def test_corrupted_by_string_commands(diff):
    diff.check("PFADD", "h", *_elements(0, 100))
    diff.check("PFCOUNT", "h")
    diff.check("SETRANGE", "h", 20, "\xff\xff\xff")
    diff.check("PFCOUNT", "h")  # the cached value is still valid
    diff.check("PFCOUNT", "h", "h")
    diff.check("PFADD", "h", *_elements(100, 200))
    diff.check("PFCOUNT", "h")
    diff.check("GET", "h")
    diff.check("PFADD", "d", *_elements(0, 3000))
    diff.check("SETRANGE", "d", 100, "\xff" * 10)
    diff.check("PFADD", "d", "x")
    diff.check("PFCOUNT", "d")
    diff.check("GET", "d")
    diff.check("APPEND", "d", "x")
    diff.check_error("PFCOUNT", "d")
    diff.check_error("PFADD", "d", "y")


def test_hll_values_are_plain_strings(diff):
    diff.check("PFADD", "h", "a", "b", "c")
    diff.check("TYPE", "h")
    diff.check("STRLEN", "h")
    diff.check("GETRANGE", "h", 0, 3)
    diff.check("APPEND", "h", "")
    diff.check("SET", "copy", diff.check("GET", "h"))
    diff.check("PFCOUNT", "copy", "h")
    diff.check("PFADD", "copy", "d")
    diff.check("GET", "copy")
    # Sparse values under 45 bytes are "raw" in Redis (made by sdsnewlen, never embedded),
    # which minired, keeping no encoding with a string, cannot tell from a SET value.
    diff.check("PFADD", "dense", *_elements(0, 3000))
    diff.check("OBJECT", "ENCODING", "dense")


def test_cached_cardinality_and_watch(diff):
    diff.check("PFADD", "h", "a", "b")
    diff.check("WATCH", "h")
    diff.check("PFCOUNT", "h")  # computes and stores the cache: a change WATCH sees
    diff.check("MULTI")
    diff.check("PING")
    diff.check("EXEC")
    diff.check("WATCH", "h")
    diff.check("PFCOUNT", "h")  # served from the cache: no change
    diff.check("PFADD", "h", "a")  # no register rises: no change
    diff.check("PFDEBUG", "TODENSE", "h")  # converts without signalling the change
    diff.check("MULTI")
    diff.check("PING")
    assert diff.check("EXEC") != NullArray
    diff.check("GET", "h")


def test_pfdebug(diff):
    diff.check("PFADD", "h", *_elements(0, 20))
    diff.check("PFDEBUG", "DECODE", "h")
    diff.check("PFDEBUG", "ENCODING", "h")
    diff.check("PFDEBUG", "encoding", "h")
    diff.check("PFDEBUG", "GETREG", "h")  # converts to dense as a side effect
    diff.check("GET", "h")
    diff.check("PFDEBUG", "ENCODING", "h")
    diff.check("PFDEBUG", "TODENSE", "h")
    diff.check_error("PFDEBUG", "DECODE", "h")
    diff.check("PFADD", "s", "x")
    diff.check("PFDEBUG", "TODENSE", "s")
    diff.check("GET", "s")
    diff.check_error("PFDEBUG", "NOPE", "h")
    diff.check_error("PFDEBUG", "NOPE", "missing")
    diff.check_error("PFDEBUG", "no\r\npe", "h")
    diff.check_error("PFDEBUG", "GETREG", "missing")
    diff.check_error("PFDEBUG", "GETREG", "h", "extra")
    diff.check_error("PFDEBUG", "GETREG")
    diff.hello(3)
    diff.check("PFDEBUG", "ENCODING", "h")


def test_arity_and_selftest(diff):
    diff.check_error("PFADD")
    diff.check_error("PFCOUNT")
    diff.check_error("PFMERGE")
    diff.check_error("PFSELFTEST", "x")
    diff.check("PFSELFTEST")


def test_command_getkeys(diff):
    diff.check_error("COMMAND", "GETKEYS", "PFMERGE", "dest")
    diff.check("COMMAND", "GETKEYS", "PFMERGE", "dest", "a", "b")
    diff.check("COMMAND", "GETKEYS", "PFCOUNT", "a", "b")
    diff.check("COMMAND", "GETKEYS", "PFADD", "a", "b")
    diff.check("COMMAND", "GETKEYS", "PFDEBUG", "GETREG", "a")


def test_sparse_max_bytes_setting(diff):
    old = diff.check("CONFIG", "GET", "hll-sparse-max-bytes")
    try:
        for limit in ("0", "100", "20000"):
            diff.check("CONFIG", "SET", "hll-sparse-max-bytes", limit)
            diff.check("DEL", "h")
            for start in range(0, 1500, 100):
                diff.check("PFADD", "h", *_elements(start, start + 100))
                diff.check("GET", "h")
            diff.check("PFMERGE", "m", "h")
            diff.check("GET", "m")
            diff.check("DEL", "m")
    finally:
        diff.both("CONFIG", "SET", "hll-sparse-max-bytes", old[1])


def test_random_sequences(diff):
    """Seeded random PFADD/PFCOUNT/PFMERGE/GET over a few keys, elements from a pool, with
    now and then a batch big enough to reach the dense encoding."""
    rng = random.Random(20240501)
    keys = ["h1", "h2", "h3"]
    pool = [f"e{i}" for i in range(4000)] + ["", "\x00", "a" * 64]
    for _ in range(300):
        roll = rng.random()
        key = rng.choice(keys)
        if roll < 0.45:
            size = rng.choice([0, 1, 1, 2, 5, 20]) if rng.random() < 0.95 else 1500
            diff.check("PFADD", key, *rng.sample(pool, size))
        elif roll < 0.65:
            diff.check("PFCOUNT", *rng.sample(keys + ["missing"], rng.choice([1, 1, 2, 3])))
        elif roll < 0.8:
            sources = rng.sample(keys + ["missing"], rng.choice([0, 1, 2]))
            diff.check("PFMERGE", key, *sources)
        elif roll < 0.97:
            diff.check("GET", key)
        else:
            diff.check("DEL", key)
    for key in keys:
        diff.check("GET", key)
        diff.check("PFCOUNT", key)


def test_errors_do_not_leave_partial_merges(diff):
    diff.check("SET", "bad", HAND_MADE["half_covered"])
    diff.check("PFADD", "good", "a")
    diff.check_error("PFMERGE", "new", "good", "bad")
    diff.check("EXISTS", "new")
    diff.check_error("PFCOUNT", "good", "bad")
    assert isinstance(diff.check("PFADD", "bad", *_elements(0, 50)), Err)
    diff.check("GET", "bad")  # keeps what was added before the failing element, as in Redis
