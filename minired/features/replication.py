"""The master side of replication: replicas that sent SYNC or PSYNC get a snapshot of the data
(`+FULLRESYNC <replid> <offset>` first for PSYNC, then `$<len>\\r\\n<rdb>` with no CRLF after it,
as Redis sends a disk-based snapshot), then the stream of writes.

The stream is what persistence propagates to the AOF (Persistence._append feeds both: one
source of truth), each record preceded by a SELECT where its database changes, the first after
a new replica attached included (Redis resets slaveseldb then). The replication offset counts
the bytes of the stream (master_repl_offset); replicas report theirs with REPLCONF ACK, which
WAIT and INFO/ROLE read. Every repl-ping-replica-period seconds the replicas are sent a PING.

minired keeps no backlog: every PSYNC is answered with a full resynchronization.
Nothing here runs until the first SYNC: until then the write path pays the one check of
`Persistence.replica_feed` it already made for the AOF.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from minired.engine.blocking import Block
from minired.features.persistence import encode_command

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired.replication")

_PING = encode_command([b"PING"])
_GETACK = encode_command([b"REPLCONF", b"GETACK", b"*"])


class Replica:
    """One attached replica: the port it listens on (REPLCONF listening-port) and the offset it
    last acknowledged."""

    __slots__ = ("client", "listening_port", "ack_offset", "ack_time")

    def __init__(self, client: "Client", listening_port: int) -> None:
        self.client = client
        self.listening_port = listening_port
        self.ack_offset = 0
        self.ack_time = time.monotonic()

    @property
    def ip(self) -> str:
        return self.client.addr.rpartition(":")[0]


class Waiting:
    """A WAIT in progress: the offset its replicas must reach and how many must reach it."""

    __slots__ = ("client", "offset", "wanted", "block")

    def __init__(self, client: "Client", offset: int, wanted: int, block: Block) -> None:
        self.client = client
        self.offset = offset
        self.wanted = wanted
        self.block = block


class Master:
    """server.features.replication while this server is a master (always, until REPLICAOF)."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.replid = server.run_id
        self.offset = 0  # master_repl_offset: the bytes of the stream so far
        self.replicas: list[Replica] = []
        self.listening_ports: dict[int, int] = {}  # client id -> REPLCONF listening-port
        self.waiting: list[Waiting] = []
        self._db = -1  # the database the stream last SELECTed
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self._ping_timer: Any = None
        # The link to this server's own master while it is a replica (replica_link.Link): its
        # writes are then its master's, and nothing is fed to replicas of its own.
        self.link: Any = None

    # --- attaching ---------------------------------------------------------------------------------

    def sync(self, c: "Client", psync: bool) -> None:
        """SYNC/PSYNC: a snapshot of the data now, then the stream from this point on."""
        persistence = self.server.features.persistence
        if self.replicas:
            persistence.flush_aof(fsync=False)  # what ended belongs before the snapshot
        else:
            persistence.replica_feed = self.feed
            persistence.reconcile()
            persistence.flush_aof(fsync=False)
        self._flush()
        payload = b"".join(persistence._image())
        head = b"+FULLRESYNC %s %d\r\n" % (self.replid.encode(), self.offset) if psync else b""
        c.flags = "S"
        c._send(head + b"$%d\r\n" % len(payload) + payload)
        self._db = -1  # the new replica's stream starts with a SELECT
        self.replicas.append(Replica(c, self.listening_ports.pop(c.id, 0)))
        self.server.hooks.add(self.server.hooks.disconnect, self.forget)
        self._arm_ping()
        log.info("Replica %s asks for synchronization; full resync at offset %d", c.addr,
                 self.offset)

    def forget(self, c: "Client") -> None:
        self.listening_ports.pop(c.id, None)
        self.waiting = [w for w in self.waiting if w.client is not c]
        kept = [r for r in self.replicas if r.client is not c]
        if len(kept) == len(self.replicas):
            return
        self.replicas = kept
        log.info("Connection with replica %s lost.", c.addr)
        if not kept:
            persistence = self.server.features.persistence
            persistence.flush_aof(fsync=False)
            self._flush()
            persistence.replica_feed = None
            persistence.reconcile()

    def disconnect_replicas(self) -> None:
        for replica in list(self.replicas):
            replica.client.close()

    def replica_of(self, c: "Client") -> Replica | None:
        for replica in self.replicas:
            if replica.client is c:
                return replica
        return None

    # --- the stream --------------------------------------------------------------------------------

    def feed(self, db_index: int | None, argv: list) -> None:
        """Persistence._append: one record of the stream, sent once this pass of the loop ends."""
        if self.link is not None:
            return  # (a replica's writes come from its master: see the module's docstring)
        if db_index is not None and db_index != self._db:
            self._write(encode_command([b"SELECT", b"%d" % db_index]))
            self._db = db_index
        self._write(encode_command(argv))

    def _write(self, data: bytes) -> None:
        self.offset += len(data)
        self._pending.append(data)
        if not self._flush_scheduled and self.server.loop is not None:
            self._flush_scheduled = True
            self.server.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        for replica in self.replicas:
            replica.client._send(data)

    def _arm_ping(self) -> None:
        if self._ping_timer is None and self.server.loop is not None:
            period = int(self.server.config.get("repl-ping-replica-period") or 10)
            self._ping_timer = self.server.loop.call_later(period, self._ping)

    def _ping(self) -> None:
        """replicationCron: a PING in the stream keeps the replicas' links alive."""
        self._ping_timer = None
        if self.replicas:
            self._write(_PING)
            self._arm_ping()

    # --- acknowledgements and WAIT -----------------------------------------------------------------

    def acknowledged(self, c: "Client", offset: int) -> None:
        replica = self.replica_of(c)
        if replica is None:
            return
        replica.ack_offset = max(replica.ack_offset, offset)
        replica.ack_time = time.monotonic()
        for waiting in list(self.waiting):
            count = self.replicas_at(waiting.offset)
            waiting.block.timeout_reply = count  # what a timeout answers from now on
            if count >= waiting.wanted:
                self.waiting.remove(waiting)
                waiter = waiting.client.blocked
                if waiter is not None and waiter.block is waiting.block:
                    self.server.blocking.finish(waiter, count)

    def replicas_at(self, offset: int) -> int:
        return sum(1 for replica in self.replicas if replica.ack_offset >= offset)

    def wait(self, c: "Client", wanted: int, timeout_ms: int) -> Any:
        """WAIT: the replicas that acknowledged every write so far, at once if enough did, else
        once enough do or the timeout passes; they are asked for their offsets at once."""
        offset = self.offset
        count = self.replicas_at(offset)
        if count >= wanted or not c.can_block:
            return count
        block = Block([], timeout_ms, lambda client, key: None, count)
        self.waiting.append(Waiting(c, offset, wanted, block))
        self._write(_GETACK)
        return block

    # --- INFO and ROLE -----------------------------------------------------------------------------

    def info_fields(self) -> list[tuple[str, Any]]:
        """INFO replication's fields after `role`: the master link's, then the replicas'."""
        now = time.monotonic()
        fields: list[tuple[str, Any]] = [] if self.link is None else self.link.info_fields()
        fields.append(("connected_slaves", len(self.replicas)))
        for i, replica in enumerate(self.replicas):
            fields.append((f"slave{i}", f"ip={replica.ip},port={replica.listening_port},"
                           f"state=online,offset={replica.ack_offset},"
                           f"lag={int(now - replica.ack_time)}"))
        return fields

    @property
    def replid_now(self) -> str:
        """The replication ID of the stream this server holds: its master's, while a replica."""
        return self.replid if self.link is None else self.link.master_replid

    @property
    def offset_now(self) -> int:
        return self.offset if self.link is None else max(self.link.offset, 0)

    def role(self) -> list:
        if self.link is not None:
            return self.link.role()
        return [b"master", self.offset,
                [[r.ip.encode(), b"%d" % r.listening_port, b"%d" % r.ack_offset]
                 for r in self.replicas]]


def master(server: "Server") -> Master:
    """The server's replication state, made on first use."""
    state = server.features.replication
    if state is None:
        state = server.features.replication = Master(server)
    return state
