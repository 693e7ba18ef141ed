"""Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK ...).

A blocking command's handler first tries to answer at once. If it cannot, and the client may
block, it returns a `Block`; the connection then stops running that client's commands until
the block is served, times out, or is cancelled. After every command, EXEC or script, the
server drains `Keyspace.ready_keys` (keys that were written while someone waited on them) and
retries the waiters of each key in the order they blocked, as Redis does.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from minired.data.strtold import NotAFloat, overflows, round_to_grid, strtold
from minired.engine.table import stats_of
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.data.keyspace import Database, Keyspace
    from minired.engine.client import Client


class Block:
    """What a blocking handler returns when it has to wait.

    `retry(client, key)` is called when `key` (one of `keys`) was written: it returns the
    reply that ends the wait (serving from that key, as Redis serves from the key that became
    ready), or None to keep waiting (the key is empty again, or holds another type).
    `timeout_reply` is sent when `timeout_ms` (0 = forever) passes or on CLIENT UNBLOCK.
    With `retry_when_deleted`, `retry` is also called when the key was deleted (XREADGROUP
    then ends with an error, as Redis unblocks it). `value_type` is the type of value the
    wait is for (QuickList, ZSet, Stream: Redis's blocked type), which decides the writes that
    make its keys ready (Database.signal_ready).
    """

    __slots__ = ("keys", "timeout_ms", "retry", "timeout_reply", "retry_when_deleted",
                 "value_type", "logged_call", "latency_slot")

    def __init__(self, keys: list[bytes], timeout_ms: int,
                 retry: Callable[["Client", bytes], Any], timeout_reply: Any,
                 retry_when_deleted: bool = False, value_type: type | None = None) -> None:
        self.keys = keys
        self.timeout_ms = timeout_ms
        self.retry = retry
        self.timeout_reply = timeout_reply
        self.retry_when_deleted = retry_when_deleted
        self.value_type = value_type
        # (spec, argv, nanoseconds) of the call that blocked, for the slow log (dispatch.call).
        self.logged_call: tuple | None = None
        # The latency histogram's slot for the call that blocked (dispatch.call), counted
        # once the wait is served or unblocked; -1: latency-tracking was off.
        self.latency_slot = -1


class Waiter:
    """One blocked client: its Block, the database it blocked in, and its deadline."""

    __slots__ = ("client", "block", "db", "counted_in", "deadline_ms", "timer", "resume")

    def __init__(self, client: "Client", block: Block, db: "Database", deadline_ms: int | None,
                 resume: Callable[[], None]) -> None:
        self.client = client
        self.block = block
        self.db = db
        # The table of blocked types the waiter is counted in (Database.blocked_types, as it
        # was when the client blocked: a cluster failover gives the database its new master's)
        self.counted_in: dict | None = None
        self.deadline_ms = deadline_ms
        self.timer: asyncio.TimerHandle | None = None
        self.resume = resume


# How a wait ends (Blocking.finish): what INFO commandstats and the slow log make of it.
# FORCED: the server ended it itself (disconnectAllBlockedClients), which Redis answers with
# an error counted in errorstats only: neither the command's failed_calls nor the slow log.
SERVED, TIMED_OUT, UNBLOCKED, FORCED = 0, 1, 2, 3


# Redis reads a seconds timeout with strtold, multiplies by 1000 in long double and rounds
# up to whole milliseconds. The rounding decides edge cases clients can see: "-0.001" is
# -0.99999... ms in long double, which rounds up to 0 (block forever), while "-0.0011" is an
# error. strtold.py emulates the long doubles exactly.
_LLONG_MIN = -(2**63)


def _seconds_to_ms(seconds: tuple[int, int, int] | None) -> int:
    """(long long) ceill(seconds * 1000.0), as Redis computes it."""
    if seconds is None:  # infinity: the cast yields LLONG_MIN
        return _LLONG_MIN
    sign, significand, scale = seconds
    if not significand:
        return 0
    if scale >= 0:
        significand, scale = round_to_grid(significand * 1000 << scale, 1)
    else:
        significand, scale = round_to_grid(significand * 1000, 1 << -scale)
    if overflows(significand, scale):
        return _LLONG_MIN
    if scale >= 0:
        ms = sign * (significand << scale)
    elif sign > 0:
        ms = -(-significand >> -scale)  # ceiling
    else:
        ms = -(significand >> -scale)   # ceiling of a negative value: toward zero
    return ms if _LLONG_MIN <= ms < 2**63 else _LLONG_MIN


def parse_timeout(raw: bytes) -> int:
    """A blocking command's timeout in seconds (fractions allowed) -> milliseconds; 0 = forever.

    Exactly Redis's reading: any positive fraction blocks at least 1 ms; a negative value that
    rounds up to 0 ms blocks forever; "inf" and values past 2**63 ms are "negative".
    """
    digits = raw[1:] if raw[:1] == b"+" else raw
    if 0 < len(digits) <= 15 and digits.isdigit():  # bytes.isdigit: ASCII digits only
        return int(raw) * 1000
    try:
        ms = _seconds_to_ms(strtold(raw))
    except NotAFloat:
        raise RedisError(errors.TIMEOUT_NOT_FLOAT) from None
    if ms < 0:
        raise RedisError(errors.TIMEOUT_NEGATIVE)
    return ms


# Longest single timer; a longer wait re-arms when it fires (event loops reject huge delays).
_MAX_TIMER_SECONDS = 86400.0


class BlockingManager:
    """Who waits on which key, their timeouts, and serving them after each write."""

    def __init__(self, keyspace: "Keyspace") -> None:
        # Called with (waiter, reply) as a blocked command ends: persistence logs the served ones.
        self.on_finish: Callable[[Waiter, Any], None] | None = None
        # Runs the serving of a waiter as its client's own command, serve_as(client, serve,
        # waiter, key) (tracking: the client's invalidation messages then follow its reply).
        self.serve_as: Callable[..., None] | None = None
        self.keyspace = keyspace
        self.waiters: dict[int, Waiter] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        keyspace.clock.listeners.append(self._on_clock_advanced)

    @property
    def blocked_clients(self) -> int:
        return len(self.waiters)

    def block(self, client: "Client", block: Block, resume: Callable[[], None]) -> None:
        """Park `client` until a key of `block` is served, its timeout passes, or it is
        unblocked; `resume` then lets the connection run the client's next commands."""
        db = client.db
        deadline = self.keyspace.clock.ms() + block.timeout_ms if block.timeout_ms else None
        waiter = Waiter(client, block, db, deadline, resume)
        for key in dict.fromkeys(block.keys):
            db.blocking_keys.setdefault(key, deque()).append(waiter)
        client.blocked = waiter
        self.waiters[client.id] = waiter
        if block.value_type is not None:
            # The database's count (the keyspace's, but for a cluster replica's, which is its
            # master's): the one the writes to its keys read.
            counts = waiter.counted_in = db.blocked_types
            counts[block.value_type] = counts.get(block.value_type, 0) + 1
        if deadline is not None:
            self._arm_timer(waiter, block.timeout_ms)

    def _arm_timer(self, waiter: Waiter, delay_ms: int) -> None:
        if self.loop is not None:
            delay = min(delay_ms / 1000, _MAX_TIMER_SECONDS)
            waiter.timer = self.loop.call_later(delay, self._on_timer, waiter)

    def _detach(self, waiter: Waiter) -> None:
        blocking_keys = waiter.db.blocking_keys
        for key in dict.fromkeys(waiter.block.keys):
            queue = blocking_keys.get(key)
            if queue is not None:
                try:
                    queue.remove(waiter)
                except ValueError:
                    pass
                if not queue:
                    del blocking_keys[key]
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        if self.waiters.pop(waiter.client.id, None) is not None:
            counts = waiter.counted_in
            if counts is not None:
                counts[waiter.block.value_type] -= 1
        waiter.client.blocked = None

    def finish(self, waiter: Waiter, reply: Any, ending: int = SERVED) -> None:
        """Answer a blocked client and let it run its next commands. `ending`: SERVED (its
        keys, or the event it waited for), TIMED_OUT, UNBLOCKED (CLIENT UNBLOCK) or FORCED."""
        if self.on_finish is not None:
            self.on_finish(waiter, reply)
        client = waiter.client
        if ending == UNBLOCKED or (type(reply) is RedisError and ending != FORCED):
            # The blocked command fails only now (NOGROUP, UNBLOCKED, WRONGTYPE on serving):
            # its failed_calls, as Redis's updateStatsOnUnblock counts it. Redis 7.0's CLIENT
            # UNBLOCK counts the command failed whatever the reply, TIMEOUT's included.
            spec = client.last_command
            if spec is not None:
                stats_of(client.server, spec).failed_calls += 1
        if type(reply) is RedisError:
            client.server.stats.count_error(reply.message)
        slot = waiter.block.latency_slot
        if slot >= 0 and ending in (SERVED, UNBLOCKED) and client.last_command is not None:
            # A command that blocked joins its latency histogram when it is answered, not
            # when its wait times out or the server ends it (updateStatsOnUnblock runs for the
            # first, not the others).
            histogram = stats_of(client.server, client.last_command).latency_histogram
            if histogram is not None:
                histogram[slot] += 1
        logged = waiter.block.logged_call
        if logged is not None and ending in (SERVED, UNBLOCKED):
            # A wait that times out is not logged (replyToBlockedClientTimedOut); one that
            # CLIENT UNBLOCK ends is, with no arguments: Redis 7.0 logs it after freeing them.
            argv = logged[1] if ending == SERVED else []
            client.server.slowlog.push_if_slow(client, logged[0], argv, logged[2])
        self._detach(waiter)
        waiter.client.send(reply)
        waiter.resume()

    def disconnect(self, client: "Client") -> None:
        """A blocked client went away: forget it, leaving no trace on its keys."""
        waiter = client.blocked
        if waiter is not None:
            self._detach(waiter)

    def unblock(self, client: "Client", with_error: bool) -> bool:
        """CLIENT UNBLOCK: end the wait as a timeout, or with an UNBLOCKED error."""
        waiter = client.blocked
        if waiter is None:
            return False
        reply = RedisError(errors.UNBLOCKED) if with_error else waiter.block.timeout_reply
        self.finish(waiter, reply, UNBLOCKED)
        return True

    def unblock_all(self, reply: RedisError, spare: Callable[["Client"], bool]) -> list["Client"]:
        """Answer every blocked client but those `spare` names `reply`, and return them
        (disconnectAllBlockedClients, as a server becomes a replica; it spares the clients a
        pause postponed, whose commands run from scratch when the pause ends)."""
        clients = []
        for waiter in list(self.waiters.values()):
            if not spare(waiter.client):
                clients.append(waiter.client)
                self.finish(waiter, reply, FORCED)
        return clients

    def serve_ready_keys(self) -> None:
        """Serve the waiters of every key written since the last call, oldest waiter first.

        Keys become ready in the order they were written; serving one (BLMOVE pushing to its
        destination) may make more keys ready, which are served in the same pass.
        """
        ready = self.keyspace.ready_keys
        clock = self.keyspace.clock
        while ready:
            db, key = ready.pop(0)
            queue = db.blocking_keys.get(key)
            if not queue:
                continue
            # The waiters of one key are served at one instant, as if one command served
            # them all (handleClientsBlockedOnKeys raises server.fixed_time_expire): a key
            # BLMOVE looks up twice cannot expire in between.
            clock.enter()
            try:
                for waiter in list(queue):
                    if waiter.client.blocked is not waiter or waiter.client.closing:
                        continue  # served through another of its keys, or going away: an
                        # element popped for a closing connection would be lost
                    if db.get(key) is None and not waiter.block.retry_when_deleted:
                        continue
                    if self.serve_as is None:
                        self._serve(waiter, key)
                    else:
                        self.serve_as(waiter.client, self._serve, waiter, key)
            finally:
                clock.leave()

    def _serve(self, waiter: Waiter, key: bytes) -> None:
        try:
            reply = waiter.block.retry(waiter.client, key)
        except RedisError as exc:
            reply = exc
        if reply is not None:
            self.finish(waiter, reply)

    def _on_timer(self, waiter: Waiter) -> None:
        waiter.timer = None
        if waiter.client.blocked is not waiter:
            return
        remaining = waiter.deadline_ms - self.keyspace.clock.ms()
        if remaining >= 0:
            # A wait times out once the clock is past its deadline (checkBlockedClientTimeout:
            # `timeout < now`), so at the earliest one millisecond after it.
            self._arm_timer(waiter, remaining + 1)
            return
        self.finish(waiter, waiter.block.timeout_reply, TIMED_OUT)

    def _on_clock_advanced(self) -> None:
        """MINIRED ADVANCE moved the clock: time out every wait whose deadline it passed."""
        now = self.keyspace.clock.ms()
        for waiter in list(self.waiters.values()):
            if waiter.deadline_ms is not None and waiter.deadline_ms < now:
                self.finish(waiter, waiter.block.timeout_reply, TIMED_OUT)
