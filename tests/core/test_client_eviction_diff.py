"""Client eviction (maxmemory-clients, CLIENT NO-EVICT) compared with real Redis: a client whose
query buffer, queued transaction or unread replies take all clients past the limit is
disconnected, largest first, only until they fit, sparing NO-EVICT clients; INFO counts them;
CLIENT LIST's tot-mem and qbuf are Redis's within a small margin."""
from __future__ import annotations

import re
import socket

import pytest

from tests.support.respclient import RawClient, encode_command, named_socket
from tests.support.waiting import info_field, wait_until


@pytest.fixture(params=("real_redis", "mini"))
def port(request):
    server = request.getfixturevalue(request.param)
    admin = RawClient(server.port)
    admin.call("CLIENT", "NO-EVICT", "on")  # (only the test's own clients may go)
    admin.call("FLUSHALL")
    admin.call("CONFIG", "RESETSTAT")
    yield server.port
    admin.call("CONFIG", "SET", "maxmemory-clients", "0")
    admin.call("FLUSHALL")
    admin.close()


def _field(admin: RawClient, name: str, field: str) -> int | None:
    for line in admin.call("CLIENT", "LIST").decode().splitlines():
        if f" name={name} " in line:
            return int(re.search(rf" {field}=(\d+)", line).group(1))
    return None


def _close(admin: RawClient, socks: dict) -> None:
    """Close the connections and wait until the server has let them go."""
    for sock in socks.values():
        sock.close()
    for name in socks:
        wait_until(lambda n=name: _field(admin, n, "tot-mem") is None, f"{name} gone")


def _fill_query_buffer(sock: socket.socket, size: int) -> None:
    """An argument of `size` bytes, sent but for its final CRLF: it waits in the buffer. A
    server that evicts the client while it sends resets the connection: what the test then
    checks (the client gone) is the outcome either way."""
    try:
        sock.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
    except (ConnectionResetError, BrokenPipeError):
        pass


def test_query_buffers_evicted_largest_first_until_under_the_limit(port):
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    sizes = {"small": 100_000, "medium": 400_000, "large": 1_600_000}
    socks = {name: named_socket(port, name) for name in sizes}
    for name, size in sizes.items():
        _fill_query_buffer(socks[name], size)
        wait_until(lambda n=name: _field(admin, n, "qbuf") == sizes[n], f"{name}'s query buffer")
    memory = {name: _field(admin, name, "tot-mem") for name in sizes}
    # Room for all but the largest: only it goes.
    rest = sum(memory.values()) - memory["large"] + 200_000
    assert admin.call("CONFIG", "SET", "maxmemory-clients", rest) == b"OK"
    wait_until(lambda: _field(admin, "large", "qbuf") is None, "the largest client evicted")
    assert _field(admin, "medium", "qbuf") == sizes["medium"]
    assert _field(admin, "small", "qbuf") == sizes["small"]
    assert info_field(admin, "stats", "evicted_clients") == "1"
    _close(admin, socks)
    admin.close()


@pytest.mark.parametrize("no_evict", ["on", "off"])
def test_no_evict_spares_a_client(port, no_evict):
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    admin.call("CONFIG", "SET", "maxmemory-clients", "1mb")
    sock = named_socket(port, "big")
    sock.sendall(encode_command(["CLIENT", "NO-EVICT", no_evict]))
    assert sock.recv(100) == b"+OK\r\n"
    _fill_query_buffer(sock, 2_000_000)
    if no_evict == "on":
        wait_until(lambda: _field(admin, "big", "qbuf") == 2_000_000, "the query buffer")
        assert _field(admin, "big", "tot-mem") > 2_000_000
        assert info_field(admin, "stats", "evicted_clients") == "0"
    else:
        wait_until(lambda: _field(admin, "big", "qbuf") is None, "the client evicted")
        assert info_field(admin, "stats", "evicted_clients") == "1"
    _close(admin, {"big": sock})
    admin.close()


def test_a_big_transaction_is_evicted(port):
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    admin.call("CONFIG", "SET", "maxmemory-clients", "1mb")
    client = RawClient(port)
    client.call("CLIENT", "SETNAME", "queued")
    client.call("MULTI")
    value = b"v" * 300_000
    assert client.call("SET", "k", value) == b"QUEUED"
    with pytest.raises((ConnectionError, OSError, EOFError)):
        for _ in range(5):
            client.call("SET", "k", value)
    assert _field(admin, "queued", "tot-mem") is None
    client.close()
    admin.close()


def test_tot_mem_close_to_redis(real_redis, mini):
    figures = []
    for port in (real_redis.port, mini.port):
        admin = RawClient(port)
        sock = named_socket(port, "sized")
        _fill_query_buffer(sock, 500_000)
        wait_until(lambda a=admin: _field(a, "sized", "qbuf") == 500_000, "the query buffer")
        figures.append(_field(admin, "sized", "tot-mem"))
        _close(admin, {"sized": sock})
        admin.close()
    redis, minired = figures
    assert abs(minired - redis) < redis * 0.05, figures
