"""Redis's server.dirty, command by command: INFO rdb_changes_since_last_save moves by what each
write changed (MSET of three keys: 3; SADD of a member already there: 0), never by one per
command. The same count decides when save points fire, and a write that changed nothing is not
propagated (to the AOF or the replicas), as in Redis."""
from __future__ import annotations

import time

import pytest

from tests.support.respclient import RawClient

S = ("SET", "s", "hello")
N = ("SET", "n", "10")
L = ("RPUSH", "l", "a", "b", "c", "b", "d")
H = ("HSET", "h", "f1", "1", "f2", "2")
ST = ("SADD", "st", "a", "b", "c")
ST2 = ("SADD", "st2", "b", "c", "d")
Z = ("ZADD", "z", "1", "a", "2", "b", "3", "c")
Z2 = ("ZADD", "z2", "2", "b", "3", "c", "4", "d")
X = ("XADD", "x", "1-0", "f", "v")
X2 = ("XADD", "x", "2-0", "f", "v")
G = ("XGROUP", "CREATE", "x", "g", "0")
GEO = ("GEOADD", "geo", "13.36", "38.11", "Palermo", "15.08", "37.50", "Catania")
CASES = [
    # strings
    ((), ("SET", "k", "v")), ((S,), ("SET", "s", "v", "NX")), ((S,), ("SET", "s", "v", "XX")),
    ((), ("SET", "k", "v", "XX")), ((S,), ("SET", "s", "v", "GET")), ((), ("SETNX", "k", "v")),
    ((S,), ("SETNX", "s", "v")), ((), ("SETEX", "k", "10", "v")), ((), ("PSETEX", "k", "100", "v")),
    ((), ("MSET", "a", "1", "b", "2", "c", "3")), ((), ("MSETNX", "a", "1", "b", "2")),
    ((S,), ("MSETNX", "a", "1", "s", "2")), ((S,), ("APPEND", "s", "x")), ((), ("APPEND", "k", "")),
    ((S,), ("SETRANGE", "s", "1", "xy")), ((S,), ("SETRANGE", "s", "1", "")), ((), ("SETRANGE", "k", "0", "")),
    ((N,), ("INCR", "n")), ((N,), ("DECR", "n")), ((N,), ("INCRBY", "n", "5")), ((N,), ("DECRBY", "n", "5")),
    ((N,), ("INCRBYFLOAT", "n", "1.5")), ((S,), ("GETSET", "s", "v")), ((S,), ("GETDEL", "s")),
    ((), ("GETDEL", "k")), ((S,), ("GETEX", "s", "EX", "100")), ((S,), ("GETEX", "s")),
    ((S,), ("GETEX", "s", "PERSIST")), ((), ("GETEX", "k", "EX", "100")),
    ((), ("SETBIT", "b", "7", "1")), ((("SETBIT", "b", "7", "1"),), ("SETBIT", "b", "7", "1")),
    ((), ("BITFIELD", "bf", "SET", "u8", "0", "1", "INCRBY", "u8", "8", "1", "GET", "u8", "0")),
    ((), ("BITFIELD", "bf", "GET", "u8", "0")),
    ((), ("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300")),
    ((S,), ("BITOP", "AND", "dest", "s", "s")), ((), ("BITOP", "OR", "dest", "nokey")),
    # keys
    ((S, N), ("DEL", "s", "n", "missing")), ((), ("DEL", "missing")), ((S, N), ("UNLINK", "s", "n")),
    ((S,), ("EXPIRE", "s", "100")), ((), ("EXPIRE", "k", "100")), ((S,), ("EXPIRE", "s", "100", "XX")),
    ((S,), ("PEXPIRE", "s", "100000")), ((S,), ("EXPIREAT", "s", "99999999999")),
    ((S,), ("PEXPIREAT", "s", "99999999999999")), ((S,), ("EXPIRE", "s", "-1")),
    ((S,), ("PERSIST", "s")), ((S, ("EXPIRE", "s", "100")), ("PERSIST", "s")),
    ((S,), ("RENAME", "s", "t")), ((S,), ("RENAME", "s", "s")), ((S, N), ("RENAMENX", "s", "n")),
    ((S,), ("RENAMENX", "s", "t")), ((S,), ("MOVE", "s", "1")), ((S,), ("COPY", "s", "t")),
    ((S, N), ("COPY", "s", "n")), ((S, N), ("COPY", "s", "n", "REPLACE")), ((S,), ("SWAPDB", "0", "1")),
    ((S,), ("FLUSHDB",)), ((), ("FLUSHDB",)), ((S, N, L), ("FLUSHALL",)), ((), ("FLUSHALL",)),
    # lists
    ((), ("RPUSH", "l", "a", "b", "c")), ((L,), ("LPUSH", "l", "x", "y")), ((L,), ("LPUSHX", "l", "x", "y")),
    ((), ("RPUSHX", "l", "x")), ((L,), ("LPOP", "l")), ((L,), ("RPOP", "l", "3")), ((), ("LPOP", "l")),
    ((L,), ("LPOP", "l", "0")), ((L,), ("RPOP", "l", "10")), ((L,), ("LREM", "l", "0", "b")),
    ((L,), ("LREM", "l", "0", "zz")), ((L,), ("LSET", "l", "0", "q")), ((L,), ("LTRIM", "l", "1", "2")),
    ((L,), ("LTRIM", "l", "0", "-1")), ((L,), ("LTRIM", "l", "5", "1")), ((L,), ("LINSERT", "l", "BEFORE", "c", "x")),
    ((L,), ("LINSERT", "l", "BEFORE", "zz", "x")), ((L,), ("LMOVE", "l", "l2", "LEFT", "RIGHT")),
    ((L,), ("RPOPLPUSH", "l", "l")), ((), ("LMOVE", "l", "l2", "LEFT", "RIGHT")),
    ((L,), ("LMPOP", "1", "l", "LEFT", "COUNT", "2")), ((), ("LMPOP", "1", "l", "LEFT")),
    ((L,), ("BLPOP", "l", "0")), ((L,), ("BRPOP", "l", "0")), ((L,), ("BLMOVE", "l", "l2", "LEFT", "LEFT", "0")),
    ((L,), ("BRPOPLPUSH", "l", "l2", "0")), ((L,), ("BLMPOP", "0", "1", "l", "RIGHT", "COUNT", "3")),
    # hashes
    ((), ("HSET", "h", "a", "1", "b", "2")), ((H,), ("HSET", "h", "f1", "1", "f3", "3")),
    ((H,), ("HMSET", "h", "f1", "9", "f9", "9")), ((H,), ("HSETNX", "h", "f1", "x")), ((H,), ("HSETNX", "h", "f9", "x")),
    ((H,), ("HDEL", "h", "f1", "f2", "nope")), ((H,), ("HDEL", "h", "nope")), ((H,), ("HINCRBY", "h", "f1", "3")),
    ((H,), ("HINCRBYFLOAT", "h", "f1", "0.5")),
    # sets
    ((ST,), ("SADD", "st", "a", "x", "y")), ((ST,), ("SADD", "st", "a")), ((ST,), ("SREM", "st", "a", "b", "zz")),
    ((ST,), ("SREM", "st", "zz")), ((ST,), ("SPOP", "st")), ((ST,), ("SPOP", "st", "2")), ((ST,), ("SPOP", "st", "10")),
    ((), ("SPOP", "st")), ((ST,), ("SPOP", "st", "0")), ((ST, ST2), ("SMOVE", "st", "st2", "a")),
    ((ST, ST2), ("SMOVE", "st", "st2", "b")), ((ST,), ("SMOVE", "st", "st2", "zz")),
    ((ST, ST2), ("SINTERSTORE", "d", "st", "st2")), ((ST, ST2), ("SUNIONSTORE", "d", "st", "st2")),
    ((ST, ST2), ("SDIFFSTORE", "d", "st", "st2")), ((ST,), ("SINTERSTORE", "d", "st", "nokey")),
    ((), ("SINTERSTORE", "d", "nokey")), ((("SET", "d", "1"),), ("SINTERSTORE", "d", "nokey")),
    # sorted sets
    ((), ("ZADD", "z", "1", "a", "2", "b")), ((Z,), ("ZADD", "z", "1", "a", "5", "b", "7", "q")),
    ((Z,), ("ZADD", "z", "1", "a")), ((Z,), ("ZADD", "z", "CH", "9", "a", "8", "n")), ((Z,), ("ZADD", "z", "NX", "9", "a")),
    ((Z,), ("ZADD", "z", "INCR", "2", "a")), ((Z,), ("ZINCRBY", "z", "2", "a")), ((Z,), ("ZREM", "z", "a", "b", "zz")),
    ((Z,), ("ZREM", "z", "zz")), ((Z,), ("ZREMRANGEBYSCORE", "z", "1", "2")), ((Z,), ("ZREMRANGEBYRANK", "z", "0", "0")),
    ((Z,), ("ZREMRANGEBYLEX", "z", "-", "+")), ((Z,), ("ZREMRANGEBYSCORE", "z", "10", "20")),
    ((Z,), ("ZPOPMIN", "z")), ((Z,), ("ZPOPMAX", "z", "2")), ((Z,), ("ZPOPMIN", "z", "10")), ((), ("ZPOPMIN", "z")),
    ((Z,), ("ZMPOP", "1", "z", "MIN", "COUNT", "2")), ((Z,), ("BZPOPMIN", "z", "0")), ((Z,), ("BZPOPMAX", "z", "0")),
    ((Z,), ("BZMPOP", "0", "1", "z", "MAX", "COUNT", "5")),
    ((Z, Z2), ("ZUNIONSTORE", "d", "2", "z", "z2")), ((Z, Z2), ("ZINTERSTORE", "d", "2", "z", "z2")),
    ((Z, Z2), ("ZDIFFSTORE", "d", "2", "z", "z2")), ((Z,), ("ZRANGESTORE", "d", "z", "0", "1")),
    ((), ("ZUNIONSTORE", "d", "1", "nokey")), ((("SET", "d", "1"),), ("ZUNIONSTORE", "d", "1", "nokey")),
    # geo
    ((), GEO), ((GEO,), ("GEOADD", "geo", "13.36", "38.11", "Palermo")), ((GEO,), ("GEOADD", "geo", "CH", "13.37", "38.11", "Palermo")),
    ((GEO,), ("GEOSEARCHSTORE", "d", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC")),
    ((GEO,), ("GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "d")),
    ((GEO,), ("GEOSEARCHSTORE", "d", "geo", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "ASC")),
    # hyperloglog
    ((), ("PFADD", "hll", "a", "b")), ((("PFADD", "hll", "a"),), ("PFADD", "hll", "a")), ((), ("PFADD", "hll")),
    ((("PFADD", "h1", "a"), ("PFADD", "h2", "b")), ("PFMERGE", "d", "h1", "h2")), ((), ("PFMERGE", "d")),
    ((("PFADD", "h1", "a", "b", "c"),), ("PFCOUNT", "h1")),
    # streams
    ((), ("XADD", "x", "*", "f", "v")), ((), ("XADD", "x", "NOMKSTREAM", "*", "f", "v")),
    ((X, X2), ("XDEL", "x", "1-0", "9-0")), ((X,), ("XDEL", "x", "9-0")), ((X, X2), ("XTRIM", "x", "MAXLEN", "0")),
    ((X,), ("XTRIM", "x", "MAXLEN", "5")), ((X,), ("XSETID", "x", "5-0")), ((X,), G),
    ((X, G), ("XGROUP", "CREATECONSUMER", "x", "g", "c")), ((X, G), ("XGROUP", "SETID", "x", "g", "0")),
    ((X, G), ("XGROUP", "DESTROY", "x", "g")), ((X, G, ("XGROUP", "CREATECONSUMER", "x", "g", "c")), ("XGROUP", "DELCONSUMER", "x", "g", "c")),
    ((X, X2, G), ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "x", ">")),
    ((X, X2, G), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", "0")),
    ((X, X2, G, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")), ("XACK", "x", "g", "1-0", "2-0", "9-0")),
    ((X, X2, G, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")), ("XCLAIM", "x", "g", "c2", "0", "1-0", "2-0")),
    ((X, X2, G, ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")), ("XAUTOCLAIM", "x", "g", "c2", "0", "0")),
    # others
    ((L,), ("SORT", "l", "ALPHA", "STORE", "d")), ((), ("SORT", "nokey", "STORE", "d")),
    ((S,), ("RESTORE", "r", "0", "DUMP:s")), ((S,), ("RESTORE", "s", "0", "DUMP:s", "REPLACE")),
    ((), ("EVAL", "redis.call('set','a','1'); redis.call('mset','b','2','c','3'); return 1", "0")),
    ((), ("EVAL", "return redis.call('get','a')", "0")),
    ((S,), ("EVAL", "redis.call('set','s','1','NX'); return 1", "0")),
]

X3 = (X, X2, ("XADD", "x", "3-0", "f", "v"))
C = ("XGROUP", "CREATECONSUMER", "x", "g", "c")
R = ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")
CASES += [
    ((*X3, G), ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "x", ">")),
    ((*X3, G, C), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")),
    ((*X3, G, C), ("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "x", ">")),
    ((*X3, G, C, R), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")),
    ((*X3, G, C, R), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", "0")),
    ((*X3, G), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", "0")),
    ((*X3, G, C, R), ("XACK", "x", "g", "1-0", "9-0")), ((*X3,), ("XACK", "x", "g", "1-0")),
    ((*X3, G, C, R), ("XCLAIM", "x", "g", "c", "0", "1-0", "2-0")),
    ((*X3, G, C, R), ("XCLAIM", "x", "g", "c2", "0", "1-0", "2-0", "JUSTID")),
    ((*X3, G, C, R), ("XCLAIM", "x", "g", "c2", "0", "7-0")),
    ((*X3, G, C, R, ("XDEL", "x", "2-0")), ("XCLAIM", "x", "g", "c2", "0", "1-0", "2-0")),
    ((*X3, G, C, R), ("XCLAIM", "x", "g", "c2", "0", "1-0", "LASTID", "9-0")),
    ((*X3, G, C, R), ("XCLAIM", "x", "g", "c2", "0", "9-0", "FORCE")),
    ((*X3, G, C, R), ("XAUTOCLAIM", "x", "g", "c2", "0", "0", "COUNT", "1")),
    ((*X3, G, C, R, ("XDEL", "x", "2-0")), ("XAUTOCLAIM", "x", "g", "c2", "0", "0")),
    ((*X3, G, C), ("XAUTOCLAIM", "x", "g", "c2", "0", "0")),
    ((*X3, G), ("XGROUP", "CREATECONSUMER", "x", "g", "c")), ((*X3, G, C), ("XGROUP", "CREATECONSUMER", "x", "g", "c")),
    ((*X3, G, C, R), ("XGROUP", "DELCONSUMER", "x", "g", "c")), ((*X3, G), ("XGROUP", "DELCONSUMER", "x", "g", "zz")),
    ((*X3, G), ("XGROUP", "DESTROY", "x", "zz")), ((), ("XGROUP", "CREATE", "x", "g", "$", "MKSTREAM")),
    ((*X3,), ("XTRIM", "x", "MAXLEN", "~", "1")), ((*X3,), ("XADD", "x", "MAXLEN", "1", "*", "f", "v")),
    ((*X3,), ("XDEL", "x", "1-0", "2-0", "2-0")), ((), ("XDEL", "x", "1-0")), ((), ("XTRIM", "x", "MAXLEN", "1")),
    ((L,), ("SORT", "l", "ALPHA")), ((("SET", "d", "1"),), ("SORT", "nokey", "STORE", "d")),
    ((("SET", "d", "1"),), ("BITOP", "OR", "d", "nokey")),
    ((Z,), ("ZRANGESTORE", "d", "z", "5", "9")), ((Z, ("SET", "d", "1")), ("ZRANGESTORE", "d", "z", "5", "9")),
    ((GEO, ("SET", "d", "1")), ("GEOSEARCHSTORE", "d", "geo", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "ASC")),
    ((Z,), ("ZADD", "z", "XX", "5", "zz")), ((), ("ZADD", "z", "XX", "5", "zz")), ((Z,), ("ZADD", "z", "GT", "INCR", "-1", "a")),
    ((Z,), ("ZADD", "z", "LT", "CH", "0", "a", "9", "b")), ((("ZADD", "z", "1", "a"),), ("ZADD", "z", "1", "a")),
    ((("ZADD", "z", "1", "a"),), ("ZADD", "z", "2", "a")),
    ((("PFADD", "h1", "a", "b", "c"),), ("PFCOUNT", "h1", "h1")), ((("PFADD", "h1", "a"), ("PFCOUNT", "h1")), ("PFCOUNT", "h1")),
    ((("PFADD", "h1", "a"),), ("PFADD", "h1", *[str(i) for i in range(300)])),
    ((), ("PFADD", "h1", *[str(i) for i in range(3000)])),
    ((H,), ("HSET", "h", "f1", "1")), ((), ("HSETNX", "h", "f", "v")), ((), ("HDEL", "h", "f")),
    ((L,), ("LPOP", "l", "2")), ((L,), ("LINSERT", "l", "AFTER", "a", "x")), ((), ("LINSERT", "l", "AFTER", "a", "x")),
    ((), ("LREM", "l", "0", "a")), ((), ("LTRIM", "l", "0", "1")), ((L,), ("LSET", "l", "0", "a")),
    ((), ("RPOPLPUSH", "l", "d")), ((L,), ("BLPOP", "zz", "l", "0")),
    ((ST,), ("SMOVE", "st", "st", "a")), ((), ("SMOVE", "st", "d", "a")), ((), ("SREM", "st", "a")),
    ((ST,), ("SPOP", "st", "1")), ((), ("SPOP", "st", "3")),
    ((S, ("EXPIRE", "s", "100")), ("EXPIRE", "s", "50", "GT")), ((S, ("EXPIRE", "s", "100")), ("EXPIRE", "s", "200", "GT")),
    ((S, ("EXPIRE", "s", "100")), ("EXPIRE", "s", "200", "NX")), ((S,), ("EXPIRE", "s", "200", "LT")),
    ((S, ("EXPIRE", "s", "100")), ("GETEX", "s", "PERSIST")), ((S,), ("GETEX", "s", "PX", "1")),
    ((S,), ("SET", "s", "v", "NX", "GET")), ((S,), ("SET", "s", "v", "XX", "GET")), ((), ("SET", "s", "v", "XX", "GET")),
    ((S,), ("SET", "s", "v", "KEEPTTL")), ((S,), ("MOVE", "s", "1")), ((), ("MOVE", "s", "1")),
    ((S,), ("COPY", "s", "t", "DB", "1")), ((), ("COPY", "s", "t")),
    ((), ("EVAL", "redis.call('rpush','l','a','b','c'); redis.call('lpop','l','2'); return 1", "0")),
    ((), ("EVAL", "redis.call('pfadd','h','a'); return redis.call('pfcount','h')", "0")),
    ((), ("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")),
    ((("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"),), ("FUNCTION", "DELETE", "lib")),
    ((("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"),), ("FUNCTION", "FLUSH")),
    ((), ("FUNCTION", "FLUSH")),
    ((("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function(k, a) redis.call('mset', 'a', 1, 'b', 2) return 1 end)"),), ("FCALL", "f", "0")),
    ((), ("SCRIPT", "LOAD", "return 1")), ((), ("SCRIPT", "FLUSH")),
    ((S,), ("SWAPDB", "0", "0")), ((S,), ("INCRBYFLOAT", "n", "0")), ((), ("APPEND", "k", "x")),
    ((("SETEX", "e", "100", "v"),), ("PERSIST", "e")), ((), ("PUBLISH", "ch", "m")),
    ((S,), ("TOUCH", "s")),
]


def _changes(client) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])


@pytest.mark.parametrize("setup, command", CASES, ids=[" ".join(map(str, c))[:60] for _, c in CASES])
def test_a_command_counts_the_changes_redis_counts(diff, setup, command):
    diff.check("FUNCTION", "FLUSH")
    for args in setup:
        diff.check(*args)
    counts = []
    for client in (diff.redis, diff.minired):
        args = [diff.redis.call("DUMP", arg[5:]) if isinstance(arg, str) and arg.startswith("DUMP:")
                else arg for arg in command]
        before = _changes(client)
        client.call(*args)
        counts.append(_changes(client) - before)
    assert counts[1] == counts[0], f"redis counted {counts[0]}, minired {counts[1]}"


def test_a_transaction_counts_the_changes_of_its_commands(diff):
    before = [_changes(diff.redis), _changes(diff.minired)]
    for args in (("MULTI",), ("SET", "a", "1"), ("MSET", "b", "1", "c", "2"),
                 ("SET", "a", "2", "NX"), ("EXEC",)):
        diff.check(*args)
    assert [_changes(diff.redis) - before[0], _changes(diff.minired) - before[1]] == [3, 3]


@pytest.mark.parametrize("wait, wake, served", [
    (("BLMPOP", "0", "1", "q", "LEFT", "COUNT", "5"), ("RPUSH", "q", "1", "2", "3"), 3),
    (("BLPOP", "q", "0"), ("RPUSH", "q", "1", "2", "3"), 0),
    (("BZPOPMIN", "q", "0"), ("ZADD", "q", "1", "a", "2", "b"), 1),
    (("BZMPOP", "0", "1", "q", "MIN", "COUNT", "5"), ("ZADD", "q", "1", "a", "2", "b"), 2),
    (("BLMOVE", "q", "d", "LEFT", "LEFT", "0"), ("RPUSH", "q", "1"), 0),
])
def test_a_blocked_command_served_counts_as_redis_counts_it(diff, wait, wake, served):
    """BLMPOP and the sorted-set pops count what they pop when served; BLPOP and BLMOVE do not."""
    counts = []
    for client, port in ((diff.redis, diff.redis_port), (diff.minired, diff.minired_port)):
        waiter = RawClient(port)
        try:
            waiter.send(*wait)
            deadline = time.monotonic() + 10
            while b"blocked_clients:1" not in client.call("INFO", "clients"):
                assert time.monotonic() < deadline
                time.sleep(0.005)
            before = _changes(client)
            client.call(*wake)
            waiter.read()
            counts.append(_changes(client) - before)
        finally:
            waiter.close()
    woken = len(wake) - 2 if wake[0] == "RPUSH" else (len(wake) - 2) // 2
    assert counts == [woken + served, woken + served]
