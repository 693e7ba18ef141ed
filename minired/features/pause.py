"""CLIENT PAUSE: clients' commands held until the pause ends, as Redis postpones them.

A held command leaves its client parked in the blocking machinery (blocking.py) with no key and
no timeout: its later input waits unparsed behind it, CLIENT LIST flags it `b` and INFO counts
it in blocked_clients, as Redis shows a postponed client. When the pause ends the held commands
go through dispatch again from the start, client by client in the order they were held, and
each client then goes on with the input that waited behind its command.

`Server.pause` is None while no pause is in force: dispatch pays one attribute check per command.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minired.engine import dispatch
from minired.engine.blocking import Block
from minired.engine.shebang import declared_flags

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec

_LLONG_MAX = (1 << 63) - 1
# Longest single timer; a longer pause re-arms when it fires (event loops reject huge delays).
_MAX_TIMER_SECONDS = 86400.0
# Commands whose may_replicate flag a script's declared flags replace (scriptFlagsToCmdFlags).
_SCRIPT_RUNNERS = frozenset({"eval", "evalsha", "fcall"})


def _never_ready(client: "Client", key: bytes) -> Any:
    return None  # a held client waits on no key: never called


# What dispatch returns for a held command: the connection parks the client as blocked.
HOLD = Block([], 0, _never_ready, None)


def is_held(client: "Client") -> bool:
    waiter = client.blocked
    return waiter is not None and waiter.block is HOLD


class ClientPause:
    """A pause in force: whether it holds every command or the writes only, when it ends, and
    the commands it holds.

    Several purposes may hold it, as Redis's pause purposes: CLIENT PAUSE (`everything` and
    `end_ms`, 0 when none), and the server's own (`purposes`: a shutdown waiting for the
    replicas, a FAILOVER waiting for its target; each holds the writes until it ends), each
    ended by itself: CLIENT UNPAUSE leaves the server's own in force, and the end of one of
    those leaves a CLIENT PAUSE, or the other, in force."""

    __slots__ = ("server", "everything", "end_ms", "timer", "held", "purposes")

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.everything = False
        self.end_ms = 0
        self.timer: Any = None
        self.held: list[tuple[Client, list]] = []
        self.purposes: set[str] = set()

    def holds(self, c: "Client", spec: "CommandSpec", argv: list) -> bool:
        """Whether the command waits for the end of the pause. A monitor is a replica to Redis,
        and replicas are never paused."""
        if c.flags == "O":
            return False
        return self.everything or may_replicate(c, spec, argv)

    def hold(self, c: "Client", argv: list) -> Block:
        self.held.append((c, argv))
        return HOLD

    # --- the end of the pause ---------------------------------------------------------------

    def lift(self) -> None:
        """End every purpose of the pause (the server stops)."""
        self.purposes.clear()
        unpause(self.server)

    def _arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        loop = self.server.loop
        if loop is not None:
            delay = (self.end_ms - self.server.clock.ms()) / 1000
            self.timer = loop.call_later(min(max(delay, 0.0), _MAX_TIMER_SECONDS), self._on_timer)

    def _on_timer(self) -> None:
        self.timer = None
        if self.server.pause is not self:
            return
        if self.end_ms > self.server.clock.ms():
            self._arm()  # a pause longer than one timer
            return
        unpause(self.server)

    def _on_clock_advanced(self) -> None:
        """MINIRED ADVANCE moved the clock: a pause whose end it passed is over."""
        if self.server.pause is self and 0 < self.end_ms <= self.server.clock.ms():
            unpause(self.server)


def pause(server: "Server", everything: bool, timeout_ms: int) -> None:
    """CLIENT PAUSE: a pause that ends `timeout_ms` from now, or the current one made at least as
    long and as strict (Redis keeps the later end and the stricter mode)."""
    now = server.clock.ms()
    end = now + timeout_ms if timeout_ms > 0 else 0
    if end > _LLONG_MAX:
        end -= 1 << 64  # mstime() + timeout wraps in Redis: an end long past
    current = server.pause
    if current is None:
        if end <= now:
            return  # over before any command could be held
        current = _start(server)
    current.everything = current.everything or everything
    if end > current.end_ms:
        current.end_ms = end
        current._arm()


def _start(server: "Server") -> ClientPause:
    current = ClientPause(server)
    server.pause = current
    keep_expired_keys(server)
    dispatch.use_extras()
    server.clock.listeners.append(current._on_clock_advanced)
    return current


# The server's own purposes (Redis's PAUSE_DURING_SHUTDOWN and PAUSE_DURING_FAILOVER): each
# holds the writes until the server ends it.
FOR_SHUTDOWN = "shutdown"
FOR_FAILOVER = "failover"


def pause_for(server: "Server", purpose: str) -> None:
    """Hold the writes for one of the server's own purposes, until end_pause_for ends it."""
    current = server.pause if server.pause is not None else _start(server)
    current.purposes.add(purpose)


def end_pause_for(server: "Server", purpose: str) -> None:
    """The purpose is over: a CLIENT PAUSE or another purpose still in force goes on alone."""
    current = server.pause
    if current is None or purpose not in current.purposes:
        return
    current.purposes.discard(purpose)
    if not current.purposes and current.end_ms <= server.clock.ms():
        unpause(server)


def unpause(server: "Server") -> None:
    """CLIENT UNPAUSE, or the end of the pause: every held command runs again, in order (those
    a purpose of the server's own still holds are held again)."""
    current = server.pause
    if current is None:
        return
    server.pause = None
    keep_expired_keys(server)
    if current.timer is not None:
        current.timer.cancel()
        current.timer = None
    try:
        server.clock.listeners.remove(current._on_clock_advanced)
    except ValueError:
        pass
    for purpose in current.purposes:
        pause_for(server, purpose)
    blocking = server.blocking
    for client, argv in current.held:
        if not is_held(client) or client.closing:
            continue  # gone, or already released
        blocking.disconnect(client)  # detaches the keyless waiter, with no reply
        client.connection.run_again(argv)


def keep_expired_keys(server: "Server") -> None:
    """Keys whose time passed read as missing but are neither deleted nor counted in
    expired_keys, by lookups or the expiry cycle, while a pause is in force (Redis keeps the
    dataset constant) and while the server is a replica (expireIfNeeded leaves the deletion
    to the master's DEL: the master may still write the key, replica_link.py)."""
    keep = server.pause is not None or server.config.replicating
    for db in server.keyspace.dbs:
        db.keep_expired = keep


# --- which commands a WRITE pause holds ---------------------------------------------------------

def may_replicate(c: "Client", spec: "CommandSpec", argv: list) -> bool:
    """Redis's test for a WRITE pause: a write or may_replicate command, a script runner by the
    flags its script declares, and EXEC by the commands it queued."""
    if spec.write:
        return True
    if "may_replicate" in spec.flags:
        if spec.parent is None and spec.name in _SCRIPT_RUNNERS:
            declared = _declared_script_flags(c.server, spec.name, argv)
            if declared is not None:
                return "no-writes" not in declared
        return True
    if spec.name == "exec" and spec.parent is None and c.multi:
        return any(may_replicate(c, queued, queued_argv) for queued, queued_argv in c.multi)
    return False


def _declared_script_flags(server: "Server", name: str, argv: list) -> frozenset | None:
    """The flags a script or function declares; None for a script without a shebang or one
    not found (Redis then keeps the command's own flags)."""
    engine = server.features.scripting
    if engine is not None:
        return engine.declared_flags(name, argv)
    # No script was loaded, no function either: only EVAL's own body can declare flags.
    return declared_flags(argv[1]) if name == "eval" else None
