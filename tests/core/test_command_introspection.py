"""COMMAND, COMMAND INFO/DOCS/LIST/GETKEYS and ACL CAT, checked against real Redis.

The first test is the table's audit: every command minired declares must be described by
COMMAND INFO exactly as Redis describes it (name, arity, flags, key positions), so a wrong
declaration in any group's file fails here.
"""
from __future__ import annotations

import pytest

from minired.engine.categories import GROUP_CATEGORY
from minired.engine.table import all_specs
from tests.support.respclient import Map, RawClient, Simple

# Commands Redis 7.0 does not have: minired's own, and two from Redis 7.2 that clients send
# (redis-py 8 sends CLIENT SETINFO on every connection).
# MINIRED and all its subcommands are minired's own.
MINIRED_ONLY = {"minired", "client|setinfo", "client|no-touch"} | {
    spec.full_name for spec in all_specs() if spec.root_name == "minired"}


def _info_by_name(port: int, names: list[str]) -> dict[str, list | None]:
    client = RawClient(port)
    try:
        replies = client.call("COMMAND", "INFO", *names)
    finally:
        client.close()
    return dict(zip(names, replies))


def test_command_info_matches_redis_for_every_command(real_redis, mini):
    names = [spec.full_name for spec in all_specs()]
    expected = _info_by_name(real_redis.port, names)
    actual = _info_by_name(mini.port, names)
    mismatches = []
    for name in names:
        theirs, ours = expected[name], actual[name]
        assert ours is not None, f"minired does not describe its own command {name}"
        if theirs is None:
            assert name in MINIRED_ONLY, f"{name} is not a Redis command"
            continue
        if ours[:6] != theirs[:6]:
            mismatches.append(f"{name}: redis {theirs[:6]!r}, minired {ours[:6]!r}")
        if sorted(ours[6]) != sorted(theirs[6]):
            mismatches.append(f"{name}: categories redis {theirs[6]!r}, minired {ours[6]!r}")
        if ours[7:9] != theirs[7:9]:
            mismatches.append(f"{name}: tips and key specs redis {theirs[7:9]!r}, "
                              f"minired {ours[7:9]!r}")
    assert not mismatches, "COMMAND INFO differs from Redis:\n" + "\n".join(mismatches)


def test_every_group_is_a_redis_group():
    unknown = {spec.full_name: spec.group for spec in all_specs() if spec.group not in GROUP_CATEGORY}
    assert not unknown


def _pairs(reply) -> list:
    """A map reply's (key, value) pairs: a Map in RESP3, a flat array in RESP2."""
    return list(reply) if isinstance(reply, Map) else list(zip(reply[::2], reply[1::2]))


def _comparable_docs(reply) -> list:
    """COMMAND DOCS's name -> docs map, sorted by name (Redis writes its commands and each
    container's subcommands in its hash order, which even two Redis processes do not share),
    with the commands both servers have (minired has no MIGRATE, SYNC ...; Redis no MINIRED).
    Each command's fields stay in order, and repr keeps the RESP types apart (a status is not a
    bulk string, a set is not an array)."""
    shared = {spec.full_name for spec in all_specs()} - MINIRED_ONLY
    return sorted((repr(name), [(repr(field), _comparable_docs(value) if field == b"subcommands"
                                 else repr(value)) for field, value in _pairs(docs)])
                  for name, docs in _pairs(reply) if name.decode() in shared)


@pytest.mark.parametrize("protocol", [2, 3])
def test_command_docs_match_redis_for_every_command(real_redis, mini, protocol):
    """Summary, since, group, complexity, doc flags, deprecation, history and arguments, for
    every command and subcommand: all of them, each by name, and one named twice."""
    names = [spec.full_name for spec in all_specs() if spec.full_name not in MINIRED_ONLY]
    requests = [("COMMAND", "DOCS"), ("COMMAND", "DOCS", *names),
                ("COMMAND", "DOCS", "get", "nosuch", "GET", "config|get", "config|nosuch")]
    for request in requests:
        replies = []
        for port in (real_redis.port, mini.port):
            client = RawClient(port)
            try:
                client.call("HELLO", str(protocol))
                replies.append(client.call(*request))
            finally:
                client.close()
        theirs, ours = replies
        assert type(ours) is type(theirs)
        expected = _comparable_docs(theirs)
        assert _comparable_docs(ours) == expected, request[:3]
    # The last request: GET twice under its own name (as Redis does), CONFIG|GET, and nothing
    # for unknown names.
    assert [name for name, _ in expected] == ["b'config|get'", "b'get'", "b'get'"]
    assert len(_pairs(ours)) == 3


def test_command_shapes(diff):
    diff.check("COMMAND", "COUNT", "x")
    diff.check("COMMAND", "FOO")
    diff.check("COMMAND", "HELP")
    diff.check("COMMAND", "INFO", "no-such-command")
    theirs, ours = diff.both("COMMAND", "INFO", "GET", "nope", "config|get")
    assert [x and x[:7] for x in ours] == [x and x[:7] for x in theirs]
    diff.check("COMMAND", "DOCS", "no-such-command")
    diff.check("COMMAND", "LIST", "x")
    diff.check("COMMAND", "LIST", "FILTERBY", "X", "y")
    diff.check("COMMAND", "LIST", "FILTERBY", "PATTERN")
    diff.check("COMMAND", "LIST", "FILTERBY", "MODULE", "x")
    diff.check("COMMAND", "LIST", "FILTERBY", "PATTERN", "conf*", unordered=True)
    diff.check("COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG|?ET", unordered=True)


def test_command_count_and_list_cover_the_table(mini_raw):
    top_level = [spec for spec in all_specs() if spec.parent is None]
    assert mini_raw.call("COMMAND", "COUNT") == len(top_level)
    assert len(mini_raw.call("COMMAND")) == len(top_level)
    assert len(mini_raw.call("COMMAND", "INFO")) == len(top_level)
    listed = mini_raw.call("COMMAND", "LIST")
    assert sorted(listed) == sorted(spec.full_name.encode() for spec in all_specs())


def test_acl_category_filter_agrees_with_command_info(mini_raw):
    strings = mini_raw.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "string")
    assert b"get" in strings and b"set" in strings
    assert sorted(strings) == sorted(mini_raw.call("ACL", "CAT", "string"))
    for name in strings:
        (info,) = mini_raw.call("COMMAND", "INFO", name)
        assert Simple(b"@string") in info[6]
    assert mini_raw.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nope") == []


def _sample_argvs(spec):
    """Argument lists that satisfy a command's arity, for commands with fixed key positions."""
    prefix = [spec.parent.name, spec.name] if spec.parent else [spec.name]
    if spec.arity > 0:
        counts = [spec.arity]
    else:
        counts = [-spec.arity, -spec.arity + 1, -spec.arity + 2]
    return [prefix + [f"k{i}" for i in range(len(prefix), count)] for count in counts]


def test_getkeys_matches_redis_for_every_fixed_key_command(real_redis, mini):
    specs = [spec for spec in all_specs() if spec.handler is not None
             and spec.key_finder is None and spec.full_name not in MINIRED_ONLY]
    redis, minired = RawClient(real_redis.port), RawClient(mini.port)
    try:
        mismatches = []
        for spec in specs:
            for argv in _sample_argvs(spec):
                theirs = redis.call("COMMAND", "GETKEYS", *argv)
                ours = minired.call("COMMAND", "GETKEYS", *argv)
                if ours != theirs:
                    mismatches.append(f"{argv}: redis {theirs!r}, minired {ours!r}")
    finally:
        redis.close()
        minired.close()
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("args", [
    ("ping", "x"),                 # no key arguments
    ("no-such-command", "x"),
    ("get", "a", "b"),             # arity
    ("config", "get", "x"),
    ("memory", "usage", "k"),
    ("memory", "usage", "k", "samples", "5"),
])
def test_getkeys_matches_redis(diff, args):
    diff.check("COMMAND", "GETKEYS", *args)


def test_getkeys_errors(diff):
    diff.check("COMMAND", "GETKEYS")
    diff.check("COMMAND", "GETKEYS", "get")
    diff.check("COMMAND", "GETKEYSANDFLAGS", "get")


# Commands whose keys Redis finds through its getkeys procedures (variable flags, incomplete
# or unusable specs), and specs of every kind: index, keyword, range, keynum, limit.
GETKEYS_CASES = [
    ("get", "k"), ("set", "k1", "v1"), ("set", "k", "v", "get"), ("set", "k", "v", "GET"),
    ("mset", "k1", "v1", "k2", "v2"), ("mset", "k1", "v1", "k2"),
    ("LMOVE", "k1", "k2", "left", "right"), ("sort", "k1", "store", "k2"), ("sort", "k1"),
    ("sort", "k", "by", "store", "limit", "0", "1", "store", "d"), ("sort_ro", "k", "by", "x"),
    ("eval", "s", "0"), ("eval", "s", "2", "a", "b"), ("eval", "s", "x"), ("eval", "s", "-1"),
    ("eval", "s", "3", "a"), ("fcall", "f", "1", "a"), ("evalsha_ro", "s", "01", "a"),
    ("zunionstore", "d", "2", "a", "b"), ("zunionstore", "d", "3x", "a", "b", "c"),
    ("zinter", "0", "a"), ("sintercard", "2", "a", "b"), ("lmpop", "2", "a", "b", "left"),
    ("blmpop", "0", "2", "a", "b", "left"), ("bzmpop", "0", " 1", "a", "min"),
    ("xread", "streams", "a", "b", "1", "2"), ("xread", "count", "1", "streams", "a", "1"),
    ("xread", "streams", "a", "b", "1"),
    ("xreadgroup", "group", "g", "c", "streams", "a", ">"),
    ("georadius", "k", "1", "2", "3", "m", "store", "x"),
    ("georadius", "k", "1", "2", "3", "m", "store", "x", "storedist", "y"),
    ("georadiusbymember", "k", "m", "3", "km", "storedist"),
    ("bitfield", "k", "get", "u8", "0"), ("bitfield", "k", "set", "u8", "0", "1"),
    ("bitfield", "k", "overflow", "wrap"), ("bitfield_ro", "k", "get", "u8", "0"),
    ("bitop", "and", "d", "a", "b"), ("spublish", "c", "m"), ("publish", "c", "m"),
    ("client", "list"), ("client",), ("client", "nosuch"), ("memory", "usage", "key"),
    ("xgroup", "create", "key", "g", "$"), ("object", "encoding", "k"), ("nosuch",),
    ("blpop", "a", "b", "0"), ("restore", "k", "0", "x"), ("pfmerge", "d", "a"),
    ("pfcount", "a", "b"), ("lcs", "a", "b"), ("smove", "a", "b", "m"), ("copy", "a", "b"),
    ("xautoclaim", "k", "g", "c", "0", "0"), ("object", "freq", "k"), ("type", "k"),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_getkeys_and_flags_match_redis(diff, protocol):
    diff.hello(protocol)
    for case in GETKEYS_CASES:
        diff.check("COMMAND", "GETKEYS", *case)
        diff.check("COMMAND", "GETKEYSANDFLAGS", *case)


@pytest.mark.parametrize("protocol", [2, 3])
def test_command_info_key_specs_and_tips_are_redis_s(diff, protocol):
    # RESP3 shows the reply types: flags, categories, tips and key specs are sets, the key
    # specs maps; a command without subcommands ends with an empty set.
    diff.hello(protocol)
    for name in ("get", "set", "lmove", "sort", "georadius", "eval", "xread", "keys", "spublish",
                 "zunionstore", "migrate", "object|freq", "bitfield", "mset", "blmpop"):
        theirs, ours = diff.both("COMMAND", "INFO", name)
        if name == "migrate":  # Redis has it, minired does not (see docs/commands.md)
            continue
        assert ours == theirs, name
