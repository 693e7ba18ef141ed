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

from . import errors
from .errors import RedisError

if TYPE_CHECKING:
    from .client import Client
    from .keyspace import Database, Keyspace


class Block:
    """What a blocking handler returns when it has to wait.

    `retry(client)` runs the command again once a key is written: a reply to finish, or None
    to keep waiting. `timeout_reply` is sent when `timeout_ms` (0 = forever) passes.
    """

    __slots__ = ("keys", "timeout_ms", "retry", "timeout_reply")

    def __init__(self, keys: list[bytes], timeout_ms: int, retry: Callable[["Client"], Any],
                 timeout_reply: Any) -> None:
        self.keys = keys
        self.timeout_ms = timeout_ms
        self.retry = retry
        self.timeout_reply = timeout_reply


class Waiter:
    __slots__ = ("client", "block", "db", "deadline_ms", "timer", "resume")

    def __init__(self, client: "Client", block: Block, db: "Database", deadline_ms: int | None,
                 resume: Callable[[], None]) -> None:
        self.client = client
        self.block = block
        self.db = db
        self.deadline_ms = deadline_ms
        self.timer: asyncio.TimerHandle | None = None
        self.resume = resume


def parse_timeout(raw: bytes) -> int:
    """A blocking command's timeout in seconds (fractions allowed) -> milliseconds; 0 = forever."""
    try:
        seconds = float(raw)
    except ValueError:
        raise RedisError(errors.TIMEOUT_NOT_FLOAT) from None
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise RedisError(errors.TIMEOUT_NOT_FLOAT)
    if seconds < 0:
        raise RedisError(errors.TIMEOUT_NEGATIVE)
    ms = int(seconds * 1000)
    if seconds > 0 and ms == 0:
        ms = 1
    if ms > 2**62:
        raise RedisError(errors.TIMEOUT_OUT_OF_RANGE)
    return ms


class BlockingManager:
    def __init__(self, keyspace: "Keyspace") -> None:
        self.keyspace = keyspace
        self.waiters: dict[int, Waiter] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        keyspace.clock.listeners.append(self._on_clock_advanced)

    @property
    def blocked_clients(self) -> int:
        return len(self.waiters)

    def block(self, client: "Client", block: Block, resume: Callable[[], None]) -> None:
        db = client.db
        now = self.keyspace.clock.ms()
        deadline = now + block.timeout_ms if block.timeout_ms else None
        waiter = Waiter(client, block, db, deadline, resume)
        for key in dict.fromkeys(block.keys):
            db.blocking_keys.setdefault(key, deque()).append(waiter)
        client.blocked = waiter
        self.waiters[client.id] = waiter
        if deadline is not None and self.loop is not None:
            waiter.timer = self.loop.call_later(block.timeout_ms / 1000, self._on_timer, waiter)

    def _detach(self, waiter: Waiter) -> None:
        for key in dict.fromkeys(waiter.block.keys):
            queue = waiter.db.blocking_keys.get(key)
            if queue is not None:
                try:
                    queue.remove(waiter)
                except ValueError:
                    pass
                if not queue:
                    del waiter.db.blocking_keys[key]
        if waiter.timer is not None:
            waiter.timer.cancel()
        self.waiters.pop(waiter.client.id, None)
        waiter.client.blocked = None

    def finish(self, waiter: Waiter, reply: Any) -> None:
        """Answer a blocked client and let it run its next commands."""
        self._detach(waiter)
        waiter.client.send(reply)
        waiter.resume()

    def disconnect(self, client: "Client") -> None:
        waiter = client.blocked
        if waiter is not None:
            self._detach(waiter)

    def unblock(self, client: "Client", with_error: bool) -> bool:
        """CLIENT UNBLOCK: end the wait as a timeout, or with an UNBLOCKED error."""
        waiter = client.blocked
        if waiter is None:
            return False
        reply = (RedisError("UNBLOCKED client unblocked via CLIENT UNBLOCK") if with_error
                 else waiter.block.timeout_reply)
        self.finish(waiter, reply)
        return True

    def serve_ready_keys(self) -> None:
        """Retry the waiters of every key written since the last call, oldest waiter first."""
        ready = self.keyspace.ready_keys
        while ready:
            db, key = ready.pop(0)
            queue = db.blocking_keys.get(key)
            if not queue:
                continue
            for waiter in list(queue):
                if waiter.client.blocked is not waiter:
                    continue
                if db.get(key) is None:
                    break
                reply = waiter.block.retry(waiter.client)
                if reply is not None:
                    self.finish(waiter, reply)

    def _on_timer(self, waiter: Waiter) -> None:
        if waiter.client.blocked is not waiter:
            return
        remaining = waiter.deadline_ms - self.keyspace.clock.ms()
        if remaining > 0 and self.loop is not None:
            waiter.timer = self.loop.call_later(remaining / 1000, self._on_timer, waiter)
            return
        self.finish(waiter, waiter.block.timeout_reply)

    def _on_clock_advanced(self) -> None:
        now = self.keyspace.clock.ms()
        for waiter in list(self.waiters.values()):
            if waiter.deadline_ms is not None and waiter.deadline_ms <= now:
                self.finish(waiter, waiter.block.timeout_reply)
