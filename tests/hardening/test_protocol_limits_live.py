"""Protocol limits that depend on live state: before AUTH Redis parses one command at a time with
tight limits (10 arguments, 16 KB bulks) that lift once an AUTH in the same write succeeds; and
proto-max-bulk-len changes apply to connected clients. Compared with a real Redis."""
from __future__ import annotations

import socket

import pytest

from tests.support.servers import MiniredProcess, RedisServer


@pytest.fixture(scope="module")
def servers():
    with RedisServer("--requirepass", "pw") as redis_server, \
            MiniredProcess("--requirepass", "pw") as minired_server:
        yield redis_server.port, minired_server.port


def _exchange(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(payload)
        sock.settimeout(0.5)
        data = b""
        try:
            while chunk := sock.recv(1 << 16):
                data += chunk
            data += b"<closed>"
        except socket.timeout:
            data += b"<open>"
        except ConnectionResetError:  # Redis closes with unread input: a reset, same meaning
            data += b"<closed>"
        return data


BIG = b"x" * 20000


@pytest.mark.parametrize("payload", [
    b"*11\r\n" + b"$1\r\na\r\n" * 11,
    b"*2\r\n$4\r\nECHO\r\n$20000\r\n" + BIG + b"\r\n",
    b"*2\r\n$4\r\nECHO\r\n$20000\r\n",
    b"PING\r\n*11\r\n",
    b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*11\r\n$4\r\nMSET\r\n" + b"$1\r\na\r\n" * 10,
    b"AUTH pw\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n" + BIG + b"\r\n",
    b"AUTH wrong\r\n*11\r\n",
], ids=["many-args", "big-bulk", "big-bulk-header", "noauth-then-many", "auth-lifts-count",
        "auth-lifts-bulk", "failed-auth-keeps-limits"])
def test_pre_auth_limits_match_redis(servers, payload):
    redis_port, minired_port = servers
    assert _exchange(minired_port, payload) == _exchange(redis_port, payload)


def test_proto_max_bulk_len_applies_to_connected_clients(real_redis, mini):
    from tests.support.respclient import RawClient

    replies = []
    for port in (real_redis.port, mini.port):
        admin, connected = RawClient(port), RawClient(port)
        try:
            connected.call("PING")
            admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb")
            # The header alone is enough to be refused; sending the 2 MB body too would race
            # the server's close and end in a connection reset instead of a readable reply.
            connected.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2097152\r\n")
            replies.append(connected.read())
        finally:
            admin.call("CONFIG", "SET", "proto-max-bulk-len", "512mb")
            admin.close()
            connected.close()
    assert replies[1] == replies[0]
