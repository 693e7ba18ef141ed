"""COMMAND, COMMAND INFO/DOCS/LIST/GETKEYS and ACL CAT, checked against real Redis.

The first test is the table's audit: every command minired declares must be described by
COMMAND INFO exactly as Redis describes it (name, arity, flags, key positions), so a wrong
declaration in any group's file fails here.
"""
from __future__ import annotations

import pytest

from minired.commands.introspection import GROUP_CATEGORY, all_specs
from tests.support.respclient import Err, Map, RawClient, Simple

# Commands Redis 7.0 does not have: minired's own, and two from Redis 7.2 that clients send
# (redis-py 8 sends CLIENT SETINFO on every connection).
MINIRED_ONLY = {"minired", "minired|advance", "minired|clock", "client|setinfo", "client|no-touch"}


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
    assert not mismatches, "COMMAND INFO differs from Redis:\n" + "\n".join(mismatches)


def test_every_group_is_a_redis_group():
    unknown = {spec.full_name: spec.group for spec in all_specs() if spec.group not in GROUP_CATEGORY}
    assert not unknown


def test_command_docs_group_matches_redis(real_redis, mini):
    names = [spec.full_name for spec in all_specs() if spec.full_name not in MINIRED_ONLY]
    redis, minired = RawClient(real_redis.port), RawClient(mini.port)
    try:
        theirs = redis.call("COMMAND", "DOCS", *names)
        ours = minired.call("COMMAND", "DOCS", *names)
    finally:
        redis.close()
        minired.close()

    def groups(reply):
        found = {}
        for name, doc in zip(reply[::2], reply[1::2]):
            fields = dict(zip(doc[::2], doc[1::2]))
            found[name] = fields[b"group"]
            subcommands = fields.get(b"subcommands")
            if subcommands:
                found.update(groups(subcommands))
        return found

    ours, theirs = groups(ours), groups(theirs)
    for name in MINIRED_ONLY:
        ours.pop(name.encode(), None)
    assert ours == {name: theirs.get(name) for name in ours}


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


def test_getkeysandflags_access(mini_raw):
    assert mini_raw.call("COMMAND", "GETKEYSANDFLAGS", "get", "k") == [[b"k", [Simple(b"RO")]]]
    assert mini_raw.call("COMMAND", "GETKEYSANDFLAGS", "set", "a", "1") == [
        [b"a", [Simple(b"RW")]]]


def test_command_info_resp3_key_specs_are_maps(diff):
    diff.hello(3)
    theirs, ours = diff.both("COMMAND", "INFO", "get")
    assert ours[0][:8] == theirs[0][:8]
    (spec,) = ours[0][8]
    (redis_spec,) = theirs[0][8]
    assert isinstance(spec, Map) and isinstance(redis_spec, Map)
    ours_fields, theirs_fields = dict(spec), dict(redis_spec)
    assert ours_fields[b"begin_search"] == theirs_fields[b"begin_search"]
    assert ours_fields[b"find_keys"] == theirs_fields[b"find_keys"]


def test_command_docs_resp3_is_a_map(mini_raw):
    mini_raw.call("HELLO", "3")
    docs = mini_raw.call("COMMAND", "DOCS", "get", "config")
    assert isinstance(docs, Map)
    fields = dict(dict(docs)[b"config"])
    assert fields[b"group"] == b"server"
    assert b"config|get" in dict(fields[b"subcommands"])


def test_acl_minimal(diff):
    diff.check("ACL", "WHOAMI")
    diff.check("ACL", "USERS")
    diff.check("ACL", "CAT")
    diff.check("ACL", "CAT", "nope")
    diff.check("ACL", "CAT", "a", "b")
    diff.check("ACL", "NOPE")


def test_acl_cat_is_subset_of_redis(diff):
    theirs, ours = diff.both("ACL", "CAT", "string")
    assert set(ours) <= set(theirs)
    assert not isinstance(ours, Err)
