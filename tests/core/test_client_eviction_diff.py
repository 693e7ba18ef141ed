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


def test_no_evict_clients_count_toward_the_limit(port):
    # Redis sums every normal and pub/sub client (stat_clients_type_memory); NO-EVICT only
    # keeps a client out of the buckets eviction takes from.
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    spared = named_socket(port, "spared")
    spared.sendall(encode_command(["CLIENT", "NO-EVICT", "on"]))
    assert spared.recv(100) == b"+OK\r\n"
    socks = {"spared": spared, "other": named_socket(port, "other")}
    sizes = {"spared": 600_000, "other": 300_000}
    for name, size in sizes.items():
        _fill_query_buffer(socks[name], size)
        wait_until(lambda n=name: _field(admin, n, "qbuf") == sizes[n], f"{name}'s query buffer")
    # Room for the evictable client and the admin, not for the spared one too.
    limit = _field(admin, "other", "tot-mem") + 200_000
    assert admin.call("CONFIG", "SET", "maxmemory-clients", limit) == b"OK"
    wait_until(lambda: _field(admin, "other", "qbuf") is None, "the evictable client evicted")
    assert _field(admin, "spared", "qbuf") == sizes["spared"]
    assert info_field(admin, "stats", "evicted_clients") == "1"
    _close(admin, {"spared": spared})
    admin.close()


def test_a_monitor_may_be_evicted(port):
    # getClientType calls a monitor a normal client: counted, and evictable.
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    sock = named_socket(port, "watcher")
    sock.sendall(b"MONITOR\r\n")
    assert sock.recv(100) == b"+OK\r\n"
    _fill_query_buffer(sock, 300_000)
    wait_until(lambda: _field(admin, "watcher", "qbuf") == 300_000, "the query buffer")
    assert admin.call("CONFIG", "SET", "maxmemory-clients", "200kb") == b"OK"
    wait_until(lambda: _field(admin, "watcher", "qbuf") is None, "the monitor evicted")
    assert info_field(admin, "stats", "evicted_clients") == "1"
    sock.close()
    admin.close()


def test_clients_of_one_size_class_go_in_the_order_they_came(port):
    # Redis evicts from the largest bucket (sizes within a power of two) in the order its
    # clients entered it, not the largest client first: here the smaller one, there first.
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    sizes = {"first": 140_000, "second": 220_000}
    socks = {}
    for name, size in sizes.items():
        socks[name] = named_socket(port, name)
        _fill_query_buffer(socks[name], size)
        wait_until(lambda n=name: _field(admin, n, "qbuf") == sizes[n], f"{name}'s query buffer")
    memory = {name: _field(admin, name, "tot-mem") for name in sizes}
    assert all(1 << 17 <= size < 1 << 18 for size in memory.values()), memory  # one bucket
    # (the admin's own figure counts too: this much less than all leaves room for it)
    limit = sum(memory.values()) - 50_000
    assert admin.call("CONFIG", "SET", "maxmemory-clients", limit) == b"OK"
    wait_until(lambda: _field(admin, "first", "qbuf") is None, "the first client evicted")
    assert _field(admin, "second", "qbuf") == sizes["second"]
    assert info_field(admin, "stats", "evicted_clients") == "1"
    _close(admin, {"second": socks["second"]})
    admin.close()


def test_a_percentage_limit_follows_maxmemory_set_after_it(port):
    """maxmemory-clients 10% means nothing until maxmemory is set; setting maxmemory afterwards
    puts the limit in force (Redis takes the limit afresh each time it evicts)."""
    admin = RawClient(port)
    admin.call("CLIENT", "NO-EVICT", "on")
    admin.call("CONFIG", "SET", "maxmemory-clients", "10%")
    sock = named_socket(port, "big")
    _fill_query_buffer(sock, 1_000_000)
    wait_until(lambda: _field(admin, "big", "qbuf") == 1_000_000, "big's query buffer")
    try:
        assert admin.call("CONFIG", "SET", "maxmemory", "2mb") == b"OK"  # limit: 200 KiB
        wait_until(lambda: _field(admin, "big", "qbuf") is None, "big evicted")
        assert info_field(admin, "stats", "evicted_clients") == "1"
    finally:
        admin.call("CONFIG", "SET", "maxmemory", "0")
        sock.close()
        admin.close()
