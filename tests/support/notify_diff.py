"""Keyspace notifications compared with real Redis: subscribers on both servers, and the exact
(channel, message) list each receives per command.

`EventLog` is one server's side: a command connection, a subscriber (`PSUBSCRIBE __key*__:*`
plus a sync channel) and a publisher that sends the sync message. Everything the subscriber
reads before the sync message is what the commands sent since the last call caused: Redis
queues a command's notifications to the subscriber before it answers the command, so once the
reply is read they are ahead of the sync message. tests/core/test_notifications_diff.py uses
EventLog for hand-written cases; `EventWatch` hooks it into grammar_diff.run_sequence for
generated ones (bench/grammar_fuzz.py --notifications, tests/core/test_notify_grammar_diff.py).
"""
from __future__ import annotations

from collections import Counter

from .grammar_diff import Mismatch
from .respclient import Err, RawClient

SYNC = "notifications-sync"


class EventLog:
    """A command connection and a subscriber on one server, and a third connection that sends
    the sync message (the command connection may be inside MULTI)."""

    def __init__(self, port: int, flags: str) -> None:
        self.command = RawClient(port, timeout=5)
        self.subscriber = RawClient(port, timeout=5)
        self.publisher = RawClient(port, timeout=5)
        self.subscriber.call("PSUBSCRIBE", "__key*__:*")
        self.subscriber.call("SUBSCRIBE", SYNC)
        self.configure(flags)

    def configure(self, flags: str) -> None:
        assert self.publisher.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"OK"

    def run(self, *args) -> tuple:
        reply = self.command.call(*args)
        return reply, self.events()

    def events(self) -> list[tuple[bytes, bytes]]:
        """What the subscriber received since the last call."""
        self.publisher.call("PUBLISH", SYNC, "x")
        received = []
        while True:
            message = self.subscriber.read()
            if message[0] == b"message":
                return received
            received.append((message[2], message[3]))

    def close(self) -> None:
        try:
            self.configure("")
        finally:
            self.command.close()
            self.subscriber.close()
            self.publisher.close()


def event_name(channel: bytes, message: bytes) -> str:
    """The event of a notification: the message of a keyspace one, the channel's tail of a
    keyevent one (`__keyevent@0__:lpush`)."""
    if channel.startswith(b"__keyevent@"):
        return channel.split(b":", 1)[1].decode(errors="replace")
    return message.decode(errors="replace")


def event_signature(name: str, expected: list, actual: list) -> str:
    """How two event lists differ, by event name only (keys and databases vary between
    sequences that show the same fault), for deduplicating findings and for shrinking."""
    redis_names = Counter(event_name(*event) for event in expected)
    mini_names = Counter(event_name(*event) for event in actual)
    if redis_names == mini_names:
        return f"{name}: events in another order or on other keys"
    only_redis = sorted((redis_names - mini_names).elements())
    only_mini = sorted((mini_names - redis_names).elements())
    return f"{name}: events only redis {only_redis} / only minired {only_mini}"


def _whole_scan(argv: list[str], replies) -> bool:
    """Whether a SCAN started at cursor 0 and went through the whole keyspace on both servers
    (the reply's cursor is 0 again), or was refused by both: only then did both visit the
    same keys."""
    if all(isinstance(reply, Err) for reply in replies):
        return True
    return argv[1:2] == ["0"] and all(
        isinstance(reply, list) and reply[:1] == [b"0"] for reply in replies)


def comparable_events(name: str, argv: list[str], events: list) -> list:
    """The part of a command's events both servers must agree on: all of them, in order,
    except where Redis's order is its hash table's.

    SORT ... BY looks its weight keys up (a "keymiss" each when missing) in the order it reads
    the source, a set's or a sorted set's in its dict's order (sortCommand walks the dict of a
    sorted set converted to a skiplist), and its GET keys in the sorted order, where tied
    weights keep that order: random per Redis process (the dict's hash seed), as the reply's
    order is (grammar_diff.normalise sorts it). The same events are compared, in any order;
    with LIMIT that order also picks which elements' GET keys are looked up, so only the
    events' names are."""
    words = [a.upper() for a in argv[2:]]
    if name == "scan":
        return sorted(events)  # expired keys deleted in the order SCAN walks the hash table
    if name in ("sort", "sort_ro") and "BY" in words:
        if "LIMIT" in words:
            return sorted(event_name(*event) for event in events)
        return sorted(events)
    return events


# Appended to a sequence's SETUP when events are compared: k1 (one of the generator's fresh
# keys) holds a string whose time has passed, so each sequence tests how its first command on
# k1 finds it (deleted with an "expired" event by a lookup; not by commands that look
# nothing up). The expiry cycle is off (EventWatch), so nothing else removes it.
EXPIRED_SETUP: list[list[str]] = [["SET", "k1", "gone", "PXAT", "1"]]


def with_expired_keys(sequence: list[list[str]], setup_length: int) -> list[list[str]]:
    return sequence[:setup_length] + EXPIRED_SETUP + sequence[setup_length:]


class EventWatch:
    """An EventLog on each server, for grammar_diff.run_sequence's `watch`: after each command
    (once its replies are compared) `compare` reads both subscribers and turns a difference
    into a Mismatch.

    The background expiry cycle is turned off on both servers (DEBUG SET-ACTIVE-EXPIRE 0, so
    they need enable-debug-command): it deletes a key whose time has passed (SET k v EXAT 1) at
    a moment set by each server's clock, and its "expired" event would land after whichever
    command ran then. Without it, expiry is lazy: the command that finds the key expired sends
    the event, the same command on both servers."""

    def __init__(self, redis_port: int, minired_port: int, flags: str) -> None:
        self.flags = flags
        self.logs: list[EventLog] = []
        try:
            for port in (redis_port, minired_port):
                log = EventLog(port, flags)
                self.logs.append(log)
                assert log.publisher.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
        except BaseException:
            self.close()
            raise

    def discard(self) -> None:
        """Read and drop what the subscribers have: events of the harness's own commands."""
        for log in self.logs:
            log.events()

    def compare(self, name: str, sent: list[list[str]], redis_reply=None,
                minired_reply=None) -> Mismatch | None:
        expected, actual = (log.events() for log in self.logs)
        argv = sent[-1]
        if name == "scan" and not _whole_scan(argv, (redis_reply, minired_reply)):
            # Which keys an unfinished scan visits (and so finds expired) is the hash table's
            # affair, as grammar_diff.comparable_pair says of its reply. The servers may now
            # differ in which expired keys they still hold: a whole scan on each deletes the
            # rest, and its events are dropped.
            for log in self.logs:
                log.command.call("SCAN", "0", "COUNT", "1000000")
                log.events()
            return None
        if comparable_events(name, argv, expected) == comparable_events(name, argv, actual):
            return None
        return Mismatch(list(sent), name, expected, actual,
                        event_signature(name, expected, actual))

    def close(self) -> None:
        for log in self.logs:
            try:
                log.publisher.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            except (OSError, ConnectionError):
                pass
            try:
                log.close()
            except (OSError, ConnectionError, AssertionError):
                pass
        self.logs = []
