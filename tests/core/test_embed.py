"""The embedding API: EmbeddedServer (a thread of this process) and SubprocessServer."""
from __future__ import annotations

import socket

import pytest
import redis

from minired.embed import EmbeddedServer, SubprocessServer
from tests.support.respclient import Err, RawClient


def _port_is_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_embedded_context_manager_serves_redis_py_and_stops():
    with EmbeddedServer() as server:
        assert server.port > 0 and server.url == f"redis://127.0.0.1:{server.port}"
        client = redis.Redis.from_url(server.url)
        assert client.set("k", "v") and client.get("k") == b"v"
        assert client.info("server")["redis_version"] == "7.0.15"
        client.close()
    assert not server._thread.is_alive()
    assert _port_is_closed(server.port)


def test_embedded_servers_are_independent():
    with EmbeddedServer() as one, EmbeddedServer() as two:
        assert one.port != two.port
        RawClient(one.port).call("SET", "k", "1")
        assert RawClient(two.port).call("GET", "k") is None


def test_embedded_direct_access_and_clock():
    with EmbeddedServer(time_control=True) as server:
        before = server.call(server.server.clock.ms)
        assert server.advance_clock(60_000) >= before + 60_000
        client = RawClient(server.port)
        client.call("SET", "k", "v")
        server.flushall()
        assert client.call("DBSIZE") == 0
        client.close()


def test_embedded_time_control_is_off_by_default():
    with EmbeddedServer() as server:
        client = RawClient(server.port)
        # MINIRED CLOCK too, as docs/time-control.md says (it answered without time control: issue 25).
        for command in (("MINIRED", "ADVANCE", "10"), ("MINIRED", "CLOCK")):
            reply = client.call(*command)
            assert isinstance(reply, Err) and "time-control" in reply.message, command
        assert isinstance(client.call("TIME"), list)  # reading the clock stays open to everyone


def test_embedded_config_keywords_and_bad_values():
    with EmbeddedServer(requirepass="pw", databases=2) as server:
        client = RawClient(server.port)
        assert client.call("PING") == Err("NOAUTH Authentication required.")
        assert client.call("AUTH", "pw") == b"OK"
        assert client.call("SELECT", "2") == Err("ERR DB index is out of range")
        client.close()
    with pytest.raises(ValueError, match="maxclients"):
        EmbeddedServer(maxclients=0)


def test_embedded_start_failure_is_reported():
    with EmbeddedServer() as taken:
        with pytest.raises(RuntimeError, match="failed to start"):
            EmbeddedServer(port=taken.port).start()


def test_embedded_stop_is_idempotent():
    server = EmbeddedServer().start()
    server.stop()
    server.stop()
    assert _port_is_closed(server.port)


def test_subprocess_server_reads_port_from_ready_line_and_stops():
    with SubprocessServer(time_control=True) as server:
        assert server.port > 0
        client = RawClient(server.port)
        assert client.call("MINIRED", "ADVANCE", "5") > 0
        client.close()
    assert server.proc.returncode == 0  # SIGTERM is a clean stop
    assert _port_is_closed(server.port)
