"""The one glob matcher (minired/data/glob.py) against real Redis's stringmatchlen, through every
command that matches a pattern: KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH, PSUBSCRIBE, PUBSUB
CHANNELS, ACL key and channel patterns, CONFIG GET, COMMAND LIST FILTERBY PATTERN, FUNCTION
LIST LIBRARYNAME.

The pathological patterns (`a*a*...a*b` against a long run of `a`s) took minired's
backtracking matcher minutes; Redis gives up on such branches at once. Their tests only assert
that the reply equals Redis's: the suite's timeout is what catches a matcher that wedges.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.differential import Push

LONG = b"a" * 64
PATHOLOGICAL = [
    b"a*" * 40 + b"b",
    b"*a" * 40 + b"*b",
    b"a*" * 40 + b"[b]",
    b"*?" * 60 + b"b",
    b"a*" * 30 + b"a",           # matches, after many stars
    b"*a" * 1000,                # 1000 runs of stars: still within Redis's nesting limit
    b"*a" * 1001,                # the 1001st run is followed by a byte: never matches
    b"*a" * 1000 + b"*",         # the 1001st run ends the pattern: matches
    b"a*" * 1001,
    b"*" * 5000 + b"a",
]


def _keys_with(diff, *keys):
    diff.check("FLUSHALL")
    for key in keys:
        diff.check("SET", key, "v")


def test_keys_pathological_patterns_answer(diff):
    _keys_with(diff, LONG, b"a" * 1200, LONG + b"b", b"ab")
    for pattern in PATHOLOGICAL:
        diff.check("KEYS", pattern, unordered=True)
        diff.check("SCAN", "0", "MATCH", pattern, "COUNT", "1000", unordered=True)


def test_collection_scans_pathological_patterns(diff):
    members = [LONG, LONG + b"b", b"a" * 1200] + [b"m%d" % i for i in range(200)]
    for i, member in enumerate(members):
        diff.check("HSET", "h", member, i)
        diff.check("SADD", "s", member)
        diff.check("ZADD", "z", i, member)
    for pattern in PATHOLOGICAL[:5]:
        for name, key in (("HSCAN", "h"), ("SSCAN", "s"), ("ZSCAN", "z")):
            redis_reply, minired_reply = diff.both(name, key, "0", "MATCH", pattern,
                                                   "COUNT", "10000")
            # A big collection is walked in an order of minired's own: compare the sets.
            assert redis_reply[0] == minired_reply[0] == b"0"
            assert sorted(redis_reply[1]) == sorted(minired_reply[1]), (name, pattern)


def test_psubscribe_and_pubsub_channels_pathological_patterns(diff):
    diff.hello(3)
    diff.check("SUBSCRIBE", LONG)
    for pattern in PATHOLOGICAL[:5]:
        diff.check("PUBSUB", "CHANNELS", pattern)
        diff.check("PSUBSCRIBE", pattern)
        published = diff.check("PUBLISH", LONG, "m")
        while isinstance(published, Push):
            published = diff.read_both()
        diff.check("PUNSUBSCRIBE", pattern)


def test_acl_key_and_channel_patterns(diff):
    pattern = PATHOLOGICAL[0]
    try:
        diff.check("ACL", "SETUSER", "globber", "on", "nopass", b"~" + pattern,
                   b"~" + PATHOLOGICAL[4], b"&" + pattern, "+@all")
        diff.check("AUTH", "globber", "x")
        diff.check("GET", LONG)                # denied: the pattern never matches it
        diff.check("GET", LONG + b"b")        # allowed by the first pattern
        diff.check("GET", b"a" * 40)          # allowed by the second
        diff.check("PUBLISH", LONG, "m")
        diff.check("PUBLISH", LONG + b"b", "m")
        diff.check("ACL", "DRYRUN", "globber", "GET", LONG)
    finally:
        diff.check("AUTH", "default", "x")
        diff.check("ACL", "DELUSER", "globber")


def test_nocase_matching_config_get_and_command_list(diff):
    patterns = [b"MAXMEM*", b"[M]axmemory", b"[\\M]axmemory", b"[\\m]axmemory", b"[Z-a]axmemory",
                b"[A-Z]axmemory", b"[^M]axmemory", b"max\\Memory*", b"maxmemor\\y",
                b"maxmemory\\", b"*-" * 30 + b"x", b"[a-]*", b"*[", b"?" * 9, b"*\xff*"]
    for pattern in patterns:
        # Values such as dir and port differ between the two servers: the names are compared.
        redis_reply, minired_reply = diff.both("CONFIG", "GET", pattern)
        assert sorted(redis_reply[::2]) == sorted(minired_reply[::2]), pattern
    for pattern in (b"CONFIG|*", b"*|[K]ILL", b"*|[\\K]ILL", b"[X-z]add", b"*a" * 20, b"?et"):
        diff.check("COMMAND", "LIST", "FILTERBY", "PATTERN", pattern, unordered=True)


def test_function_list_libraryname_pattern(diff):
    name = "a" * 64
    diff.check("FUNCTION", "LOAD",
               f"#!lua name={name}\nredis.register_function('f{name}', function() return 1 end)")
    for pattern in (PATHOLOGICAL[0], PATHOLOGICAL[4], b"A*", b"[A-B]*"):
        diff.check("FUNCTION", "LIST", "LIBRARYNAME", pattern)


def test_class_escape_and_range_quirks(diff):
    keys = [b"", b"a", b"A", b"-", b"]", b"^", b"\\", b"[", b"\x80", b"\xff", b"\x7f", b"\x00",
            b"ab", b"a\\", b"a]", b"z", b"b\x00c"]
    _keys_with(diff, *keys)
    for pattern in (b"[\x80-\x7f]", b"[\x7f-\x80]", b"[\xff-a]", b"[a-\xff]", b"[\\]]", b"[\\",
                    b"[^", b"[^\\]", b"[a-\\]", b"[]", b"[]]", b"[^]]", b"a\\", b"\\\\",
                    b"[a-]", b"[-]", b"[--a]", b"[^-a]", b"b\x00*", b"b?c", b"[\x00]",
                    b"[\\\x00]", b"*\\", b"[[]", b"[^[]"):
        diff.check("KEYS", pattern, unordered=True)


_PATTERN_BYTES = [b"a", b"b", b"A", b"*", b"*", b"?", b"[", b"]", b"^", b"-", b"\\", b"\xff",
                  b"\x80", b"\x00"]
_KEY_BYTES = [b"a", b"b", b"A", b"-", b"]", b"^", b"\\", b"[", b"*", b"\xff", b"\x80", b"\x00"]
_patterns = st.lists(st.sampled_from(_PATTERN_BYTES), max_size=8).map(b"".join)
_keys = st.lists(st.sampled_from(_KEY_BYTES), max_size=6).map(b"".join)


@settings(max_examples=150)
@given(keys=st.lists(_keys, min_size=1, max_size=8, unique=True),
       patterns=st.lists(_patterns, min_size=1, max_size=4))
def test_keys_matches_redis_on_random_patterns(diff, keys, patterns):
    diff.check("FLUSHALL")
    diff.check("MSET", *[part for key in keys for part in (key, b"v")])
    for pattern in patterns:
        diff.check("KEYS", pattern, unordered=True)


def test_long_patterns_match_as_redis(diff):
    # Past a few hundred bytes a pattern is matched part by part rather than as one regex.
    long_keys = [b"x" * 300 + b"ab" * 200, b"a" * 700, b"q[" * 150 + b"Z" * 300]
    _keys_with(diff, *long_keys, b"a", b"xa")
    filler = b"x" * 300
    for pattern in (filler + b"*", b"*" + b"ab" * 200, filler + b"?" * 400,
                    filler + b"[ab]" * 400, b"*" + b"[ab]" * 200 + b"*",
                    b"x*" * 150 + b"a*b", b"a*" * 300 + b"a", b"[a]" * 700, b"[a]" * 699,
                    b"*" + b"a?" * 200 + b"*a", b"q\\[" * 150 + b"*", b"q[[]" * 150 + b"Z*",
                    b"*" * 400 + b"Z" * 300, b"?" * 700, b"?" * 701, b"[^b]" * 700):
        diff.check("KEYS", pattern, unordered=True)
        diff.check("SCAN", "0", "MATCH", pattern, "COUNT", "1000", unordered=True)
