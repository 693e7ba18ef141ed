"""Client-side caching (CLIENT TRACKING): which clients read which keys, and the invalidation
messages they get when those keys change, as Redis's tracking.c does it.

- Default mode: the keys of every read-only command a tracking client runs (in scripts and
  transactions too) go into one table, key -> client ids, shared by all databases as in Redis.
  The first change to a key sends `invalidate [key]` to those clients and forgets the key.
- BCAST mode: a client names key prefixes instead; changed keys under a prefix are collected
  and sent once the event loop has gone round, as one array per prefix, sorted (Redis keeps
  them in a radix tree and broadcasts before it sleeps).
- A client's own messages follow the reply of the command that caused them; NOLOOP leaves
  out the keys a client changed itself. FLUSHALL and FLUSHDB send `invalidate` with a null to
  every tracking client and empty the table.
- Messages go as RESP3 pushes, or with REDIRECT to another connection: pushed if it speaks
  RESP3, else as Pub/Sub messages on `__redis__:invalidate` if it is subscribed to anything.

Nothing here runs until a client first turns tracking on: the server, its databases and the
dispatcher only hold a reference to this object from then on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minired.engine import dispatch
from minired.engine.blocking import Block
from minired.engine.table import lookup
from minired.protocol.resp import Push, Replies

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

INVALIDATE = b"invalidate"
REDIRECT_BROKEN = b"tracking-redir-broken"
INVALIDATE_CHANNEL = b"__redis__:invalidate"
_MESSAGE = b"message"
# Read-only scripts are not tracked themselves: the commands they run are.
_UNTRACKED_READS = frozenset({"eval_ro", "evalsha_ro", "fcall_ro"})


class ClientTracking:
    """One client's CLIENT TRACKING state."""

    __slots__ = ("client", "redirect", "bcast", "optin", "optout", "noloop", "caching",
                 "broken_redirect", "prefixes")

    def __init__(self, client: "Client") -> None:
        self.client = client
        self.redirect = 0
        self.bcast = self.optin = self.optout = self.noloop = False
        # CLIENT CACHING yes|no, good for the next command (or the next transaction).
        self.caching = False
        self.broken_redirect = False
        self.prefixes: set[bytes] = set()

    def flag_names(self) -> list[bytes]:
        """CLIENT TRACKINGINFO's flags, in Redis's order."""
        names = [b"on"]
        if self.bcast:
            names.append(b"bcast")
        if self.optin:
            names.append(b"optin")
            if self.caching:
                names.append(b"caching-yes")
        if self.optout:
            names.append(b"optout")
            if self.caching:
                names.append(b"caching-no")
        if self.noloop:
            names.append(b"noloop")
        if self.broken_redirect:
            names.append(b"broken_redirect")
        return names


class _Prefix:
    """A BCAST prefix: the clients that asked for it, and the keys changed under it since the
    last broadcast (key -> the client whose command changed it first, for NOLOOP)."""

    __slots__ = ("clients", "changed")

    def __init__(self) -> None:
        self.clients: dict[int, None] = {}
        self.changed: dict[bytes, Any] = {}


class Tracking:
    def __init__(self, server: "Server") -> None:
        self.server = server
        self.clients: dict[int, ClientTracking] = {}
        self.table: dict[bytes, dict[int, None]] = {}
        self.items = 0  # (key, client) pairs in the table: INFO's tracking_total_items
        self.prefixes: dict[bytes, _Prefix] = {}
        # The client whose command is running, and the messages meant for it, which must
        # follow its reply rather than precede it.
        self.current: "Client | None" = None
        self.current_argv: list = []
        self.own_frames: list[Push] = []
        self.broadcast_scheduled = False

    @classmethod
    def of(cls, server: "Server") -> "Tracking":
        """The server's tracking, set up on first use."""
        tracking = server.tracking
        if tracking is None:
            tracking = server.tracking = cls(server)

            dispatch.use_extras()
            for db in server.keyspace.dbs:
                db.tracking = tracking
            server.hooks.disconnect.append(tracking.disable)
            server.blocking.serve_as = tracking.serve_as
        return tracking

    def state(self, client: "Client") -> ClientTracking | None:
        return self.clients.get(client.id)

    # --- turning it on and off ---------------------------------------------------------------

    def enable(self, client: "Client", redirect: int, bcast: bool, optin: bool, optout: bool,
               noloop: bool, prefixes: list[bytes]) -> None:
        state = self.clients.get(client.id)
        if state is None:
            state = self.clients[client.id] = ClientTracking(client)
        state.redirect = redirect
        state.bcast, state.optin, state.optout, state.noloop = bcast, optin, optout, noloop
        state.broken_redirect = False
        if bcast:
            for prefix in prefixes or [b""]:
                state.prefixes.add(prefix)
                self.prefixes.setdefault(prefix, _Prefix()).clients[client.id] = None

    def disable(self, client: "Client") -> None:
        """CLIENT TRACKING OFF, RESET and disconnection. The keys it read stay in the table until
        they change, as in Redis: nothing is sent for them then."""
        state = self.clients.pop(client.id, None)
        if state is None:
            return
        for prefix in state.prefixes:
            entry = self.prefixes.get(prefix)
            if entry is not None:
                entry.clients.pop(client.id, None)
                if not entry.clients:
                    del self.prefixes[prefix]

    def overlapping_prefix(self, client: "Client", prefix: bytes) -> bytes | None:
        """A prefix of this client's that `prefix` overlaps (one starts the other), if any."""
        state = self.clients.get(client.id)
        for mine in sorted(state.prefixes) if state is not None else ():
            if mine.startswith(prefix) or prefix.startswith(mine):
                return mine
        return None

    # --- the dispatcher's hooks --------------------------------------------------------------

    def execute(self, client: "Client", argv: list, run) -> Any:
        """Run one top-level command with `client` as the current client; its own invalidation
        messages are answered after the reply."""
        outer, outer_argv = self.current, self.current_argv
        self.current, self.current_argv = client, argv
        try:
            reply = run(client, argv)
        finally:
            self.current, self.current_argv = outer, outer_argv
        state = self.clients.get(client.id)
        if (state is not None and state.caching and client.multi is None
                and argv[0].lower() != b"client"):
            state.caching = False  # CLIENT CACHING lasts one command, or one transaction
        if self.server.loop is None and self.broadcast_scheduled:
            self.broadcast()
        if not self.own_frames:
            return reply
        frames, self.own_frames = self.own_frames, []
        if type(reply) is Replies:
            reply.extend(frames)
            return reply
        if type(reply) is Block:  # no reply yet: the messages need not wait for it
            for frame in frames:
                client.send(frame)
            return reply
        return Replies([reply, *frames])

    def send_pending(self) -> None:
        """trackingHandlePendingKeyInvalidations: the running command's client gets its own
        invalidations now, not after its reply (keys evicted before the command ran)."""
        if self.own_frames and self.current is not None:
            frames, self.own_frames = self.own_frames, []
            for frame in frames:
                self.current.send(frame)

    def serve_as(self, client: "Client", serve, *args) -> None:
        """Serve a blocked client as its own command, as Redis makes it the current client:
        the invalidations its command causes it follow its reply instead of preceding it."""
        outer = self.current, self.current_argv, self.own_frames
        self.current, self.current_argv, self.own_frames = client, [], []
        try:
            serve(*args)
        finally:
            frames = self.own_frames
            self.current, self.current_argv, self.own_frames = outer
        for frame in frames:
            client.send(frame)

    def remember(self, client: "Client", spec, argv: list) -> None:
        """After a command ran: a read-only one's keys are remembered for its client. A script's
        read-only commands remember, for the client that ran the script, the keys the script
        declared (Redis 7.0 reads the keys of the caller's command, not of the script's)."""
        if "readonly" not in spec.flags or spec.name in _UNTRACKED_READS:
            return
        reader = client
        if client.in_script and self.current is not None:
            reader, argv = self.current, self.current_argv
            spec = lookup(argv)
        state = self.clients.get(reader.id)
        if state is None or state.bcast:
            return
        if (state.optin and not state.caching) or (state.optout and state.caching):
            return
        if "pubsub" in spec.flags:
            return
        table = self.table
        reader_id = reader.id
        for key in spec.keys(argv):
            readers = table.get(key)
            if readers is None:
                readers = table[key] = {}
            if reader_id not in readers:
                readers[reader_id] = None
                self.items += 1
        self.limit_table()

    def key_modified(self, key: bytes, broadcast: bool = True, anonymous: bool = False) -> None:
        """Called for every change to a key (Database.signal_modified), expiry included. The
        client that changed it is the one running a command, unless `anonymous`: an expiry
        (even a lookup's lazy one) or the table's limit, for which Redis passes no client, so
        NOLOOP spares nobody. The messages still follow the reply of the client running a
        command (trackingInvalidateKey queues those for server.current_client)."""
        changer = None if anonymous else self.current
        if broadcast and self.prefixes:
            self._note_for_broadcast(key, changer)
        readers = self.table.pop(key, None)
        if readers is None:
            return
        self.items -= len(readers)
        for reader_id in readers:
            state = self.clients.get(reader_id)
            if state is None or state.bcast:
                continue
            if state.noloop and state.client is changer:
                continue
            self._send(state, [key])

    def flushed(self) -> None:
        """FLUSHALL / FLUSHDB: every tracking client drops its whole cache."""
        for state in list(self.clients.values()):
            self._send(state, None)
        self.table.clear()
        self.items = 0

    # --- sending -------------------------------------------------------------------------------

    def _send(self, state: ClientTracking, keys: list[bytes] | None) -> None:
        """sendTrackingMessage: to the client, or to the one it redirects to."""
        target = state.client
        redirected = False
        if state.redirect:
            target = self.server.clients.get(state.redirect)
            if target is None:
                state.broken_redirect = True
                if state.client.protocol == 3:
                    self._deliver(state.client, Push([REDIRECT_BROKEN, state.redirect]))
                return
            redirected = True
        if target.protocol == 3:
            frame = Push([INVALIDATE, keys])
        elif redirected and (target.channels or target.patterns or target.shard_channels):
            frame = Push([_MESSAGE, INVALIDATE_CHANNEL, keys])
        else:
            return  # RESP2 has no way to push to a connection that is not subscribed
        self._deliver(target, frame)

    def _deliver(self, target: "Client", frame: Push) -> None:
        if target is self.current:
            self.own_frames.append(frame)
        else:
            target.send(frame)

    # --- BCAST ---------------------------------------------------------------------------------

    def _note_for_broadcast(self, key: bytes, changer: "Client | None") -> None:
        for prefix, entry in self.prefixes.items():
            if key.startswith(prefix):
                # The last change names the changer (Redis's raxInsert replaces the value), so
                # a key a NOLOOP client set and that then expired is still sent to it.
                entry.changed[key] = changer
                if not self.broadcast_scheduled:
                    self.broadcast_scheduled = True
                    loop = self.server.loop
                    if loop is not None:
                        loop.call_soon(self.broadcast)

    def broadcast(self) -> None:
        """Send each prefix's changed keys to its clients (trackingBroadcastInvalidationMessages)."""
        self.broadcast_scheduled = False
        for prefix in sorted(self.prefixes):
            entry = self.prefixes[prefix]
            if not entry.changed:
                continue
            changed, entry.changed = entry.changed, {}
            keys = sorted(changed)
            for client_id in list(entry.clients):
                state = self.clients.get(client_id)
                if state is None:
                    continue
                if state.noloop:
                    own = [key for key in keys if changed[key] is not state.client]
                    if own:
                        self._send(state, own)
                else:
                    self._send(state, keys)

    def limit_table(self, from_cron: bool = False) -> None:
        """tracking-table-max-keys: past it, the oldest keys are invalidated as if changed
        (Redis picks them by a random walk of its radix tree). Run as keys are remembered, and
        when the limit is lowered, as Redis's serverCron would within 100 ms. Redis names no
        client for these (trackingLimitUsedSlots), so NOLOOP spares nobody."""
        limit = self.server.config.number("tracking-table-max-keys")
        current = self.current
        if from_cron:
            self.current = None
        try:
            while limit and len(self.table) > limit:
                self.key_modified(next(iter(self.table)), False, True)
        finally:
            self.current = current
