"""The `timeout` parameter (server.maxidletime): a client silent for longer than it is closed,
as Redis's clientsCronHandleTimeout closes it.

Not a replica, a master or a MONITOR (Redis: CLIENT_SLAVE, mustObeyClient), not a blocked or
paused client (CLIENT_BLOCKED: it waits for the server, not the other way round), and not a
subscriber (CLIENT_PUBSUB). The silence is counted in whole seconds since the client's last
read, as Redis compares `server.unixtime` seconds; a check runs every second while `timeout` is
set, so a client goes between `timeout` + 1 and `timeout` + 2 seconds into its silence (Redis's
clientsCron reaches each client about once a second). Real time, as CLIENT LIST's `idle`: the
controlled clock (MINIRED ADVANCE) moves what the data sees, not how long a peer has been quiet.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from minired import LOG_VERBOSE

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired")

CHECK_SECONDS = 1.0


class IdleClients:
    __slots__ = ("server", "_timer")

    def __init__(self, server: "Server") -> None:
        self.server = server
        self._timer: Any = None

    def configured(self) -> None:
        """`timeout` changed (or the server started): check every second while it is set."""
        loop = self.server.loop
        if self._timer is None and loop is not None and _max_idle(self.server):
            self._timer = loop.call_later(CHECK_SECONDS, self._tick)

    def _tick(self) -> None:
        self._timer = None
        server = self.server
        max_idle = _max_idle(server)
        if not max_idle or server.shutdown_requested:
            return
        now = int(time.monotonic())
        for client in list(server.clients.values()):
            if now - int(client.last_interaction) > max_idle and _may_time_out(client):
                log.log(LOG_VERBOSE, "Closing idle client")
                client.kill()
        self.configured()


def _max_idle(server: "Server") -> int:
    return int(server.config.get("timeout") or 0)


def _may_time_out(client: "Client") -> bool:
    return (not client.flags  # "S" replica, "M" master, "O" monitor
            and client.blocked is None
            and not (client.channels or client.patterns or client.shard_channels)
            and not client.closing)


def of(server: "Server") -> IdleClients:
    idle = server.features.idle_clients
    if idle is None:
        idle = server.features.idle_clients = IdleClients(server)
    return idle


def configure(server: "Server") -> None:
    """CONFIG SET timeout (the module is imported the first time `timeout` is set)."""
    of(server).configured()


def attach(server: "Server") -> None:
    """Start-up with `timeout` set."""
    server.hooks.start.append(lambda: configure(server))
