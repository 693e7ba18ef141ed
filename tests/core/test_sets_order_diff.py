"""A set Redis holds as an intset is replied in ascending order: SMEMBERS, SSCAN, and the
SINTER/SUNION/SDIFF results an intset would hold. Compared with redis-server as sent (order
included), under RESP2 and RESP3; a hash table's order is Redis's own and is not compared."""
from __future__ import annotations

import pytest

from tests.support.respclient import RawClient

SETS = {"ints": ["3", "1", "2", "-5", "10", "6", "400", "0"], "more": ["2", "3", "11", "-5"],
        "mixed": ["1", "a", "2"], "one": ["7"], "big": [str(n) for n in range(600, 0, -1)]}
COMMANDS = [("SMEMBERS", "ints"), ("SMEMBERS", "one"), ("SSCAN", "ints", "0"),
            ("SSCAN", "ints", "0", "MATCH", "1*"), ("SINTER", "ints", "more"),
            ("SUNION", "ints", "more"), ("SDIFF", "ints", "more"), ("SUNION", "more", "one"),
            ("SINTER", "ints", "nosuch"), ("SMEMBERS", "nosuch"), ("SRANDMEMBER", "ints", "20"),
            ("SPOP", "more", "10")]


@pytest.mark.parametrize("protocol", [2, 3])
def test_intset_replies_come_in_redis_order(real_redis, mini, protocol):
    replies = []
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("FLUSHALL")
        client.call("HELLO", str(protocol))
        for key, members in SETS.items():
            client.call("SADD", key, *members)
        replies.append([client.call(*command) for command in COMMANDS])
        # a hash-table set: the same members, in whatever order
        assert sorted(client.call("SMEMBERS", "big"), key=int) == \
            sorted((m.encode() for m in SETS["big"]), key=int)
        client.close()
    assert replies[1] == replies[0]


def test_a_set_that_left_the_intset_encoding_never_returns(real_redis, mini):
    """Redis converts an intset to a hash table for good (a non-integer, or too many members):
    removing those members again leaves it a hash table, and SSCAN then pages it."""
    script = [("SADD", "s", "1", "2", "3", "a"), ("SREM", "s", "a"), ("OBJECT", "ENCODING", "s"),
              ("SADD", "t", "1", "2"), ("SREM", "t", "9", "x"), ("OBJECT", "ENCODING", "t"),
              ("SADD", "u", "1", "2", "x"), ("SREM", "u", "x", "1"), ("SADD", "u", "5"),
              ("OBJECT", "ENCODING", "u"), ("SADD", "v", "1", "b"), ("SMOVE", "v", "w", "b"),
              ("OBJECT", "ENCODING", "v"), ("OBJECT", "ENCODING", "w"),
              ("CONFIG", "SET", "set-max-intset-entries", "3"),
              ("SADD", "big", "1", "2", "3", "4"), ("SREM", "big", "4"),
              ("OBJECT", "ENCODING", "big"), ("CONFIG", "SET", "set-max-intset-entries", "512"),
              ("RENAME", "s", "s2"), ("OBJECT", "ENCODING", "s2")]
    replies = []
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("FLUSHALL")
        replies.append([client.call(*command) for command in script])
        client.close()
    assert replies[1] == replies[0]
