"""The connection layer end to end: pipelining, inline commands, protocol errors, many clients."""
from __future__ import annotations

import socket
import threading

import pytest
import redis

from tests.support.respclient import Err, RawClient, encode_command


def _recv_until_closed(sock: socket.socket, timeout: float = 5.0) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_pipeline_replies_in_order(mini_raw):
    commands = [("SET", f"k{i}", f"v{i}") for i in range(200)] + [("GET", f"k{i}") for i in range(200)]
    replies = mini_raw.pipeline(commands)
    assert replies[:200] == [b"OK"] * 200
    assert replies[200:] == [f"v{i}".encode() for i in range(200)]


def test_one_write_with_thousands_of_commands(mini_raw):
    mini_raw.send_raw(b"PING\r\n" * 5000 + encode_command(("ECHO", "done")))
    replies = [mini_raw.read() for _ in range(5001)]
    assert replies[-1] == b"done" and replies[0] == b"PONG"


def test_inline_and_multibulk_mixed(mini_raw):
    mini_raw.send_raw(b'SET greeting "hello world"\r\n' + encode_command(("GET", "greeting")) + b"GET greeting\n")
    assert [mini_raw.read() for _ in range(3)] == [b"OK", b"hello world", b"hello world"]


@pytest.mark.parametrize("payload", [
    b"*x\r\n", b"*2\r\n$3\r\nGET\r\n:1\r\n", b"*1\r\n$-5\r\n", b'"abc\r\n', b"*1\r\n$600000000\r\n",
])
def test_protocol_errors_match_redis_and_close(real_redis, mini, payload):
    results = []
    for port in (real_redis.port, mini.port):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"PING\r\n" + payload)
            results.append(_recv_until_closed(sock))
    assert results[1] == results[0]
    assert results[0].startswith(b"+PONG\r\n-ERR Protocol error")


def test_server_survives_protocol_errors(mini):
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", mini.port)) as sock:
            sock.sendall(b"*1\r\n$-99\r\n")
            _recv_until_closed(sock)
    client = RawClient(mini.port)
    assert client.call("PING") == b"PONG"
    client.close()


def test_huge_length_header_then_disconnect(mini):
    with socket.create_connection(("127.0.0.1", mini.port)) as sock:
        sock.sendall(b"*1\r\n$400000000\r\nabc")
    client = RawClient(mini.port)
    assert client.call("PING") == b"PONG"
    client.close()


def test_unknown_command_does_not_break_the_pipeline(mini_raw):
    replies = mini_raw.pipeline([("NOPE", "a"), ("PING",)])
    assert replies[0] == Err("ERR unknown command 'NOPE', with args beginning with: 'a' ")
    assert replies[1] == b"PONG"


def test_many_concurrent_clients(mini):
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            client = redis.Redis(port=mini.port, protocol=3 if n % 2 else 2)
            for i in range(50):
                client.set(f"c{n}:{i}", i)
            assert client.get(f"c{n}:49") == b"49"
            client.close()
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_hundreds_of_idle_connections(mini):
    socks = [socket.create_connection(("127.0.0.1", mini.port)) for _ in range(500)]
    try:
        client = RawClient(mini.port)
        assert client.call("PING") == b"PONG"
        client.close()
    finally:
        for s in socks:
            s.close()


def test_redis_py_resp2_and_resp3(mini):
    for protocol in (2, 3):
        client = redis.Redis(port=mini.port, protocol=protocol)
        assert client.ping() is True
        assert client.set("rp", "v") is True
        assert client.get("rp") == b"v"
        client.close()


def test_asyncio_redis_py(mini):
    import asyncio

    import redis.asyncio as aredis

    async def main() -> bytes:
        client = aredis.Redis(port=mini.port)
        await client.set("async", "yes")
        value = await client.get("async")
        await client.aclose()
        return value

    assert asyncio.run(main()) == b"yes"
