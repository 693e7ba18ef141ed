"""A web dashboard for the reliable queue and its server (``pip install 'minired[dashboard]'``).

    minired-queue --url redis://localhost:6380 dashboard            # http://127.0.0.1:8080/
    from minired_queue.dashboard import create_app                  # mount in your own ASGI app

Counts per state refresh live; a queue's page shows its running jobs with their lock counting
down, the jobs the sweep recovered, the events, a last-hour chart of throughput, processing time
and queue depth (kept in Redis by the workers' scripts, so every dashboard shows the same), and
its failed jobs with retry and remove; a job's page shows its data, attempts, error and
traceback, progress, result and markers. Bound to 127.0.0.1 unless told otherwise; bound
elsewhere, it requires a token.
"""
from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
import threading
import time
from typing import Any

from ..keys import DEFAULT_PREFIX
from .app import create_app

__all__ = ["DashboardServer", "create_app", "needs_token"]


def needs_token(bind: str) -> bool:
    """Anywhere but the loopback interface, anyone who can reach the port could retry or
    remove jobs: a token is then required."""
    if bind == "localhost":
        return False
    try:
        return not ipaddress.ip_address(bind).is_loopback
    except ValueError:  # a host name: assume it is reachable from elsewhere
        return True


class DashboardServer:
    """The dashboard served by uvicorn: in the foreground (``run``, the CLI) or on a thread of
    its own (``start``/``stop``: the demo and the tests). ``url`` includes the token, if any."""

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, bind: str = "127.0.0.1",
                 port: int = 8080, token: str | None = None) -> None:
        import uvicorn

        if token is None and needs_token(bind):
            token = secrets.token_urlsafe(18)
        self.bind, self.token = bind, token
        # The socket is bound and listening here, so the URL (port 0: a free port) can be
        # printed and used before uvicorn serves.
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((bind, port))
            self._socket.listen(128)  # connections wait in the backlog until uvicorn serves
        except OSError as exc:
            self._socket.close()
            raise SystemExit(f"dashboard: cannot listen on {bind}:{port}: {exc.strerror}") from None
        bound = self._socket.getsockname()[1]
        host = f"[{bind}]" if ":" in bind else bind
        self.url = f"http://{host}:{bound}/" + (f"?token={token}" if token else "")
        config = uvicorn.Config(create_app(client, prefix=prefix, token=token),
                                log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C) or ``stop``."""
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        except KeyboardInterrupt:
            pass

    def start(self) -> "DashboardServer":
        self._thread = threading.Thread(target=self.run, name="minired-dashboard", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "DashboardServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
