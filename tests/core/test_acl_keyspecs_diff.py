"""ACL read/write key permissions (%R~, %W~) judged per key from its key spec's flags, as Redis
does: ACCESS needs read, INSERT/DELETE/UPDATE need write, a key with neither (EXISTS, TYPE,
the OW of SET) needs only to match a pattern."""
import pytest

from tests.core.test_acl_diff import acl  # noqa: F401  (the fixture: admin user, cleanup)

CASES = [
    ("get", "r1"), ("get", "w1"), ("set", "w1", "v"), ("set", "r1", "v"),
    ("set", "w1", "v", "get"), ("exists", "w1"), ("exists", "r1"), ("type", "w1"),
    ("lmove", "r1", "w1", "left", "right"), ("lmove", "w1", "w1", "left", "right"),
    ("lmove", "rw1", "w1", "left", "right"), ("copy", "r1", "w1"), ("copy", "w1", "r1"),
    ("sort", "r1", "store", "w1"), ("sort", "w1"), ("sort_ro", "r1"),
    ("bitfield", "r1", "get", "u8", "0"), ("bitfield", "w1", "set", "u8", "0", "1"),
    ("incr", "w1"), ("incr", "rw1"), ("del", "w1"), ("del", "r1"), ("append", "w1", "x"),
    ("object", "encoding", "w1"), ("ttl", "w1"), ("expire", "w1", "10"), ("rename", "w1", "w2"),
    ("smove", "rw1", "w1", "m"), ("eval", "return 1", "1", "w1"), ("eval", "return 1", "1", "r1"),
    ("zunionstore", "w1", "2", "r1", "r2"), ("xread", "streams", "r1", "0"),
    ("georadius", "r1", "0", "0", "1", "km", "store", "w1"), ("touch", "w1"), ("dump", "r1"),
    ("restore", "w1", "0", "x"), ("pfcount", "r1"), ("pfmerge", "w1", "r1"),
    # migrateGetKeys: AUTH and AUTH2 values are skipped, a KEYS value is no keyword
    ("migrate", "h", "1", "rw1", "0", "500"), ("migrate", "h", "1", "r1", "0", "500"),
    ("migrate", "h", "1", "", "0", "500", "KEYS", "rw1", "r1"),
    ("migrate", "h", "1", "", "0", "500", "AUTH", "KEYS", "KEYS", "r1"),
    ("migrate", "h", "1", "", "0", "500", "AUTH2", "KEYS", "1", "KEYS", "w1"),
    ("migrate", "h", "1", "", "0", "500", "AUTH2", "u", "KEYS", "KEYS", "rw1"),
    ("migrate", "h", "1", "r1", "0", "500", "COPY", "REPLACE"),
]


@pytest.mark.parametrize("rules", [("%R~r*", "%W~w*"), ("%R~r*", "%W~w*", "%RW~rw*"),
                                   ("%W~*",), ("%R~*",)])
def test_key_permissions_follow_key_specs(acl, rules):  # noqa: F811
    acl.check("ACL", "SETUSER", "keyspec-user", "on", "nopass", "+@all", *rules)
    for case in CASES:
        acl.check("ACL", "DRYRUN", "keyspec-user", *case)
