"""Keyspace notifications (notify-keyspace-events) compared with real Redis: for each command,
its reply and the exact sequence of messages a `PSUBSCRIBE __key*__:*` subscriber receives.

After each command a third connection publishes on a sync channel the subscriber also listens
to; everything the subscriber reads before that message is the command's events (EventLog, in
tests/support/notify_diff.py, shared with the generated sequences of
tests/core/test_notify_grammar_diff.py). The suite's servers are shared, so every test puts
notify-keyspace-events back to "" at the end.
"""
from __future__ import annotations

import time

import pytest

from tests.support.notify_diff import EventLog
from tests.support.respclient import RawClient
from tests.support.waiting import wait_blocked, wait_until


@pytest.fixture
def logs(diff, real_redis, mini):
    """Open EventLog pairs on the flushed servers; notifications are off again afterwards."""
    opened: list[EventLog] = []

    def open_pair(flags: str = "KEA") -> tuple[EventLog, EventLog]:
        pair = (EventLog(real_redis.port, flags), EventLog(mini.port, flags))
        opened.extend(pair)
        return pair

    try:
        yield open_pair
    finally:
        for log in opened:
            log.close()


# Commands whose reply is random: only its size is compared.
RANDOM_REPLIES = {"SPOP"}


def transcript(log: EventLog, commands) -> list:
    lines = []
    for command in commands:
        reply, events = log.run(*command)
        if str(command[0]).upper() in RANDOM_REPLIES:
            reply = len(reply) if isinstance(reply, (list, bytes)) else reply
        lines.append((command, reply, events))
    return lines


def same_events(logs, commands, flags: str = "KEA", setup=()) -> None:
    redis, minired = logs(flags)
    for log in (redis, minired):
        for command in setup:
            log.command.call(*command)
        log.events()
    expected = transcript(redis, commands)
    actual = transcript(minired, commands)
    for want, got in zip(expected, actual):
        assert got == want, f"\n  redis:   {want!r}\n  minired: {got!r}"
    assert actual == expected


def split(text: str) -> list[tuple[str, ...]]:
    return [tuple(line.split()) for line in text.strip().splitlines() if line.strip()]


STRINGS = split("""
SET s1 a
SET s1 b
SET s1 c EX 100
SET s1 d KEEPTTL
SET s1 e PX 100000 GET
SET s1 f NX
SET s2 f XX
SET s2 f NX EXAT 99999999999
SET s2 g XX PXAT 99999999999999
SETNX s3 v
SETNX s3 w
SETEX s4 100 v
PSETEX s5 100000 v
SETEX s4 0 v
MSET m1 a m2 b m1 c
MSETNX m3 a m4 b
MSETNX m3 a m5 b
APPEND s6 abc
APPEND s6 def
INCR n1
DECR n1
INCRBY n1 10
DECRBY n1 3
INCRBYFLOAT n1 1.5
INCR s6
SETRANGE s7 3 abc
SETRANGE s7 0 ""
SETRANGE s8 0 ""
GETSET s7 new
GETDEL s7
GETDEL s7
GETEX s1
GETEX s1 EX 100
GETEX s1 PERSIST
GETEX s1 PERSIST
GETEX s1 PXAT 1
GETEX s2 EXAT 1
LPUSH l1 x
SET l1 y
GETSET l1 z
APPEND l1 q
""")


def test_string_commands(logs):
    same_events(logs, STRINGS, "KEAn")


BITS = split("""
SETBIT b1 7 1
SETBIT b1 7 1
SETBIT b1 100 0
SET b2 abc
BITOP AND d1 b1 b2
BITOP OR d1 b1 b2
BITOP XOR d2 nokey1 nokey2
BITOP NOT d1 nokey
BITOP NOT d2 nokey
BITFIELD bf1 SET u8 0 200
BITFIELD bf1 GET u8 0
BITFIELD bf1 INCRBY u8 0 100 OVERFLOW FAIL INCRBY u8 0 200
BITFIELD bf2 OVERFLOW FAIL INCRBY u8 0 300
BITFIELD_RO bf1 GET u8 0
BITCOUNT b1
""")


def test_bit_commands(logs):
    same_events(logs, BITS, "KEAn")


KEYS = split("""
MSET k1 a k2 b k3 c k4 d k5 e
DEL k1 k2 nokey
UNLINK k3 nokey
EXPIRE k4 100
PEXPIRE k4 100000
EXPIREAT k4 99999999999
PEXPIREAT k4 99999999999999
EXPIRE k4 100 NX
EXPIRE k4 100 XX
EXPIRE k4 50 GT
PERSIST k4
PERSIST k4
EXPIRE nokey 100
EXPIRE k4 -1
SET k6 a
PEXPIREAT k6 1
SET k7 v
RENAME k7 k8
SET k9 x
RENAME k8 k9
RENAMENX k9 k10
SET k11 y
RENAMENX k10 k11
RENAME k10 k10
RENAME nokey k1
MOVE k10 1
MOVE k11 1
SET k12 a
COPY k12 k13
COPY k12 k13
COPY k12 k13 REPLACE
COPY k12 k14 DB 2
TOUCH k12 nokey
TYPE k12
EXISTS k12
DUMP k12
""")


def test_generic_key_commands(logs):
    same_events(logs, KEYS, "KEAn")


def test_restore_and_swapdb_and_flush(logs, real_redis):
    source = RawClient(real_redis.port)
    try:
        source.call("SET", "a", "1")
        source.call("RPUSH", "l", "x", "y")
        string_dump = source.call("DUMP", "a")
        list_dump = source.call("DUMP", "l")
    finally:
        source.close()
    same_events(logs, [
        ("RESTORE", "r1", "0", string_dump), ("RESTORE", "r1", "0", string_dump, "REPLACE"),
        ("RESTORE", "r2", "0", list_dump, "ABSTTL", "99999999999999"),
        ("RESTORE", "r3", "100000", list_dump), ("RESTORE", "r3", "0", list_dump),
        ("SWAPDB", "0", "1"), ("SWAPDB", "0", "1"), ("FLUSHDB",), ("SET", "a", "1"),
        ("FLUSHALL",),
    ], "KEAn")


LISTS = split("""
LPUSH l1 a b c
RPUSH l1 d e
LPUSHX l2 a
RPUSHX l1 f
LPUSHX l1 g
LPOP l1
RPOP l1
LPOP l1 2
RPOP l1 0
LPOP nolist
LPOP nolist 2
LINSERT l1 BEFORE c x
LINSERT l1 AFTER nopivot x
LSET l1 0 z
LREM l1 1 z
LREM l1 0 nothing
LTRIM l1 0 -1
LTRIM l1 0 0
RPUSH l3 a b c
LMOVE l3 l4 LEFT RIGHT
LMOVE l3 l4 RIGHT LEFT
LMOVE l3 l4 LEFT LEFT
LMOVE l4 l4 LEFT RIGHT
RPOPLPUSH l4 l5
RPOPLPUSH nolist l5
RPUSH l6 a b
LMPOP 2 nolist l6 LEFT COUNT 5
RPUSH l6 a b c
LMPOP 1 l6 RIGHT
BLPOP l6 0.01
BRPOP l6 0.01
RPUSH l6 a
BLMPOP 0.01 1 l6 LEFT COUNT 2
RPUSH l6 a b
BLMOVE l6 l7 LEFT RIGHT 0.01
BRPOPLPUSH l6 l7 0.01
LTRIM l7 5 10
RPUSH l8 a
LREM l8 0 a
SET str x
LMOVE l7 str LEFT LEFT
LPUSH str x
""")


def test_list_commands(logs):
    same_events(logs, LISTS, "KEAn")


def test_blocked_pops_served_later(logs, connect):
    """A pop served to a blocked client sends its events when the push wakes it."""
    redis, minired = logs("KEAn")
    pair = connect()
    steps = [
        (("BLPOP", "q1", "0"), ("RPUSH", "q1", "a", "b")),
        (("BLMOVE", "q2", "q3", "RIGHT", "LEFT", "0"), ("LPUSH", "q2", "x")),
        (("BLMPOP", "0", "2", "q4", "q5", "LEFT", "COUNT", "3"), ("RPUSH", "q5", "a", "b")),
        (("BZPOPMIN", "z1", "0"), ("ZADD", "z1", "1", "a")),
        (("BZMPOP", "0", "1", "z2", "MAX", "COUNT", "2"), ("ZADD", "z2", "1", "a", "2", "b")),
    ]
    for blocking, push in steps:
        pair.redis.send(*blocking)
        pair.minired.send(*blocking)
        wait_blocked(redis.publisher, minired.publisher)
        assert minired.run(*push) == redis.run(*push)
        pair.read_both()


def test_restore_of_an_expired_ttl_deletes(logs, real_redis):
    source = RawClient(real_redis.port)
    try:
        source.call("SET", "a", "1")
        payload = source.call("DUMP", "a")
    finally:
        source.close()
    same_events(logs, [("SET", "r", "x"),
                       ("RESTORE", "r", "0", payload, "REPLACE", "ABSTTL", "1"),
                       ("RESTORE", "r", "0", payload, "ABSTTL", "1")], "KEAn")


HASHES = split("""
HSET h1 f1 a f2 b
HSET h1 f1 c
HMSET h1 f3 d
HSETNX h1 f1 x
HSETNX h1 f9 x
HSETNX h2 f x
HINCRBY h1 n 5
HINCRBY h3 n 5
HINCRBYFLOAT h1 x 1.5
HINCRBYFLOAT h1 f1 1.5
HDEL h1 nofield
HDEL h1 f1 f2
HDEL h2 f
HGET h1 f3
HDEL h1 f3 f9 n x
""")


def test_hash_commands(logs):
    same_events(logs, HASHES, "KEAn")


SETS = split("""
SADD s1 a b c
SADD s1 a
SADD s1 d
SREM s1 zz
SREM s1 a
SPOP s1
SPOP s1 0
SPOP s1 1
SPOP s1 5
SPOP s1
SADD s2 a b c
SPOP s2 3
SADD s3 a b
SADD s4 b c
SMOVE s3 s4 b
SMOVE s3 s4 a
SMOVE s4 s5 c
SMOVE s4 s4 b
SMOVE s4 s6 nomember
SADD s7 x y
SADD s8 y z
SINTERSTORE d1 s7 s8
SUNIONSTORE d1 s7 s8
SDIFFSTORE d2 s7 s8
SINTERSTORE d1 s7 nokey
SINTERSTORE d1 s7 nokey
SDIFFSTORE d2 nokey s7
SUNIONSTORE d3 nokey1 nokey2
""")


def test_set_commands(logs):
    same_events(logs, SETS, "KEAn")


ZSETS = split("""
ZADD z1 1 a
ZADD z1 1 a
ZADD z1 2 a
ZADD z1 NX 5 a 3 b
ZADD z1 XX 5 zz
ZADD z2 XX 1 a
ZADD z1 GT CH 1 a
ZADD z1 LT CH 1 a
ZADD z1 INCR 1 a
ZINCRBY z1 1 c
ZINCRBY z3 1 c
ZADD z1 INCR NX 1 a
ZREM z1 nomember
ZREM z1 a
ZREMRANGEBYSCORE z1 10 20
ZREMRANGEBYSCORE z1 0 1
ZREMRANGEBYRANK z1 0 0
ZADD z4 0 a 0 b 0 c
ZREMRANGEBYLEX z4 [a [b
ZREMRANGEBYLEX z4 - +
ZADD z5 1 a 2 b 3 c 4 d
ZPOPMIN z5
ZPOPMAX z5 0
ZPOPMAX z5 1
ZPOPMIN z5 10
ZPOPMIN z5
ZADD z6 1 a 2 b 3 c
ZMPOP 2 nokey z6 MIN COUNT 2
ZMPOP 1 z6 MAX COUNT 5
BZPOPMIN z3 0.01
BZPOPMAX z3 0.01
ZADD z7 1 a 2 b
BZMPOP 0.01 1 z7 MAX
ZADD z8 1 a 2 b 3 c
SADD s1 a x
ZRANGESTORE d1 z8 0 1
ZRANGESTORE d1 z8 5 10
ZRANGESTORE d1 z8 5 10
ZUNIONSTORE d2 2 z8 s1
ZINTERSTORE d3 2 z8 s1
ZDIFFSTORE d4 2 z8 s1
ZINTERSTORE d3 2 z8 nokey
ZDIFFSTORE d4 1 nokey
""")


def test_sorted_set_commands(logs):
    same_events(logs, ZSETS, "KEAn")


STREAMS = split("""
XADD x1 1-1 f v
XADD x1 2-1 f v
XADD x1 MAXLEN 1 3-1 f v
XADD x1 MAXLEN 5 4-1 f v
XADD x2 NOMKSTREAM 1-1 f v
XADD x1 1-1 f v
XTRIM x1 MAXLEN 5
XTRIM x1 MAXLEN 1
XTRIM x1 MINID 0
XDEL x1 9-9
XDEL x1 4-1
XADD x1 5-1 f v
XSETID x1 6-0
XSETID x1 7-0 ENTRIESADDED 9 MAXDELETEDID 1-0
XGROUP CREATE x1 g1 0
XGROUP CREATE x1 g1 0
XGROUP CREATE x3 g1 $ MKSTREAM
XGROUP CREATE x4 g1 $
XGROUP SETID x1 g1 0
XGROUP SETID x1 g1 $ ENTRIESREAD 3
XGROUP CREATECONSUMER x1 g1 c1
XGROUP CREATECONSUMER x1 g1 c1
XGROUP SETID x1 g1 0
XREADGROUP GROUP g1 c2 COUNT 1 STREAMS x1 >
XREADGROUP GROUP g1 c2 STREAMS x1 >
XREADGROUP GROUP g1 c3 STREAMS x1 >
XREADGROUP GROUP g1 c3 STREAMS x1 0
XREADGROUP GROUP g1 c4 STREAMS x1 0
XREADGROUP GROUP g1 c5 BLOCK 10 STREAMS x1 >
XREADGROUP GROUP g1 c6 NOACK STREAMS x1 0
XACK x1 g1 5-1
XADD x1 8-1 f v
XADD x1 9-1 f v
XREADGROUP GROUP g1 c2 STREAMS x1 >
XCLAIM x1 g1 c7 0 8-1
XCLAIM x1 g1 c8 0 1-1
XCLAIM x1 g1 c9 0 9-1 JUSTID
XAUTOCLAIM x1 g1 c10 0 0
XAUTOCLAIM x1 g1 c11 1000000 0
XGROUP DELCONSUMER x1 g1 c2
XGROUP DELCONSUMER x1 g1 nobody
XGROUP DESTROY x1 g1
XGROUP DESTROY x1 g1
XDEL x1 8-1 9-1
DEL x1
""")


def test_stream_commands(logs):
    same_events(logs, STREAMS, "KEAn")


GEO_HLL_SORT = split("""
GEOADD g1 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
GEOADD g1 13.361389 38.115556 Palermo
GEOADD g1 XX CH 13.361389 38.0 Palermo
GEORADIUS g1 15 37 200 km STORE d1
GEORADIUS g1 15 37 200 km STOREDIST d1
GEORADIUS g1 0 0 1 km STORE d1
GEORADIUS nokey 0 0 1 km STORE d1
GEORADIUSBYMEMBER g1 Palermo 300 km STORE d2
GEOSEARCHSTORE d3 g1 FROMMEMBER Palermo BYRADIUS 300 km
GEOSEARCHSTORE d3 g1 FROMMEMBER Palermo BYRADIUS 300 km STOREDIST
GEOSEARCHSTORE d3 g1 FROMLONLAT 0 0 BYRADIUS 1 km
GEOSEARCHSTORE d3 g1 FROMLONLAT 0 0 BYRADIUS 1 km
GEOSEARCH g1 FROMMEMBER Palermo BYRADIUS 300 km
PFADD h1 a b c
PFADD h1 a
PFADD h1 d
PFADD h2
PFCOUNT h1
PFCOUNT h1 h2
PFMERGE h3 h1 h2
PFMERGE h3 h1
RPUSH l1 3 1 2
SORT l1
SORT l1 STORE s1
SORT l1 STORE s1
SORT nokey STORE s1
SORT nokey STORE s1
SORT_RO l1
""")


def test_geo_hyperloglog_and_sort(logs):
    same_events(logs, GEO_HLL_SORT, "KEAn")


def test_expired_keys_lazily_and_actively(logs):
    """Expiry sends "expired" (class x) whether a command finds the key expired or the
    background sweep deletes it; either way it precedes the events of the next command."""
    redis, minired = logs("KEAn")
    for key_command in (("SET", "k", "2"), ("GET", "k"), ("LPUSH", "k", "x"), ("EXISTS", "k"),
                        ("INCR", "k"), ("SETNX", "k", "1")):
        logs_seen = []
        for log in (redis, minired):
            log.run("SET", "k", "1")
            seen = [log.run("PEXPIRE", "k", "5")]
            time.sleep(0.02)
            seen.append(log.run(*key_command))
            log.run("DEL", "k")
            logs_seen.append(seen)
        assert logs_seen[1] == logs_seen[0], key_command
    for log in (redis, minired):
        log.run("SET", "k", "1", "PX", "20")
    # Nothing touches k now: only the background sweep can expire it, when its cycle comes.
    swept = [wait_until(log.events, "the active expiry of k", interval=0.02)
             for log in (redis, minired)]
    assert swept[1] == swept[0] == [
        (b"__keyspace@0__:k", b"expired"), (b"__keyevent@0__:expired", b"k")]


@pytest.mark.parametrize("flags", ["Kl", "Ex", "E$", "Kg", "KA", "EAn", "Kn", "K", "A", "KEz"])
def test_only_enabled_classes_are_sent(logs, flags):
    same_events(logs, split("""
        SET a 1
        SET a 2 EX 100
        LPUSH l x
        RPOP l
        ZADD z 1 m
        DEL z a
        PEXPIRE nokey 1
        HSET h f v
        SADD s m
        XADD x 1-1 f v
    """), flags)


def test_events_in_other_databases(logs):
    same_events(logs, split("""
        SELECT 3
        SET a 1
        RPUSH l x
        MOVE a 5
        SWAPDB 3 5
        SELECT 5
        DEL l
        COPY a b DB 3
        SELECT 0
    """), "KEAn")


def _raw_exchange(port: int, groups) -> list[bytes]:
    """Each group of commands' raw answer on a RESP3 connection subscribed to its own
    database's keyspace events: the pushes a command causes come before its reply, as Redis
    writes them (inside EXEC's array, before the reply of the command that caused them)."""
    from tests.support.respclient import encode_command

    client = RawClient(port, timeout=5)
    marker = b"$3\r\nend\r\n"
    answers = []
    try:
        client.call("HELLO", "3")
        client.call("PSUBSCRIBE", "__keyspace@0__:*")
        for group in groups:
            client.send_raw(b"".join(encode_command(command) for command in group)
                            + encode_command(("ECHO", "end")))
            data = b""
            while not data.endswith(marker):
                data += client.sock.recv(65536)
            answers.append(data[:-len(marker)])
    finally:
        client.close()
    return answers


def test_own_notifications_precede_the_reply_and_sit_inside_exec(logs, real_redis, mini):
    """Commands that notify before replying in Redis (many reply first, or in between: those
    differ, see the module notes of minired/features/notifications.py)."""
    logs("KEA")
    commands = [
        [("SET", "a", "1")], [("GET", "a")], [("INCR", "a")], [("SADD", "s", "x", "y")],
        [("MULTI",), ("SET", "a", "2"), ("GET", "a"), ("INCR", "a"), ("DEL", "a", "s"),
         ("EXEC",)],
        [("EVAL", "redis.call('set', KEYS[1], '5'); redis.call('incr', KEYS[1]); "
                  "redis.call('rpush', KEYS[2], 'x'); redis.call('del', KEYS[1]); return 7",
          "2", "a", "l")],
        [("RENAME", "l", "m")],
    ]
    assert _raw_exchange(mini.port, commands) == _raw_exchange(real_redis.port, commands)


def test_scripts_and_transactions_notify_as_they_go(logs):
    same_events(logs, [
        ("EVAL", "redis.call('set', KEYS[1], '5'); redis.call('lpush', KEYS[2], 'x'); "
                 "redis.call('rpop', KEYS[2]); return redis.call('incr', KEYS[1])", "2", "a",
         "l"),
        ("MULTI",), ("SET", "b", "1"), ("EXPIRE", "b", "100"), ("RENAME", "b", "c"),
        ("EXEC",),
        ("FUNCTION", "LOAD", "#!lua name=notifylib\nredis.register_function('setit', "
                             "function(keys, args) return redis.call('set', keys[1], args[1]) "
                             "end)"),
        ("FCALL", "setit", "1", "f", "v"),
    ], "KEAn")


def _generated_commands():
    """The command sequences the other generated tests send, for every data type."""
    from hypothesis import strategies as st

    from tests.core import test_hashes_sets_hypothesis as hashes_sets
    from tests.core import test_hypothesis_sequences as sequences
    from tests.core import test_zsets_hypothesis as zsets

    plain = sequences.STRING_COMMANDS + sequences.KEY_COMMANDS
    plain += [c for group in sequences.LIST_COMMANDS.values() for c in group]
    return st.one_of(st.one_of(plain).map(list).map(_no_due_expiry), hashes_sets.hash_commands,
                     hashes_sets.set_commands, zsets.commands.map(list))


_SET_EXPIRY_FAR = {"EX": 10**6, "PX": 10**9, "EXAT": 10**10, "PXAT": 10**13}


def _no_due_expiry(command: list) -> list:
    """SET or GETEX with a time already past (EXAT 100) or a few ms ahead (PX 100) keeps a key
    that expires in the background: the "expired" event then follows whichever command runs
    after the servers' own expire cycles (Redis's, run from its loop when stale keys abound,
    minired's every 100 ms), a race in both that this comparison of events per command cannot
    judge. Such times move far ahead; invalid ones (negative, zero, not a number) stay, as their
    errors are exact."""
    if command[0] not in ("SET", "GETEX"):
        return command
    for i, word in enumerate(command[:-1]):
        if word in _SET_EXPIRY_FAR and command[i + 1].isdigit() and int(command[i + 1]) > 0:
            far = str(int(command[i + 1]) + _SET_EXPIRY_FAR[word])
            return [*command[:i + 1], far, *command[i + 2:]]
    return command


def test_generated_commands_notify_as_in_redis(logs):
    """Random command sequences over every type: the same events, in the same order (replies
    are compared by type only, as some are random or unordered)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pair = logs("KEAnm")

    @settings(max_examples=300)
    @given(commands=st.lists(_generated_commands(), min_size=1, max_size=10))
    def check(commands):
        transcripts = []
        for log in pair:
            log.run("FLUSHALL")
            seen = []
            for command in commands:
                reply, events = log.run(*command)
                seen.append((command, type(reply).__name__, events))
            transcripts.append(seen)
        assert transcripts[1] == transcripts[0]

    check()


KEY_MISS_COMMANDS = split("""
GET nokey
SET k v
GET k
MGET k nokey other
EXISTS nokey k
TYPE nokey
STRLEN nokey
TTL nokey
LRANGE nolist 0 -1
HGET nohash f
SMEMBERS noset
ZSCORE nozset m
XRANGE nostream - +
GETRANGE nokey 0 1
SET k2 v GET
INCR counter
DUMP nokey
OBJECT ENCODING nokey
SUNIONSTORE dest noset1 noset2
PFCOUNT nohll
SORT nolist
""")


@pytest.mark.parametrize("flags", ["Km", "Em", "KEA"])
def test_key_misses(logs, flags):
    """Class m: "keymiss" on a read lookup that finds nothing (and only with m: A leaves it
    out), as lookupKeyRead sends it."""
    same_events(logs, KEY_MISS_COMMANDS, flags)


XAUTOCLAIM_LOOKUP_FIRST = split("""
XAUTOCLAIM nokey g1 c1 abc 0
XAUTOCLAIM nokey g1 c1 0 abc
XAUTOCLAIM nokey g1 c1 0 0 COUNT 0
XAUTOCLAIM nokey g1 c1 0 0 JUSTID foo
XAUTOCLAIM nokey g1 c1 0 0
SET str v
XAUTOCLAIM str g1 c1 abc 0
XAUTOCLAIM str g1 c1 0 0
XADD x 1-1 f v
XAUTOCLAIM x nogroup c1 0 0 COUNT 0
XAUTOCLAIM x nogroup c1 0 0
""")


@pytest.mark.parametrize("flags", ["KEAm", "Em"])
def test_xautoclaim_looks_its_key_up_before_parsing(logs, flags):
    """xautoclaimCommand calls lookupKeyRead before it parses its arguments (and checks the
    type after them): a missing key is a "keymiss" even when an argument is wrong."""
    same_events(logs, XAUTOCLAIM_LOOKUP_FIRST, flags)


def test_overwriting_a_string_where_clients_wait_serves_them_only_when_added(logs, connect):
    """Redis queues a key for its blocked clients when dbAdd adds a list, sorted set or stream,
    or when such a value is overwritten; setKey overwriting a string does neither. A client
    blocked on a key that came to hold a string is not served when SORT STORE or ZUNIONSTORE
    replaces the string (it times out), and is served when RENAME or COPY REPLACE puts the
    list there (they delete the string first, then add)."""
    redis, minired = logs("KEA")
    for log in (redis, minired):
        log.command.call("RPUSH", "src", "3", "1", "2")
        log.command.call("ZADD", "zsrc", "1", "a")
        log.events()
    pair = connect()
    steps = [
        (("BLPOP", "l1", "0.3"), [("SET", "l1", "s"), ("SORT", "src", "STORE", "l1")]),
        (("BZPOPMIN", "z1", "0.3"), [("SET", "z1", "s"), ("ZUNIONSTORE", "z1", "1", "zsrc")]),
        (("BLPOP", "l2", "0"), [("SET", "l2", "s"), ("COPY", "src", "l2", "REPLACE")]),
        (("BLPOP", "l3", "0"), [("SET", "l3", "s"), ("RENAME", "src", "l3")]),
    ]
    for blocking, writes in steps:
        pair.redis.send(*blocking)
        pair.minired.send(*blocking)
        wait_blocked(redis.publisher, minired.publisher)
        for write in writes:
            assert minired.run(*write) == redis.run(*write), write
        pair.read_both()  # the pop's reply, or nil when the wait timed out


@pytest.fixture
def debug_logs():
    """EventLogs on a pair of servers of the test's own, the expiry cycle off on both: a key
    whose time has passed then expires on its next lookup and nowhere else."""
    from tests.support.servers import debug_server_pair

    with debug_server_pair() as (real, mini):
        pair = (EventLog(real.port, "KEA"), EventLog(mini.port, "KEA"))
        try:
            for log in pair:
                assert log.publisher.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
            yield pair
        finally:
            for log in pair:
                log.close()


def test_a_string_written_where_clients_wait_is_not_looked_up(debug_logs):
    """A string written to a key clients wait on is no reason to look the key up for them
    (only list, sorted set and stream values are, see the test above): SET k v PXAT <past>
    leaves k to expire on its next lookup, with its "expired" event then. SWAPDB likewise
    looks up only the keys that hold a value someone can block on."""
    redis, minired = debug_logs
    blocked = [RawClient(log.command.sock.getpeername()[1], timeout=5) for log in debug_logs]
    try:
        commands = [("SET", "k", "v", "PXAT", "1"), ("GET", "k"),
                    ("SET", "k", "v", "PXAT", "1"), ("HSET", "k", "f", "v"), ("DEL", "k"),
                    ("SELECT", "1"), ("SET", "k", "v", "PXAT", "1"), ("SWAPDB", "0", "1"),
                    ("SELECT", "0"), ("EXISTS", "k"), ("RPUSH", "k", "x")]
        for client in blocked:
            client.send("BLPOP", "k", "0")
        wait_blocked(redis.publisher, minired.publisher)
        for command in commands:
            assert minired.run(*command) == redis.run(*command), command
        assert [client.read() for client in blocked] == [[b"k", b"x"]] * 2
    finally:
        for client in blocked:
            client.close()


def _same_runs(pair, commands) -> None:
    redis, minired = pair
    for command in commands:
        assert minired.run(*command) == redis.run(*command), command


EXPIRED_DESTINATION = [("SET", "d", "v", "PXAT", "1"), ("SADD", "s", "a")]
EMPTY_RESULTS_STORED = split("""
SINTERSTORE d nokey
SUNIONSTORE d nokey
SDIFFSTORE d nokey s
SINTERSTORE d s nokey
ZUNIONSTORE d 1 nokey
ZINTERSTORE d 2 s nokey
ZDIFFSTORE d 1 nokey
ZRANGESTORE d nokey 0 -1
GEORADIUS nokey 0 0 1 km STORE d
GEORADIUSBYMEMBER nokey m 1 km STOREDIST d
GEOSEARCHSTORE d nokey FROMLONLAT 0 0 BYRADIUS 1 km
SORT nokey STORE d
BITOP AND d nokey
BITOP NOT d nokey
""")


def test_an_empty_result_deletes_an_expired_destination_unlooked(debug_logs, real_redis):
    """The commands that store a result delete their destination when it is empty with
    dbDelete, which looks nothing up: an expired destination goes with the command's "del"
    and no "expired" (as RESTORE REPLACE deletes the key it replaces)."""
    for command in EMPTY_RESULTS_STORED:
        _same_runs(debug_logs, EXPIRED_DESTINATION + [command])
    source = RawClient(real_redis.port)
    try:
        source.call("SET", "a", "1")
        payload = source.call("DUMP", "a")
    finally:
        source.close()
    _same_runs(debug_logs, [("SET", "d", "v", "PXAT", "1"), ("RESTORE", "d", "0", payload,
                                                              "REPLACE"),
                            ("SET", "d", "v", "PXAT", "1"), ("RESTORE", "d", "0", payload,
                                                              "REPLACE", "ABSTTL", "1")])


def test_scan_type_looks_each_key_up(debug_logs):
    """SCAN ... TYPE reads each key for its type (lookupKeyReadWithFlags): an expired one is
    deleted and is a "keymiss", and as its type is then "none", TYPE none lists it."""
    redis, minired = debug_logs
    for log in debug_logs:
        log.publisher.call("CONFIG", "SET", "notify-keyspace-events", "KEAm")
    _same_runs(debug_logs, split("""
        SET k v PXAT 1
        SCAN 0 TYPE string
        SET k v PXAT 1
        SCAN 0 TYPE none
        SET k v PXAT 1
        SCAN 0 MATCH nomatch* TYPE none
        SCAN 0 TYPE NONE
        SET k2 v
        SCAN 0 TYPE string
        SCAN 0 TYPE none
    """))
