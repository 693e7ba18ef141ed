"""ACL users compared with Redis 7.0: SETUSER rules and their errors, GETUSER/LIST output,
AUTH/HELLO against users, NOPERM for commands, categories, subcommands, keys and channels (at
the top level, in MULTI/EXEC, in scripts), DRYRUN, DELUSER, the ACL log and requirepass.

Redis walks its command table in hash order (seeded per process) when it describes a user's
commands, so the single-command rules ("+get +set") come in an order that even two Redis
processes do not share: `canonical` sorts them; category rules and everything else stay in
order. The servers are shared by the suite: every test restores users, default and
requirepass on both (the `acl` fixture).
"""
from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minired.engine.table import COMMANDS
from tests.support.differential import Differential, Err
from tests.support.respclient import RawClient

ADMIN = ("acl-test-admin", "admin-pw")


def _is_single_command(token: bytes) -> bool:
    return token[:1] in (b"+", b"-") and token[1:2] != b"@"


MINIRED_ONLY = {b"minired", b"client|setinfo", b"client|no-touch"}


def _known_to_minired(token: bytes) -> bool:
    """Rules naming commands only one side has (MIGRATE, CLUSTER ...; MINIRED) are left out."""
    return _both_have(token[1:])


def _both_have(full_name: bytes) -> bool:
    if full_name.lower() in MINIRED_ONLY or full_name.lower().startswith(b"minired|"):
        return False
    name = full_name.split(b"|")
    spec = COMMANDS.get(name[0].lower())
    if spec is not None and len(name) > 1 and spec.subcommands:
        spec = spec.subcommands.get(name[1].lower())
    return spec is not None


def canonical_rules(text: bytes) -> list:
    """A user description with each selector's single-command rules sorted."""
    out = []
    for segment in re.split(rb" \(|\)", text):
        tokens = segment.split()
        out.append(([t for t in tokens if not _is_single_command(t)],
                     sorted(t for t in tokens if _is_single_command(t) and _known_to_minired(t))))
    return out


def canonical(reply):
    """GETUSER / ACL LIST replies with rule strings made comparable."""
    if isinstance(reply, list):
        if len(reply) >= 2 and reply[0] == b"flags":  # GETUSER's flat map (RESP2)
            pairs = dict(zip(reply[::2], reply[1::2]))
            pairs[b"commands"] = canonical_rules(pairs[b"commands"])
            pairs[b"selectors"] = [canonical(s) for s in pairs[b"selectors"]]
            return pairs
        if len(reply) >= 2 and reply[0] == b"commands":  # one selector
            pairs = dict(zip(reply[::2], reply[1::2]))
            pairs[b"commands"] = canonical_rules(pairs[b"commands"])
            return pairs
        return [canonical(x) for x in reply]
    if isinstance(reply, bytes) and reply.startswith(b"user "):
        return canonical_rules(reply)
    return reply


def check_rules(diff: Differential, *args):
    theirs, ours = diff.both(*args)
    assert canonical(ours) == canonical(theirs), (
        f"reply differs for {args!r}\n  redis:   {theirs!r}\n  minired: {ours!r}")
    return theirs


def _commands_of(client: RawClient, rules: bytes) -> bytes:
    """The command rules minired describes for a user made of these rules."""
    tokens = [t for t in rules.split() if not _is_single_command(t) or _known_to_minired(t)]
    # Commands only minired has are left out of the comparison: denied on both sides.
    tokens += [b"-" + name for name in sorted(MINIRED_ONLY)]
    client.call("ACL", "SETUSER", "acl-test-equivalent", "reset", *tokens)
    return client.call("ACL", "GETUSER", "acl-test-equivalent")[5]


def check_user_equivalent(diff: Differential, name: str) -> None:
    """GETUSER as Redis gives it, except that where the two command tables differ (commands
    only one side has shift the category counts of the compact rules) the command rules
    need only grant the same commands: Redis's rules, replayed on minired, must describe
    minired's own."""
    theirs, ours = diff.both("ACL", "GETUSER", name)
    expected, actual = canonical(theirs), canonical(ours)
    if expected != actual and isinstance(theirs, list):
        for key in (b"commands", b"selectors"):
            expected.pop(key), actual.pop(key)
        assert actual == expected, f"redis {theirs!r}\nminired {ours!r}"
        selectors = [theirs] + list(theirs[11])
        mine = [ours] + list(ours[11])
        assert len(selectors) == len(mine)
        for their_selector, my_selector in zip(selectors, mine):
            # The top level's own fields, without its selectors: they come next in this loop,
            # their command rules as Redis's hash order has them.
            assert (_fields_except_rules(their_selector)
                    == _fields_except_rules(my_selector)), (theirs, ours)
            assert (_commands_of(diff.minired, _field(their_selector, b"commands"))
                    == _commands_of(diff.minired, _field(my_selector, b"commands"))), (theirs, ours)


def _field(flat_map: list, name: bytes):
    return flat_map[flat_map.index(name) + 1]


def _fields_except_rules(flat_map: list) -> dict:
    """A user's or selector's GETUSER fields (a RESP2 flat map) but its command rules and
    selectors."""
    fields = dict(zip(flat_map[::2], flat_map[1::2]))
    fields.pop(b"commands"), fields.pop(b"selectors", None)
    return fields


def _cleanup(port: int) -> None:
    client = RawClient(port)
    try:
        client.call("AUTH", *ADMIN)
        client.call("CONFIG", "SET", "requirepass", "")
        client.call("ACL", "SETUSER", "default", "on", "nopass", "resetkeys", "~*",
                    "resetchannels", "&*", "+@all", "clearselectors")
        client.call("ACL", "LOG", "RESET")
        users = [u for u in client.call("ACL", "USERS") if u != b"default"]
        if users:  # the admin last: deleting it closes this connection
            client.call("ACL", "DELUSER", *users)
    finally:
        client.close()


@pytest.fixture
def acl(diff, real_redis, mini):
    """`diff`, with an admin user on both servers and everything restored afterwards."""
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("ACL", "SETUSER", ADMIN[0], "on", ">" + ADMIN[1], "+@all", "~*", "&*")
        client.call("ACL", "LOG", "RESET")
        client.close()
    try:
        yield diff
    finally:
        _cleanup(real_redis.port)
        _cleanup(mini.port)


# --- SETUSER rules, GETUSER and LIST -----------------------------------------------------------

RULE_SETS = [
    ["on", ">p", "~a*", "%R~b*", "&ch*", "+get", "-@dangerous", "+@string", "(~x* +set)"],
    ["on", "nopass", "allkeys", "allchannels", "allcommands"],
    ["+@all", "-@dangerous", "+info", "-config|set"],
    ["-@all", "+@read", "-@keyspace", "+keys"],
    ["+@all", "-@admin", "-@dangerous", "+client|id"],
    ["-@all", "+select|0", "+select|1", "+SELECT|1", "+get"],
    ["-@all", "+config|get", "+client", "-client|kill", "+acl|whoami"],
    ["%R", "%W~", "%RW~x", "%R~y", "%W~y", "%w~z", "%r~z", "~z", "&c1", "&c2", "&c1"],
    ["~a", "resetkeys", "~b", "&a", "resetchannels", "&b", "nocommands", "+@hash"],
    [">a", ">b", "<a", "#" + "0" * 64, "!" + "0" * 64, "resetpass", ">c"],
    ["reset", "on", "skip-sanitize-payload"],
    ["reset", "sanitize-payload", "+@all", "-@all", "+@pubsub", "-publish"],
    ["(+get ~k1)", "(", "+set", "~k2)", "()", "( )", "clearselectors", "(&x +@list)"],
    ["", "ON", "ALLKEYS", "+@ALL", "-@String", "+GET"],
    ["+@all", "-@all", "+@fast", "-@write", "+@geo", "-@blocking", "+@scripting"],
    ["-@all", "+@connection", "+@transaction", "-multi", "+@sortedset", "-zadd"],
]

BAD_RULES = [
    "+", "-", "+@", "-@nope", "+nope", "+get|", "+config|nosuch", "+config|get|x", "-select|0",
    "+|x", "~a b", "%~x", "%X~a", "%RR~a", "%", "&a b", "#abc", "!abc", "<nope", "bogus",
    "(on)", "(>p)", "(nopass)", "(reset)", "(clearselectors)", "(~* ~a)", "(bogus)",
    "#E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
]


def test_setuser_rule_sets(acl):
    for i, rules in enumerate(RULE_SETS):
        name = f"user{i}"
        acl.check("ACL", "SETUSER", name, *rules)
        check_rules(acl, "ACL", "GETUSER", name)
    check_rules(acl, "ACL", "LIST")
    acl.check("ACL", "USERS")


def test_setuser_errors_change_nothing(acl):
    acl.check("ACL", "SETUSER", "victim", "on", "~k", "+get")
    for rule in BAD_RULES:
        acl.check_error("ACL", "SETUSER", "victim", "+set", rule)
    acl.check("ACL", "SETUSER", "victim", "allkeys")
    acl.check_error("ACL", "SETUSER", "victim", "~x")
    acl.check("ACL", "SETUSER", "victim", "allchannels")
    acl.check_error("ACL", "SETUSER", "victim", "&x")
    acl.check_error("ACL", "SETUSER", "victim", "(+get")
    acl.check_error("ACL", "SETUSER", "victim", "on", "(+get", "x")
    acl.check_error("ACL", "SETUSER", "victim", "(+get", "bogus)")
    acl.check_error("ACL", "SETUSER", "a b", "on")
    acl.check_error("ACL", "SETUSER")
    check_rules(acl, "ACL", "GETUSER", "victim")
    acl.check("ACL", "GETUSER", "nosuch")
    acl.check("ACL", "USERS")


RULE_ALPHABET = [
    "on", "off", "nopass", "resetpass", ">pw1", ">pw2", "<pw1", "#" + "a" * 64, "!" + "a" * 64,
    "~*", "~k*", "%R~r*", "%W~w*", "%RW~rw", "allkeys", "resetkeys", "&*", "&ch*",
    "allchannels", "resetchannels", "+@all", "-@all", "allcommands", "nocommands", "+get",
    "-get", "+set", "-config|set", "+config|get", "+client", "-client|kill", "+select|0",
    "+debug|digest", "+@read", "-@write", "+@dangerous", "-@dangerous", "+@admin", "-@slow",
    "+@fast", "+@keyspace", "-@hash", "+@pubsub", "+@scripting", "-@connection",
    "(~s* +get)", "(+@read -@keyspace &x)", "clearselectors", "reset", "skip-sanitize-payload",
    "+nosuch", "~bad pattern", "+@nosuch",
]


@settings(max_examples=60)
@given(rules=st.lists(st.sampled_from(RULE_ALPHABET), min_size=1, max_size=8))
# A selector's command rules in Redis's hash order (compared as rules, not as text).
@example(rules=["+@read", "+@keyspace", "(+@read -@keyspace &x)"])
def test_setuser_generated_rules(acl, rules):
    try:
        acl.check("ACL", "SETUSER", "generated", *rules)
        check_user_equivalent(acl, "generated")
    finally:
        acl.both("ACL", "DELUSER", "generated", "acl-test-equivalent")


def test_acl_subcommand_shapes(acl):
    acl.check("ACL", "HELP")
    acl.check("ACL", "NOPE")
    acl.check("ACL", "CAT")
    for category in ("string", "dangerous", "keyspace", "connection", "admin", "slow"):
        theirs, ours = acl.both("ACL", "CAT", category)
        assert sorted(filter(_both_have, ours)) == sorted(filter(_both_have, theirs)), category
    acl.check("ACL", "CAT", "NOPE")
    acl.check("ACL", "CAT", "a", "b")
    acl.check("ACL", "WHOAMI")
    acl.check("ACL", "WHOAMI", "x")
    acl.check_error("ACL", "DELUSER", "default")
    acl.check_error("ACL", "DELUSER", "nosuch", "default")
    acl.check("ACL", "DELUSER", "nosuch")
    acl.check("ACL", "SAVE")
    acl.check("ACL", "LOAD")
    for bits in ("0", "-1", "4097", "x", "1", "2", "5"):
        theirs, ours = acl.both("ACL", "GENPASS", bits)
        assert type(ours) is type(theirs) and (isinstance(ours, Err) and ours == theirs
                                                or len(ours) == len(theirs))
    assert len(acl.minired.call("ACL", "GENPASS")) == 64
    acl.check("ACL", "GENPASS", "1", "2")
    acl.check("ACL", "LOG", "x")
    acl.check("ACL", "LOG", "-1")
    acl.check("ACL", "LOG", "1", "2")


def _same_shape(pair: Differential, *args) -> None:
    """HELLO's map carries the connection id, which differs between the servers."""
    theirs, ours = pair.both(*args)
    assert type(ours) is type(theirs) and (not isinstance(ours, Err) or ours == theirs)


# --- AUTH / HELLO ------------------------------------------------------------------------------

def test_auth_and_hello_against_users(acl, connect):
    acl.check("ACL", "SETUSER", "alice", "on", ">wonder", "+@all", "~*")
    acl.check("ACL", "SETUSER", "bob", "off", ">pw", "+@all")
    acl.check("ACL", "SETUSER", "carol", "on", "nopass", "+@all")
    other = connect()
    for args in [("AUTH", "alice", "wonder"), ("ACL", "WHOAMI"), ("AUTH", "alice", "nope"),
                 ("ACL", "WHOAMI"), ("AUTH", "bob", "pw"), ("AUTH", "carol", "anything"),
                 ("ACL", "WHOAMI"), ("AUTH", "nobody", "x"), ("AUTH", "x"),
                 ("HELLO", "2", "AUTH", "alice", "bad"), ("HELLO", "2", "AUTH", "alice"),
                 ("HELLO", "2", "AUTH", "alice", "wonder", "BOGUS"), ("ACL", "WHOAMI"),
                 ("RESET",), ("ACL", "WHOAMI")]:
        other.check(*args)
    _same_shape(other, "HELLO", "3", "AUTH", "alice", "wonder", "SETNAME", "n1")
    other.hello(2)
    other.check("ACL", "WHOAMI")
    other.check("CLIENT", "GETNAME")
    theirs, ours = other.both("CLIENT", "INFO")
    assert b" user=alice " in ours and b" user=alice " in theirs


def test_requirepass_is_the_default_users_password(acl, connect):
    acl.check("CONFIG", "SET", "requirepass", "secret")
    check_rules(acl, "ACL", "GETUSER", "default")
    check_rules(acl, "ACL", "LIST")
    fresh = connect()
    fresh.check("GET", "k")
    fresh.check("AUTH", "wrong")
    fresh.check("AUTH", "secret")
    fresh.check("ACL", "SETUSER", "default", ">second")
    fresh.check("CONFIG", "GET", "requirepass")
    check_rules(fresh, "ACL", "GETUSER", "default")
    late = connect()
    late.check("AUTH", "second")
    late.check("CONFIG", "SET", "requirepass", "third")
    check_rules(late, "ACL", "GETUSER", "default")
    late.check("CONFIG", "SET", "requirepass", "")
    check_rules(late, "ACL", "GETUSER", "default")
    late.check("AUTH", "x")
    # A password given by ACL SETUSER alone also makes new connections authenticate.
    late.check("ACL", "SETUSER", "default", ">only-acl")
    newest = connect()
    newest.check("PING")
    _same_shape(newest, "HELLO", "2", "AUTH", "default", "only-acl", "SETNAME", "x")
    # Setting requirepass to the value it has changes nothing, in Redis too.
    newest.check("CONFIG", "SET", "requirepass", "")
    check_rules(newest, "ACL", "GETUSER", "default")
    newest.check("ACL", "SETUSER", "default", "off")
    disabled = connect()
    disabled.check("PING")
    disabled.check("AUTH", "default", "only-acl")
    newest.check("ACL", "SETUSER", "default", "on", "nopass")


# --- permissions -------------------------------------------------------------------------------

def _restricted(acl, connect, *rules) -> Differential:
    acl.check("ACL", "SETUSER", "limited", "on", ">pw", *rules)
    pair = connect()
    pair.check("AUTH", "limited", "pw")
    return pair


def test_command_category_and_subcommand_permissions(acl, connect):
    user = _restricted(acl, connect, "~*", "&*", "+@read", "-@keyspace", "+set", "+client",
                       "-client|kill", "+config|get", "+select|0", "-@hash", "+hset")
    for args in [("GET", "k"), ("SET", "k", "v"), ("DEL", "k"), ("EXISTS", "k"),
                 ("HGET", "h", "f"), ("HSET", "h", "f", "v"), ("CLIENT", "GETNAME"),
                 ("CLIENT", "KILL", "ID", "1"), ("CONFIG", "GET", "maxclients"),
                 ("CONFIG", "SET", "maxclients", "10"), ("SELECT", "0"), ("SELECT", "1"),
                 ("FLUSHALL",), ("KEYS", "*"), ("NOSUCH",), ("CLIENT", "NOSUCH"),
                 ("GET",), ("PING",), ("AUTH", "limited", "pw"), ("ACL", "WHOAMI")]:
        user.check(*args)


def test_key_and_channel_permissions(acl, connect):
    user = _restricted(acl, connect, "-@all", "+get", "+set", "+mget", "+mset", "+exists",
                       "+publish", "+subscribe", "+psubscribe", "+unsubscribe", "+punsubscribe",
                       "+lmove", "~pub:*", "%R~ro:*", "%W~wo:*", "&news.*", "&exact")
    for args in [("SET", "pub:1", "v"), ("GET", "pub:1"), ("GET", "other"),
                 ("GET", "ro:1"), ("SET", "ro:1", "v"), ("SET", "wo:1", "v"), ("GET", "wo:1"),
                 ("MSET", "pub:a", "1", "other", "2"), ("MGET", "pub:a", "ro:x", "other"),
                 ("PUBLISH", "news.today", "m"), ("PUBLISH", "sports", "m"),
                 ("PUBLISH", "exact", "m")]:
        user.check(*args)
    user.check("SUBSCRIBE", "news.a", "sports")
    user.check("PSUBSCRIBE", "news.*")  # pattern not listed literally
    user.check("PSUBSCRIBE", "exact")
    user.check("PUNSUBSCRIBE", "exact")


def test_dryrun(acl):
    acl.check("ACL", "SETUSER", "dry", "on", "-@all", "+get", "+publish", "+config|get",
              "~a*", "&c*", "(~b* +set)")
    for args in [("get", "a1"), ("get", "zz"), ("set", "b1", "v"), ("set", "a1", "v"),
                 ("del", "a1"), ("publish", "c1", "m"), ("publish", "d1", "m"),
                 ("config", "get", "x"), ("config", "set", "x", "y"), ("config",),
                 ("config", "nosuch"), ("nocmd", "x"), ("get",)]:
        acl.check("ACL", "DRYRUN", "dry", *args)
    acl.check("ACL", "DRYRUN", "nouser", "get", "x")


def test_multi_queue_time_and_exec_time_checks(acl, connect):
    user = _restricted(acl, connect, "+@all", "~*", "&*", "-del")
    user.check("MULTI")
    user.check("GET", "a")
    user.check("DEL", "a")
    user.check("EXEC")
    user.check("MULTI")
    user.check("GET", "a")
    user.check("SET", "b", "1")
    user.check("PUBLISH", "ch", "m")
    acl.check("ACL", "SETUSER", "limited", "-get", "resetkeys", "~a", "resetchannels")
    user.check("EXEC")
    _compare_log(acl)


def test_scripts_check_the_callers_permissions(acl, connect):
    user = _restricted(acl, connect, "-@all", "+eval", "+evalsha", "+get", "+publish",
                       "~k*", "&c*")
    for script, args in [("return redis.call('get','nope')", ("0",)),
                         ("return redis.call('get','k1')", ("0",)),
                         ("return redis.pcall('del','k1')", ("0",)),
                         ("return redis.call('del','k1')", ("0",)),
                         ("return redis.call('publish','x','m')", ("0",)),
                         ("return redis.call('get',KEYS[1])", ("1", "nope"))]:
        user.check("EVAL", script, *args)
    # An unrestricted caller's script runs everything afterwards.
    acl.check("EVAL", "return redis.call('del','nope')", "0")
    _compare_log(acl)


# --- DELUSER, CLIENT KILL USER, the log --------------------------------------------------------

def test_deluser_disconnects_its_clients(acl, connect):
    user = _restricted(acl, connect, "+@all", "~*", "&*")
    acl.check("CLIENT", "KILL", "USER", "nosuch")
    theirs, ours = acl.both("CLIENT", "LIST")
    assert ours.count(b" user=limited ") == theirs.count(b" user=limited ") == 1
    acl.check("ACL", "DELUSER", "limited", "other")
    for client in (user.redis, user.minired):
        with pytest.raises((ConnectionError, OSError)):
            client.call("PING")


def test_client_kill_user(acl, connect):
    _restricted(acl, connect, "+@all", "~*", "&*")
    _restricted(acl, connect, "+@all", "~*", "&*")
    acl.check("CLIENT", "KILL", "USER", "limited")
    acl.check("CLIENT", "KILL", "USER", "limited")


def test_setuser_revoking_channels_drops_subscribers(acl, connect):
    user = _restricted(acl, connect, "+@all", "~*", "resetchannels", "&a", "&b")
    user.check("SUBSCRIBE", "a")
    acl.check("ACL", "SETUSER", "limited", "resetchannels", "&a")
    acl.check("ACL", "SETUSER", "limited", "resetchannels", "&b")
    for client in (user.redis, user.minired):
        with pytest.raises((ConnectionError, OSError)):
            client.call("PING")


def test_setuser_revoking_allchannels_drops_pattern_subscribers(acl, connect):
    # The old rules held every channel (allchannels, no pattern listed): resetchannels revokes.
    user = _restricted(acl, connect, "+@all", "~*", "allchannels")
    user.check("PSUBSCRIBE", "foo")
    acl.check("ACL", "SETUSER", "limited", "resetchannels")
    for client in (user.redis, user.minired):
        with pytest.raises((ConnectionError, OSError)):
            client.call("PING")


def _log_fields(reply) -> list:
    """ACL LOG entries without their times and client descriptions."""
    entries = []
    for entry in reply:
        fields = dict(zip(entry[::2], entry[1::2]))
        info = fields.pop(b"client-info")
        fields.pop(b"age-seconds")
        user = re.search(rb" user=(\S*)", info).group(1)
        command = re.search(rb" cmd=(\S*)", info).group(1)
        entries.append((sorted(fields.items()), user, command))
    return entries


def _compare_log(acl) -> None:
    theirs, ours = acl.both("ACL", "LOG")
    assert _log_fields(ours) == _log_fields(theirs), f"redis {theirs!r}\nminired {ours!r}"


def test_acl_log(acl, connect):
    acl.check("ACL", "SETUSER", "logged", "on", ">pw", "-@all", "+get", "~k*")
    other = connect()
    other.check("AUTH", "logged", "wrong")
    other.check("AUTH", "nosuch", "wrong")
    other.check("HELLO", "2", "AUTH", "logged", "wrong")
    other.check("AUTH", "logged", "pw")
    other.check("GET", "nope")
    other.check("GET", "nope")
    other.check("SET", "k1", "v")
    _compare_log(acl)
    theirs, ours = acl.both("ACL", "LOG", "2")
    assert _log_fields(ours) == _log_fields(theirs) and len(ours) == 2
    acl.check("ACL", "LOG", "0")
    acl.check("ACL", "LOG", "RESET")
    acl.check("ACL", "LOG")


def test_acl_log_after_redis_py_handshake(acl, connect, real_redis, mini):
    """redis-py sends CLIENT SETINFO on connect. Redis 7.0.15 has no such subcommand, so it
    refuses it before any ACL check, and a restricted user's connection logs nothing: the
    ACL log holds only the user's own denials, as on Redis."""
    import redis

    acl.check("ACL", "SETUSER", "handshake", "on", ">pw", "-@all", "+get", "~k*")
    for port in (real_redis.port, mini.port):
        client = redis.Redis(port=port, username="handshake", password="pw")
        try:
            assert client.get("k1") is None
            with pytest.raises(redis.exceptions.NoPermissionError):
                client.set("k1", "v")
        finally:
            client.close()
    _compare_log(acl)
    theirs, ours = acl.both("ACL", "LOG")
    assert len(ours) == len(theirs) == 1
    other = connect()
    other.check("AUTH", "handshake", "pw")
    other.check("CLIENT", "SETINFO", "LIB-NAME", "x")
    other.check("CLIENT", "setinfo", "a", "b")
    other.check("MULTI")
    other.check("CLIENT", "SETINFO", "LIB-VER", "1")
    other.check("EXEC")
    _compare_log(acl)


def test_sort_patterns_need_every_key_readable(acl, connect):
    """SORT's BY and GET patterns can name any key: only a user who may read every key, in a
    selector that allows the SORT, may use them (unit/acl-v2 "Test sort with ACL permissions")."""
    acl.check("SET", "v1", "1")
    acl.check("RPUSH", "mylist", "1", "2")
    other = connect()
    for rules in (["on", "nopass", "(+sort ~mylist)"], ["(+sort ~mylist ~v*)"],
                  ["(+sort ~mylist %W~*)"], ["(+sort ~mylist %R~*)"], ["reset", "on", "nopass",
                  "+sort", "allkeys"], ["reset", "on", "nopass", "+sort", "~mylist"]):
        acl.check("ACL", "SETUSER", "sorter", *rules)
        other.check("AUTH", "sorter", "x")
        for args in (("SORT", "mylist", "BY", "v*"), ("SORT", "mylist", "GET", "v*"),
                     ("SORT", "mylist", "GET", "#"), ("SORT", "mylist", "BY", "nosort"),
                     ("SORT_RO", "mylist", "BY", "v*")):
            other.check(*args)
