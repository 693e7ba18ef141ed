"""Client output buffer limits (`client-output-buffer-limit <class> <hard> <soft> <soft-seconds>`),
as Redis 7.0 applies them: a client whose unsent replies reach the hard limit, or stay above the
soft limit for longer than soft-seconds, is disconnected at once and its pending replies dropped,
so a client that never reads cannot make the server hold unbounded memory. The pending size is
what the transport has queued (`get_write_buffer_size()`), looked at after a write that left
bytes queued: once per batch of replies and once per pushed message, never per command."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minired.engine.config import DEFAULTS, ConfigError, parse_memory

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import ClientProtocol, Server

log = logging.getLogger("minired")

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

    def limits(self) -> dict[str, OutputLimit]:
        # Re-parsed only when CONFIG SET changed the text.
        text = self.server.config.get("client-output-buffer-limit") or ""
        if text is not self._source:
            try:
                self._limits = parse_output_limits(text)
            except ConfigError as exc:
                log.warning("ignoring client-output-buffer-limit %r: %s", text, exc)
            self._source = text
        return self._limits

    def __call__(self, protocol: "ClientProtocol") -> None:
        client = protocol.client
        transport = protocol.transport
        if client is None or transport is None or client.closing:
            return
        subscribed = client.channels or client.patterns or client.shard_channels
        limit = self.limits()["pubsub" if subscribed else "normal"]
        pending = transport.get_write_buffer_size()
        if self._over(client, limit, pending):
            log.warning("Client %s closed for overcoming of output buffer limits.",
                        client_description(client))
            self.disconnections += 1
            client.closing = True
            # abort, not close: close would keep the unsent replies until the peer reads them.
            transport.abort()
            # Gone now, as Redis frees it before it next reads a command: the loop would call
            # this only after its next round of reads (replies are written at the end of one),
            # and a PUBLISH read in that round would still count the client.
            protocol.connection_lost(None)

    @staticmethod
    def _over(client: "Client", limit: OutputLimit, pending: int) -> bool:
        if limit.hard and pending >= limit.hard:
            return True
        if limit.soft and pending >= limit.soft:
            since = client.output_soft_limit_since
            now = time.monotonic()
            if since is None:
                client.output_soft_limit_since = now
                return False
            return now - since > limit.soft_seconds
        client.output_soft_limit_since = None
        return False


def client_description(client: "Client") -> str:
    return f"id={client.id} addr={client.addr} laddr={client.laddr} name={client.name.decode(errors='replace')}"


def attach(server: "Server") -> None:
    server.output_buffer_guard = OutputBufferGuard(server)
