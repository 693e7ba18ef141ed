"""The master side of replication: replicas that sent SYNC or PSYNC get a snapshot of the data
(`+FULLRESYNC <replid> <offset>` first for PSYNC, then `$<len>\\r\\n<rdb>` with no CRLF after it,
as Redis sends a disk-based snapshot), then the stream of writes.

The stream is what persistence propagates to the AOF (Persistence._append feeds both: one
source of truth), each record preceded by a SELECT where its database changes, the first after
a new replica attached included (Redis resets slaveseldb then). The replication offset counts
the bytes of the stream (master_repl_offset); replicas report theirs with REPLCONF ACK, which
WAIT and INFO/ROLE read. Every repl-ping-replica-period seconds the replicas are sent a PING.

The first replica creates the replication backlog (repl-backlog-size bytes of the stream, with
a new replication ID, as Redis's syncCommand does): a replica that reconnects with `PSYNC
<replid> <offset>`, its offset still in the backlog and the ID this server's (or its previous
one, replid2, up to second_repl_offset), gets `+CONTINUE <replid>` and the stream from there
(masterTryPartialResynchronization); any other PSYNC a full resynchronization. The backlog is
fed while it exists, replicas or not, and freed (with a new ID) repl-backlog-ttl seconds after
the last replica left. While this server is a replica, its backlog holds its master's stream
(replica_link.py), so that once promoted (REPLICAOF NO ONE: the master's ID becomes replid2)
its own replicas can continue from it.

Chained replicas: a replica can have replicas of its own. It does not propagate what it
executes (feed() does nothing while there is a link); it proxies the exact bytes of its
master's stream, as they are applied, into its backlog and to its replicas (proxy(), Redis's
replicationFeedStreamFromMasterStream), so the whole chain shares one history: the master's
replication ID and offsets, and a sub-replica's PSYNC is served from this server's backlog
under that ID. A replica whose link is not up refuses SYNC and PSYNC (NOMASTERLINK); what
happens to its replicas when the link changes is replica_link.py's.

Snapshots and the images sent to replicas hold the ID, offset and stream database
(save_info: rdbPopulateSaveInfo), and a dump.rdb holding them restores them at start-up
(restore_at_start: loadDataFromDisk): a replica then asks its master to continue from there,
a master keeps them as its previous history so that its replicas can (restore_at_start).

min-replicas-to-write/min-replicas-max-lag: the replicas that acknowledged within the lag are
counted (refreshGoodSlavesCount) when one attaches, acknowledges or leaves, and every second;
writes are refused with NOREPLICAS while too few are (Config.writes_need_replicas).

Nothing here runs until the first SYNC (or a dump.rdb restored a history at start-up): until
then the write path pays the one check of `Persistence.replica_feed` it already made for the
AOF.
"""
from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from minired.engine.blocking import Block
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import encode_command

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired.replication")

_PING = encode_command([b"PING"])
_GETACK = encode_command([b"REPLCONF", b"GETACK", b"*"])


class Replica:
    """One attached replica: the port it listens on (REPLCONF listening-port), the address it
    announced (REPLCONF ip-address, replica-announce-ip), the offset it last acknowledged, and
    the bytes of the stream written to it since its snapshot (what of its output the replica
    class's limits count: output_limits.py)."""

    __slots__ = ("client", "listening_port", "announced_ip", "ack_offset", "ack_time",
                 "stream_bytes", "acknowledges")

    def __init__(self, client: "Client", listening_port: int, announced_ip: str = "",
                 acknowledges: bool = True) -> None:
        self.client = client
        self.listening_port = listening_port
        self.announced_ip = announced_ip
        # False for a replica that attached with SYNC (Redis's CLIENT_PRE_PSYNC): it never
        # sends REPLCONF ACK, so its silence is no sign of a hang.
        self.acknowledges = acknowledges
        self.ack_offset = 0
        self.ack_time = time.monotonic()
        self.stream_bytes = 0

    @property
    def ip(self) -> str:
        """The address it announced, else its connection's (Redis's slave_addr, else the
        peer's): what INFO, ROLE and FAILOVER TO name it by."""
        return self.announced_ip or self.client.addr.rpartition(":")[0]

    @property
    def name(self) -> str:
        """How the log names it (replicationGetSlaveName)."""
        port = self.listening_port
        return f"{self.ip}:{port}" if port else f"{self.ip}:<unknown-replica-port>"


NO_REPLID = "0" * 40


def new_replid() -> str:
    """changeReplicationId: 40 random hex characters."""
    return os.urandom(20).hex()


class Backlog:
    """The last repl-backlog-size bytes of the stream; `end` is the offset of the last byte
    (master_repl_offset). The buffer is trimmed once it holds twice the size, so a write
    costs no copy of the whole backlog."""

    __slots__ = ("config", "data", "end", "trim_at")

    def __init__(self, config: Any, offset: int) -> None:
        self.config = config
        self.data = bytearray()
        self.end = offset
        # Twice the size when last looked up: the size (CONFIG SET may change it) is read again
        # once the buffer passes this, not on every write.
        self.trim_at = 0

    @property
    def size(self) -> int:
        return self.config.number("repl-backlog-size")

    def append(self, data: bytes) -> None:
        buffer = self.data
        buffer += data
        self.end += len(data)
        if len(buffer) > self.trim_at:
            size = self.size
            if len(buffer) > 2 * size:
                del buffer[:len(buffer) - size]
            self.trim_at = 2 * size

    @property
    def histlen(self) -> int:
        return min(len(self.data), self.size)

    @property
    def first_byte_offset(self) -> int:
        return self.end - self.histlen + 1

    def since(self, psync_offset: int) -> bytes | None:
        """The stream from psync_offset (the first byte a replica lacks) on; None if the
        backlog no longer (or never) held it."""
        if not self.first_byte_offset <= psync_offset <= self.end + 1:
            return None
        return bytes(self.data[len(self.data) - (self.end + 1 - psync_offset):])


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
        # The ID of the history this one continues (a promoted replica's master's), and the
        # first offset that is not part of it.
        self.replid2 = NO_REPLID
        self.second_replid_offset = -1
        self.offset = 0  # master_repl_offset: the bytes of the stream so far
        self.backlog: Backlog | None = None
        self._backlog_timer: Any = None
        # Since when no replica is attached (repl_no_slaves_since): repl-backlog-ttl counts
        # from it.
        self.no_replicas_since = time.monotonic()
        self.replicas: list[Replica] = []
        self.listening_ports: dict[int, int] = {}  # client id -> REPLCONF listening-port
        self.announced_ips: dict[int, str] = {}  # client id -> REPLCONF ip-address
        # client id -> what REPLCONF rdb-filter-only keeps of the RDB ("functions", or nothing)
        self.rdb_filters: dict[int, set[str]] = {}
        self.psync2: set[int] = set()  # client ids that sent REPLCONF capa psync2
        self.sync_full = self.sync_partial_ok = self.sync_partial_err = 0
        # Errors in replies to the master's commands while a replica (replica_link.py).
        self.unexpected_error_replies = 0
        self.good_replicas = 0
        self._cron_timer: Any = None
        self.waiting: list[Waiting] = []
        self._db = -1  # the database the stream last SELECTed
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self._ping_timer: Any = None
        self._cron_loops = 0  # the seconds the PING timer ticked (replication_cron_loops)
        # The link to this server's own master while it is a replica (replica_link.Link): its
        # writes are then its master's, and its replicas get its master's stream (proxy).
        self.link: Any = None
        # A shutdown waiting for the replicas to catch up (shutdown_wait.ShutdownWait).
        self.shutdown_wait: Any = None
        # A FAILOVER under way (failover.Failover), None while there is none.
        self.failover: Any = None
        # The (ID, offset, stream database) a replica's dump.rdb held at start-up: the history
        # its link asks to continue (loadDataFromDisk's cached master).
        self.restored: tuple[str, int, int] | None = None

    # --- attaching ---------------------------------------------------------------------------------

    def _feed_on(self) -> None:
        """Have persistence pass the stream here (before the snapshot: what ended belongs
        before it), and send what is pending to the replicas attached."""
        persistence = self.server.features.persistence
        if persistence.replica_feed is None:
            persistence.replica_feed = self.feed
            persistence.reconcile()
        persistence.flush_aof(fsync=False)
        self._flush()

    def _check_link(self) -> None:
        """syncCommand: no replica attaches while this server fails over (its history is about
        to change hands), and a replica serves replicas of its own only while its master link
        is up (what it would send them is its master's stream)."""
        if self.failover is not None:
            raise RedisError(errors.NOMASTERLINK_FAILING_OVER)
        if self.link is not None and self.link.state != "connected":
            raise RedisError(errors.NOMASTERLINK)

    def psync(self, c: "Client", master_replid: bytes, psync_offset: int) -> None:
        """PSYNC <replid> <offset>: the stream from offset on if the backlog still holds it,
        else (and for `PSYNC ? -1`) a full resynchronization."""
        self._check_link()
        if self._try_partial(c, master_replid.decode(errors="replace"), psync_offset):
            self.sync_partial_ok += 1
            return
        if master_replid[:1] != b"?":
            self.sync_partial_err += 1
        self.sync(c, psync=True)

    def _try_partial(self, c: "Client", master_replid: str, psync_offset: int) -> bool:
        replid = self.replid_now  # (a replica's: its master's, whose stream it holds)
        if master_replid != replid and (master_replid != self.replid2
                                        or psync_offset > self.second_replid_offset):
            if master_replid != "?":
                log.info("Partial resynchronization not accepted: Replication ID mismatch "
                         "(Replica asked for '%s', my replication IDs are '%s' and '%s')",
                         master_replid, replid, self.replid2)
            return False
        if self.backlog is None:
            return False
        self._feed_on()
        data = self.backlog.since(psync_offset)
        if data is None:
            log.info("Unable to partial resync with replica %s for lack of backlog (Replica "
                     "request was: %d).", c.addr, psync_offset)
            return False
        c.flags = "S"
        head = (b"+CONTINUE %s\r\n" % replid.encode() if c.id in self.psync2
                else b"+CONTINUE\r\n")
        c._send(head + data)
        self._attach(c)
        log.info("Partial resynchronization request from %s accepted. Sending %d bytes of "
                 "backlog starting from offset %d.", c.addr, len(data), psync_offset)
        return True

    def sync(self, c: "Client", psync: bool) -> None:
        """SYNC/PSYNC: a snapshot of the data now, then the stream from this point on."""
        if not psync:
            self._check_link()
        persistence = self.server.features.persistence
        self._feed_on()
        if self.backlog is None and not self.replicas:
            # A backlog from scratch starts a new history: a new ID, no previous one.
            self.new_history()
            self.backlog = Backlog(self.server.config, self.offset)
            log.info("Replication backlog created, my new replication IDs are '%s' and '%s'",
                     self.replid, self.replid2)
        only = self.rdb_filters.pop(c.id, None)
        payload = b"".join(persistence._image(data=only is None,
                                              functions=only is None or "functions" in only))
        head = (b"+FULLRESYNC %s %d\r\n" % (self.replid_now.encode(), self.offset_now)
                if psync else b"")
        c.flags = "S"
        snapshot = head + b"$%d\r\n" % len(payload) + payload
        if c.connection is not None:
            # Written before the replica is attached, so that the replica class's limits,
            # which count only the stream (output_limits.py), never count the snapshot.
            c.connection.write_now(snapshot)
        else:
            c._send(snapshot)
        self._db = -1  # the new replica's stream starts with a SELECT
        self.sync_full += 1
        self._attach(c, acknowledges=psync)
        log.info("Replica %s asks for synchronization; full resync at offset %d", c.addr,
                 self.offset_now)

    def new_history(self) -> None:
        """changeReplicationId and clearReplicationId2: a new ID, and no previous history a
        replica could continue."""
        self.replid = new_replid()
        self.replid2, self.second_replid_offset = NO_REPLID, -1

    def _attach(self, c: "Client", acknowledges: bool = True) -> None:
        self.psync2.discard(c.id)
        self.replicas.append(Replica(c, self.listening_ports.pop(c.id, 0),
                                     self.announced_ips.pop(c.id, ""), acknowledges))
        self.server.hooks.add(self.server.hooks.disconnect, self.forget)
        if self._backlog_timer is not None:
            self._backlog_timer.cancel()
            self._backlog_timer = None
        self._arm_ping()
        self._arm_cron()
        self.refresh_good()

    def forget(self, c: "Client") -> None:
        self.listening_ports.pop(c.id, None)
        self.announced_ips.pop(c.id, None)
        self.rdb_filters.pop(c.id, None)
        self.psync2.discard(c.id)
        self.waiting = [w for w in self.waiting if w.client is not c]
        kept = [r for r in self.replicas if r.client is not c]
        if len(kept) == len(self.replicas):
            return
        self.replicas = kept
        log.info("Connection with replica %s lost.", c.addr)
        self.refresh_good()
        if not kept:
            persistence = self.server.features.persistence
            persistence.flush_aof(fsync=False)
            self._flush()
            self.no_replicas_since = time.monotonic()
            if self.backlog is None:
                self._feed_off()
            else:
                self.arm_backlog_ttl()

    def restart_stream(self) -> None:
        """A replica promoted (REPLICAOF NO ONE): its own writes feed the backlog from now on,
        the first after a SELECT (replicationUnsetMaster resets slaveseldb)."""
        self._db = -1
        self._feed_on()
        self.no_replicas_since = time.monotonic()  # (replicationUnsetMaster)
        self.arm_backlog_ttl()

    def _feed_off(self) -> None:
        persistence = self.server.features.persistence
        persistence.replica_feed = None
        persistence.reconcile()

    def _free_backlog(self) -> None:
        """repl-backlog-ttl passed without replicas: the backlog goes, and the history with it
        (a new ID), as replicationCron does."""
        self._backlog_timer = None
        if self.replicas or self.link is not None:
            return
        self.backlog = None
        self.new_history()
        self._feed_off()
        log.info("Replication backlog freed after %d seconds without connected replicas.",
                 self.server.config.number("repl-backlog-ttl"))

    # --- min-replicas-to-write ---------------------------------------------------------------------

    def refresh_good(self) -> None:
        """refreshGoodSlavesCount: the replicas whose last ACK is at most min-replicas-max-lag
        seconds old."""
        config = self.server.config
        max_lag = config.number("min-replicas-max-lag")
        now = time.monotonic()
        good = sum(1 for r in self.replicas if int(now - r.ack_time) <= max_lag)
        self.good_replicas = good
        config.note_good_replicas(good)

    def _arm_cron(self) -> None:
        if self._cron_timer is None and self.server.loop is not None:
            self._cron_timer = self.server.loop.call_later(1.0, self._cron)

    def _cron(self) -> None:
        self._cron_timer = None
        self.refresh_good()
        if self.replicas:
            self._arm_cron()

    def disconnect_replicas(self) -> None:
        for replica in list(self.replicas):
            replica.client.close()

    def replica_of(self, c: "Client") -> Replica | None:
        for replica in self.replicas:
            if replica.client is c:
                return replica
        return None

    # --- the stream --------------------------------------------------------------------------------

    def feed(self, db_index: int | None, record: bytes) -> None:
        """Persistence._append: one record of the stream (a command, encoded), sent once this
        pass of the loop ends."""
        if self.link is not None:
            return  # (a replica's writes come from its master: see the module's docstring)
        if db_index is not None and db_index != self._db:
            self._write(encode_command([b"SELECT", b"%d" % db_index]))
            self._db = db_index
        self._write(record)

    def feed_as_is(self, argv: list) -> None:
        """DEBUG REPLICATE: a command into the stream with no SELECT before it, whatever
        database the stream is in (replicationFeedSlaves with dictid -1); the AOF does not
        get it. Nothing while a replica or with neither replicas nor a backlog."""
        if self.link is None and (self.replicas or self.backlog is not None):
            self._write(encode_command(argv))

    def _write(self, data: bytes) -> None:
        self.offset += len(data)
        if self.backlog is not None:
            self.backlog.append(data)
        self._pending.append(data)
        if not self._flush_scheduled and self.server.loop is not None:
            self._flush_scheduled = True
            self.server.loop.call_soon(self._flush)

    def proxy(self, data: bytes) -> None:
        """A replica: bytes of its master's stream, applied (replicationFeedStreamFromMasterStream):
        into the backlog and, as they are, to this server's own replicas."""
        if self.backlog is not None:
            self.backlog.append(data)
        if self.replicas:
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
            replica.stream_bytes += len(data)

    def _arm_ping(self) -> None:
        if self._ping_timer is None and self.server.loop is not None:
            self._ping_timer = self.server.loop.call_later(1.0, self._ping)

    def _ping(self) -> None:
        """replicationCron, every second: every repl-ping-replica-period ticks a PING in the
        stream keeps the replicas' links alive (the period read at each tick, so that CONFIG
        SET takes effect at once); a replica's replicas get its master's PINGs, in the stream
        it proxies."""
        self._ping_timer = None
        if self.replicas:
            period = max(1, int(self.server.config.get("repl-ping-replica-period") or 10))
            self._cron_loops += 1
            if self._cron_loops % period == 0 and self.link is None and not self._pings_held():
                self._write(_PING)
            self._drop_timed_out()
            self._arm_ping()

    def _drop_timed_out(self) -> None:
        """replicationCron: a replica that has acknowledged nothing for repl-timeout seconds
        (stopped, hung, or cut off) is disconnected, its output no longer kept for it."""
        timeout = int(self.server.config.get("repl-timeout"))
        now = time.monotonic()
        for replica in list(self.replicas):
            if replica.acknowledges and now - replica.ack_time > timeout:
                log.warning("Disconnecting timedout replica (streaming sync): %s", replica.name)
                replica.client.kill()

    def _pings_held(self) -> bool:
        """replicationCron sends no PING while the clients are paused for a failover that has a
        deadline (failover_end_time): its target's offset must catch up with one that holds
        still. Any other pause, CLIENT PAUSE's included, leaves the PINGs going."""
        failover = self.failover
        return failover is not None and failover.end_ms > 0 and self.server.pause is not None

    # --- acknowledgements and WAIT -----------------------------------------------------------------

    def acknowledged(self, c: "Client", offset: int) -> None:
        replica = self.replica_of(c)
        if replica is None:
            return
        replica.ack_offset = max(replica.ack_offset, offset)
        replica.ack_time = time.monotonic()
        if self.failover is not None:
            self.failover.schedule_check()  # (it may wait for this replica)
        if self.good_replicas < len(self.replicas):
            self.refresh_good()
        for waiting in list(self.waiting):
            count = self.replicas_at(waiting.offset)
            waiting.block.timeout_reply = count  # what a timeout answers from now on
            if count >= waiting.wanted:
                self.waiting.remove(waiting)
                waiter = waiting.client.blocked
                if waiter is not None and waiter.block is waiting.block:
                    self.server.blocking.finish(waiter, count)

    def ask_for_acks(self) -> None:
        """sendGetackToReplicas: REPLCONF GETACK * in the stream (not a replica's: its stream
        is its master's)."""
        if self.link is None:
            self._write(_GETACK)

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
        self.ask_for_acks()
        return block

    # --- INFO and ROLE -----------------------------------------------------------------------------

    def info_fields(self) -> list[tuple[str, Any]]:
        """INFO replication's fields after `role`: the master link's, then the replicas'."""
        now = time.monotonic()
        fields: list[tuple[str, Any]] = [] if self.link is None else self.link.info_fields()
        fields.append(("connected_slaves", len(self.replicas)))
        config = self.server.config
        if config.number("min-replicas-to-write") and config.number("min-replicas-max-lag"):
            fields.append(("min_slaves_good_slaves", self.good_replicas))
        for i, replica in enumerate(self.replicas):
            fields.append((f"slave{i}", f"ip={replica.ip},port={replica.listening_port},"
                           f"state=online,offset={replica.ack_offset},"
                           f"lag={int(now - replica.ack_time)}"))
        return fields

    def buffered_bytes(self) -> int:
        """mem_total_replication_buffers: Redis's replicas and backlog share one buffer, the
        bytes from the oldest any of them still needs to the end of the stream: the backlog's
        history or the most a replica has still to be sent, whichever is longer."""
        from minired.engine.client_info import output_bytes

        most = self.backlog.histlen if self.backlog is not None else 0
        for replica in self.replicas:
            connection = replica.client.connection
            if connection is not None:
                most = max(most, output_bytes(connection))
        return most

    def history_fields(self) -> list[tuple[str, Any]]:
        """INFO replication's IDs, offsets and backlog."""
        backlog = self.backlog
        return [("master_replid", self.replid_now), ("master_replid2", self.replid2),
                ("master_repl_offset", self.offset_now),
                ("second_repl_offset", self.second_replid_offset),
                ("repl_backlog_active", int(backlog is not None)),
                ("repl_backlog_size", self.server.config.number("repl-backlog-size")),
                ("repl_backlog_first_byte_offset",
                 backlog.first_byte_offset if backlog is not None else 0),
                ("repl_backlog_histlen", backlog.histlen if backlog is not None else 0)]

    # --- the replication ID and offset in the RDB -------------------------------------------------

    def save_info(self) -> tuple[int, str, int] | None:
        """rdbPopulateSaveInfo: (stream database, ID, offset) for an RDB's repl-* aux fields: a
        master's while it has a backlog (the stream's database, 0 before any SELECT), a
        replica's once it holds a history of its master's (the database its master's stream
        has selected); None otherwise."""
        link = self.link
        if link is None:
            if self.backlog is None:
                return None
            return (self._db if self._db != -1 else 0), self.replid, self.offset
        if not link.synced:
            return None
        return link.master_client.db_index, link.master_replid, max(link.offset, 0)

    def arm_backlog_ttl(self) -> None:
        """A backlog without replicas is freed repl-backlog-ttl seconds after the last one
        left; CONFIG SET repl-backlog-ttl moves the deadline (0: never), as replicationCron
        compares the time without replicas with the setting every second."""
        if self._backlog_timer is not None:
            self._backlog_timer.cancel()
            self._backlog_timer = None
        ttl = self.server.config.number("repl-backlog-ttl")
        if (not self.replicas and self.link is None and self.backlog is not None and ttl > 0
                and self.server.loop is not None):
            delay = max(0.0, self.no_replicas_since + ttl - time.monotonic())
            self._backlog_timer = self.server.loop.call_later(delay, self._free_backlog)

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


def restore_at_start(server: "Server", repl: tuple[int, str, int] | None,
                     expired: list[tuple[int, bytes]]) -> None:
    """loadDataFromDisk, after dump.rdb was loaded at start-up: `repl` the (stream database,
    ID, offset) it held, `expired` the keys it skipped as expired.

    A replica (replicaof configured) keeps the ID and offset as the history its link asks to
    continue, its master's stream in database `stream_db`. A master propagates the deletion
    of the expired keys (RDBFLAGS_FEED_REPL), and keeps the ID as its previous one, valid up
    to offset+1, its stream going on from there after those deletions, in a backlog that
    holds them, so that replicas of the master it was a replica of, or its own, continue;
    without an ID the deletions only count in the offset. (It may run on the thread that
    loads the file: it only sets state; the backlog's TTL timer is armed on the loop.)"""
    if server.config.get("replicaof"):
        if repl is not None:
            state = master(server)
            stream_db, replid, offset = repl
            state.restored = (replid, offset, stream_db)
            state.replid, state.offset = replid, offset
        return
    if repl is None and not expired:
        return  # (nothing to restore: no replication state made)
    state = master(server)
    delete = b"UNLINK" if server.config.get("lazyfree-lazy-expire") == "yes" else b"DEL"
    stream = bytearray()
    db = -1
    for index, key in expired:
        if index != db:
            stream += encode_command([b"SELECT", b"%d" % index])
            db = index
        stream += encode_command([delete, key])
    if repl is None:
        state.offset = len(stream)  # (no history to continue: the backlog is not kept)
        return
    _, replid, offset = repl
    state.replid2, state.second_replid_offset = replid, offset + 1
    state.backlog = Backlog(server.config, offset)
    state.backlog.append(bytes(stream))
    state.offset = state.backlog.end
    state._db = db
    persistence = server.features.persistence
    if persistence is not None and persistence.replica_feed is None:
        persistence.replica_feed = state.feed  # (installed by the reconcile after the load)
    loop = server.loop
    if loop is not None:
        loop.call_soon_threadsafe(state.arm_backlog_ttl)
    else:
        server.hooks.start.append(state.arm_backlog_ttl)
    log.info("Restored the replication ID %s and offset %d of the RDB file as the previous "
             "history", replid, offset)


def state(server: "Server") -> Master | None:
    """The server's replication state, if it was ever made."""
    return server.features.replication


def master(server: "Server") -> Master:
    """The server's replication state, made on first use."""
    state = server.features.replication
    if state is None:
        state = server.features.replication = Master(server)
    return state
