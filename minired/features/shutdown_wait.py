"""A shutdown that waits for lagging replicas (Redis 7.0's prepareForShutdown, isReadyToShutdown,
finishShutdown, cancelShutdown and abortShutdown).

SHUTDOWN (without NOW) and SIGTERM/SIGINT, while a replica has not acknowledged the master's
offset and shutdown-timeout is not 0, do not stop the server at once: writes are paused (as
CLIENT PAUSE WRITE), the replicas are asked for their offsets (REPLCONF GETACK) unless a pause
was already in force, and a cron checks every 1/hz seconds whether every replica caught up or
the timeout passed; then the shutdown finishes as it would have at once (its `finish`: saving,
stopping the server). SHUTDOWN clients stay blocked meanwhile (INFO blocked_clients), any number
of them; SHUTDOWN ABORT, or a finish that fails, unpauses and answers them all with an error.

The wait lives on the replication state (replication.Master.shutdown_wait): a server that never
had a replica never waits, and pays nothing.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable

from minired.engine.blocking import Block
from minired.features import pause, replication
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired")


class ShutdownWait:
    """A shutdown under way: when it gives up waiting, how it finishes, who waits for it."""

    __slots__ = ("server", "deadline_ms", "finish", "force", "clients", "timer")

    def __init__(self, server: "Server", deadline_ms: int, finish: Callable[[], bool],
                 force: bool) -> None:
        self.server = server
        self.deadline_ms = deadline_ms
        self.finish = finish
        self.force = force
        # The blocked SHUTDOWN commands: each client with the Block it waits on.
        self.clients: list[tuple["Client", Block]] = []
        self.timer: Any = None

    def _arm(self) -> None:
        loop = self.server.loop
        if loop is not None:
            self.timer = loop.call_later(1 / max(self.server.config.number("hz"), 1), self._cron)

    def _cron(self) -> None:
        """serverCron: finish once every replica caught up, or the time is up."""
        self.timer = None
        if current(self.server) is not self:
            return
        if self.server.debug.pause_cron:
            self._arm()  # (DEBUG PAUSE-CRON holds serverCron, and this check with it)
            return
        if _now_ms() >= self.deadline_ms or _ready(self.server):
            finish(self.server, self.finish, self.force)
            return
        self._arm()


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def current(server: "Server") -> ShutdownWait | None:
    """The shutdown under way (isShutdownInitiated), if any."""
    state = replication.state(server)
    return state.shutdown_wait if state is not None else None


def _ready(server: "Server") -> bool:
    """isReadyToShutdown: every replica acknowledged the whole stream (a replica's replicas:
    its master's, as far as it applied it)."""
    state = replication.state(server)
    if state is None:
        return True
    offset = state.offset_now
    return all(replica.ack_offset == offset for replica in state.replicas)


def begin(server: "Server", finish_: Callable[[], bool], now: bool, force: bool) -> bool | None:
    """prepareForShutdown after its "User requested shutdown...": None while waiting for the
    replicas (the shutdown finishes later), else whether the shutdown finished."""
    if current(server) is not None:
        return None  # one under way already: this one joins it
    timeout = server.config.number("shutdown-timeout")
    if now or timeout == 0 or _ready(server):
        return finish(server, finish_, force)
    state = replication.master(server)
    wait = ShutdownWait(server, _now_ms() + timeout * 1000, finish_, force)
    state.shutdown_wait = wait
    if server.pause is None:
        # (not during a pause: Redis keeps the stream still while clients are paused)
        state.ask_for_acks()
    pause.pause_for(server, pause.FOR_SHUTDOWN)
    log.info("Waiting for replicas before shutting down.")
    wait._arm()
    return None


def block(server: "Server", c: "Client") -> Block:
    """A SHUTDOWN command waits for the shutdown under way (blockClient(BLOCKED_SHUTDOWN))."""
    wait = current(server)
    assert wait is not None
    waiting = Block([], 0, lambda client, key: None, None)
    wait.clients.append((c, waiting))
    return waiting


def is_waiting(c: "Client") -> bool:
    """Whether the client is a SHUTDOWN waiting for the shutdown under way."""
    wait = current(c.server)
    waiter = c.blocked
    return (wait is not None and waiter is not None
            and any(waiting is waiter.block for _, waiting in wait.clients))


def finish(server: "Server", finish_: Callable[[], bool], force: bool) -> bool:
    """finishShutdown: the replicas' report, then the shutdown proper; on failure the server
    goes on (cancelShutdown)."""
    _report_replicas(server)
    ok = _initial_aof_allows_exit(server, force) and finish_()
    if not ok:
        log.warning("Errors trying to shut down the server. Check the logs for more "
                    "information.")
        cancel(server)
    return ok


def _initial_aof_allows_exit(server: "Server", force: bool) -> bool:
    """An AOF turned on whose first rewrite is still running holds no data yet: exiting would
    lose the dataset."""
    persistence = server.features.saver
    child = getattr(persistence, "child", None)
    if getattr(persistence, "aof_state", "off") != "wait" or child is None or child[1] != "aof":
        return True
    if force:
        log.warning("Writing initial AOF. Exit anyway.")
        return True
    log.warning("Writing initial AOF, can't exit.")
    return False


def _report_replicas(server: "Server") -> None:
    state = replication.state(server)
    if state is None or not state.replicas:
        return
    lagging = 0
    now = time.monotonic()
    offset = state.offset_now
    for replica in state.replicas:
        if replica.ack_offset != offset:
            lagging += 1
            log.warning("Lagging replica %s reported offset %d behind master, lag=%d, "
                        "state=online.", _replica_name(replica), offset - replica.ack_offset,
                        int(now - replica.ack_time))
    total = len(state.replicas)
    log.info("%d of %d replicas are in sync when shutting down.", total - lagging, total)


def _replica_name(replica: Any) -> str:
    """replicationGetSlaveName: the address it listens on, else its connection's."""
    if not replica.listening_port:
        return f"{replica.client.addr} (connection)"
    ip = replica.ip
    return f"[{ip}]:{replica.listening_port}" if ":" in ip else f"{ip}:{replica.listening_port}"


def cancel(server: "Server") -> None:
    """cancelShutdown: the blocked SHUTDOWN commands fail, writes go on."""
    server.shutdown_asap = False
    wait = current(server)
    if wait is None:
        return
    replication.master(server).shutdown_wait = None
    if wait.timer is not None:
        wait.timer.cancel()
        wait.timer = None
    for client, waiting in wait.clients:
        waiter = client.blocked
        if waiter is not None and waiter.block is waiting and not client.closing:
            server.blocking.finish(waiter, RedisError(errors.SHUTDOWN_FAILED))
    pause.end_pause_for(server, pause.FOR_SHUTDOWN)


def abort(server: "Server") -> bool:
    """SHUTDOWN ABORT: the wait under way, or a signal's shutdown not started yet, is off."""
    if current(server) is not None:
        cancel(server)
    elif server.shutdown_asap:
        server.shutdown_asap = False
    else:
        return False
    log.info("Shutdown manually aborted.")
    return True


def milliseconds_left(server: "Server") -> int | None:
    """INFO's shutdown_in_milliseconds, shown only while a shutdown waits."""
    wait = current(server)
    return None if wait is None else max(wait.deadline_ms - _now_ms(), 0)
