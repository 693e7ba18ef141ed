"""Client eviction (`maxmemory-clients`, CLIENT NO-EVICT), as Redis 7.0 does it: when the memory
of the normal and pub/sub clients together reaches the limit (a size, or a percentage of
maxmemory), clients are disconnected, those of the largest size class first, until it no
longer does. Clients that asked CLIENT NO-EVICT ON are counted but never evicted; a master's
link and replicas are neither (a monitor is a normal client in Redis: it may be evicted).

A client's memory is what CLIENT LIST's tot-mem says (client_info.client_memory, Redis's
getClientMemoryUsage): its query buffer and reply buffer as Redis would size them
(querybuf.py, replybuf.py), the replies not written yet, the commands a transaction queued,
its watched keys, subscriptions and tracking prefixes, and the client structure itself.

Redis evicts before every command (processCommand's evictClients) without adding up the
clients then: it keeps each client's figure (updateClientMemUsage, after a read, a command and
a write, and from its cron), their running total, and the evictable clients in buckets by size
(powers of two), evicting from the largest bucket, in the order clients entered it. minired
keeps the same: each client's last figure, the total, the buckets. A figure is taken again
when it can have changed: for the client about to run a command and the one whose command ran
last (what a command queues, subscribes or answers), once per read and per command while a
transaction is queued (before_command), after a read that leaves a large or
incomplete command waiting (ClientProtocol.data_received), after a write that leaves replies
queued (output_limits.py), for the clients measured with replies waiting once per read (their
transport drains them between reads, unseen), for all every 100 ms, and when CONFIG SET
changes the limit. Nothing of it runs while maxmemory-clients is 0: dispatch tests
Config.clients_limited, and a connection asks `Hooks.client_eviction`, None until a limit or
CLIENT NO-EVICT is first set.
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
# Redis's CLIENT_MEM_USAGE_BUCKET_MIN_LOG and _MAX_LOG: the smallest bucket holds clients of up
# to 32 KiB, each next one those of up to twice that, the last those over 4 GiB.
_BUCKET_MIN_LOG = 15
_BUCKET_MAX_LOG = 33
BUCKETS = 1 + _BUCKET_MAX_LOG - _BUCKET_MIN_LOG


def bucket_of(memory: int) -> int:
    """getMemUsageBucket: the bucket of a client using `memory` bytes."""
    return min(max(memory.bit_length(), _BUCKET_MIN_LOG), _BUCKET_MAX_LOG) - _BUCKET_MIN_LOG


class ClientEviction:
    def __init__(self, server: "Server") -> None:
        self.server = server
        self.no_evict: set[int] = set()  # CLIENT NO-EVICT ON
        self.evicted = 0  # INFO evicted_clients
        self._cron = None
        self._limit = 0  # limit(), taken again when maxmemory-clients or maxmemory changes
        # Each counted client's last figure (last_memory_usage) and their sum
        # (stat_clients_type_memory of the normal and pub/sub types).
        self.usage: dict["Client", int] = {}
        self.total = 0
        # The evictable clients by bucket, each in the order it entered (Redis appends a client
        # to its new bucket's list), and the bucket each is in.
        self.buckets: list[dict["Client", None]] = [{} for _ in range(BUCKETS)]
        self.bucket: dict["Client", int] = {}
        # Clients measured with replies waiting: the transport writes them out between reads
        # without a word, so their figures are taken again once per read.
        self.backlog: set["Client"] = set()
        self._reads_seen = -1
        self._reads_measured = -1  # the read before_command last took figures on
        # The client whose command ran last: its figure is taken again at the next check, as
        # Redis updates a client's after each command it runs.
        self.last: "Client | None" = None

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

    # --- the figures -----------------------------------------------------------------------

    def measure(self, c: "Client") -> None:
        """updateClientMemUsage: take c's figure again, and move it to its bucket."""
        conn = c.connection
        if conn is not None and conn.outbox and not c.closing:
            guard = self.server.output_buffer_guard
            # Replies gathered but not written yet: Redis has already closed a client they
            # take past its output limit (those are enforced first), and counts it no more
            # (the guard drops it: forget() runs).
            if guard is not None and guard.limit_reached(conn, sum(map(len, conn.outbox))):
                return
        usage = self.usage
        # Only normal and pub/sub clients count (getClientType): not a master's link (M) or a
        # replica (S); a monitor (O) does, as in Redis.
        if c.closing or c.flags == "S" or c.flags == "M":
            old = usage.pop(c, None)
            if old is not None:
                self.total -= old
            self._unbucket(c)
            self.backlog.discard(c)
            return
        memory = client_info.client_memory(c)
        old = usage.get(c)
        no_evict = c.id in self.no_evict  # (clientEvictionAllowed)
        # (most commands change nothing: the buckets are left alone, unless NO-EVICT changed)
        if old != memory or (c in self.bucket) == no_evict:
            usage[c] = memory
            self.total += memory - (old or 0)
            if no_evict:
                self._unbucket(c)
            else:
                index = bucket_of(memory)
                if self.bucket.get(c) != index:
                    self._unbucket(c)
                    self.buckets[index][c] = None
                    self.bucket[c] = index
        buffered = conn._transport_buffered if conn is not None else None
        if conn is not None and (conn.outbox or buffered is not None and buffered()):
            self.backlog.add(c)
        elif self.backlog:
            self.backlog.discard(c)

    def _unbucket(self, c: "Client") -> None:
        index = self.bucket.pop(c, None)
        if index is not None:
            del self.buckets[index][c]

    def measure_all(self) -> None:
        for c in list(self.server.clients.values()):
            self.measure(c)

    def _refresh(self, current: "Client | None" = None) -> None:
        """The figures that may have changed unseen since the last check: the last command's
        client's (unless it is `current`, measured next), and those of clients with replies
        waiting, after a read."""
        reads = self.server.stats.reads_processed
        if reads != self._reads_seen and self.backlog:
            self._reads_seen = reads
            for c in list(self.backlog):
                self.measure(c)
        last = self.last
        if last is not None and last is not current:
            self.last = None
            self.measure(last)

    # --- evictClients ----------------------------------------------------------------------

    def before_command(self, c: "Client") -> None:
        """Before each of c's commands while maxmemory-clients is set (dispatch). The figures
        are taken again when another client ran the last command, on a new read, and while c
        queues a transaction; between the commands of one read nothing else of a client's
        changes much (its replies wait in the batch, its input was counted on reading)."""
        if not self._limit:
            return
        reads = self.server.stats.reads_processed
        if c is not self.last or reads != self._reads_measured or c.multi is not None:
            self._reads_measured = reads
            self._refresh(c)
            self.measure(c)
            self.last = c
        if self.total >= self._limit:
            self._evict()

    def check(self) -> int:
        """evictClients, with the figures that may have changed taken again; how many clients
        were evicted."""
        if not self._limit:
            return 0
        self._refresh()
        return self._evict() if self.total >= self._limit else 0

    def _evict(self) -> int:
        """Evict from the largest bucket down, each bucket's clients in the order they entered
        it, while the clients' memory is at or over the limit."""
        limit = self._limit
        evicted = 0
        for bucket in reversed(self.buckets):
            while bucket and self.total >= limit:
                self.evict(next(iter(bucket)))
                evicted += 1
            if self.total < limit:
                return evicted
        log.warning("Over client maxmemory after evicting all evictable clients")
        return evicted

    def evict(self, c: "Client") -> None:
        log.info("Evicting client: %s", client_info.client_info_line(c))
        self.evicted += 1
        conn: "ClientProtocol | None" = c.connection
        c.closing = True
        if conn is not None and conn.transport is not None:
            conn.drop()  # its replies go with it, unsent
        self.forget(c)  # (drop() did already, through the disconnect hooks)

    # --- events ----------------------------------------------------------------------------

    def after_read(self, conn: "ClientProtocol") -> None:
        """A read left a large or incomplete command waiting (server.py)."""
        if self._limit and conn.client is not None:
            self.measure(conn.client)
            self.check()

    def after_write(self, conn: "ClientProtocol") -> None:
        """A write left replies queued (output_limits.py)."""
        self.after_read(conn)

    def set_no_evict(self, c: "Client", on: bool) -> None:
        """CLIENT NO-EVICT: c leaves or joins the buckets (evicted, if over, before the next
        command, as in Redis)."""
        if on:
            self.no_evict.add(c.id)
        else:
            self.no_evict.discard(c.id)
        if self._limit:
            self.measure(c)

    def configured(self) -> None:
        """maxmemory-clients (or maxmemory) changed: evict now, and look every 100 ms while a
        limit is set."""
        self._limit = self.limit()
        if not self._limit:  # (Redis frees its buckets)
            self.usage.clear()
            self.total = 0
            self.buckets = [{} for _ in range(BUCKETS)]
            self.bucket.clear()
            self.backlog.clear()
            self.last = None
            return
        self.measure_all()
        self.check()
        loop = self.server.loop
        if self._cron is None and loop is not None:
            self._cron = loop.call_later(_CRON_S, self._tick)

    def _tick(self) -> None:
        """clientsCron: every client's figure taken again (buffers shrink, prefixes go)."""
        self._cron = None
        if self._limit:
            self.measure_all()
            self.check()
            loop = self.server.loop
            if loop is not None and not self.server.shutdown_requested:
                self._cron = loop.call_later(_CRON_S, self._tick)

    def exempt(self, c: "Client") -> bool:
        return c.id in self.no_evict

    def forget(self, c: "Client") -> None:
        """c left (or RESET it, which turns NO-EVICT off)."""
        self.no_evict.discard(c.id)
        memory = self.usage.pop(c, None)
        if memory is not None:
            self.total -= memory
        self._unbucket(c)
        self.backlog.discard(c)
        if c.closing and self.last is c:
            self.last = None

    def pools(self) -> str:
        """DEBUG CLIENT-EVICTION: each bucket's range, its clients' memory and their count."""
        lines = []
        for j, bucket in enumerate(self.buckets):
            low = 0 if j == 0 else 1 << (j - 1 + _BUCKET_MIN_LOG)
            high = "+" + " " * 12 if j == BUCKETS - 1 else \
                f" - {(1 << (j + _BUCKET_MIN_LOG)) - 1:10d}"
            memory = sum(self.usage.get(c, 0) for c in bucket)
            lines.append(f"bucket {low:10d}{high}: tot-mem: {memory:10d}, clients: {len(bucket)}\n")
        return "".join(lines)


def of(server: "Server") -> ClientEviction:
    """The server's client eviction, set up on first use (a limit, or CLIENT NO-EVICT)."""
    eviction = server.hooks.client_eviction
    if eviction is None:
        eviction = server.hooks.client_eviction = ClientEviction(server)
        server.hooks.disconnect.append(eviction.forget)
    return eviction


def configure(server: "Server") -> None:
    """CONFIG SET maxmemory-clients / maxmemory, and start-up."""
    if server.hooks.client_eviction is None and not server.config.clients_limited:
        return
    of(server).configured()


def attach(server: "Server") -> None:
    configure(server)
    server.hooks.start.append(lambda: configure(server))
