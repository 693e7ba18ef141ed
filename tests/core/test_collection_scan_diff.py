"""HSCAN/SSCAN/ZSCAN page by the encoding Redis would hold the collection in: a listpack or
intset comes back whole with cursor 0 whatever COUNT says; a hashtable or skiplist is paged
by COUNT (Redis may give a few more per call), cursor non-zero until every element is out.
The hashtable's cursor values are Redis's dict internals, so these compare what a client
can observe: the cursor being 0 or not, the batch size, and the elements over a full walk."""
import pytest


def _walk(client, *prefix, count: int) -> tuple[list[int], list[bytes]]:
    """Every call's batch size (elements, not flat reply items) and all elements returned."""
    cursor, sizes, found = b"0", [], []
    step = 2 if prefix[0] in ("HSCAN", "ZSCAN") else 1
    while True:
        cursor, batch = client.call(*prefix, cursor, "COUNT", str(count))
        sizes.append(len(batch) // step)
        found += batch[::step]
        if cursor == b"0":
            return sizes, found


def test_hashtable_hash_of_long_fields_is_paged_by_count(diff):
    # BullMQ's suite: 72 fields of 83 bytes are over hash-max-listpack-value (64).
    fields = [(b"f%03d" % i).ljust(83, b"x") for i in range(72)]
    diff.check("HSET", "h", *[part for field in fields for part in (field, b"v")])
    diff.check("OBJECT", "ENCODING", "h")
    for client in (diff.redis, diff.minired):
        cursor, batch = client.call("HSCAN", "h", "0", "COUNT", "50")
        assert cursor != b"0" and 50 <= len(batch) // 2 < 72
        sizes, found = _walk(client, "HSCAN", "h", count=50)
        assert len(sizes) >= 2 and set(found) == set(fields)


def test_listpack_hash_comes_back_whole_whatever_count(diff):
    diff.check("HSET", "h", *[part for i in range(100) for part in (f"f{i}", "v")])
    diff.check("OBJECT", "ENCODING", "h")
    diff.check("HSCAN", "h", "0", "COUNT", "5", unordered=True)


def test_intset_of_300_integers_comes_back_whole(diff):
    diff.check("SADD", "s", *range(300))
    diff.check("OBJECT", "ENCODING", "s")
    diff.check("SSCAN", "s", "0", "COUNT", "10", unordered=True)
    diff.check("SSCAN", "s", "0", "COUNT", "10", "MATCH", "1*", unordered=True)


@pytest.mark.parametrize("members", [[f"m{i}" for i in range(20)], list(range(600))],
                         ids=["not-integers", "over-intset-entries"])
def test_hashtable_set_is_paged_by_count(diff, members):
    diff.check("SADD", "s", *members)
    diff.check("OBJECT", "ENCODING", "s")
    for client in (diff.redis, diff.minired):
        sizes, found = _walk(client, "SSCAN", "s", count=5)
        assert len(sizes) >= 2 and sorted(found) == sorted(str(m).encode() for m in members)


def test_listpack_zset_whole_and_skiplist_paged(diff):
    diff.check("ZADD", "small", *[part for i in range(100) for part in (i, f"m{i}")])
    diff.check("ZADD", "long", *[part for i in range(10) for part in (i, "m" * 70 + str(i))])
    diff.check("OBJECT", "ENCODING", "small")
    diff.check("OBJECT", "ENCODING", "long")
    diff.check("ZSCAN", "small", "0", "COUNT", "5")
    for client in (diff.redis, diff.minired):
        sizes, found = _walk(client, "ZSCAN", "long", count=3)
        assert len(sizes) >= 2 and len(set(found)) == 10


def test_limits_follow_config(diff):
    diff.check("CONFIG", "SET", "hash-max-listpack-entries", "4")
    try:
        diff.check("HSET", "h", *[part for i in range(10) for part in (f"f{i}", "v")])
        diff.check("OBJECT", "ENCODING", "h")
        for client in (diff.redis, diff.minired):
            cursor, batch = client.call("HSCAN", "h", "0", "COUNT", "2")
            assert cursor != b"0" and len(batch) < 20
    finally:
        diff.check("CONFIG", "SET", "hash-max-listpack-entries", "512")
