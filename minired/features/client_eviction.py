"""Client eviction (`maxmemory-clients`, CLIENT NO-EVICT), as Redis 7.0 does it: when the memory
of the normal and pub/sub clients together reaches the limit (a size, or a percentage of
maxmemory), the largest clients are disconnected, largest first, until it no longer does;
clients that asked CLIENT NO-EVICT ON are neither evicted nor counted.

A client's memory is what CLIENT LIST's tot-mem says (getClientMemoryUsage): its query buffer
and reply buffer as Redis would size them (querybuf.py, replybuf.py), the replies not written
yet, the commands a transaction queued, its watched keys, subscriptions and tracking prefixes,
and the client structure itself.

Redis looks before every command, ahead of key eviction (processCommand's evictClients), and
from its cron. minired looks before a command finds memory over maxmemory, ahead of key
eviction (eviction.py), so that clients' buffers are cut back before keys go; when a read
leaves a large or incomplete command waiting (ClientProtocol.data_received, the reads that
already do query-buffer bookkeeping), when a write leaves replies queued (output_limits.py),
every 100 ms while a limit is set, and at once when CONFIG SET lowers it. Nothing of it runs
while maxmemory-clients is 0: the connection asks `Hooks.client_eviction`, None until a limit
or CLIENT NO-EVICT is first set.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minired.engine import client_info

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import ClientProtocol, Server

log = logging.getLogger("minired")

_CRON_S = 0.1
_LEAST_LIMIT = 128 * 1024


class ClientEviction:
    def __init__(self, server: "Server") -> None:
        self.server = server
        self.no_evict: set[int] = set()  # CLIENT NO-EVICT ON
        self.evicted = 0  # INFO evicted_clients
        self._cron = None

    def limit(self) -> int:
        """getClientEvictionLimit: the size, or the percentage of maxmemory (off without one);
        0: off. Never under 128 KiB, so a bad setting cannot cut every client off."""
        config = self.server.config
        text = config.get("maxmemory-clients") or "0"
        if text.endswith("%"):
            limit = int(config.maxmemory * int(text[:-1]) / 100) if config.maxmemory else 0
        else:
            limit = config.number("maxmemory-clients")
        return max(limit, _LEAST_LIMIT) if limit > 0 else 0

    def check(self) -> int:
        """evictClients: disconnect the largest clients while all of them pass the limit; how
        many were."""
        limit = self.limit()
        if not limit:
            return 0
        # Only the clients eviction may take count (clientEvictionAllowed): not NO-EVICT ones,
        # monitors or a master link.
        usage = {}
        no_evict = self.no_evict
        guard = self.server.output_buffer_guard
        for c in list(self.server.clients.values()):
            conn = c.connection
            if guard is not None and conn is not None and conn.outbox and guard.limit_reached(
                    conn, sum(len(part) for part in conn.outbox)):
                # Replies gathered but not written yet: Redis has already closed a client they
                # take past its output limit (those are enforced first), and counts it no more.
                continue
            if not c.closing and c.flags not in ("O", "M") and c.id not in no_evict:
                usage[c] = client_info.client_memory(c)
        total = sum(usage.values())
        evicted = 0
        for c in sorted(usage, key=usage.__getitem__, reverse=True):
            if total < limit:
                break
            self.evict(c)
            evicted += 1
            total -= usage[c]
        return evicted

    def evict(self, c: "Client") -> None:
        log.info("Evicting client: %s", client_info.client_info_line(c))
        self.evicted += 1
        conn: "ClientProtocol | None" = c.connection
        c.closing = True
        if conn is None or conn.transport is None:
            return
        conn.drop()  # its replies go with it, unsent

    def after_read(self, conn: "ClientProtocol") -> None:
        """A read left a large or incomplete command waiting (server.py)."""
        self.check()

    def configured(self) -> None:
        """maxmemory-clients (or maxmemory) changed: evict now, and look every 100 ms while a
        limit is set."""
        self.check()
        loop = self.server.loop
        if self.limit() and self._cron is None and loop is not None:
            self._cron = loop.call_later(_CRON_S, self._tick)

    def _tick(self) -> None:
        self._cron = None
        if self.limit():
            self.check()
            loop = self.server.loop
            if loop is not None and not self.server.shutdown_requested:
                self._cron = loop.call_later(_CRON_S, self._tick)

    def exempt(self, c: "Client") -> bool:
        return c.id in self.no_evict

    def forget(self, c: "Client") -> None:
        self.no_evict.discard(c.id)


def of(server: "Server") -> ClientEviction:
    """The server's client eviction, set up on first use (a limit, or CLIENT NO-EVICT)."""
    eviction = server.hooks.client_eviction
    if eviction is None:
        eviction = server.hooks.client_eviction = ClientEviction(server)
        server.hooks.disconnect.append(eviction.forget)
    return eviction


def configure(server: "Server") -> None:
    """CONFIG SET maxmemory-clients / maxmemory, and start-up."""
    text = server.config.get("maxmemory-clients") or "0"
    if server.hooks.client_eviction is None and text in ("0", "0%"):
        return
    of(server).configured()


def attach(server: "Server") -> None:
    configure(server)
    server.hooks.start.append(lambda: configure(server))
