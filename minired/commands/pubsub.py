"""Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB ...

Subscription confirmations are push frames (arrays under RESP2), one per channel, so a
command naming several channels answers with several replies (`Replies`).
"""
from __future__ import annotations

from minired.data.glob import glob_match
from minired.engine.table import command, container_command, help_reply
from minired.features.pubsub import registry
from minired.protocol import errors
from minired.protocol.resp import Push, Replies

G = "pubsub"
_SUBSCRIBE_FLAGS = "pubsub noscript loading stale"


def _confirm(kind: bytes, name: bytes | None, count: int) -> Push:
    return Push([kind, name, count])


def _channel_count(c) -> int:
    # Shard subscriptions are counted apart: (UN)SUBSCRIBE and P(UN)SUBSCRIBE report channels
    # plus patterns, S(UN)SUBSCRIBE report shard channels only.
    return len(c.channels) + len(c.patterns)


@command("subscribe", arity=-2, flags=_SUBSCRIBE_FLAGS, group=G)
def subscribe(c, argv):
    pubsub = registry(c.server)
    replies = Replies()
    for channel in argv[1:]:
        pubsub.subscribe(c, channel)
        replies.append(_confirm(b"subscribe", channel, _channel_count(c)))
    return replies


@command("psubscribe", arity=-2, flags=_SUBSCRIBE_FLAGS, group=G)
def psubscribe(c, argv):
    pubsub = registry(c.server)
    replies = Replies()
    for pattern in argv[1:]:
        pubsub.psubscribe(c, pattern)
        replies.append(_confirm(b"psubscribe", pattern, _channel_count(c)))
    return replies


@command("ssubscribe", arity=-2, flags=_SUBSCRIBE_FLAGS, keys=(1, -1, 1), group=G)
def ssubscribe(c, argv):
    pubsub = registry(c.server)
    replies = Replies()
    for channel in argv[1:]:
        pubsub.ssubscribe(c, channel)
        replies.append(_confirm(b"ssubscribe", channel, len(c.shard_channels)))
    return replies


def _unsubscribe_all(c, kind: bytes, names: list[bytes], current: set, drop, count) -> Replies:
    """Shared shape of the three UNSUBSCRIBE commands: with no names, every current one goes,
    and a client with none gets a single confirmation naming nil."""
    if not names:
        names = list(current)
        if not names:
            return Replies([_confirm(kind, None, count(c))])
    replies = Replies()
    for name in names:
        drop(c, name)
        replies.append(_confirm(kind, name, count(c)))
    return replies


@command("unsubscribe", arity=-1, flags=_SUBSCRIBE_FLAGS, group=G)
def unsubscribe(c, argv):
    return _unsubscribe_all(c, b"unsubscribe", argv[1:], c.channels,
                            registry(c.server).unsubscribe, _channel_count)


@command("punsubscribe", arity=-1, flags=_SUBSCRIBE_FLAGS, group=G)
def punsubscribe(c, argv):
    return _unsubscribe_all(c, b"punsubscribe", argv[1:], c.patterns,
                            registry(c.server).punsubscribe, _channel_count)


@command("sunsubscribe", arity=-1, flags=_SUBSCRIBE_FLAGS, keys=(1, -1, 1), group=G)
def sunsubscribe(c, argv):
    return _unsubscribe_all(c, b"sunsubscribe", argv[1:], c.shard_channels,
                            registry(c.server).sunsubscribe, lambda x: len(x.shard_channels))


def _answer_publish(c, receivers: int, own: list):
    if not own:
        return receivers
    if c.in_exec or c.in_script:
        # The reply is not going straight to the socket: the frames go out now, ahead of it.
        for frame in own:
            c.send(frame)
        return receivers
    return Replies([*own, receivers])


@command("publish", arity=3, flags="pubsub loading stale fast may_replicate", group=G)
def publish(c, argv):
    pubsub = registry(c.server)
    receivers, own = pubsub.publish(argv[1], argv[2], c)
    if pubsub.peers:
        pubsub.forward(argv[1], argv[2])
    persistence = c.server.features.persistence
    if persistence is not None and persistence.replica_feed is not None:
        persistence.propagate_to_replicas(c, argv)  # (Redis sends PUBLISH to its replicas)
    return _answer_publish(c, receivers, own)


@command("spublish", arity=3, flags="pubsub loading stale fast may_replicate", keys=(1, 1, 1),
          group=G)
def spublish(c, argv):
    receivers, own = registry(c.server).spublish(argv[1], argv[2], c)
    return _answer_publish(c, receivers, own)


# --- PUBSUB ------------------------------------------------------------------------------------

container_command("pubsub", G, summary="A container for Pub/Sub commands.")
_INTROSPECTION_FLAGS = "pubsub loading stale"


def _matching(names, argv) -> list[bytes]:
    if len(argv) > 3:
        raise errors.unknown_subcommand_or_arity(argv[1], "pubsub")
    if len(argv) == 2:
        return list(names)
    pattern = argv[2]
    return [name for name in names if glob_match(pattern, name)]


@command("channels", arity=-2, flags=_INTROSPECTION_FLAGS, parent="pubsub", group=G)
def pubsub_channels(c, argv):
    return _matching(registry(c.server).channels, argv)


@command("shardchannels", arity=-2, flags=_INTROSPECTION_FLAGS, parent="pubsub", group=G)
def pubsub_shardchannels(c, argv):
    return _matching(registry(c.server).shard_channels, argv)


def _counts(subscribers: dict, channels: list[bytes]) -> list:
    # A flat array in RESP3 too, and a channel named twice is reported twice.
    reply: list = []
    for channel in channels:
        reply.append(channel)
        reply.append(len(subscribers.get(channel, ())))
    return reply


@command("numsub", arity=-2, flags=_INTROSPECTION_FLAGS, parent="pubsub", group=G)
def pubsub_numsub(c, argv):
    return _counts(registry(c.server).channels, argv[2:])


@command("shardnumsub", arity=-2, flags=_INTROSPECTION_FLAGS, parent="pubsub", group=G)
def pubsub_shardnumsub(c, argv):
    return _counts(registry(c.server).shard_channels, argv[2:])


@command("numpat", arity=2, flags=_INTROSPECTION_FLAGS, parent="pubsub", group=G)
def pubsub_numpat(c, argv):
    return len(registry(c.server).patterns)


_HELP = (
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",)


@command("help", arity=2, flags="loading stale", parent="pubsub", group=G)
def pubsub_help(c, argv):
    return help_reply("PUBSUB", *_HELP)
