"""The replica side of replication: REPLICAOF host port makes minired a read-only copy of a
running Redis (or minired), as Redis's replication.c does it, so a developer can mirror a
server into a local minired.

The link connects, sends PING, AUTH (with masterauth, and masteruser if set), REPLCONF
listening-port and capa psync2 (not capa eof: the master then sends the `$<len>` form of the
RDB), and PSYNC: `PSYNC <replid> <offset+1>` with the replication ID and offset of the stream
it holds (its master's once synced; its own, as Redis's replicationCacheMasterUsingMyself, when
a master becomes a replica), else `PSYNC ? -1`. On +CONTINUE it keeps its data and applies the
stream from there (a new ID in the reply: the old one becomes replid2); on +FULLRESYNC it
empties the data, loads the RDB (keys already expired kept, as a replica keeps them until its
master deletes them) and applies the stream that follows, each command run by a client
flagged M that the read-only check lets through. The stream also feeds this server's backlog
(replication.py), so that once promoted its replicas can continue from it. It answers REPLCONF
GETACK and sends REPLCONF ACK <offset> every second. If the link drops, it connects again after
a second. REPLICAOF NO ONE ends the link and keeps the data (shiftReplicationId: a new ID, the
master's as replid2).

While a replica, minired's own writes are refused (READONLY, with replica-read-only yes) and
never propagated: replicas of its own get its master's stream, the bytes it applied, as they
are (Master.proxy). They follow it through its link's changes as Redis 7.0's do: they stay
attached while the link is down and across a continuation or a change of master (REPLICAOF
host port), and are disconnected when the history they share changes: a full sync (they sync
again, in full), a continuation under a new ID and a promotion (both: they continue, under the
new ID, from the previous one).

After a full sync the master's stream goes on in the database the RDB's repl-stream-db names
(replicationCreateMasterClient), which matters when the master is itself a replica, whose
stream does not start with a SELECT. A dump.rdb that held the replication ID and offset makes
the link ask to continue from them after a restart (restore_at_start, replication.py).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from minired.data.keyspace import Clock
from minired.engine import dispatch
from minired.engine.client import Client
from minired.engine.panic import server_panic
from minired.engine.server import keep_alive
from minired.engine.table import lookup
from minired.features import pause, replication
from minired.protocol import errors
from minired.protocol.errors import PING_AUTH_ERRORS, RedisError
from minired.protocol.resp import RequestParser, encode_command

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.features import rdb_file

log = logging.getLogger("minired.replication")

_PING_AUTH_ERRORS = tuple(code.encode() for code in PING_AUTH_ERRORS)

RETRY_SECONDS = 1.0
ACK_SECONDS = 1.0
# What the link logs when it has read nothing from its master for repl-timeout seconds, by its
# state (replicationCron): it then starts again, as after any other failure.
_TIMEOUT_CONNECTING = "Timeout connecting to the MASTER..."
_TIMEOUTS = {
    "connecting": _TIMEOUT_CONNECTING, "handshake": _TIMEOUT_CONNECTING,
    "sync": "Timeout receiving bulk data from MASTER... If the problem persists try to set the "
            "'repl-timeout' parameter in redis.conf to a larger value.",
    "connected": "MASTER timeout: no data nor PING received...",
}


class HandshakeError(Exception):
    pass


class _StreamClock(Clock):
    """The clock the master's commands read on a replica: the server's time, but no key has
    expired and no deadline given is already past (expireIfNeeded answers "alive" to the
    master's client, checkAlreadyExpired "no" on a replica): the master decides when a key
    goes, and sends the DEL. The other clients see the key missing meanwhile (keep_expired)."""

    __slots__ = ("server_clock",)

    def __init__(self, server_clock: Clock) -> None:
        super().__init__()
        self.server_clock = server_clock
        self.loading = True  # (what passed() and already_passed() answer no for)

    def ms(self) -> int:
        return self.server_clock.ms()

    def us(self) -> int:
        return self.server_clock.us()

    def command_instant(self) -> int:
        return self.server_clock.command_instant()


class Link:
    """The link to the master while minired replicates one (Master.link)."""

    def __init__(self, server: "Server", host: str, port: int,
                 cached: tuple[str, int, int] | None = None) -> None:
        self.server = server
        self.host = host
        self.port = port
        # connect, connecting, handshake (until PSYNC's answer), sync (the snapshot's transfer),
        # connected: ROLE's words
        self.state = "connect"
        # slave_repl_offset: the stream bytes applied, and the ID of that stream: what PSYNC
        # asks to continue (`cached`: the history this server held before).
        self.synced = cached is not None
        self.master_replid, self.offset, stream_db = (
            cached if cached is not None else (server.run_id, -1, 0))
        self.last_io = time.monotonic()
        self.link_down_since = time.monotonic()
        self.master_client = Client(server, addr=f"{host}:{port}")
        self.master_client.flags = "M"
        self.master_client.authenticated = True
        self.master_client._close = self._drop  # CLIENT KILL TYPE master
        self.master_client.select(stream_db)  # (the database the cached master's stream is in)
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task | None = None
        self._ack_timer: Any = None
        self._watch_timer: Any = None
        self.stopped = False
        # Records read from the master but not applied: a CLIENT PAUSE WRITE holds the master's
        # writes, and everything after the first held one waits in order (slave_read_repl_offset
        # counts them, slave_repl_offset does not).
        self.held: list[tuple[list, bytes]] = []
        self.read_offset = 0
        self._applying = False
        self._stream_clock = _StreamClock(server.clock)

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = self.server.loop.create_task(self._run())
        self._watch_timer = self.server.loop.call_later(1.0, self._watch)

    def stop(self) -> None:
        self.stopped = True
        if self._ack_timer is not None:
            self._ack_timer.cancel()
        if self._watch_timer is not None:
            self._watch_timer.cancel()
        if self._task is not None:
            self._task.cancel()
        if self._writer is not None:
            self._writer.close()

    async def _run(self, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        while not self.stopped:
            try:
                await self._replicate()
            except asyncio.CancelledError:
                raise
            except (OSError, HandshakeError, asyncio.IncompleteReadError, ValueError) as exc:
                log.warning("Replication link with %s:%d: %s", self.host, self.port, exc)
            except Exception:
                log.exception("Replication link with %s:%d failed", self.host, self.port)
            self._link_down()
            if not self.stopped:
                await asyncio.sleep(RETRY_SECONDS)

    def _watch(self) -> None:
        """replicationCron's timeouts, each second: a connection, handshake, snapshot transfer
        or link that has read nothing from the master for repl-timeout seconds (a master that
        hangs, or the network) is given up, logged, and the link starts again (a handshake at
        once, a link a second later), asking to continue where it was."""
        self._watch_timer = None
        if self.stopped:
            return
        message = _TIMEOUTS.get(self.state)
        timeout = int(self.server.config.get("repl-timeout"))
        if message is not None and time.monotonic() - self.last_io > timeout:
            log.warning(message)
            if self._task is not None:
                self._task.cancel()  # (a connect that hangs has no writer to close)
            if self.state == "connected":
                delay = RETRY_SECONDS  # (the master client freed: the next cron reconnects)
            else:
                # cancelReplicationHandshake(reconnect=1): again at once
                log.info("Reconnecting to MASTER %s:%d after failure", self.host, self.port)
                delay = 0.0
            self._link_down()
            self._task = self.server.loop.create_task(self._run(delay=delay))
        self._watch_timer = self.server.loop.call_later(1.0, self._watch)

    def _drop(self) -> None:
        """Close the connection to the master: the link reconnects, and asks to continue."""
        if self._writer is not None:
            self._writer.close()

    def _link_down(self) -> None:
        if self.state == "connected":
            self.link_down_since = time.monotonic()
            if not self.stopped:
                self.server.config.note_replicating(True, link_up=False)
        self.state = "connect"
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None

    # --- the handshake -----------------------------------------------------------------------------

    async def _replicate(self) -> None:
        self.state = "connecting"
        self.last_io = time.monotonic()  # (repl_transfer_lastio: the timeout counts from here)
        # bind-source-addr: the local address the link leaves from (Redis's connection to its
        # master binds it when set).
        source = self.server.config.get("bind-source-addr")
        reader, writer = await asyncio.open_connection(
            self.host, self.port, local_addr=(source, 0) if source else None)
        self._writer = writer
        self.state = "handshake"
        config = self.server.config

        async def ask(*argv: bytes) -> bytes:
            writer.write(encode_command(list(argv)))
            await writer.drain()
            return await self._line(reader)

        pong = await ask(b"PING")
        if pong.startswith(b"-") and not pong.startswith(_PING_AUTH_ERRORS):
            raise HandshakeError(f"Error reply to PING from master: '{pong.decode(errors='replace')}'")
        password = config.get("masterauth") or ""
        if password:
            user = config.get("masteruser") or ""
            argv = [b"AUTH", user.encode(), password.encode()] if user else [b"AUTH", password.encode()]
            reply = await ask(*argv)
            if reply.startswith(b"-"):
                raise HandshakeError(f"Unable to AUTH to MASTER: {reply.decode(errors='replace')}")
        # The port the master lists this replica under (INFO, ROLE, what Sentinel connects
        # to): replica-announce-port if set, as syncWithMaster sends it, else our own.
        port = config.number("replica-announce-port") or self.server.port
        await ask(b"REPLCONF", b"listening-port", b"%d" % port)
        announced = config.get("replica-announce-ip") or ""
        if announced:
            await ask(b"REPLCONF", b"ip-address", announced.encode())
        await ask(b"REPLCONF", b"capa", b"psync2")
        state = replication.master(self.server)
        # A master failing over to this link's master asks it to take over (failover.py).
        failover = state.failover if state.failover is not None and \
            state.failover.asks_takeover() else None
        psync = ([b"PSYNC", self.master_replid.encode(), b"%d" % (self.offset + 1)]
                 if self.synced else [b"PSYNC", b"?", b"-1"])
        if failover is not None:
            psync.append(b"FAILOVER")
        try:
            writer.write(encode_command(psync))
            await writer.drain()
        except OSError:
            if failover is not None:
                failover.psync_not_sent()
            raise
        try:
            reply = await self._line(reader)
        except (OSError, asyncio.IncompleteReadError):
            if failover is not None:
                failover.psync_answered(accepted=False)
            raise
        if failover is not None and not reply.startswith((b"+CONTINUE", b"+FULLRESYNC")):
            failover.psync_answered(accepted=False)
            return  # (the failover aborted: this server is a master again)
        if reply.startswith(b"+CONTINUE"):
            words = reply.split()
            replid = words[1].decode() if len(words) > 1 else self.master_replid
            if replid != self.master_replid:
                # The master's history goes on under a new ID (it was promoted): the old one
                # is the previous history, up to here; this server's replicas are told by
                # being disconnected (they continue under the new ID).
                log.info("Master replication ID changed to %s", replid)
                state.replid2, state.second_replid_offset = self.master_replid, self.offset + 1
                self.master_replid = state.replid = replid
                state.disconnect_replicas()
            if state.backlog is None:
                state.backlog = replication.Backlog(self.server.config, self.offset)
            log.info("Successful partial resynchronization with master.")
            if failover is not None:
                failover.psync_answered(accepted=True)
        elif reply.startswith(b"+FULLRESYNC"):
            if failover is not None:
                failover.psync_answered(accepted=True)  # (before the transfer, as Redis)
            self.state = "sync"
            _, replid, offset = reply.split()
            payload = await self._rdb(reader)
            loaded = self._load(payload)
            self.master_replid = state.replid = replid.decode()
            self.offset = int(offset)
            self.synced = True
            # A new history: the master's ID and offset, a backlog from here; the stream goes
            # on in the database the RDB names (replicationCreateMasterClient).
            state.replid2, state.second_replid_offset = replication.NO_REPLID, -1
            state.backlog = replication.Backlog(self.server.config, self.offset)
            from minired.features.rdb_file import repl_info

            repl = repl_info(loaded.aux)
            self.master_client.select(repl[0] if repl is not None and
                                      repl[0] < len(self.server.keyspace.dbs) else 0)
        else:
            raise HandshakeError(f"Unexpected reply to PSYNC from master: {reply!r}")
        self.state = "connected"
        self.master_client.closing = False
        keepalive = self.server.config.number("tcp-keepalive")
        sock = self._writer.get_extra_info("socket") if self._writer is not None else None
        if keepalive and sock is not None:
            keep_alive(sock, keepalive)  # (replicationCreateMasterClient's createClient)
        self.server.config.note_replicating(True, link_up=True)
        self.last_io = time.monotonic()
        log.info("MASTER <-> REPLICA sync: Finished with success")
        self._send_ack()
        self.held = []  # (what a pause held of an earlier link is that link's: PSYNC resends it)
        self.read_offset = self.offset
        await self._stream(reader)

    async def _line(self, reader: asyncio.StreamReader) -> bytes:
        """A reply line; the newlines a master sends as keep-alives before the RDB are skipped."""
        while True:
            line = await reader.readuntil(b"\n")
            self.last_io = time.monotonic()
            if line.strip():
                return line.rstrip(b"\r\n")

    async def _rdb(self, reader: asyncio.StreamReader) -> bytes:
        header = await self._line(reader)
        if not header.startswith(b"$") or header.startswith(b"$EOF:"):
            raise HandshakeError(f"Bad protocol from MASTER, the first byte is not '$': {header!r}")
        size = int(header[1:])
        chunks = []
        while size > 0:
            # Read in parts, each one proof of life for the transfer's timeout (_watch).
            chunk = await reader.read(min(size, 1 << 20))
            if not chunk:
                raise asyncio.IncompleteReadError(b"".join(chunks), size)
            self.last_io = time.monotonic()
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _load(self, payload: bytes) -> "rdb_file.Loaded":
        """Replace the data by the master's (keys already expired kept: the master deletes them).
        This server's replicas are disconnected, to sync again (replicationAttachToNewMaster)."""
        from minired.features import rdb_file  # (the RDB codec: loaded with the first sync)

        server = self.server
        state = replication.master(server)
        state.disconnect_replicas()
        state.backlog = None  # (its history is not the new one's)
        server.keyspace.flushall()
        loaded = rdb_file.load(payload, server.keyspace, server.clock.ms(), keep_expired=True,
                               deep=server.config.get("sanitize-dump-payload") == "yes")
        for db in server.keyspace.dbs:
            db.own_expires = set()  # (the master's TTLs, just loaded, are not this server's)
        persistence = server.features.persistence
        if loaded.functions and persistence is not None and persistence.functions is not None:
            persistence.functions.restore(rdb_file.functions_payload(loaded.functions), b"flush")
        if persistence is not None and persistence.aof_state == "on":
            # The AOF logged the data this load replaced: rewritten from the new data, as
            # Redis restarts its AOF after a full sync (restartAOFAfterSYNC).
            try:
                persistence.rewrite_aof()
            except RedisError as exc:  # a rewrite already running: the next one is scheduled
                log.warning("AOF rewrite after the sync: %s", exc.message)
        return loaded

    # --- the stream --------------------------------------------------------------------------------

    async def _stream(self, reader: asyncio.StreamReader) -> None:
        parser = RequestParser(max_bulk_len=1 << 62)
        client = self.master_client
        while True:
            data = await reader.read(1 << 16)
            if not data:
                raise HandshakeError("connection lost")
            self.last_io = time.monotonic()
            parser.feed(data)
            for argv in parser.parse():
                # The master sends canonical multibulk: re-encoded, argv is the bytes it took.
                record = encode_command(argv)
                self.read_offset = max(self.read_offset, self.offset) + len(record)
                self.held.append((argv, record))
            self.apply_held(client)
            if parser.error is not None:
                raise HandshakeError(f"protocol error from master: {parser.error}")

    def apply_held(self, client: Client | None = None) -> None:
        """Apply the records read, in order, until a pause holds one (it is tried again at the
        next read or acknowledgement tick). The databases read the stream clock meanwhile, and
        remember no TTL as their own: the master's keys expire when the master says."""
        if self._applying:
            return
        client = client or self.master_client
        state = replication.master(self.server)
        held = self.held
        pause = self.server.pause
        done = 0
        self._applying = True
        dbs = self.server.keyspace.dbs
        kept = [(db.clock, db.own_expires) for db in dbs]
        for db in dbs:
            db.clock = self._stream_clock
            db.own_expires = None
        try:
            for argv, record in held:
                if pause is not None:
                    spec = lookup(argv)
                    if spec is not None and pause.holds(client, spec, argv):
                        break
                done += 1
                state.proxy(record)  # (into the backlog, and on to this server's replicas)
                if (argv[0].lower() == b"replconf" and len(argv) > 1
                        and argv[1].lower() == b"getack"):
                    self._send_ack()  # the offset before the GETACK, as Redis answers it
                    self.offset += len(record)
                    continue
                self.offset += len(record)
                reply = dispatch.execute(client, argv)
                if isinstance(reply, (RedisError, list)):
                    self._check_errors(client, reply)
        finally:
            self._applying = False
            for db, (clock, own_expires) in zip(dbs, kept):
                db.clock = clock
                db.own_expires = own_expires
            del held[:done]

    def _check_errors(self, client: Client, reply: Any) -> None:
        """afterErrorReply for the master's client: an error in the reply to a command of the
        master's (a transaction's included) means this replica's data has diverged. Logged,
        counted (unexpected_error_replies), and fatal as propagation-error-behavior says."""
        errors_found = [reply] if isinstance(reply, RedisError) else [
            item for item in reply if isinstance(item, RedisError)]
        server = self.server
        for error in errors_found:
            spec = client.last_command
            name = spec.full_name if spec is not None else "<unknown>"
            message = error.message
            text = message[4:] if message.startswith("ERR ") else message
            log.warning("== CRITICAL == This replica is sending an error to its master: '%s' "
                        "after processing the command '%s'", text[:4096], name)
            replication.master(server).unexpected_error_replies += 1
            config = server.config
            if (config.get("replica-read-only") == "yes" and config.get(
                    "propagation-error-behavior") in ("panic", "panic-on-replicas")):
                server_panic(f"This replica panicked sending an error to its master after "
                             f"processing the command '{name}'", "networking.c")

    def _send_ack(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
        writer = self._writer
        if self.held and self.server.pause is None and not self._applying:
            self.apply_held()  # a pause that held the stream is over
        if writer is not None and self.state == "connected":
            writer.write(encode_command([b"REPLCONF", b"ACK", b"%d" % self.offset]))
        self._ack_timer = self.server.loop.call_later(ACK_SECONDS, self._send_ack)

    # --- INFO and ROLE -----------------------------------------------------------------------------

    def info_fields(self) -> list[tuple[str, Any]]:
        now = time.monotonic()
        up = self.state == "connected"
        fields: list[tuple[str, Any]] = [
            ("master_host", self.host), ("master_port", self.port),
            ("master_link_status", "up" if up else "down"),
            ("master_last_io_seconds_ago", int(now - self.last_io) if up else -1),
            ("master_sync_in_progress", int(self.state == "sync"))]
        if self.state == "sync":
            fields += [("master_sync_total_bytes", -1), ("master_sync_read_bytes", 0),
                       ("master_sync_left_bytes", -1), ("master_sync_perc", "0.00"),
                       ("master_sync_last_io_seconds_ago", int(now - self.last_io))]
        if not up:
            fields.append(("master_link_down_since_seconds", int(now - self.link_down_since)))
        fields += [("slave_read_repl_offset", max(self.offset, self.read_offset, 0)),
                   ("slave_repl_offset", max(self.offset, 0)),
                   ("slave_priority", self.server.config.get("replica-priority")),
                   ("slave_read_only",
                    int(self.server.config.get("replica-read-only") == "yes")),
                   ("replica_announced",
                    int(self.server.config.get("replica-announced") == "yes"))]
        return fields

    def role(self) -> list:
        return [b"slave", self.host.encode(), self.port, self.state.encode(), self.offset]


def replicate(server: "Server", host: str, port: int, at_start: bool = False) -> bool:
    """REPLICAOF host port: False when already replicating that master. Replicas of this
    server stay attached (replicationSetMaster, Redis 7.0): they may continue with it. At
    start-up (replicaof configured) the history to continue is the one dump.rdb held, if any
    (else `PSYNC ? -1`: no cached master)."""
    state = replication.master(server)
    link = state.link
    if at_start:
        cached = state.restored
        state.restored = None
    elif link is not None:
        if link.host == host and link.port == port:
            return False
        link.stop()
        cached = ((link.master_replid, link.offset, link.master_client.db_index)
                  if link.synced else None)
    else:
        # A master becoming a replica offers its own history (replicationCacheMasterUsingMyself).
        cached = (state.replid, state.offset, 0)
    # Clients blocked on this server (BLPOP, WAIT, ...) are told it changed roles, and closed
    # once told (disconnectAllBlockedClients: CLIENT_CLOSE_AFTER_REPLY).
    for client in server.blocking.unblock_all(RedisError(errors.UNBLOCKED_ROLE_CHANGED),
                                              spare=pause.is_held):
        client.close()
    state.link = link = Link(server, host, port, cached)
    server.config.set("replicaof", f"{host} {port}")  # (CONFIG GET and REWRITE show it)
    server.config.note_replicating(True)
    pause.keep_expired_keys(server)
    for db in server.keyspace.dbs:
        if db.own_expires is None:
            db.own_expires = set()
    dispatch.use_extras()  # (MASTERDOWN: see Config.stale_refused)
    link.start()
    log.info("Connecting to MASTER %s:%d", host, port)
    return True


def promote(server: "Server") -> bool:
    """REPLICAOF NO ONE (replicationUnsetMaster): stop replicating, keep the data, accept
    writes again. False for a master (nothing done); the caller logs why it was promoted."""
    state = server.features.replication
    if state is None or state.link is None:
        return False
    link = state.link
    link.stop()
    state.link = None
    # Its replicas are told of the new ID by being disconnected; they continue from replid2.
    state.disconnect_replicas()
    if link.synced:
        # shiftReplicationId: the stream goes on from the master's offset under a new ID,
        # the master's kept as replid2 so its other replicas can continue here.
        state.offset = link.offset
        state.replid2, state.second_replid_offset = link.master_replid, link.offset + 1
        state.replid = replication.new_replid()
        if state.backlog is None:
            state.backlog = replication.Backlog(server.config, state.offset)
        state.restart_stream()
        log.info("Setting secondary replication ID to %s, valid up to offset: %d. New "
                 "replication ID is %s", state.replid2, state.second_replid_offset, state.replid)
    server.config.set("replicaof", "")
    server.config.note_replicating(False)
    pause.keep_expired_keys(server)
    for db in server.keyspace.dbs:
        db.own_expires = None  # (the expiry cycle takes every key again)
    return True
