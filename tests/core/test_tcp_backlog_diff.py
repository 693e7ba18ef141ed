"""The `tcp-backlog` parameter, side by side with Redis: the TCP and unix socket listeners
queue that many connections not accepted yet (listen's backlog, which `ss -l` shows as
Send-Q), and a value over the kernel's somaxconn, which caps it, is logged at start
(checkTcpBacklogSettings)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from tests.support.servers import MiniredProcess, RedisServer

pytestmark = pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")

_WARNING = ("WARNING: The TCP backlog setting of {} cannot be enforced because "
            "/proc/sys/net/core/somaxconn is set to the lower value of {}.")


def _somaxconn() -> int:
    with open("/proc/sys/net/core/somaxconn") as file:
        return int(file.read())


def _backlogs(port: int, unixsocket: str) -> list[int]:
    """Send-Q of the listeners on the port and on the unix socket: their backlog."""
    listed = subprocess.run(["ss", "-lnH", "-A", "tcp,unix"], capture_output=True, text=True,
                            check=True).stdout.split("\n")
    # (Netid State Recv-Q Send-Q Local-Address:Port ...)
    return [int(words[3]) for words in map(str.split, listed)
            if words and (words[4] in (f"127.0.0.1:{port}", unixsocket))]


@pytest.mark.parametrize("kind", ["redis", "minired"])
def test_listeners_queue_tcp_backlog_connections(kind):
    directory = tempfile.mkdtemp(prefix="backlog-")
    somaxconn = _somaxconn()
    over = somaxconn + 1
    servers = []
    try:
        for backlog in (77, over):
            unixsocket = os.path.join(directory, f"{backlog}.sock")
            logfile = os.path.join(directory, f"{backlog}.log")
            # (start_server's minired listens on port 0: with a unix socket, no TCP at all)
            kind_of_server = RedisServer if kind == "redis" else MiniredProcess
            servers.append(kind_of_server("--tcp-backlog", str(backlog), "--unixsocket",
                                          unixsocket, "--logfile", logfile).start())
            assert _backlogs(servers[-1].port, unixsocket) == [min(backlog, somaxconn)] * 2
            with open(logfile) as file:
                warned = _WARNING.format(backlog, somaxconn) in file.read()
            assert warned == (backlog == over)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
