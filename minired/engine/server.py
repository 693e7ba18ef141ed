"""The network side: one asyncio Protocol per connection feeding bytes to the parser and running
every complete command; all replies produced by one read are written together."""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import time
from collections import deque
from typing import Any, Callable

from minired import REDIS_VERSION, __version__
from minired.data.keyspace import Keyspace
from minired.engine import client_reply, dispatch, latency, querybuf, replybuf
from minired.engine.blocking import Block, BlockingManager
from minired.engine.client import Client
from minired.engine.config import Config
from minired.engine.debug_settings import DebugSettings
from minired.engine.hooks import (
    AccessControl,
    ClusterRouter,
    ConnectionDisruption,
    FaultInjector,
    Features,
    Hooks,
    MemoryAdmission,
    OutputBufferGuard,
    Pause,
    Propagate,
    Tracking,
)
from minired.engine.slowlog import SlowLog
from minired.protocol import errors, resp
from minired.protocol.errors import RedisError

log = logging.getLogger("minired")

ACTIVE_EXPIRE_INTERVAL = 0.1
_monotonic = time.monotonic
_QB_IOBUF_LEN = querybuf.IOBUF_LEN
_QB_BIG_ARG = querybuf.BIG_ARG


class Stats:
    __slots__ = ("started", "started_monotonic", "connections_received",
                 "rejected_connections", "expired_keys", "evicted_keys",
                 "net_input_bytes", "net_output_bytes", "error_replies",
                 "reads_processed", "writes_processed", "dump_payload_sanitizations",
                 "lazyfreed_objects")

    def __init__(self) -> None:
        self.started = time.time()
        self.started_monotonic = time.monotonic()
        self.reset()

    def reset(self) -> None:
        """Zero the counters (CONFIG RESETSTAT); the start time stays."""
        # (INFO total_commands_processed is the sum of the commands' calls: table.calls_total)
        self.connections_received = 0
        self.rejected_connections = 0
        self.expired_keys = 0
        self.evicted_keys = 0  # keys deleted to stay under maxmemory
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        # INFO total_reads_processed/total_writes_processed: socket reads and reply writes.
        self.reads_processed = 0
        self.writes_processed = 0
        # INFO dump_payload_sanitizations: listpacks, intsets and stream nodes checked deeply.
        self.dump_payload_sanitizations = 0
        # INFO lazyfreed_objects: values Redis would have freed in the background (UNLINK of a
        # big value, FLUSHALL ASYNC's keys: commands/keys_object.py's free_effort).
        self.lazyfreed_objects = 0
        # INFO errorstats: error replies by their first word (ERR, WRONGTYPE, ...).
        self.error_replies: dict[str, int] = {}

    def count_error(self, message: str) -> None:
        # afterErrorReply: the code is what precedes a space within the reply's first 32 bytes
        # (its '-' included), else ERR - a script's error table may hold any text.
        space = message.find(" ", 0, 31)
        code = message[:space] if space >= 0 else "ERR"
        self.error_replies[code] = self.error_replies.get(code, 0) + 1


class Server:
    """All state of one minired instance; the network listeners are attached by `start`."""

    __slots__ = ("config", "keyspace", "clock", "blocking", "clients", "stats", "command_stats",
                 "run_id", "loop", "listeners", "port", "host", "stopped", "_expire_task", "slowlog",
                 "hooks", "features", "last_save", "shutdown_requested", "active_expire_enabled",
                 "propagate", "sync_before_reply", "output_buffer_guard", "memory",
                 "memory_admission", "outbox_queue", "flush_scheduled", "access", "tracking",
                 "pause", "cluster", "faults", "scan_snapshots", "collection_scan_snapshots",
                 "debug", "latency_events", "shutdown_asap", "unserved")

    def __init__(self, config: Config | None = None, clock: Any = None) -> None:
        self.config = config or Config()
        # (the nodes of a cluster in one process share one clock)
        self.keyspace = Keyspace(self.config.databases, clock)
        self.clock = self.keyspace.clock
        self.blocking = BlockingManager(self.keyspace)
        self.clients: dict[int, Client] = {}
        self.stats = Stats()
        # Per command, this server's INFO commandstats counters and latency histogram, by the
        # spec's number (table.stats_of).
        self.command_stats: list = []
        self.run_id = os.urandom(20).hex()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listeners: list[asyncio.AbstractServer] = []
        # TCP sockets listen_on (or restart) bound, until their listener is made on the loop.
        self.unserved: list[socket.socket] = []
        self.port = 0
        self.host = ""
        self.stopped: asyncio.Event | None = None  # created in start(), on the server's loop
        self._expire_task: asyncio.Task | None = None
        # What optional features registered for the server's events (minired/engine/hooks.py).
        self.hooks = Hooks()
        # The features' own per-server state, each under its own name; the engine never reads it.
        self.features = Features()
        self.last_save = int(time.time())
        self.shutdown_requested = False
        # DEBUG SET-ACTIVE-EXPIRE 0 turns the background sweep off (expiry stays lazy).
        self.active_expire_enabled = True
        # The other DEBUG switches (SET-SKIP-CHECKSUM-VALIDATION, SET-DISABLE-DENY-SCRIPTS ...).
        self.debug = DebugSettings()
        # The hook points below are what the engine itself asks or calls, each typed by its
        # interface in hooks.py; a feature puts its implementation in the slot when it is
        # attached or first used. None costs one attribute check where used.
        # A write command succeeded (Propagate: logging and counting writes).
        self.propagate: Propagate | None = None
        # Make logged writes durable before a reply leaves (appendfsync always).
        self.sync_before_reply: Callable[[], None] | None = None
        # Output buffer limits (hooks.OutputBufferGuard): called after a write left bytes
        # queued in the transport; `threshold` and `refuses` check a large write before it.
        self.output_buffer_guard: OutputBufferGuard | None = None
        self.memory = MemorySampler()
        # Asked before commands while maxmemory is set, whether memory is over it (a denyoom
        # command is then refused): over_maxmemory, unless a feature that frees memory first
        # (key eviction) replaced it (hooks.MemoryAdmission).
        self.memory_admission: MemoryAdmission = self.over_maxmemory
        # Connections whose replies wait for the end of this pass of the loop (flush_replies).
        self.outbox_queue: list[ClientProtocol] = []
        self.flush_scheduled = False
        # Asked for clients not yet authenticated or restricted (hooks.AccessControl).
        self.access: AccessControl | None = None
        # Client-side caching, from the first CLIENT TRACKING ON (hooks.Tracking).
        self.tracking: Tracking | None = None
        # CLIENT PAUSE in force: dispatch checks it per command (hooks.Pause).
        self.pause: Pause | None = None
        # This server's node in cluster mode: dispatch routes every command through it, behind
        # the same gate as the two above (hooks.ClusterRouter).
        self.cluster: ClusterRouter | None = None
        # Fault rules, with fault-injection: dispatch asks it about every command, behind the
        # same gate, and hands it the replies it disrupted (hooks.FaultInjector).
        self.faults: FaultInjector | None = None
        # SCAN and HSCAN/SSCAN/ZSCAN cursors' snapshots (commands/keys.py, collection_scan.py).
        self.scan_snapshots: dict = {}
        self.collection_scan_snapshots: dict = {}
        self.slowlog = SlowLog()  # fed by dispatch.call past slowlog-log-slower-than
        # The latency monitor's event series (latency.add_sample), by event name.
        self.latency_events: dict = {}
        # A signal asked for a shutdown that the next cron tick starts (SHUTDOWN ABORT clears it).
        self.shutdown_asap = False

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 6379,
                    unixsocket: str | None = None, sockets: list | None = None) -> None:
        """Listen on host:port (0: a free port; -1: no TCP), or on `sockets` already bound to
        host (the command line binds before loading, as Redis does), and on unixsocket."""
        self.loop = asyncio.get_running_loop()
        self.blocking.loop = self.loop
        self.stopped = asyncio.Event()
        for hook in self.hooks.start:
            hook()  # timers of the subsystems (persistence), on the loop the server runs on
        # tcp-backlog: the queue of connections not accepted yet, unix socket's included (Redis
        # listens on both with it); read here, as Redis reads it once (immutable).
        backlog = self.config.number("tcp-backlog")
        if sockets:
            for sock in sockets:
                self.listeners.append(await self.loop.create_server(
                    lambda: ClientProtocol(self), sock=sock, backlog=backlog))
            self.host, self.port = host, sockets[0].getsockname()[1]
            self.config.set("port", self.port)
        elif port != -1 and host:
            hosts = host.split()
            for h in hosts:
                sock = bind_ip_literal(h, port)
                if sock is not None:
                    srv = await self.loop.create_server(lambda: ClientProtocol(self), sock=sock,
                                                        backlog=backlog)
                else:
                    srv = await self.loop.create_server(lambda: ClientProtocol(self), h, port,
                                                        reuse_address=True, backlog=backlog)
                self.listeners.append(srv)
                if port == 0:
                    port = srv.sockets[0].getsockname()[1]
            self.host, self.port = hosts[0], port
            self.config.set("port", port)
        if unixsocket:
            if os.path.exists(unixsocket):
                os.unlink(unixsocket)
            srv = await self.loop.create_unix_server(lambda: ClientProtocol(self), unixsocket,
                                                     backlog=backlog)
            perm = int(self.config.get("unixsocketperm") or "0", 8)
            if perm:
                os.chmod(unixsocket, perm)
            self.listeners.append(srv)
        self._expire_task = self.loop.create_task(self._active_expire_loop())

    def listen_on(self, bind: str, port: int, old_bind: str, old_port: int) -> bool:
        """CONFIG SET bind/port: close the TCP listeners and listen on the new addresses, as
        Redis's changeBindAddr/changeListenPort do; if one cannot be bound, the old ones are
        bound again and False is returned. Port 0 leaves no TCP listener, as in Redis."""
        if self.loop is None:  # not started yet: start() reads the configuration
            return True
        tcp = [srv for srv in self.listeners
               if srv.sockets and srv.sockets[0].family != socket.AF_UNIX]
        for srv in tcp:
            srv.close()
            self.listeners.remove(srv)
        for sock in self.unserved:  # (bound by a listen_on earlier in the same command)
            sock.close()
        self.unserved.clear()
        backlog = self.config.number("tcp-backlog")
        sockets = _listening_sockets(bind, port, backlog) if port else []
        if sockets is None:
            sockets = (_listening_sockets(old_bind, old_port, backlog) or []) if old_port else []
            self._serve(sockets)
            return False
        self._serve(sockets)
        if port:
            self.port = port
        return True

    def _serve(self, sockets: list) -> None:
        async def serve(sock: socket.socket) -> None:
            if sock not in self.unserved:
                return  # closed meanwhile: a CONFIG SET rolled back moved the listeners again
            self.unserved.remove(sock)
            srv = await self.loop.create_server(lambda: ClientProtocol(self), sock=sock,
                                                backlog=self.config.number("tcp-backlog"))
            self.listeners.append(srv)

        self.unserved.extend(sockets)
        for sock in sockets:
            self.loop.create_task(serve(sock))

    async def _active_expire_loop(self) -> None:
        while True:
            await asyncio.sleep(ACTIVE_EXPIRE_INTERVAL)
            self.expire_cycle()
            if self.keyspace.ready_keys:
                self.blocking.serve_ready_keys()

    def expire_cycle(self) -> None:
        """One pass of the active expiry cycle: off with DEBUG SET-ACTIVE-EXPIRE 0, while
        clients are paused, as in Redis (a WRITE pause lets reads run), and while DEBUG
        PAUSE-CRON 1 stops Redis's serverCron, which runs it."""
        if self.active_expire_enabled and self.pause is None and not self.debug.pause_cron:
            started = time.perf_counter_ns()
            self.stats.expired_keys += self.keyspace.active_expire()
            monitored = self.config.latency_threshold_ns
            if monitored and time.perf_counter_ns() - started >= monitored:
                latency.add_sample(self, "expire-cycle", time.perf_counter_ns() - started)

    def advance_clock(self, ms: int, expire: bool = True) -> int:
        """MINIRED ADVANCE, EmbeddedServer.advance_clock: move the clock forward `ms`, then run
        the expiry cycle, as if that much time had passed between commands (not with `expire`
        false: inside a transaction, where the time moves as DEBUG SLEEP moves it); the new
        time in ms."""
        now = self.clock.advance(ms)
        if expire:
            self.expire_cycle()
        return now

    def crash(self) -> None:
        """What a killed process leaves to its clients (DEBUG SEGFAULT, SHUTDOWN NOSAVE): no
        listener, every connection dropped, the crons stopped. No shutdown hook runs, so nothing
        is saved: a cluster node's failure."""
        for srv in self.listeners:
            srv.close()
        self.listeners.clear()
        for client in list(self.clients.values()):
            client.close()
        if self._expire_task is not None:
            self._expire_task.cancel()
            self._expire_task = None

    def restart(self) -> None:
        """After crash(): listen on the same address again and restart the crons (the data is
        as the crash left it)."""
        self._serve(_listening_sockets(self.host, self.port,
                                       self.config.number("tcp-backlog")) or [])
        self._expire_task = self.loop.create_task(self._active_expire_loop())

    def request_shutdown(self) -> None:
        """Stop accepting, close every client, and let `serve_until_stopped` return."""
        if self.shutdown_requested:
            return
        self.shutdown_requested = True
        for hook in list(self.hooks.shutdown):  # (a hook may remove itself as it runs)
            try:
                hook()
            except Exception:
                log.exception("shutdown hook failed")
        for srv in self.listeners:
            srv.close()
        for client in list(self.clients.values()):
            client.close()
        if self.pause is not None:
            self.pause.lift()  # stops its timer; the clients it held are closing
        if self._expire_task is not None:
            self._expire_task.cancel()
        if self.stopped is not None:
            self.stopped.set()

    async def serve_until_stopped(self) -> None:
        assert self.stopped is not None
        await self.stopped.wait()
        for srv in self.listeners:
            srv.close()
            try:
                await asyncio.wait_for(srv.wait_closed(), 1.0)
            except (asyncio.TimeoutError, Exception):
                pass

    def flush_replies(self) -> None:
        """Write the replies held back during this pass of the loop (ClientProtocol._write)."""
        queue, self.outbox_queue = self.outbox_queue, []
        self.flush_scheduled = False
        for protocol in queue:
            try:
                protocol.flush()
            except Exception:  # one connection's failure must not hold back the others' replies
                log.exception("writing the replies of %s failed",
                              protocol.client.addr if protocol.client is not None else "?")

    # --- hooks used by commands ------------------------------------------------------------------

    def over_maxmemory(self) -> bool:
        # Whether the memory figure is over maxmemory, evicting nothing (a script's denyoom
        # commands): the modelled figure once key eviction replaced `memory`, else the
        # resident size at most MemorySampler.INTERVAL old.
        if not self.config.maxmemory:
            return False
        return self.memory.used() > self.config.maxmemory


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def used_memory() -> int:
    """Resident memory of this process in bytes."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class MemorySampler:
    """used_memory() read at most every INTERVAL seconds: reading /proc on every write command
    would cost more than the command."""

    INTERVAL = 0.1

    __slots__ = ("_value", "_taken")

    def __init__(self) -> None:
        self._value = 0
        self._taken = float("-inf")

    def used(self) -> int:
        now = time.monotonic()
        if now - self._taken >= self.INTERVAL:
            self._value = used_memory()
            self._taken = now
        return self._value


class ClientProtocol:
    """One connection: bytes in -> parser -> dispatch -> replies out, with backpressure.

    An asyncio protocol by its methods (asyncio and uvloop need no base class), so that the
    compiled build can make it an extension type (server.pxd)."""

    __slots__ = ("server", "transport", "client", "parser", "pending", "_transport_closing",
                 "_transport_write", "_transport_buffered", "outbox", "echo", "disruption",
                 "qb_length", "qb_alloc", "qb_peak", "qb_bulk", "qb_tick", "qb_next_tick",
                 "rb_size", "rb_peak", "rb_tick", "rb_reset_ms")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        # The transport's methods every reply calls, bound once (see _write).
        self._transport_closing: Any = None
        self._transport_write: Any = None
        self._transport_buffered: Any = None
        self.client: Client | None = None
        self.parser = resp.RequestParser(max_bulk_len=server.config.proto_max_bulk_len)
        self.pending: deque = deque()
        self.outbox: list | None = None  # replies not written yet (see _write)
        # Lines to send after the reply of the command running (a monitor's own command's).
        self.echo: list | None = None
        # What faults keep on this connection (hooks.ConnectionDisruption), from the first
        # reply one disrupted; None for every other connection.
        self.disruption: ConnectionDisruption | None = None
        # The query buffer Redis would have for this input, for CLIENT LIST (querybuf.py).
        self.qb_length = self.qb_alloc = self.qb_peak = self.qb_bulk = self.qb_tick = 0
        self.qb_next_tick = 0.0
        # The reply buffer Redis would have, for CLIENT LIST (replybuf.py): its size, the
        # largest write (one compare per write) and the cron's last visit and peak reset.
        now_ms = int(_monotonic() * 1000)
        self.rb_size = self.rb_peak = replybuf.CHUNK_BYTES  # createClient: peak = buffer size
        self.rb_tick = now_ms // 100
        # Redis 7.0 stamps a new client's last peak reset in seconds (server.unixtime) and the
        # cron compares it with milliseconds, so the first visit resets the peak: a new client
        # shows rbp=16384, then 0, and its buffer shrinks at the second visit.
        self.rb_reset_ms = 0

    # --- asyncio callbacks -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        server = self.server
        self.transport = transport  # type: ignore[assignment]
        # Bound here, the only place a transport is set: a method lookup on the transport's
        # type per call is three per reply, and each misses the type's method cache often.
        self._transport_closing = transport.is_closing
        self._transport_write = transport.write  # type: ignore[attr-defined]
        self._transport_buffered = transport.get_write_buffer_size  # type: ignore[attr-defined]
        if self.client is not None:
            # Accepted while a script was busy (the script engine served it): the client already exists
            # and is now handed to the loop; only the transport changes.
            return
        sock = transport.get_extra_info("socket")
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        # A unix socket's peer has no name: Redis shows the socket's path for both ends.
        addr = _format_addr(peer) if peer else _format_addr(local)
        client = Client(server, addr=addr, laddr=_format_addr(local),
                        fd=sock.fileno() if sock is not None else -1,
                        send=self._write, close=self._close)
        self.client = client
        client.connection = self  # lets a busy script serve this connection
        server.stats.connections_received += 1
        if len(server.clients) >= server.config.maxclients:
            server.stats.rejected_connections += 1
            transport.write(resp.encode(RedisError(errors.MAX_CLIENTS), 2))
            transport.close()
            return
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        keepalive = server.config.number("tcp-keepalive")
        if keepalive and sock is not None:
            keep_alive(sock, keepalive)
        server.clients[client.id] = client
        for hook in server.hooks.connect:
            hook(client)
            if client.closing:
                break

    def connection_lost(self, exc: Exception | None) -> None:
        client = self.client
        if client is None:
            return
        client.closing = True
        server = self.server
        if server.clients.pop(client.id, None) is None:
            self.outbox = None
            return  # never admitted (maxclients), or its client was dropped already
        server.blocking.disconnect(client)
        client.unwatch_all()
        for hook in server.hooks.disconnect:
            hook(client)
        self.pending.clear()
        self.outbox = None
        disruption = self.disruption
        if disruption is not None:
            disruption.drop()

    def pause_writing(self) -> None:
        # The client is not reading its replies. Redis reads on all the same (it never stops
        # reading a client for its output), keeping the replies in the client's output buffer,
        # which client-output-buffer-limit and client eviction bound: a client that pipelines
        # a million commands before it reads a reply (Redis's own test suite does) would
        # otherwise wait for ever on a server waiting for it.
        return None

    def resume_writing(self) -> None:
        return None

    def eof_received(self) -> None:
        return None  # the transport closes itself, as with asyncio.Protocol's default

    def data_received(self, data: bytes) -> None:
        client = self.client
        if client is None or client.closing:
            return
        server = self.server
        stats = server.stats
        stats.net_input_bytes += len(data)
        stats.reads_processed += 1
        parser = self.parser
        now = _monotonic()
        if now >= self.qb_next_tick or self.qb_alloc < _QB_IOBUF_LEN:
            querybuf.before_read(self, now, client.last_interaction)  # (CLIENT LIST's figures)
        client.last_interaction = now
        total = parser.buffered + len(data)
        self.qb_length = total
        if total > self.qb_peak:
            self.qb_peak = total
        config = server.config
        # CONFIG SET proto-max-bulk-len applies to connected clients at once, as in Redis.
        parser.max_bulk_len = config.proto_max_bulk_len
        if client.blocked is None and (client.authenticated
                                       or not server.access.auth_required()):
            commands = parser.feed_and_parse(data)
        else:
            parser.feed(data)
            if client.blocked is not None:
                # As in Redis, a blocked client's input waits unparsed in its query buffer (so it
                # stays bounded by client-query-buffer-limit) until the client is unblocked.
                if parser.buffered > config.client_query_buffer_limit:
                    log.warning("closing client %s: query buffer over client-query-buffer-limit",
                                client.addr)
                    self._close()
                return
            self._run_unauthenticated()
            if client.closing or client.blocked is not None or parser.error is not None:
                if parser.error is not None and client.blocked is None and not self.pending:
                    self._protocol_error(parser.error)
                return
            commands = parser.parse()
        buffered = parser.buffered
        if buffered or total > self.qb_alloc or total >= _QB_BIG_ARG:
            querybuf.after_parse(self, parser, commands, total)
            eviction = server.hooks.client_eviction
            if eviction is not None:  # (maxmemory-clients: the query buffer has grown)
                eviction.after_read(self)
                if client.closing:
                    return
        if buffered and buffered > config.client_query_buffer_limit:
            log.warning("closing client %s: query buffer over client-query-buffer-limit", client.addr)
            self._close()
            return
        if client.blocked is not None or self.pending:
            self.pending.extend(commands)
            if client.blocked is None:
                self._run_pending()
        else:
            self._run(commands)
        self.qb_length = parser.buffered
        if parser.error is not None and client.blocked is None and not self.pending:
            self._protocol_error(parser.error)

    # --- running commands ----------------------------------------------------------------------------

    def _run_unauthenticated(self) -> None:
        """Until AUTH succeeds, parse and run one command at a time under Redis's pre-AUTH
        limits; once authenticated, the rest of the buffer takes the normal path."""
        parser = self.parser
        client = self.client
        parser.unauthenticated = True
        try:
            while (not client.authenticated and self.server.access.auth_required()
                   and not client.closing and client.blocked is None and not self.pending):
                commands = parser.parse()
                if not commands:
                    break
                self._run(commands)
        finally:
            parser.unauthenticated = False

    def _run(self, commands: list) -> None:
        client = self.client
        server = self.server
        ready_keys = server.keyspace.ready_keys
        out: list[bytes] = []
        count = 0
        for argv in commands:
            reply = dispatch.execute(client, argv)
            count += 1
            if type(reply) is Block:
                self._block(reply, commands, count, out)
                break
            # The protocol is read per reply: HELLO may switch it in the middle of a batch.
            if client.reply_mode:  # CLIENT REPLY OFF or SKIP, or a fault
                if client.reply_mode & client_reply.DISRUPTED:
                    if type(reply) is Block:  # a blocking command under a fault: it waits
                        self._block(reply, commands, count, out)
                        break
                    server.faults.deliver(self, reply, out)  # (hooks.FaultInjector)
                    client_reply.command_over(client)
                elif client_reply.encode_outgoing(client, reply, out):
                    self.echo = None  # a silenced monitor's lines for its own command
            else:
                resp.encode_into(reply, client.protocol, out)
            if self.echo is not None:
                self.append_echo(out)
            if ready_keys:
                if out:
                    self._write(b"".join(out))
                    out = []
                server.blocking.serve_ready_keys()
            if client.close_after_reply or client.closing:
                break
        if out:
            self._write(b"".join(out))
        if client.close_after_reply:
            self._close()

    def _block(self, block: Block, commands: list, count: int, out: list) -> None:
        """Park the client on a Block: the replies before it leave, the commands after it wait."""
        if out:
            self._write(b"".join(out))
            out.clear()
        self.server.blocking.block(self.client, block, self._resume)
        self.pending.extend(commands[count:])

    def _run_pending(self) -> None:
        batch = list(self.pending)
        self.pending.clear()
        self._run(batch)
        if self.parser.error is not None and self.client.blocked is None and not self.pending:
            self._protocol_error(self.parser.error)

    def _resume(self) -> None:
        """A blocked command was answered (blocking.py): the client's next commands may run."""
        client = self.client
        if client is not None and client.reply_mode:
            client_reply.command_over(client)  # a SKIP applied to the blocked command
        if (self.pending or self.parser.buffered) and self.server.loop is not None:
            self.server.loop.call_soon(self._resume_now)

    def _resume_now(self) -> None:
        client = self.client
        if client is not None and client.blocked is None and not client.closing:
            if self.pending:
                self._run_pending()
            if client.blocked is None and not client.closing and self.parser.buffered:
                self.data_received(b"")  # input that arrived while the client was blocked
            # Redis runs an unblocked client's next commands before it sleeps
            # (processUnblockedClients) and writes their replies then: they leave before the
            # loop reads other input, which may be a CLIENT KILL of this client (uvloop reads
            # it before the callback that writes held-back replies comes round).
            self.flush()

    def run_again(self, argv: list) -> None:
        """A command a feature held (answered with a Block that waits on no key, as CLIENT
        PAUSE does) may go on: run it again, then the input that waited behind it."""
        self.pending.appendleft(argv)
        if self.server.loop is not None:
            self.server.loop.call_soon(self._resume_now)

    def _protocol_error(self, error: resp.ProtocolError) -> None:
        log.debug("protocol error from %s: %s", self.client.addr if self.client else "?", error)
        if self.client is None or not self.client.reply_mode & client_reply.SILENCED:
            self._write(resp.encode(error.reply, 2))
        self._close()

    def _write(self, data: bytes) -> None:
        # Called once per batch of replies (one read) and once per pushed message. The bytes wait
        # until the loop has been round every connection with input, and are written then,
        # together (Server.flush_replies), as Redis writes its replies before it sleeps. Written
        # as each command finished, a reply reached a client that had handled the last one and
        # gone to sleep: a wake-up per reply, which the writer pays for (on a VM an
        # inter-processor interrupt), where a burst of writes wakes a client once a round.
        outbox = self.outbox
        if outbox is not None:
            outbox.append(data)
            return
        server = self.server
        loop = server.loop
        if loop is None:  # driven in-process, with no loop to come back round
            self._send(data)
            return
        self.outbox = [data]
        server.outbox_queue.append(self)
        if not server.flush_scheduled:
            server.flush_scheduled = True
            loop.call_soon(server.flush_replies)

    def append_echo(self, out: list) -> None:
        """A monitor's lines for its own command, after that command's reply in out."""
        out.extend(self.echo)
        self.echo = None

    def flush(self) -> None:
        outbox = self.outbox
        if outbox is not None:
            self.outbox = None
            self._send(outbox[0] if len(outbox) == 1 else b"".join(outbox))

    def write_now(self, data: bytes) -> None:
        """Write at once, after anything held back (a busy script's answers: the loop is not
        coming back round until the script ends)."""
        outbox = self.outbox
        if outbox is not None:
            self.outbox = None
            outbox.append(data)
            data = b"".join(outbox)
        self._send(data)

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self._transport_closing():
            server = self.server
            if server.sync_before_reply is not None:
                server.sync_before_reply()
            size = len(data)
            guard = server.output_buffer_guard
            # A write larger than the smallest output limit is checked before it leaves: a
            # client it takes past its hard limit gets none of it (hooks.OutputBufferGuard).
            if guard is not None and size >= guard.threshold and guard.refuses(self, size):
                return
            if size > self.rb_peak:
                self.rb_peak = size
            stats = server.stats
            stats.net_output_bytes += size
            stats.writes_processed += 1
            self._transport_write(data)
            if guard is not None and self._transport_buffered():
                guard(self)

    def drop(self) -> None:
        """Close at once, the replies not written yet dropped, and forget the client now (Redis's
        freeClient): CLIENT KILL, client eviction, output buffer limits. A close would keep the
        unsent replies until the peer read them, and a peer that never reads (a replica stopped
        with SIGSTOP) would stay a client, its buffers counted, for ever."""
        client = self.client
        if client is not None:
            client.closing = True
        self.outbox = None
        transport = self.transport
        if transport is not None:
            transport.abort()
        # Gone now, as Redis frees it before it next reads a command: the loop would call
        # this only after its next round of reads.
        self.connection_lost(None)

    def _close(self) -> None:
        disruption = self.disruption
        if disruption is not None and disruption.close():
            return  # a fault closes this connection its own way: a reset, or late
        self.flush()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


def bind_ip_literal(host: str, port: int) -> socket.socket | None:
    """A socket bound to an IP address given as text, set up as create_server sets up its own
    (SO_REUSEADDR; IPv6 without dual stack); None for a host name, left to create_server.

    uvloop resolves even "127.0.0.1" through the idna codec and its resolver thread pool:
    ~1.5 ms of start-up, against ~0.1 ms for binding here."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        address = (host, port) if family == socket.AF_INET else (host, port, 0, 0)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
        except OSError as exc:
            sock.close()
            # The text create_server gives for the same failure.
            raise OSError(exc.errno, f"error while attempting to bind on address {address!r}: "
                                     f"{(exc.strerror or '').lower()}") from None
        sock.setblocking(False)
        return sock
    return None


def keep_alive(sock: socket.socket, interval: int) -> None:
    """tcp-keepalive on a client's connection (createClient's anetKeepAlive: accepted ones, and a
    replica's link to its master once it is the master client): the kernel probes
    a peer silent for `interval` seconds, then every interval/3, and drops the connection after
    3 probes unanswered, so a client whose host vanished does not hold its connection (and
    its blocked command, its memory) for ever. Read as each connection is accepted: CONFIG SET
    applies to the next ones, as in Redis."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(interval // 3, 1))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
    except (OSError, AttributeError):
        # As anetKeepAlive, whose failure Redis ignores: a unix socket keeps SO_KEEPALIVE
        # alone, and an interval past the kernel's 32767 s leaves the kernel's default idle
        # time (outside Linux there are no TCP_KEEP* options).
        pass


# Why an address marked optional ("-") may be left out (listenToPort): it is not this host's,
# or its family is not supported; any other failure (a name that does not resolve) fails.
OPTIONAL_BIND_FAILURES = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL)


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A socket listening on host:port (OSError if it cannot be bound); connections queue
    until the loop serves it, `backlog` of them at most (tcp-backlog)."""
    sock = bind_ip_literal(host, port)
    if sock is None:  # a host name
        sock = socket.create_server((host, port), reuse_port=False)
        sock.setblocking(False)
    sock.listen(backlog)
    return sock


def _listening_sockets(bind: str, port: int, backlog: int) -> list | None:
    """Sockets listening on every address of a `bind` value (`*` any IPv4 address, `::*` any
    IPv6 one, a leading `-` for an address that may be missing), or None if one fails."""
    sockets: list[socket.socket] = []
    for address in bind.split(" ") if bind else ():  # (split as CONFIG SET splits it)
        optional = address.startswith("-")
        host = {"*": "0.0.0.0", "::*": "::"}.get(address.lstrip("-"), address.lstrip("-"))
        try:
            if not host:  # (two spaces, or "-": Redis's getaddrinfo of "" fails; Python binds any)
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            sock = listening_socket(host, port, backlog)
        except OSError as exc:
            if optional and exc.errno in OPTIONAL_BIND_FAILURES:
                continue
            for sock in sockets:
                sock.close()
            return None
        sockets.append(sock)
    return sockets


def _format_addr(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    if isinstance(addr, str):
        return f"{addr}:0"
    return ""


def banner(server: Server) -> str:
    where = f"{server.host}:{server.port}" if server.port else "unix socket"
    return (f"minired {__version__} (Redis {REDIS_VERSION} compatible) ready on {where} "
            f"pid={os.getpid()}")
