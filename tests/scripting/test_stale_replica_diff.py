"""Scripts on a replica whose master link is down, with replica-serve-stale-data no: only a
script declaring allow-stale runs (an EVAL without a shebang is refused too), and within it a
command not flagged stale is refused; compared with redis-server (unit/scripting)."""
from __future__ import annotations

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient
from tests.support.servers import RedisServer

STALE_OK = "#!lua flags=allow-stale,no-writes\n"
COMMANDS = [
    ("EVAL", "return redis.call('get','x')", "1", "x"),
    ("EVAL", "#!lua flags=no-writes\nreturn 1", "0"),
    ("EVAL", STALE_OK + "return 1", "0"),
    ("EVAL", STALE_OK + "return redis.call('get','x')", "1", "x"),
    ("EVAL", STALE_OK + "return redis.call('echo','foobar')", "0"),
    ("EVALSHA", "a" * 40, "0"),
    ("FCALL", "nosuch", "0"),
]


def _scenario(port: int) -> list:
    client = RawClient(port)
    try:
        client.call("SET", "x", "1")
        sha = client.call("SCRIPT", "LOAD", STALE_OK + "return redis.call('echo','foobar')")
        plain = client.call("SCRIPT", "LOAD", "return 2")
        client.call("CONFIG", "SET", "replica-serve-stale-data", "no")
        client.call("REPLICAOF", "127.0.0.1", "1")
        seen = [client.call(*command) for command in COMMANDS]
        seen.append(client.call("EVALSHA", sha, "0"))
        seen.append(client.call("EVALSHA", plain, "0"))
        client.call("REPLICAOF", "NO", "ONE")
        return seen
    finally:
        client.close()


def test_scripts_on_a_stale_replica():
    with RedisServer() as redis, SubprocessServer() as mini:
        assert _scenario(mini.port) == _scenario(redis.port)
