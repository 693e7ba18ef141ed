"""The AOF is obeyed as a master's stream is: a replica (replica-read-only yes) loading an AOF
applies its writes, a script's included (integration/aof "EVAL can process writes from AOF in
read-only replicas"); compared with redis-server on the same files."""
from __future__ import annotations

from minired.embed import SubprocessServer
from tests.support.respclient import RawClient, encode_command
from tests.support.servers import RedisServer


def _write_aof(directory) -> None:
    aof = directory / "appendonlydir"
    aof.mkdir(parents=True)
    (aof / "appendonly.aof.manifest").write_text("file appendonly.aof.1.incr.aof seq 1 type i\n")
    (aof / "appendonly.aof.1.incr.aof").write_bytes(b"".join(encode_command(argv) for argv in (
        ("SELECT", "9"),
        ("EVAL", "redis.call('set',KEYS[1],'100')", "1", "foo"),
        ("EVAL", "redis.call('incr',KEYS[1])", "1", "foo"),
        ("EVAL", "#!lua\nredis.call('incr',KEYS[1])", "1", "foo"),
        ("INCR", "foo"))))


def _loaded(port: int) -> list:
    client = RawClient(port)
    try:
        client.call("SELECT", "9")
        return [client.call("GET", "foo"), client.call("SET", "foo", "1")]
    finally:
        client.close()


def test_a_read_only_replica_applies_its_aof(tmp_path):
    args = ("--appendonly", "yes", "--replica-read-only", "yes", "--replicaof", "127.0.0.1", "0")
    results = []
    for name, server_class in (("redis", RedisServer), ("minired", SubprocessServer)):
        directory = tmp_path / name
        _write_aof(directory)
        with server_class("--dir", str(directory), *args) as server:
            results.append(_loaded(server.port))
    assert results[1] == results[0]
    assert results[0][0] == b"103"
