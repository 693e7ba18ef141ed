"""Real cluster clients, unchanged, against minired --cluster 3: redis-py's RedisCluster (sync
and asyncio), `redis-cli -c`, and Node's ioredis Cluster; resharding and a down cluster
driven by MINIRED CLUSTER while they run."""
from __future__ import annotations

import asyncio
import pathlib
import shutil
import subprocess

import pytest
import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from minired.features.cluster import key_hash_slot
from tests.support.respclient import Err, RawClient, call_once

NODE_DIR = pathlib.Path(__file__).parents[1] / "integration" / "node"


def _control(cluster, *args):
    client = RawClient(cluster.port)
    try:
        return client.call("MINIRED", "CLUSTER", *args)
    finally:
        client.close()


def test_redis_py_cluster_spreads_10000_keys_over_every_node(fresh_mini):
    client = RedisCluster(host=fresh_mini.host, port=fresh_mini.port)
    try:
        assert len(client.get_nodes()) == 3
        pipe = client.pipeline()
        for i in range(10_000):
            pipe.set(f"key:{i}", i)
        assert all(pipe.execute())
        pipe = client.pipeline()
        for i in range(10_000):
            pipe.get(f"key:{i}")
        assert pipe.execute() == [str(i).encode() for i in range(10_000)]
        sizes = [call_once(port, "DBSIZE") for _, port in fresh_mini.nodes]
        assert sum(sizes) == 10_000 and all(size > 3000 for size in sizes), sizes
        with pytest.raises(redis.exceptions.RedisClusterException, match="same key slot"):
            client.execute_command("MSET", "a", "1", "b", "2")  # (the client's own check)
        assert client.mset({"{t}a": "1", "{t}b": "2"}) is True
        slots = client.cluster_slots()
        ranges = sorted(slots)
        assert ranges == [(0, 5460), (5461, 10922), (10923, 16383)]
        assert client.keyslot("{user}1") == key_hash_slot(b"{user}1")
    finally:
        client.close()


def test_mset_across_slots_is_redis_crossslot_error(fresh_mini):
    """Sent to one node as it is (the client cannot split it), MSET over two slots is
    refused with Redis's CROSSSLOT."""
    raw = RawClient(fresh_mini.port)
    try:
        reply = raw.call("MSET", "{a}1", "x", "{a}2", "y", "b", "z")
        assert reply.message == "CROSSSLOT Keys in request don't hash to the same slot"
    finally:
        raw.close()
    client = RedisCluster(host=fresh_mini.host, port=fresh_mini.port)
    try:
        with pytest.raises(redis.exceptions.ClusterCrossSlotError,
                           match="Keys in request don't hash to the same slot"):
            client.execute_command("MSET", "b", "1", "{b}x", "2", "c", "3",
                                   target_nodes=client.get_node_from_key("b"))
    finally:
        client.close()


def test_redis_py_follows_a_slot_resharded_in_the_middle_of_a_pipeline(fresh_mini):
    client = RedisCluster(host=fresh_mini.host, port=fresh_mini.port)
    try:
        keys = [f"{{job}}:{i}" for i in range(20)]
        slot = key_hash_slot(b"{job}")
        owner = client.get_node_from_key(keys[0])
        target = next(node for node in client.get_nodes() if node.port != owner.port)
        pipe = client.pipeline()
        for key in keys:
            pipe.set(key, key)
        pipe.execute()
        # Half the slot moves, then the pipeline runs: redis-py follows ASK per command.
        moved = _control(fresh_mini, "MIGRATE", slot, target.port)
        assert moved == 10
        pipe = client.pipeline()
        for key in keys:
            pipe.get(key)
            pipe.incr("{job}:n")
        replies = pipe.execute()
        assert replies[0::2] == [key.encode() for key in keys]
        assert replies[1::2] == list(range(1, 21))
        # The move completes: MOVED, and the client learns the new owner.
        _control(fresh_mini, "MIGRATE", slot, target.port, "FINISH")
        assert client.get(keys[0]) == keys[0].encode()
        assert client.get_node_from_key(keys[0]).port == target.port
        assert [client.get(key) for key in keys] == [key.encode() for key in keys]
    finally:
        client.close()


def test_redis_py_asyncio_cluster(fresh_mini):
    async def run() -> None:
        client = AsyncRedisCluster(host=fresh_mini.host, port=fresh_mini.port)
        try:
            # One request at a time, and pipelines: opening connections for concurrent
            # requests, redis-py 8.1's asyncio cluster client now and then trips over its own
            # connections (AttributeError on a None writer), against a real Redis Cluster too.
            pipe = client.pipeline()
            for i in range(2000):
                pipe.set(f"a:{i}", i)
            assert all(await pipe.execute())
            values = [await client.get(f"a:{i}") for i in range(2000)]
            assert values == [str(i).encode() for i in range(2000)]
            slot = key_hash_slot(b"a:7")
            owner = client.get_node_from_key("a:7")
            target = next(node for node in client.get_nodes() if node.port != owner.port)
            _control(fresh_mini, "MIGRATE", slot, target.port, "FINISH")
            assert await client.get("a:7") == b"7"  # after a MOVED, from the new owner
            pipe = client.pipeline()
            for i in range(100):
                pipe.incr(f"{{c}}:{i % 3}")
            assert (await pipe.execute())[-3:] == [33, 33, 34]
            with pytest.raises(redis.exceptions.ClusterCrossSlotError):
                await client.execute_command("DEL", "a:1", "a:2",
                                             target_nodes=client.get_node_from_key("a:1"))
        finally:
            await client.aclose()

    asyncio.run(run())


def test_a_killed_master_fails_the_cluster_after_the_node_timeout(fresh_mini):
    """Without replicas: the killed node's port refuses at once, the others keep redirecting
    to it until cluster-node-timeout has passed, then flag it FAIL and answer CLUSTERDOWN
    (cluster-require-full-coverage yes) until it comes back."""
    ports = [port for _, port in fresh_mini.nodes]
    raw = [RawClient(port) for port in ports[:2]]
    victim = RawClient(ports[2])
    try:
        victim.call("SET", "foo", "1")  # slot 12182: node 2's
        assert _control(fresh_mini, "FAILOVER", ports[2]) == b"OK"
        with pytest.raises(ConnectionError):
            victim.call("PING")  # its connections are dropped
        with pytest.raises(ConnectionRefusedError):
            RawClient(ports[2])
        for client in raw:  # the others have not noticed yet
            assert client.call("GET", "foo").message == f"MOVED 12182 127.0.0.1:{ports[2]}"
            assert "cluster_state:ok" in client.call("CLUSTER", "INFO").decode()
        assert " master - 0 0 3 disconnected " in raw[0].call("CLUSTER", "NODES").decode()
        assert raw[0].call("MINIRED", "ADVANCE", 15000) > 0  # cluster-node-timeout's default
        for client in raw:
            assert client.call("GET", "foo").message == "CLUSTERDOWN The cluster is down"
            assert client.call("GET", "b").message == "CLUSTERDOWN The cluster is down"
            assert client.call("PING") == b"PONG"  # keyless commands still run
            info = client.call("CLUSTER", "INFO").decode()
            assert "cluster_state:fail" in info and "cluster_slots_fail:5461" in info
        nodes = raw[0].call("CLUSTER", "NODES").decode()
        assert " master,fail - " in nodes and " disconnected " in nodes
        assert raw[0].call("EVAL", "return redis.call('get', 'b')", 0).message.startswith(
            "ERR Script attempted to execute a command while the cluster is down")
        assert _control(fresh_mini, "RECOVER", ports[2]) == b"OK"
        assert call_once(ports[2], "GET", "foo") == b"1"  # back with its data
        assert "cluster_state:ok" in raw[0].call("CLUSTER", "INFO").decode()
    finally:
        for client in raw:
            client.close()
        victim.close()


def test_without_full_coverage_the_other_slots_stay_served(fresh_mini):
    ports = [port for _, port in fresh_mini.nodes]
    raw = RawClient(ports[0])
    try:
        for port in ports:
            assert call_once(port, "CONFIG", "SET", "cluster-require-full-coverage", "no") == b"OK"
        assert _control(fresh_mini, "FAILOVER", ports[2]) == b"OK"
        raw.call("MINIRED", "ADVANCE", 15000)
        assert "cluster_state:ok" in raw.call("CLUSTER", "INFO").decode()
        assert raw.call("SET", "b", "1") == b"OK"  # slot 3300: node 0's
        assert raw.call("GET", "foo").message == f"MOVED 12182 127.0.0.1:{ports[2]}"
    finally:
        raw.close()
        _control(fresh_mini, "RECOVER", ports[2])
        for port in ports:
            call_once(port, "CONFIG", "SET", "cluster-require-full-coverage", "yes")


def test_cluster_control_needs_its_flag_and_checks_its_arguments(fresh_mini, mini):
    plain = RawClient(mini.port)
    try:
        assert plain.call("MINIRED", "CLUSTER", "FAILOVER", 1).message == \
            "ERR This instance has cluster support disabled"
    finally:
        plain.close()
    port = fresh_mini.nodes[1][1]
    assert _control(fresh_mini, "MIGRATE", 1, 1).message == "ERR no cluster node listens on port 1"
    assert _control(fresh_mini, "MIGRATE", 16384, port).message == "ERR Invalid slot"
    assert _control(fresh_mini, "MIGRATE", 1, fresh_mini.port).message.startswith(
        "ERR slot 1 is already served by")
    assert _control(fresh_mini, "MIGRATE", 1, port, "COUNT").message == "ERR syntax error"
    assert _control(fresh_mini, "NOSUCH", 1).message == "ERR syntax error"
    from minired.embed import EmbeddedServer

    with EmbeddedServer(cluster=1) as single:
        client = RawClient(single.port)
        try:
            assert client.call("MINIRED", "CLUSTER", "FAILOVER", single.port).message == (
                "ERR cluster control is disabled; start minired with --cluster-control to use "
                "MINIRED CLUSTER")
            assert client.call("CLUSTER", "SLOTS")[0][:2] == [0, 16383]
            assert client.call("SET", "any", "1") == b"OK"
        finally:
            client.close()


def test_redis_cli_follows_redirections(fresh_mini):
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli is needed (Debian's redis-tools)"

    def run(*args: str) -> str:
        result = subprocess.run([cli, "-c", "-p", str(fresh_mini.port), *args],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    for key in ("foo", "b", "{user}x"):
        assert run("SET", key, f"value-{key}") == "OK"
        assert run("GET", key) == f"value-{key}"
    assert run("MSET", "b", "1", "foo", "2") == \
        "CROSSSLOT Keys in request don't hash to the same slot"
    # redis-cli --cluster reads the layout the way cluster tooling does.
    result = subprocess.run([cli, "--cluster", "check", f"127.0.0.1:{fresh_mini.port}"],
                            capture_output=True, text=True, timeout=30)
    assert "[OK] All 16384 slots covered." in result.stdout, result.stdout + result.stderr


IOREDIS_SCRIPT = r"""
const Redis = require('ioredis');
const port = Number(process.argv[2]);
(async () => {
  const cluster = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  const keys = [];
  for (let i = 0; i < 300; i++) keys.push(`k:${i}`);
  await Promise.all(keys.map((k, i) => cluster.set(k, i)));
  const values = await Promise.all(keys.map((k) => cluster.get(k)));
  const ok = values.every((v, i) => v === String(i));
  const nodes = cluster.nodes('master').length;
  const crossslot = await cluster.mset('a', 1, 'b', 2).catch((e) => e.message);
  const tagged = await cluster.mset('{t}a', 1, '{t}b', 2);
  const pipeline = await cluster.pipeline().incr('{p}n').incr('{p}n').exec();
  const script = await cluster.eval("return redis.call('incr', KEYS[1])", 1, '{p}n');
  console.log(JSON.stringify({ ok, nodes, crossslot, tagged, pipeline, script }));
  cluster.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_ioredis_cluster(fresh_mini, tmp_path):
    node = shutil.which("node")
    assert node, "node is needed (scripts/test.sh installs the Node clients)"
    assert (NODE_DIR / "node_modules" / "ioredis").is_dir(), \
        "run `npm install` in tests/integration/node (scripts/test.sh does)"
    script = NODE_DIR / f".cluster_check_{tmp_path.name}.js"
    script.write_text(IOREDIS_SCRIPT)
    try:
        result = subprocess.run([node, str(script), str(fresh_mini.port)], capture_output=True,
                                text=True, timeout=60, cwd=NODE_DIR)
    finally:
        script.unlink()
    assert result.returncode == 0, result.stderr[-2000:]
    import json

    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {
        "ok": True, "nodes": 3,
        "crossslot": "CROSSSLOT Keys in request don't hash to the same slot",
        "tagged": "OK", "pipeline": [[None, 1], [None, 2]], "script": 3,
    }


def test_the_command_line_serves_a_cluster_and_names_every_node():
    from minired.embed import SubprocessServer

    with SubprocessServer(cluster=3) as srv:
        assert len(srv.addresses) == 3 and srv.port == srv.addresses[0][1]
        client = RedisCluster(host=srv.host, port=srv.port)
        try:
            ports = sorted(node.port for node in client.get_nodes())
            assert ports == sorted(port for _, port in srv.addresses)
            for i in range(100):
                client.set(f"cli:{i}", i)
            assert client.get("cli:42") == b"42"
            info = client.info("server", target_nodes=RedisCluster.RANDOM)
            assert info["redis_mode"] == "cluster"
        finally:
            client.close()
        raw = RawClient(srv.port)
        try:
            assert raw.call("MINIRED", "CLUSTER", "RECOVER", srv.port).message.startswith(
                "ERR cluster control is disabled")
        finally:
            raw.close()


def test_the_command_line_serves_replicas_and_spare_nodes():
    from minired.embed import SubprocessServer

    with SubprocessServer(cluster=2, cluster_replicas=1, cluster_spares=1) as srv:
        ports = [port for _, port in srv.addresses]
        assert len(ports) == 5
        roles = [call_once(port, "CLUSTER", "NODES").decode() for port in ports]
        assert [next(line.split()[2] for line in text.splitlines() if "myself" in line)
                for text in roles] == ["myself,master"] * 2 + ["myself,slave"] * 2 + [
                    "myself,master"]
        assert roles[4].count("\n") == 1  # the spare knows only itself
        assert call_once(ports[0], "SET", "b", "1") == b"OK"
        assert call_once(ports[2], "GET", "b") == Err(f"MOVED 3300 127.0.0.1:{ports[0]}")


def test_each_node_saves_and_reloads_its_own_file(tmp_path):
    from minired.embed import EmbeddedServer

    def start():
        return EmbeddedServer(cluster=3, dir=str(tmp_path)).start()

    srv = start()
    try:
        client = RedisCluster(host=srv.host, port=srv.port)
        for i in range(60):
            client.set(f"saved:{i}", i)
        node0 = srv.nodes[0][1]
        call_once(node0, "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', "
            "function(k, a) return redis.call('get', a[1]) end)")
        sizes = [call_once(port, "DBSIZE") for _, port in srv.nodes]
        for _, port in srv.nodes:
            assert call_once(port, "SAVE") == b"OK"
        client.close()
    finally:
        srv.stop()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dump-0.rdb", "dump-1.rdb", "dump-2.rdb", "nodes-0.conf", "nodes-1.conf", "nodes-2.conf"]
    srv = start()
    try:
        assert [call_once(port, "DBSIZE") for _, port in srv.nodes] == sizes
        # The function came back with the file, before the cluster formed: its calls are
        # checked all the same ("foo" is node 2's).
        assert call_once(srv.nodes[0][1], "FCALL", "f", 0, "foo").message.startswith(
            "ERR Script attempted to access a non local key in a cluster node")
        client = RedisCluster(host=srv.host, port=srv.port)
        assert [client.get(f"saved:{i}") for i in range(60)] == [str(i).encode() for i in range(60)]
        client.close()
    finally:
        srv.stop()
