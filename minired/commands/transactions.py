"""MULTI, EXEC, DISCARD, WATCH, UNWATCH with Redis 7.0's semantics.

Queuing happens in `dispatch.execute` (it appends `(spec, argv)` to `client.multi` and flags
`client.multi_failed` on an unknown command, an arity error or a refused command). EXEC runs
the queue synchronously through `dispatch.call`, so no other client's command can run in the
middle of a transaction, and keys it writes are served to blocked clients only after it ends.

WATCH registers a `WatchRecord` per key in `db.watchers`; `Database.signal_modified` marks
records dirty (writes, deletes, expiry, FLUSHALL, SWAPDB). EXEC also aborts, as Redis 7 does,
when a watched key is logically expired at EXEC time although it was not at WATCH time; a key
already expired at WATCH time changes nothing by being deleted.
"""
from __future__ import annotations

# dispatch imports the command table, which imports this module: reach `dispatch.call` via
# the module at run time.
from minired.engine import dispatch
from minired.engine.client import WatchRecord
from minired.engine.table import command
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY, OK

G = "transactions"


@command("multi", arity=1, flags="noscript loading stale fast allow_busy", group=G)
def multi(c, argv):
    """Start queuing commands for EXEC."""
    if c.multi is not None:
        raise RedisError(errors.MULTI_NESTED)
    c.multi = []
    c.multi_failed = False
    return OK


def _watched_key_changed(c) -> bool:
    """True if a WATCHed key was touched, or expired since WATCH, so EXEC must not run."""
    for record in c.watched:
        if record.dirty:
            return True
        # (isWatchedKeyExpired: keyIsExpired, at the instant EXEC started)
        if not record.expired_at_watch and record.db.is_expired(record.key):
            return True
    return False


@command("exec", arity=1, flags="noscript loading stale skip_slowlog", group=G)
def exec_(c, argv):
    """Run the queued commands atomically; null if a watched key changed."""
    queued = c.multi
    if queued is None:
        raise RedisError(errors.EXEC_WITHOUT_MULTI)
    failed = c.multi_failed
    c.multi = None
    c.multi_failed = False
    if failed:
        c.unwatch_all()
        raise RedisError(errors.EXECABORT)
    if c.watched:
        changed = _watched_key_changed(c)
        c.unwatch_all()
        if changed:
            return NULL_ARRAY
    call = dispatch.call
    c.in_exec = True
    try:
        notifier = c.db.notifier
        if notifier is not None:  # keyspace notifications to this client go inside the reply
            return notifier.run_transaction(c, queued, call)
        return [call(c, spec, command_argv) for spec, command_argv in queued]
    finally:
        c.in_exec = False


@command("discard", arity=1, flags="noscript loading stale fast allow_busy", group=G)
def discard(c, argv):
    """Drop the queued commands and forget WATCHed keys."""
    if c.multi is None:
        raise RedisError(errors.DISCARD_WITHOUT_MULTI)
    c.multi = None
    c.multi_failed = False
    c.unwatch_all()
    return OK


@command("watch", arity=-2, flags="noscript loading stale fast allow_busy", keys=(1, -1, 1),
         group=G)
def watch(c, argv):
    """Make the next EXEC fail if any of these keys changes before it."""
    if c.multi is not None:
        raise RedisError(errors.WATCH_IN_MULTI)
    db = c.db
    already = {record.key for record in c.watched if record.db is db}
    for key in argv[1:]:
        if key in already:
            continue
        already.add(key)
        # A key whose time has passed is left in place (keyIsExpired deletes nothing), and the
        # record remembers it: its deletion later is no change to the watcher
        # (Database.signal_modified), nor is it a reason for EXEC to fail.
        record = WatchRecord(db, key, expired_at_watch=db.is_expired(key))
        db.watchers.setdefault(key, set()).add(record)
        c.watched.append(record)
    return OK


@command("unwatch", arity=1, flags="noscript loading stale fast allow_busy", group=G)
def unwatch(c, argv):
    """Forget all WATCHed keys."""
    c.unwatch_all()
    return OK
