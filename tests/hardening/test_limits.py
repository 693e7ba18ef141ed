"""Limits as Redis configures them: maxclients, query buffer, bulk length, output buffers,
maxmemory. Each test starts its own servers, since it changes their configuration."""
from __future__ import annotations

import socket
import time

import pytest

from minired.embed import EmbeddedServer
from tests.support.respclient import Err, RawClient, encode_command
from tests.support.servers import RedisServer
from tests.support.waiting import wait_blocked, wait_until

from .helpers import is_closed, read_until_closed, wait_for_state


@pytest.fixture
def pair():
    """A fresh real Redis and a fresh minired, both on default settings."""
    with RedisServer() as redis_server, EmbeddedServer() as minired:
        yield redis_server.port, minired


def test_maxclients_refuses_with_redis_error(pair):
    redis_port, minired = pair
    replies = []
    for port in (redis_port, minired.port):
        admin = RawClient(port)
        assert admin.call("CONFIG", "SET", "maxclients", "3") == b"OK"
        held = [RawClient(port), RawClient(port)]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
            replies.append(read_until_closed(extra))
        for client in held:
            client.close()
        admin.close()
    assert replies[1] == replies[0] == b"-ERR max number of clients reached\r\n"
    # Once clients leave, new ones are accepted again.
    client = RawClient(minired.port)
    assert client.call("PING") == b"PONG"
    client.close()


@pytest.mark.parametrize("payload", [
    b"*1\r\n$2000000\r\n" + b"x" * 1_500_000,   # a bulk still arriving
    b"SET k " + b"v" * 1_500_000,              # an inline request never finished
], ids=["bulk", "inline"])
def test_query_buffer_limit_closes_the_client(pair, payload):
    redis_port, minired = pair
    outcomes = []
    for port in (redis_port, minired.port):
        admin = RawClient(port)
        admin.call("CONFIG", "SET", "client-query-buffer-limit", "1mb")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            try:
                sock.sendall(payload)
            except OSError:
                pass
            outcomes.append(read_until_closed(sock))
        assert admin.call("PING") == b"PONG"
        admin.close()
    assert outcomes[1] == outcomes[0]


def test_query_buffer_limit_applies_to_a_blocked_client(pair):
    _, minired = pair
    admin = RawClient(minired.port)
    admin.call("CONFIG", "SET", "client-query-buffer-limit", "1mb")
    with socket.create_connection(("127.0.0.1", minired.port), timeout=5) as sock:
        sock.sendall(encode_command(["BLPOP", "nothing", "0"]))
        wait_blocked(admin)
        chunk = encode_command(["SET", "k", "v" * 1000])
        try:
            for _ in range(2000):  # ~2 MB of complete commands queued behind the BLPOP
                sock.sendall(chunk)
        except OSError:
            pass
        assert is_closed(sock)
    assert wait_for_state(minired, {"clients": 1, "waiters": 0, "blocking_keys": 0, "watchers": 0,
                                    "channels": 0, "patterns": 0, "shard_channels": 0})["waiters"] == 0
    assert admin.call("EXISTS", "k") == 0
    admin.close()


def test_commands_sent_while_blocked_run_after_the_unblock(pair):
    _, minired = pair
    waiter, pusher = RawClient(minired.port), RawClient(minired.port)
    waiter.send_raw(encode_command(["BLPOP", "q", "0"]) + encode_command(["SET", "after", "1"])
                    + encode_command(["GET", "after"]))
    wait_blocked(pusher)
    assert pusher.call("EXISTS", "after") == 0
    assert pusher.call("RPUSH", "q", "job") == 1
    assert [waiter.read(), waiter.read(), waiter.read()] == [[b"q", b"job"], b"OK", b"1"]
    waiter.close()
    pusher.close()


def test_proto_max_bulk_len(pair):
    redis_port, minired = pair
    outcomes = []
    for port in (redis_port, minired.port):
        admin = RawClient(port)
        admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb")
        # The setting applies to connections made after it.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")
            outcomes.append(read_until_closed(sock))
        ok = RawClient(port)
        assert ok.call("SET", "k", b"x" * 1048576) == b"OK"
        assert ok.call("SETRANGE", "k", "1048576", "y") == Err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        ok.close()
        admin.close()
    assert outcomes[1] == outcomes[0] == b"-ERR Protocol error: invalid bulk length\r\n"


def _subscriber_that_never_reads(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fill the kernel side fast
    sock.connect(("127.0.0.1", port))
    sock.sendall(encode_command(["SUBSCRIBE", "news"]))
    observer = RawClient(port)
    wait_until(lambda: observer.call("PUBSUB", "NUMSUB", "news") == [b"news", 1], "SUBSCRIBE")
    observer.close()
    return sock


def test_pubsub_hard_limit_disconnects_a_subscriber_that_never_reads(pair):
    _, minired = pair
    admin = RawClient(minired.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 256kb 60")
    sock = _subscriber_that_never_reads(minired.port)
    message = b"m" * 10_000
    receivers = []
    for _ in range(1000):  # 10 MB published, far past the 1 MB limit
        receivers.append(admin.call("PUBLISH", "news", message))
        if receivers[-1] == 0:
            break
    assert receivers[-1] == 0, "the subscriber was never disconnected"
    assert is_closed(sock)
    sock.close()
    state = wait_for_state(minired, {"clients": 1, "waiters": 0, "blocking_keys": 0, "watchers": 0,
                                     "channels": 0, "patterns": 0, "shard_channels": 0})
    assert state["channels"] == 0 and state["clients"] == 1
    admin.close()


def test_pubsub_soft_limit_needs_its_seconds(pair):
    _, minired = pair
    admin = RawClient(minired.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 64kb 1")
    sock = _subscriber_that_never_reads(minired.port)
    message = b"m" * 10_000
    # Well over the soft limit (past the kernel buffers), only just now: pipelined, so the
    # second allowed over it cannot have passed by the next PUBLISH, however loaded the machine.
    admin.pipeline([("PUBLISH", "news", message)] * 1000)
    assert admin.call("PUBLISH", "news", b"x") == 1  # over soft, not for a second yet
    # With no more traffic, the server closes it once the second has passed (clientsCron).
    wait_until(lambda: admin.call("PUBSUB", "NUMSUB", "news") == [b"news", 0],
               "the subscriber over its soft limit closed")
    assert is_closed(sock)
    sock.close()
    admin.close()


def test_normal_hard_limit_disconnects_a_client_that_never_reads(pair):
    _, minired = pair
    admin = RawClient(minired.port)
    admin.call("SET", "big", b"v" * 200_000)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", minired.port))
    sock.sendall(encode_command(["GET", "big"]) * 200)  # 40 MB of replies, never read
    assert is_closed(sock, timeout=10)
    sock.close()
    assert admin.call("PING") == b"PONG"
    admin.close()


def test_default_output_limits_leave_normal_clients_alone(pair):
    _, minired = pair
    client = RawClient(minired.port, timeout=30)
    client.call("SET", "big", b"v" * 1_000_000)
    client.send_raw(encode_command(["GET", "big"]) * 50)  # 50 MB queued before we read
    time.sleep(0.5)
    assert all(client.read() == b"v" * 1_000_000 for _ in range(50))
    client.close()


def test_maxmemory_noeviction_refuses_denyoom_commands(pair):
    redis_port, minired = pair
    for port in (redis_port, minired.port):
        client = RawClient(port)
        client.call("SET", "kept", "1")
        assert client.call("CONFIG", "SET", "maxmemory", "1") == b"OK"
        assert client.call("SET", "k", "v") == Err("OOM command not allowed when used memory > 'maxmemory'.")
        assert client.call("RPUSH", "l", "a") == Err("OOM command not allowed when used memory > 'maxmemory'.")
        assert client.call("GET", "kept") == b"1"      # reads still work
        assert client.call("DEL", "kept") == 1         # and so do writes that free memory
        assert client.call("CONFIG", "SET", "maxmemory", "0") == b"OK"
        assert client.call("SET", "k", "v") == b"OK"
        client.close()


def test_maxmemory_check_reads_no_process_memory_per_command(pair):
    """The figure maxmemory is compared with is modelled (features/eviction.py): commands never
    read the process's resident size from /proc."""
    _, minired = pair
    reads = []

    def count_reads():
        import minired.engine.server as server_module
        original = server_module.used_memory

        def counting():
            reads.append(1)
            return original()
        server_module.used_memory = counting
        return original

    original = minired.call(count_reads)
    try:
        client = RawClient(minired.port)
        client.call("CONFIG", "SET", "maxmemory", "10gb")
        replies = client.pipeline([("SET", f"k{i}", "v") for i in range(2000)])
        assert replies == [b"OK"] * 2000
        client.close()
    finally:
        import minired.engine.server as server_module
        minired.call(setattr, server_module, "used_memory", original)
    assert reads == []
