"""A web dashboard for the reliable queue and its server (``pip install 'minired[dashboard]'``).

    minired-queue --url redis://localhost:6380 dashboard            # http://127.0.0.1:8080/
    from minired_queue.dashboard import create_app                  # mount in your own ASGI app

Counts per state refresh live; a queue's page lists its jobs in any state in pages (filter by
name, find by id, newest or oldest first) with promote, retry, remove and bulk actions, its
running jobs with their lock counting down, its live workers and what each runs, repeatables
with their next run, settings, the jobs the sweep recovered, the events, a last-hour chart of
throughput, processing time and queue depth (kept in Redis by the workers' scripts, so every
dashboard shows the same), and clean, drain and obliterate; a job's page shows its data,
every failed attempt, error and traceback, log, progress, result and markers.

Security: bound to 127.0.0.1 unless told otherwise, it answers only requests whose ``Host``
names a loopback host or the bound address (``allowed_hosts`` adds names), so a web page whose
name was re-pointed at 127.0.0.1 (DNS rebinding) gets a 421. Bound elsewhere, it requires a
token (a made-up one unless given; an empty one is refused); bound to a wildcard address
(0.0.0.0, ::) with no ``allowed_hosts``, the token alone guards it, since the names it is
reached by are not known. However many tabs are open, it reads each view once per interval.
"""
from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
import threading
import time
from typing import Any, Sequence

from ..keys import DEFAULT_PREFIX
from .app import ANY_HOST, create_app

__all__ = ["DashboardServer", "create_app", "needs_token"]

WILDCARD_BINDS = ("0.0.0.0", "::", "")


def needs_token(bind: str) -> bool:
    """Anywhere but the loopback interface, anyone who can reach the port could retry or
    remove jobs: a token is then required."""
    if bind == "localhost":
        return False
    try:
        return not ipaddress.ip_address(bind).is_loopback
    except ValueError:  # a host name: assume it is reachable from elsewhere
        return True


def allowed_hosts_for(bind: str, token: str | None, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names answered besides the loopback ones: the bound address and ``extra``;
    any name when a token guards a wildcard bind and no name was given."""
    if bind in WILDCARD_BINDS:
        return list(extra) if extra or not token else [ANY_HOST]
    return [bind, *extra]


class DashboardServer:
    """The dashboard served by uvicorn: in the foreground (``run``, the CLI) or on a thread of
    its own (``start``/``stop``: the demo and the tests). ``url`` includes the token, if any."""

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, bind: str = "127.0.0.1",
                 port: int = 8080, token: str | None = None,
                 allowed_hosts: Sequence[str] = ()) -> None:
        import uvicorn

        if token is not None and not token.strip():
            raise SystemExit("dashboard: the token is empty (--token or MINIRED_DASHBOARD_TOKEN): "
                             "an empty token would let anyone in; give a real one, or unset it "
                             "to have one made up")
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
        app = create_app(client, prefix=prefix, token=token,
                         allowed_hosts=allowed_hosts_for(bind, token, allowed_hosts))
        config = uvicorn.Config(app,
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
