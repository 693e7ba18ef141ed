"""Pub/sub compared with real Redis: subscribers and publishers on both servers, pushed frames
compared one by one, in RESP2 and RESP3."""
from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.differential import Differential, Push


def assert_nothing_pending(subscriber: Differential) -> None:
    """A RESP2 subscriber's PING answer comes right after anything already pushed to it, so
    getting the pong next proves no stray message was sent."""
    subscriber.check("PING", "barrier")


def wait_until_both(pair: Differential, expected, *command) -> None:
    """Disconnects are processed asynchronously by both servers: poll until both agree."""
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while True:
        redis_reply, mini_reply = pair.both(*command)
        if redis_reply == mini_reply == expected:
            return
        assert time.monotonic() < deadline, (command, redis_reply, mini_reply)
        time.sleep(0.02)


def test_subscribe_and_publish_resp2(diff, connect):
    subscriber = connect()
    subscriber.check("SUBSCRIBE", "news", "sport")
    subscriber.read_both()
    diff.check("PUBLISH", "news", "hello")
    subscriber.read_both()
    diff.check("PUBLISH", "sport", "goal")
    subscriber.read_both()
    diff.check("PUBLISH", "weather", "rain")
    subscriber.check("SUBSCRIBE", "news")  # already subscribed: same count
    assert_nothing_pending(subscriber)
    diff.check("PUBSUB", "NUMSUB", "news", "sport", "weather", "news")


def test_every_subscriber_gets_the_message_in_subscription_order(diff, connect):
    first, second = connect(), connect()
    first.check("SUBSCRIBE", "jobs")
    second.check("SUBSCRIBE", "jobs")
    diff.check("PUBLISH", "jobs", "1")
    first.read_both()
    second.read_both()
    diff.check("PUBSUB", "NUMSUB", "jobs")


def test_pattern_subscriptions(diff, connect):
    subscriber = connect()
    subscriber.check("PSUBSCRIBE", "news.*")
    subscriber.check("PSUBSCRIBE", "h?llo")
    subscriber.check("PSUBSCRIBE", "[a-c]x")
    subscriber.check("SUBSCRIBE", "news.tech")
    diff.check("PUBSUB", "NUMPAT")
    diff.check("PUBLISH", "news.tech", "m1")  # channel first, then the pattern
    subscriber.read_both()
    subscriber.read_both()
    diff.check("PUBLISH", "hallo", "m2")
    subscriber.read_both()
    diff.check("PUBLISH", "bx", "m3")
    subscriber.read_both()
    diff.check("PUBLISH", "dx", "m4")
    diff.check("PUBLISH", "news", "m5")
    assert_nothing_pending(subscriber)
    subscriber.check("PUNSUBSCRIBE", "h?llo")
    diff.check("PUBLISH", "hello", "m6")
    assert_nothing_pending(subscriber)
    diff.check("PUBSUB", "NUMPAT")


def test_unsubscribe_reply_shapes(diff):
    diff.check("UNSUBSCRIBE")
    diff.check("PUNSUBSCRIBE")
    diff.check("SUNSUBSCRIBE")
    diff.check("UNSUBSCRIBE", "never")
    diff.check("SUBSCRIBE", "a")
    diff.check("PSUBSCRIBE", "p*")
    diff.check("UNSUBSCRIBE", "never")
    diff.check("UNSUBSCRIBE")
    diff.check("PUNSUBSCRIBE", "q*")
    diff.check("PUNSUBSCRIBE")
    diff.check("UNSUBSCRIBE")
    diff.check("GET", "k")  # out of subscribe mode again


def test_unsubscribe_with_no_arguments_drops_them_all(diff):
    diff.check("SUBSCRIBE", "a", "b", "c")
    diff.read_both()
    diff.read_both()
    # Redis walks its own hash table: the order of the confirmations is unspecified.
    diff.redis.send("UNSUBSCRIBE")
    diff.minired.send("UNSUBSCRIBE")
    for client in (diff.redis, diff.minired):
        replies = [client.read() for _ in range(3)]
        assert sorted(reply[1] for reply in replies) == [b"a", b"b", b"c"]
        assert [(reply[0], reply[2]) for reply in replies] == [(b"unsubscribe", n) for n in (2, 1, 0)]
    diff.check("PUBSUB", "NUMSUB", "a", "b", "c")


def test_resp2_subscribe_mode_refuses_other_commands(diff):
    diff.check("SUBSCRIBE", "a")
    diff.check("GET", "k")
    diff.check("PING")
    diff.check("PING", "hi")
    diff.check("SET", "k", "v")
    diff.check("PUBLISH", "a", "x")
    diff.check("UNSUBSCRIBE", "a")
    diff.check("PING")
    diff.check("GET", "k")


def test_resp3_push_frames(diff, connect):
    subscriber = connect()
    subscriber.hello(3)
    subscriber.check("SUBSCRIBE", "a", "b")
    subscriber.read_both()
    subscriber.check("PSUBSCRIBE", "a*")
    subscriber.check("GET", "k")  # RESP3 clients may run anything while subscribed
    subscriber.check("PING")
    diff.check("PUBLISH", "a", "x")
    subscriber.read_both()
    subscriber.read_both()
    subscriber.check("UNSUBSCRIBE", "b")
    subscriber.check("PUNSUBSCRIBE", "a*")
    subscriber.check("UNSUBSCRIBE")
    subscriber.check("UNSUBSCRIBE")


def test_resp3_publisher_receives_its_own_message_before_the_reply(diff):
    diff.hello(3)
    diff.check("SUBSCRIBE", "self")
    diff.check("PUBLISH", "self", "echo")  # the push comes first
    diff.read_both()  # then the receiver count
    diff.check("PSUBSCRIBE", "s*")
    diff.check("PUBLISH", "self", "twice")
    diff.read_both()
    diff.read_both()
    diff.check("PING")


def test_publish_inside_multi(diff, connect):
    subscriber = connect()
    subscriber.check("SUBSCRIBE", "c")
    diff.check("MULTI")
    diff.check("PUBLISH", "c", "1")
    diff.check("PUBLISH", "nobody", "2")
    diff.check("EXEC")
    subscriber.read_both()


def test_disconnect_drops_subscriptions(diff, real_redis, mini):
    subscriber = Differential(real_redis.port, mini.port)
    subscriber.check("SUBSCRIBE", "gone")
    subscriber.check("PSUBSCRIBE", "go*")
    subscriber.check("SSUBSCRIBE", "shard-gone")
    diff.check("PUBSUB", "NUMSUB", "gone")
    subscriber.close()
    wait_until_both(diff, [b"gone", 0], "PUBSUB", "NUMSUB", "gone")
    wait_until_both(diff, 0, "PUBSUB", "NUMPAT")
    diff.check("PUBSUB", "SHARDNUMSUB", "shard-gone")
    diff.check("PUBLISH", "gone", "x")


def test_reset_drops_subscriptions(diff, connect):
    subscriber = connect()
    subscriber.check("SUBSCRIBE", "a")
    subscriber.check("PSUBSCRIBE", "b*")
    subscriber.check("RESET")
    diff.check("PUBSUB", "NUMSUB", "a")
    diff.check("PUBSUB", "NUMPAT")
    subscriber.check("GET", "k")


def test_pubsub_introspection(diff, connect):
    subscriber = connect()
    subscriber.check("SUBSCRIBE", "news.tech", "news.art", "sport")
    subscriber.read_both()
    subscriber.read_both()
    diff.check("PUBSUB", "CHANNELS", unordered=True)
    diff.check("PUBSUB", "CHANNELS", "news.*", unordered=True)
    diff.check("PUBSUB", "CHANNELS", "nothing*")
    diff.check("PUBSUB", "NUMSUB")
    diff.check("PUBSUB", "NUMPAT")
    diff.check("PUBSUB", "SHARDCHANNELS")
    diff.check("PUBSUB", "SHARDNUMSUB", "x")
    diff.check("PUBSUB", "HELP")
    diff.hello(3)
    diff.check("PUBSUB", "NUMSUB", "sport", "none")
    diff.check("PUBSUB", "CHANNELS", "sp*")


def test_pubsub_errors(diff):
    diff.check("PUBSUB")
    diff.check("PUBSUB", "FOO")
    diff.check("PUBSUB", "NUMPAT", "x")
    diff.check("PUBSUB", "CHANNELS", "a", "b")
    diff.check("PUBSUB", "SHARDCHANNELS", "a", "b")
    diff.check("PUBSUB", "HELP", "x")
    diff.check("SUBSCRIBE")
    diff.check("PSUBSCRIBE")
    diff.check("SSUBSCRIBE")
    diff.check("PUBLISH", "a")
    diff.check("PUBLISH", "a", "b", "c")
    diff.check("SPUBLISH", "a")


def test_shard_channels(diff, connect):
    subscriber = connect()
    subscriber.check("SSUBSCRIBE", "orders", "payments")
    subscriber.read_both()
    subscriber.check("SUBSCRIBE", "plain")  # counted apart from shard channels
    diff.check("SPUBLISH", "orders", "o1")
    subscriber.read_both()
    diff.check("PUBLISH", "orders", "not-for-shards")
    diff.check("SPUBLISH", "plain", "not-for-channels")
    diff.check("PUBSUB", "SHARDCHANNELS", unordered=True)
    diff.check("PUBSUB", "SHARDCHANNELS", "o*")
    diff.check("PUBSUB", "SHARDNUMSUB", "orders", "plain")
    subscriber.check("UNSUBSCRIBE", "plain")
    subscriber.check("GET", "k")  # still subscribed to shard channels
    subscriber.check("SUNSUBSCRIBE", "orders")
    subscriber.check("SUNSUBSCRIBE")
    subscriber.check("SUNSUBSCRIBE")
    subscriber.check("GET", "k")


_GLOB_ALPHABET = "ab*?[]^-\\"


@settings(max_examples=120)
@given(pattern=st.text(_GLOB_ALPHABET, min_size=1, max_size=6),
       channel=st.text("ab-]^\\*", min_size=1, max_size=5))
def test_pattern_matching_is_redis_glob(diff, pattern, channel):
    # RESP3 lets the one connection subscribe and publish: a match pushes the pmessage ahead
    # of the receiver count.
    diff.hello(3)
    diff.check("PSUBSCRIBE", pattern)
    if isinstance(diff.check("PUBLISH", channel, "m"), Push):
        diff.read_both()
    diff.check("PUNSUBSCRIBE", pattern)
