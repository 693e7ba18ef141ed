"""The test servers' start (tests/support/servers.py): a port picked free may be taken before
the server binds it (the other xdist worker's server picked it too, or an outgoing connection
took it); the start must notice and move, never test against the other process."""
from __future__ import annotations

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import MiniredProcess, PortTaken, RedisServer


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
