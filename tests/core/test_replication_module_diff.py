"""REPLICAOF/SLAVEOF NO ONE and MODULE against real Redis (a master without modules)."""
import pytest


@pytest.mark.parametrize("command", ["REPLICAOF", "SLAVEOF", "replicaof"])
def test_replicaof_no_one_on_a_master(diff, command):
    diff.check(command, "NO", "ONE")
    diff.check(command, "no", "one")
    diff.check(command, "NO")
    diff.check(command, "NO", "ONE", "x")
    for port in ("abc", "-1", "65536", "1.5", "two"):
        diff.check(command, "host", port)
    diff.check("ROLE")


def test_module_subcommands(diff):
    diff.check("MODULE", "LIST")
    diff.check("MODULE", "LIST", "x")
    diff.check("MODULE")
    diff.check("MODULE", "HELP")
    diff.check("MODULE", "FOO")
    diff.check("MODULE", "LOAD")
    for args in (("LOAD", "/nonexistent.so"), ("LOAD", "/x.so", "a", "b"), ("UNLOAD", "foo"),
                 ("LOADEX", "/x.so"), ("LOADEX", "/x.so", "CONFIG", "a", "b", "ARGS", "c")):
        diff.check("MODULE", *args)
    for name in ("module", "module|list", "module|load", "module|loadex", "module|unload",
                 "module|help", "replicaof", "slaveof"):
        theirs, ours = diff.both("COMMAND", "INFO", name)
        if name == "module":  # subcommands come in Redis's hash order
            theirs[0][9].sort()
            ours[0][9].sort()
        assert ours == theirs, name
        # (COMMAND DOCS of every command: tests/core/test_command_introspection.py)
