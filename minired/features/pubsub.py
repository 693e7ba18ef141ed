"""The per-server pub/sub registry: who listens to which channel, pattern and shard channel.

Each channel maps to its subscribers in subscription order (Redis keeps a list per channel, so
PUBLISH reaches them in that order); each client also records its own subscriptions in
`client.channels`, `client.patterns` and `client.shard_channels`, which the dispatcher reads to
apply the RESP2 subscribe-mode rules. Messages go out with `Client.send`, outside the
publisher's request/response cycle, so a slow subscriber never holds the publisher up.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minired.data.glob import glob_match
from minired.protocol.resp import Push

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

MESSAGE = b"message"
PMESSAGE = b"pmessage"
SMESSAGE = b"smessage"


class PubSub:
    """Channel, pattern and shard-channel subscriptions of every client of one server."""

    def __init__(self) -> None:
        self.channels: dict[bytes, dict["Client", None]] = {}
        self.patterns: dict[bytes, dict["Client", None]] = {}
        self.shard_channels: dict[bytes, dict["Client", None]] = {}
        # Cluster mode: the other nodes' registries, which a PUBLISH reaches as the cluster bus
        # carries it (minired/features/cluster.py); empty for a single server.
        self.peers: list[PubSub] = []

    # --- subscribing -----------------------------------------------------------------------------

    def subscribe(self, client: "Client", channel: bytes) -> bool:
        """Add a subscription; False if the client already had it."""
        return _add(self.channels, client.channels, client, channel)

    def unsubscribe(self, client: "Client", channel: bytes) -> bool:
        return _remove(self.channels, client.channels, client, channel)

    def psubscribe(self, client: "Client", pattern: bytes) -> bool:
        return _add(self.patterns, client.patterns, client, pattern)

    def punsubscribe(self, client: "Client", pattern: bytes) -> bool:
        return _remove(self.patterns, client.patterns, client, pattern)

    def ssubscribe(self, client: "Client", channel: bytes) -> bool:
        return _add(self.shard_channels, client.shard_channels, client, channel)

    def sunsubscribe(self, client: "Client", channel: bytes) -> bool:
        return _remove(self.shard_channels, client.shard_channels, client, channel)

    def drop_client(self, client: "Client") -> None:
        """Forget every subscription of a client that disconnected or sent RESET."""
        for channel in list(client.channels):
            self.unsubscribe(client, channel)
        for pattern in list(client.patterns):
            self.punsubscribe(client, pattern)
        for channel in list(client.shard_channels):
            self.sunsubscribe(client, channel)

    # --- publishing ------------------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes,
                publisher: "Client | None" = None) -> tuple[int, list[Push]]:
        """Deliver to channel subscribers, then to matching patterns.

        Returns the number of receivers and the frames meant for `publisher` itself: those are
        not written at once, so that they can precede its PUBLISH reply as in Redis.
        """
        receivers = 0
        own: list[Push] = []
        subscribers = self.channels.get(channel)
        if subscribers:
            _deliver(subscribers, Push([MESSAGE, channel, message]), publisher, own)
            receivers += len(subscribers)
        if self.patterns:
            for pattern, clients in list(self.patterns.items()):
                if glob_match(pattern, channel):
                    _deliver(clients, Push([PMESSAGE, pattern, channel, message]), publisher, own)
                    receivers += len(clients)
        return receivers, own

    def forward(self, channel: bytes, message: bytes) -> None:
        """A PUBLISH of this node delivered on the other nodes of its cluster, whose
        subscribers it does not count (PUBLISH answers this node's receivers only)."""
        for peer in self.peers:
            peer.publish(channel, message)

    def spublish(self, channel: bytes, message: bytes,
                 publisher: "Client | None" = None) -> tuple[int, list[Push]]:
        own: list[Push] = []
        subscribers = self.shard_channels.get(channel)
        if not subscribers:
            return 0, own
        _deliver(subscribers, Push([SMESSAGE, channel, message]), publisher, own)
        return len(subscribers), own


def _deliver(clients: dict, frame: Push, publisher: "Client | None", own: list) -> None:
    for client in clients:
        if client is publisher:
            own.append(frame)
        else:
            client.send(frame)


def _add(registry: dict, own: set, client: "Client", name: bytes) -> bool:
    if name in own:
        return False
    own.add(name)
    registry.setdefault(name, {})[client] = None
    return True


def _remove(registry: dict, own: set, client: "Client", name: bytes) -> bool:
    if name not in own:
        return False
    own.discard(name)
    subscribers = registry.get(name)
    if subscribers is not None:
        subscribers.pop(client, None)
        if not subscribers:
            del registry[name]
    return True


def registry(server: "Server") -> PubSub:
    return server.features.pubsub


def attach(server: "Server") -> None:
    """Give the server its registry and drop a client's subscriptions when it goes or RESETs."""
    pubsub = PubSub()
    server.features.pubsub = pubsub
    server.hooks.disconnect.append(pubsub.drop_client)
