"""Keyspace notifications (notify-keyspace-events), as Redis 7.0's notify.c sends them.

A command that changes data names an event at the point Redis does (`notify(db, LIST,
b"lpush", key)`); for each enabled class the server publishes `__keyspace@<db>__:<key>` with
the event as message (K) and then `__keyevent@<db>__:<event>` with the key as message (E),
through the ordinary Pub/Sub registry. Two events come from the keyspace itself: "new" when a
key is created (Database.set) and "expired" when expiry deletes one (Database._expire).

Off (the default), every database's `notifier` is None, and each notification point costs
that one check: `if db.notifier is not None: notify(...)`. `configure` installs the notifier
on every database when CONFIG SET (or the start-up configuration) turns any class on.

A RESP3 client subscribed to the events of its own commands gets them ahead of the command's
reply (inside EXEC's array, ahead of the reply of the command that caused them). Redis writes
them wherever the command happens to call notifyKeyspaceEvent relative to addReply: ahead for
most commands (SET, INCR, DEL, SADD, RENAME, scripts ...), after the reply for some (LPUSH,
HSET, ZADD, XADD, EXPIRE, LPOP) and in the middle of it for a few (ZPOPMIN). Client libraries
route pushes apart from replies, so only the byte order differs. (In a pipelined batch the
pushes also go ahead of the replies of the batch's earlier commands, which wait to be written
together: placing them needs the dispatcher's help.) Key misses (class m, "keymiss") are
sent by the keyspace's read lookups (Database.read); evictions (class e) by
minired/features/eviction.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minired.features.pubsub import registry
from minired.protocol.resp import Replies

if TYPE_CHECKING:
    from minired.data.keyspace import Database
    from minired.engine.client import Client
    from minired.engine.server import Server

# The classes, with server.h's values.
KEYSPACE = 1 << 0  # K
KEYEVENT = 1 << 1  # E
GENERIC = 1 << 2  # g
STRING = 1 << 3  # $
LIST = 1 << 4  # l
SET = 1 << 5  # s
HASH = 1 << 6  # h
ZSET = 1 << 7  # z
EXPIRED = 1 << 8  # x
EVICTED = 1 << 9  # e
STREAM = 1 << 10  # t
KEY_MISS = 1 << 11  # m
MODULE = 1 << 13  # d
NEW = 1 << 14  # n
# 'A': every class but key misses and new keys (NOTIFY_ALL).
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_BY_LETTER = {"A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH,
              "z": ZSET, "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT,
              "t": STREAM, "m": KEY_MISS, "d": MODULE, "n": NEW}


def parse_flags(text: str) -> int:
    """keyspaceEventsStringToFlags, for a value config.py has already validated."""
    flags = 0
    for letter in text:
        flags |= _BY_LETTER.get(letter, 0)
    return flags


class Notifier:
    """The enabled classes of one server, and where its notifications go."""

    __slots__ = ("server", "flags", "transaction", "transaction_frames")

    def __init__(self, server: "Server", flags: int) -> None:
        self.server = server
        self.flags = flags
        # The client running EXEC: its own notifications go between the replies of the
        # transaction's commands, where Redis writes them (see run_transaction).
        self.transaction: "Client | None" = None
        self.transaction_frames: list = []

    def emit(self, type_flag: int, event: bytes, key: bytes, db_index: int) -> None:
        """notifyKeyspaceEvent: publish on the keyspace channel, then the keyevent one."""
        flags = self.flags
        if not flags & type_flag:
            return
        pubsub = registry(self.server)
        if flags & KEYSPACE:
            self._publish(pubsub, b"__keyspace@%d__:%s" % (db_index, key), event)
        if flags & KEYEVENT:
            self._publish(pubsub, b"__keyevent@%d__:%s" % (db_index, event), key)

    def _publish(self, pubsub, channel: bytes, message: bytes) -> None:
        if not (pubsub.channels or pubsub.patterns):
            return
        # Every subscriber gets the message now, the client whose command caused it too: Redis
        # writes it to that client's output ahead of the command's reply.
        _, own = pubsub.publish(channel, message, self.transaction)
        if own:
            self.transaction_frames.extend(own)

    # --- the keyspace's own events -------------------------------------------------------------

    def key_created(self, db: "Database", key: bytes) -> None:
        self.emit(NEW, b"new", key, db.index)

    def key_expired(self, db: "Database", key: bytes) -> None:
        self.emit(EXPIRED, b"expired", key, db.index)

    def key_missed(self, db: "Database", key: bytes) -> None:
        """A read lookup found nothing (lookupKeyRead's "keymiss")."""
        self.emit(KEY_MISS, b"keymiss", key, db.index)

    # --- EXEC ----------------------------------------------------------------------------------

    def run_transaction(self, c: "Client", queued: list, call) -> list:
        """EXEC's replies, with the notifications the transaction sent to its own client placed
        before the reply of the command that caused each, inside EXEC's array, as Redis
        writes them."""
        outer, outer_frames = self.transaction, self.transaction_frames
        self.transaction, self.transaction_frames = c, []
        replies: list[Any] = []
        try:
            for spec, argv in queued:
                reply = call(c, spec, argv)
                if self.transaction_frames:
                    reply = Replies([*self.transaction_frames, reply])
                    self.transaction_frames = []
                replies.append(reply)
        finally:
            self.transaction, self.transaction_frames = outer, outer_frames
        return replies


def notify(db: "Database", type_flag: int, event: bytes, key: bytes) -> None:
    """An event on key of db; the caller has checked `db.notifier is not None`."""
    db.notifier.emit(type_flag, event, key, db.index)


def after_removal(db: "Database", key: bytes, remaining: Any, type_flag: int, event: bytes) -> None:
    """After a command took members out of a collection (SREM, SPOP, ZREM, ZPOPMIN, ...): an
    emptied key is deleted, else its watchers are told; then the command's event, and "del" when
    the key went, as Redis's commands send them."""
    if remaining:
        db.signal_modified(key)
    else:
        db.delete(key)
    if db.notifier is not None:
        notify(db, type_flag, event, key)
        if not remaining:
            notify(db, GENERIC, b"del", key)


def attach(server: "Server") -> None:
    configure(server)  # notify-keyspace-events given at start-up


def configure(server: "Server", text: str | None = None) -> None:
    """Install the notifier per notify-keyspace-events: `text` as CONFIG SET was given it, or
    the configured value at start-up. With neither K nor E, or no class, nothing would be
    published: the notifier stays off."""
    if text is None:
        text = server.config.get("notify-keyspace-events") or ""
    flags = parse_flags(text)
    enabled = flags & (KEYSPACE | KEYEVENT) and flags & ~(KEYSPACE | KEYEVENT)
    # The server's own databases: those whose changes wake its blocked clients. (A cluster
    # replica serves its master's database 0, whose events are the master's to configure.)
    owned = [db for db in server.keyspace.dbs if db.ready_keys is server.keyspace.ready_keys]
    notifier = None
    if enabled:
        notifier = owned[0].notifier if owned else None  # (all databases share one)
        if notifier is None:
            notifier = Notifier(server, flags)
        notifier.flags = flags
    for db in owned:
        db.notifier = notifier
