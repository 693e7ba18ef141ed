"""Per-connection state: selected database, protocol version, auth, transaction, subscriptions."""
from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any, Callable

from minired.engine.client_reply import DISRUPTED, SILENCED
from minired.protocol import resp

if TYPE_CHECKING:
    from minired.data.keyspace import Database
    from minired.engine.server import Server

_ids = itertools.count(1)


# Client.changes of a write that changed nothing yet is propagated, as Redis's
# forceCommandPropagation (FLUSHDB of an empty database).
PROPAGATED_UNCHANGED = -2

class WatchRecord:
    """One WATCHed key of one client; `dirty` is set by Database.signal_modified."""

    __slots__ = ("db", "key", "dirty", "expired_at_watch")

    def __init__(self, db: "Database", key: bytes, expired_at_watch: bool) -> None:
        self.db = db
        self.key = key
        self.dirty = False
        self.expired_at_watch = expired_at_watch


class Client:
    """A connected client. `send` writes a reply outside the request/response cycle (pub/sub
    messages, the reply of an unblocked command); `close` ends the connection."""

    # Slots: every command reads several of these, and a slot is found without a dict lookup.
    __slots__ = ("id", "server", "addr", "laddr", "fd", "_send", "_close", "db_index", "db",
                 "protocol", "name", "lib_name", "lib_ver", "authenticated", "created",
                 "last_interaction", "last_command", "multi", "multi_failed", "in_exec",
                 "in_script", "watched", "channels", "patterns", "shard_channels", "blocked",
                 "closing", "close_after_reply", "flags", "output_soft_limit_since", "connection",
                 "user", "user_restricted", "reply_mode", "changes", "config", "command_stats")

    def __init__(self, server: "Server", addr: str = "", laddr: str = "", fd: int = -1,
                 send: Callable[[bytes], None] | None = None,
                 close: Callable[[], None] | None = None) -> None:
        self.id = next(_ids)
        self.server = server
        # The server's configuration (never replaced), kept here for the settings dispatch
        # checks per command (client.pxd types it).
        self.config = server.config
        # Likewise the server's per-command counters (table.stats_of; the list is only ever
        # extended in place), which dispatch.call adds to on every command.
        self.command_stats: list = server.command_stats
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        self._send = send
        self._close = close
        self.db_index = 0
        self.db: Database = server.keyspace[0]
        self.protocol = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.authenticated = not server.config.requirepass
        self.created = time.monotonic()
        self.last_interaction = self.created
        self.last_command = None  # the spec of the last command run, for CLIENT LIST
        # MULTI: list of queued argv while in a transaction, None otherwise.
        self.multi: list | None = None
        self.multi_failed = False
        self.in_exec = False
        self.in_script = False
        self.watched: list[WatchRecord] = []
        self.channels: set[bytes] = set()
        self.patterns: set[bytes] = set()
        self.shard_channels: set[bytes] = set()
        # Set while the client waits in a blocking command (see blocking.py).
        self.blocked: Any = None
        self.closing = False
        self.close_after_reply = False
        self.flags = ""
        self.output_soft_limit_since: float | None = None  # (output buffer limits)
        self.connection: Any = None  # the server's protocol object (a busy script serves it)
        # The ACL user (None: the default user) and whether dispatch must check its commands
        # (hooks.AccessControl).
        self.user: Any = None
        self.user_restricted = False
        # CLIENT REPLY OFF/SKIP state, 0 when every reply leaves (see client_reply.py).
        self.reply_mode = 0
        # Set by a write command that counts its own changes, as Redis's commands add to
        # server.dirty (0: it changed nothing, and is neither counted nor propagated;
        # PROPAGATED_UNCHANGED: nothing counted, propagated all the same); -1, the usual, counts
        # a write command as one change. Read and reset by dispatch.call.
        self.changes = -1

    # --- state ---------------------------------------------------------------------------------

    def select(self, index: int) -> None:
        self.db_index = index
        self.db = self.server.keyspace[index]

    @property
    def can_block(self) -> bool:
        """Inside MULTI/EXEC or a script, blocking commands answer at once as if timed out."""
        return not (self.in_exec or self.in_script)

    def unwatch_all(self) -> None:
        for record in self.watched:
            watchers = record.db.watchers.get(record.key)
            if watchers is not None:
                watchers.discard(record)
                if not watchers:
                    del record.db.watchers[record.key]
        self.watched = []

    # --- output --------------------------------------------------------------------------------

    def send(self, reply: Any) -> None:
        """A reply that answers no read of this client's: a message, an invalidation, a
        blocked command's late reply."""
        if self._send is None or self.closing:
            return
        if self.reply_mode:
            if (self.reply_mode & DISRUPTED and self.connection is not None
                    and self.server.faults.send_disrupted(self.connection, reply)):
                return  # a fault's, on a blocked command's reply (hooks.FaultInjector)
            if self.reply_mode & SILENCED and type(reply) is not resp.Push:
                return  # CLIENT REPLY OFF/SKIP: a blocked command's late reply; pushes leave
        out: list[bytes] = []
        resp.encode_into(reply, self.protocol, out)
        self.send_encoded(b"".join(out))

    def send_encoded(self, data: bytes) -> None:
        """send() of bytes already encoded (a MONITOR line). Being written to is an interaction,
        as Redis's writeToClient sets lastinteraction: CLIENT LIST's idle and `timeout` count
        from it. (A read of the client's sets it too, so the replies to its own commands need
        not: they leave in the same pass of the loop.)"""
        self._send(data)
        self.last_interaction = time.monotonic()

    def close(self) -> None:
        if self._close is not None and not self.closing:
            self.closing = True
            self._close()

    def kill(self) -> None:
        """CLIENT KILL (freeClient): closed at once, the replies not written yet dropped; a
        client without a connection of its own (the master's link), or one a fault disrupts
        (which closes it its own way: SLOW-CLOSE), is closed as usual."""
        conn = self.connection
        if conn is None or self.closing or conn.disruption is not None:
            self.close()
        else:
            conn.drop()
