"""Random command sequences over strings, lists, keys and expiry, sent to real Redis and to
minired; every reply must match (TTLs only by class: missing, persistent or positive).

Keys and values come from tiny alphabets so commands collide: renames onto existing keys,
INCR on non-numbers, list commands on strings. List commands are drawn only if minired knows
them, so this test grows with the server.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

KEYS = st.sampled_from(["k1", "k2", "k3"])
VALUES = st.sampled_from(["", "a", "b", "1", "-2", "10", "3.5", "abc"])
INTS = st.sampled_from(["-1", "0", "1", "2", "-3", "5", "x"])
SECONDS = st.sampled_from(["-1", "0", "100", "200", "x"])


def _command(*parts):
    return st.tuples(*[p if isinstance(p, st.SearchStrategy) else st.just(p) for p in parts])


STRING_COMMANDS = [
    _command("SET", KEYS, VALUES),
    _command("SET", KEYS, VALUES, st.sampled_from(["NX", "XX", "GET", "KEEPTTL"])),
    _command("SET", KEYS, VALUES, st.sampled_from(["EX", "PX", "EXAT", "PXAT"]), SECONDS),
    _command("GET", KEYS),
    _command("GETSET", KEYS, VALUES),
    _command("GETDEL", KEYS),
    _command("GETEX", KEYS, st.sampled_from(["EX", "PX"]), SECONDS),
    _command("GETEX", KEYS, "PERSIST"),
    _command("SETNX", KEYS, VALUES),
    _command("APPEND", KEYS, VALUES),
    _command("STRLEN", KEYS),
    _command("INCR", KEYS),
    _command("DECRBY", KEYS, INTS),
    _command("INCRBYFLOAT", KEYS, VALUES),
    _command("SETRANGE", KEYS, INTS, VALUES),
    _command("GETRANGE", KEYS, INTS, INTS),
    _command("MSET", KEYS, VALUES, KEYS, VALUES),
    _command("MSETNX", KEYS, VALUES, KEYS, VALUES),
    _command("MGET", KEYS, KEYS),
    _command("SETBIT", KEYS, INTS, st.sampled_from(["0", "1"])),
    _command("BITCOUNT", KEYS),
    _command("LCS", KEYS, KEYS),
]

KEY_COMMANDS = [
    _command("DEL", KEYS, KEYS),
    _command("EXISTS", KEYS, KEYS),
    _command("TYPE", KEYS),
    _command("RENAME", KEYS, KEYS),
    _command("RENAMENX", KEYS, KEYS),
    _command("COPY", KEYS, KEYS),
    _command("COPY", KEYS, KEYS, "REPLACE"),
    _command("EXPIRE", KEYS, SECONDS),
    _command("EXPIRE", KEYS, SECONDS, st.sampled_from(["NX", "XX", "GT", "LT"])),
    _command("PEXPIRE", KEYS, st.sampled_from(["-5", "0", "100000"])),
    _command("PERSIST", KEYS),
    _command("TTL", KEYS),
    _command("PTTL", KEYS),
    _command("KEYS", st.sampled_from(["*", "k[12]", "k?", "x*"])),
]

# name -> generators; used only when minired has the command.
LIST_COMMANDS = {
    "lpush": [_command("LPUSH", KEYS, VALUES, VALUES)],
    "rpush": [_command("RPUSH", KEYS, VALUES)],
    "lpop": [_command("LPOP", KEYS)],
    "rpop": [_command("RPOP", KEYS), _command("RPOP", KEYS, INTS)],
    "lrange": [_command("LRANGE", KEYS, INTS, INTS)],
    "llen": [_command("LLEN", KEYS)],
    "lindex": [_command("LINDEX", KEYS, INTS)],
    "lset": [_command("LSET", KEYS, INTS, VALUES)],
    "lrem": [_command("LREM", KEYS, INTS, VALUES)],
    "ltrim": [_command("LTRIM", KEYS, INTS, INTS)],
    "linsert": [_command("LINSERT", KEYS, st.sampled_from(["BEFORE", "AFTER"]), VALUES, VALUES)],
    "lmove": [_command("LMOVE", KEYS, KEYS, st.sampled_from(["LEFT", "RIGHT"]),
                       st.sampled_from(["LEFT", "RIGHT"]))],
}

_TTL_COMMANDS = {"TTL", "PTTL"}
_UNORDERED_COMMANDS = {"KEYS"}


def _ttl_class(reply):
    return reply if reply in (-2, -1) else ("positive" if isinstance(reply, int) and reply > 0 else reply)


def _known_list_commands(diff) -> list:
    generators = []
    for name, commands in LIST_COMMANDS.items():
        if diff.minired.call("COMMAND", "INFO", name) != [None]:
            generators.extend(commands)
    return generators


@settings(max_examples=150)
@given(data=st.data())
def test_random_sequences_match_redis(diff, data):
    available = STRING_COMMANDS + KEY_COMMANDS + _known_list_commands(diff)
    diff.both("FLUSHALL")
    commands = data.draw(st.lists(st.one_of(available), min_size=1, max_size=25))
    for command in commands:
        if command[0] in _TTL_COMMANDS:
            expected, actual = diff.both(*command)
            assert _ttl_class(actual) == _ttl_class(expected), (command, expected, actual, diff.log[-25:])
        else:
            diff.check(*command, unordered=command[0] in _UNORDERED_COMMANDS)
