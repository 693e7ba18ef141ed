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
    removing those members again leaves it a hash table, SSCAN then pages it, and DUMP writes
    it as a hash table's set (the payload's type byte; the members' order is each server's own
    hash order)."""
    script = [("SADD", "s", "1", "2", "3", "a"), ("SREM", "s", "a"), ("OBJECT", "ENCODING", "s"),
              ("SADD", "t", "1", "2"), ("SREM", "t", "9", "x"), ("OBJECT", "ENCODING", "t"),
              ("SADD", "u", "1", "2", "x"), ("SREM", "u", "x", "1"), ("SADD", "u", "5"),
              ("OBJECT", "ENCODING", "u"), ("SADD", "v", "1", "b"), ("SMOVE", "v", "w", "b"),
              ("OBJECT", "ENCODING", "v"), ("OBJECT", "ENCODING", "w"),
              ("CONFIG", "SET", "set-max-intset-entries", "3"),
              ("SADD", "big", "1", "2", "3", "4"), ("SREM", "big", "4"),
              ("OBJECT", "ENCODING", "big"), ("CONFIG", "SET", "set-max-intset-entries", "512"),
              ("RENAME", "s", "s2"), ("OBJECT", "ENCODING", "s2"), ("DUMP", "s2"), ("DUMP", "u"),
              ("DUMP", "t"), ("DUMP", "big")]
    replies = []
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("FLUSHALL")
        replies.append([])
        for command in script:
            reply = client.call(*command)
            replies[-1].append(reply[0] if command[0] == "DUMP" else reply)
        client.close()
    assert replies[1] == replies[0]


def test_spop_of_most_of_a_set_leaves_a_new_set(real_redis, mini):
    """SPOP with a count pops members one by one while at least a fifth of the count stays (a
    hash table then stays one); past that, Redis moves the members that stay into a new set,
    encoded afresh: an intset again when they fit one (OBJECT ENCODING, SSCAN, DUMP's format)."""
    script = [("SADD", "few", *range(600)), ("SPOP", "few", "595"), ("OBJECT", "ENCODING", "few"),
              ("SCARD", "few"), ("SSCAN", "few", "0", "COUNT", "1"), ("DUMP", "few"),
              ("SADD", "many", *range(600)), ("SPOP", "many", "100"),
              ("OBJECT", "ENCODING", "many"), ("SCARD", "many"),
              ("SADD", "words", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "7"),
              ("SPOP", "words", "11"), ("SCARD", "words"),
              ("SET", "ttl", "x"), ("SADD", "timed", *range(600)), ("EXPIRE", "timed", "1000"),
              ("SPOP", "timed", "599"), ("TTL", "timed"), ("OBJECT", "ENCODING", "timed")]
    replies = []
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("FLUSHALL")
        replies.append([])
        for command in script:
            reply = client.call(*command)
            # Which members go is random: what both must agree on is how many, SSCAN's cursor
            # and batch size, and the DUMP payload's type byte (its format).
            if command[0] == "SPOP":
                reply = len(reply)
            elif command[0] == "SSCAN":
                reply = reply[0], len(reply[1])
            elif command[0] == "DUMP":
                reply = reply[0]
            replies[-1].append(reply)
        client.close()
    assert replies[1] == replies[0]
