"""The test servers' start (tests/support/servers.py): a port picked free may be taken before
the server binds it (the other xdist worker's server picked it too, or an outgoing connection
took it); the start must notice and move, never test against the other process."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import servers
from tests.support.respclient import RawClient
from tests.support.servers import (
    MiniredProcess,
    PortTaken,
    RedisServer,
    free_port,
    redis_server_binary,
    terminate,
)


@pytest.mark.parametrize("kind", [RedisServer, MiniredProcess])
def test_a_start_on_a_taken_port_moves_to_another(real_redis, kind):
    server = kind()
    server.port = real_redis.port  # as if that port had been picked, then taken
    with server:
        assert server.port != real_redis.port
        client = RawClient(server.port)
        assert client.call("INFO", "server").find(b"process_id:%d\r\n" % server.proc.pid) > 0
        client.close()


def test_a_port_of_the_caller_s_is_not_moved(real_redis):
    server = RedisServer(port=real_redis.port)
    try:
        with pytest.raises(PortTaken):
            server.start()
    finally:
        server.stop()


@pytest.mark.parametrize("program", ["redis", "minired"])
def test_a_test_s_own_server_moves_off_a_taken_port_too(real_redis, tmp_path, monkeypatch,
                                                         program):
    """start_on_free_port, for the servers tests start themselves: the first port it is handed
    is another server's (as when the other worker's server took it first). A start that took
    that server's PONG for its own would go on against it, and its own server, still starting,
    would not even have opened its log yet (the FileNotFoundError a CI run once hit on
    test_shutdown_abort_diff's server.log)."""
    handed = [real_redis.port]
    monkeypatch.setattr(servers, "free_port", lambda: handed.pop() if handed else free_port())
    command = [redis_server_binary()] if program == "redis" else [sys.executable, "-m", "minired"]
    logfile = tmp_path / "server.log"
    proc, port = servers.start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "", "--dir", str(tmp_path),
                      "--logfile", str(logfile)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert port != real_redis.port and not handed
        client = RawClient(port)
        assert client.call("INFO", "server").find(b"process_id:%d\r\n" % proc.pid) > 0
        client.close()
        assert "Ready to accept connections" in logfile.read_text()
    finally:
        terminate(proc)


def test_tests_wait_for_their_own_server_s_pong():
    """wait_for_ping without `proc` takes any process's PONG: a test that starts a server of
    its own starts it with start_on_free_port (or RedisServer, MiniredProcess), or passes
    `proc` when it waits itself."""
    root = Path(__file__).resolve().parents[1]
    unchecked = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "support" / "servers.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                    node.func, "attr", None)) == "wait_for_ping"
                    and not any(keyword.arg == "proc" for keyword in node.keywords)):
                unchecked.append(f"{path.relative_to(root)}:{node.lineno}")
    assert unchecked == []


def test_free_ports_are_never_handed_out_twice_across_processes():
    """free_port's ports: below the kernel's ephemeral range (neither bind(0) nor an outgoing
    connection can take one before the server binds it), and a port one process was given is
    not given to another (the xdist workers pick at the same time)."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from tests.support.servers import "
              "free_port; print(' '.join(str(free_port()) for _ in range(50)))")
    root = str(Path(__file__).resolve().parents[2])
    children = [subprocess.Popen([sys.executable, "-c", script, root], stdout=subprocess.PIPE,
                                 text=True) for _ in range(3)]
    ports = [int(port) for child in children for port in child.communicate()[0].split()]
    ports += [free_port() for _ in range(50)]
    assert len(ports) == len(set(ports)) == 200
    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert all(port < low for port in ports)
