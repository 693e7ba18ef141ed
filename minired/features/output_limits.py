"""Client output buffer limits (`client-output-buffer-limit <class> <hard> <soft> <soft-seconds>`),
as Redis 7.0 applies them: a client whose unsent replies reach the hard limit, or stay above the
soft limit for longer than soft-seconds, is disconnected at once and its pending replies dropped,
so a client that never reads cannot make the server hold unbounded memory.

The pending size is what Redis's output buffer would hold: the replies about to be written (minired
gathers a pass's replies and writes them together, as Redis fills its buffer and writes before it
sleeps) plus what the transport has queued. A write of more than the smallest limit is checked
before it is written, so a client over its hard limit gets nothing of it (Redis frees the client
before writing); one that leaves bytes queued is checked after it, once per batch of replies and
once per pushed message, never per command. A client over its soft limit is looked at again once
soft-seconds have passed, as Redis's clientsCron does, so traffic need not go on for it to close.
Commands that would build a reply past the hard limit stop early (`reply_overflows`), as Redis's
stop mid-run once their client is marked to close.

A replica is of the replica class, and what its limits count is the stream: Redis sends a full
resynchronization's RDB from the file, outside the output buffer, while minired writes the
snapshot to the transport ahead of the stream. So a replica's count is the stream written since
its snapshot, as far as it is still queued (never more than the transport holds); a dataset
whose snapshot passes the hard limit still syncs, and a replica that falls behind on the
stream is dropped as Redis drops it."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minired.engine.config import DEFAULTS, ConfigError, parse_memory
from minired.features import replication

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import ClientProtocol, Server

log = logging.getLogger("minired")

# The fewest bytes a bulk string of a reply takes ("$0\r\n\r\n"): what a reply of n of them
# is at least, for reply_overflows.
LEAST_BULK = 6

_CLASS_NAMES = {"normal": "normal", "slave": "slave", "replica": "slave", "pubsub": "pubsub"}


class OutputLimit:
    __slots__ = ("hard", "soft", "soft_seconds")

    def __init__(self, hard: int, soft: int, soft_seconds: int) -> None:
        self.hard = hard
        self.soft = soft
        self.soft_seconds = soft_seconds


def parse_output_limits(text: str) -> dict[str, OutputLimit]:
    """'normal 0 0 0 pubsub 32mb 8mb 60 ...' -> class -> OutputLimit; classes not named keep
    Redis's defaults. Raises ConfigError on text CONFIG SET would refuse."""
    limits: dict[str, OutputLimit] = {}
    for source in (DEFAULTS["client-output-buffer-limit"], text):
        parts = source.split()
        if len(parts) % 4:
            raise ConfigError("Wrong number of arguments in buffer limit configuration.")
        for i in range(0, len(parts), 4):
            name = _CLASS_NAMES.get(parts[i].lower())
            if name is None:
                raise ConfigError("Invalid client class specified in buffer limit configuration.")
            seconds = parts[i + 3]
            if not seconds.isdigit():
                raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit "
                                  "configuration.")
            limits[name] = OutputLimit(parse_memory(parts[i + 1]), parse_memory(parts[i + 2]),
                                       int(seconds))
    return limits


class OutputBufferGuard:
    """Disconnects clients whose queued replies pass their class's limits."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self._source = ""
        self._limits = parse_output_limits("")
        self.disconnections = 0
        # The smallest limit set, for any class: a write shorter than it is not checked before
        # it leaves (ClientProtocol._send compares every write's size with it).
        self.threshold = 0
        self.limits()

    def limits(self) -> dict[str, OutputLimit]:
        # Re-parsed only when CONFIG SET changed the text.
        text = self.server.config.get("client-output-buffer-limit") or ""
        if text is not self._source:
            try:
                self._limits = parse_output_limits(text)
            except ConfigError as exc:
                log.warning("ignoring client-output-buffer-limit %r: %s", text, exc)
            self._source = text
            sizes = [size for limit in self._limits.values()
                     for size in (limit.hard, limit.soft) if size]
            self.threshold = min(sizes) if sizes else 1 << 62
        return self._limits

    def class_limit(self, client: "Client") -> OutputLimit:
        """getClientType: a replica (flag S; a monitor's is O) is of the replica class, a client
        subscribed to anything of the pubsub class."""
        if client.flags == "S":
            return self.limits()["slave"]
        subscribed = client.channels or client.patterns or client.shard_channels
        return self.limits()["pubsub" if subscribed else "normal"]

    def __call__(self, protocol: "ClientProtocol") -> None:
        """After a write that left bytes queued in the transport."""
        self.refuses(protocol, 0)

    def refuses(self, protocol: "ClientProtocol", size: int) -> bool:
        """Whether the client, with `size` more bytes of replies, is over its limits: it is
        disconnected then, and the bytes must not be written."""
        if self.limit_reached(protocol, size):
            return True
        client = protocol.client
        if client is None or client.closing:
            return False
        pending = protocol.transport.get_write_buffer_size() + size
        eviction = self.server.hooks.client_eviction
        if eviction is not None and pending:
            # Replies wait: the client's memory grew (checked after the limits, which Redis
            # enforces first).
            eviction.after_write(protocol)
            return client.closing
        return False

    def limit_reached(self, protocol: "ClientProtocol", size: int) -> bool:
        """closeClientOnOutputBufferLimitReached: whether the client, with `size` more bytes
        of replies, is over its limits; it is disconnected then."""
        client = protocol.client
        transport = protocol.transport
        if client is None or transport is None or client.closing:
            return False
        pending = transport.get_write_buffer_size() + size
        if client.flags == "S":
            pending = self._replica_pending(client, pending, size)
        if not self._over(protocol, self.class_limit(client), pending):
            return False
        self.disconnect(protocol)
        return True

    def _replica_pending(self, client: "Client", pending: int, size: int) -> int:
        """A replica's count: the stream written since its snapshot, as far as it is queued;
        nothing for the snapshot itself (written before the replica is attached)."""
        state = replication.state(self.server)
        replica = state.replica_of(client) if state is not None else None
        if replica is None:
            return 0
        return min(pending, replica.stream_bytes + size)

    def disconnect(self, protocol: "ClientProtocol") -> None:
        client = protocol.client
        log.warning("Client %s closed for overcoming of output buffer limits.",
                    client_description(client))
        self.disconnections += 1
        # Dropped, not closed: close would keep the unsent replies until the peer reads them;
        # and gone at once, so that a PUBLISH read in this round no longer counts the client.
        protocol.drop()

    def _over(self, protocol: "ClientProtocol", limit: OutputLimit, pending: int) -> bool:
        client = protocol.client
        if limit.hard and pending >= limit.hard:
            return True
        if limit.soft and pending >= limit.soft:
            since = client.output_soft_limit_since
            now = time.monotonic()
            if since is None:
                client.output_soft_limit_since = now
                self._look_again(protocol, limit.soft_seconds)
                return False
            return now - since > limit.soft_seconds
        client.output_soft_limit_since = None
        return False

    def _look_again(self, protocol: "ClientProtocol", seconds: int) -> None:
        """clientsCron checks every client's limits: a client that stays over its soft limit
        with no more replies coming is closed once soft-seconds have passed."""
        loop = self.server.loop
        if loop is not None:
            loop.call_later(seconds + 0.1, self.refuses, protocol, 0)


def reply_overflows(c: "Client", size: int) -> bool:
    """Whether a reply of at least `size` bytes takes client c past its class's hard limit; the
    client is disconnected then. Redis checks the limit as each part of a reply is added, and
    commands that can build huge replies (HRANDFIELD, SRANDMEMBER, ZRANDMEMBER with a negative
    count, KEYS) stop once their client is marked to close: minired's build the whole reply
    first, so they ask here before building one too big to hold."""
    guard = c.server.output_buffer_guard
    protocol = c.connection
    if guard is None or protocol is None or size < guard.threshold:
        return False
    return guard.refuses(protocol, size)


def client_description(client: "Client") -> str:
    return f"id={client.id} addr={client.addr} laddr={client.laddr} name={client.name.decode(errors='replace')}"


def attach(server: "Server") -> None:
    server.output_buffer_guard = OutputBufferGuard(server)
