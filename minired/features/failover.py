"""FAILOVER: a coordinated failover from this master to one of its replicas, as Redis 7.0's
failoverCommand, updateFailoverStatus, abortFailover and clearFailoverState do it.

FAILOVER pauses the writes (a pause purpose of its own: CLIENT UNPAUSE does not lift it) and
waits for the target (TO host port, else the first replica to get there) to acknowledge the
whole stream (waiting-for-sync). Then this server becomes a replica of the target, keeping its
data and its history, and asks it `PSYNC <replid> <offset> FAILOVER` (failover-in-progress):
the target, whose replication ID is this server's, promotes itself and answers +CONTINUE under
a new ID; the writes go on, on the new master. A target that refuses the PSYNC (or a write
error sending it) aborts the failover: this server is a master again, under a new ID, its old
one kept so that its replicas continue. TIMEOUT ms ends the wait: the failover is aborted, or
with FORCE goes on with a target that did not catch up. FAILOVER ABORT ends it at any point.

The failover lives on the replication state (replication.Master.failover): a server that never
had a replica never fails over, and pays nothing. It is checked where Redis checks it (beforeSleep
and replicationCron): after the command, after each acknowledgement, and when the timeout falls:
on the server's clock, so MINIRED ADVANCE past it ends the wait as the time passing would.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from minired.engine.client_info import client_info_line
from minired.features import pause, replica_link, replication
from minired.features.oom_score import set_role
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired.replication")

# INFO's master_failover_state (getFailoverStateString).
NO_FAILOVER = "no-failover"
WAIT_FOR_SYNC = "waiting-for-sync"
IN_PROGRESS = "failover-in-progress"


class Failover:
    """A failover under way: its target (host None: the first replica to catch up), when the
    wait for it ends (0: never), whether it then goes on anyway, and where it stands."""

    __slots__ = ("server", "host", "port", "end_ms", "force", "state", "timer", "check_soon")

    def __init__(self, server: "Server", host: str | None, port: int, end_ms: int,
                 force: bool) -> None:
        self.server = server
        self.host = host
        self.port = port
        self.end_ms = end_ms
        self.force = force
        self.state = WAIT_FOR_SYNC
        self.timer: Any = None
        self.check_soon = False

    # --- the link's side: the PSYNC this server sends its target (replica_link.py) -----------

    def asks_takeover(self) -> bool:
        """Whether the link's PSYNC asks the new master to take over (Redis's
        slaveTryPartialResynchronization adds FAILOVER while the failover is in progress)."""
        return self.state == IN_PROGRESS and current(self.server) is self

    def psync_answered(self, accepted: bool) -> None:
        """The target answered the PSYNC: the failover is over, done (+CONTINUE or +FULLRESYNC)
        or aborted (anything else: this server is a master again)."""
        if current(self.server) is not self:
            return
        if accepted:
            clear(self.server)
        else:
            abort(self.server, "Failover target rejected psync request")

    def psync_not_sent(self) -> None:
        """The PSYNC could not be written to the target: the failover is aborted."""
        if current(self.server) is self:
            abort(self.server, "Write error to failover target")

    # --- waiting for the target (updateFailoverStatus) -------------------------------------------

    def schedule_check(self) -> None:
        """Check once this pass of the loop ends (beforeSleep): not inside the acknowledgement's
        handler, since failing over changes what this server's clients are."""
        loop = self.server.loop
        if self.check_soon or loop is None:
            return
        self.check_soon = True
        loop.call_soon(self._check_now)

    def _check_now(self) -> None:
        self.check_soon = False
        self.check()

    def _arm_timeout(self) -> None:
        loop = self.server.loop
        if self.end_ms and loop is not None:
            delay = max(self.end_ms - self.server.clock.ms(), 0) / 1000
            self.timer = loop.call_later(delay, self._on_timeout)

    def _watch_deadline(self) -> None:
        """A failover with a TIMEOUT: a timer for the time passing, and a listener for the
        clock moved (MINIRED ADVANCE), which the timer, counting real seconds, knows nothing
        of; the shutdown stops both (the failover itself dies with the server)."""
        if not self.end_ms:
            return
        self._arm_timeout()
        self.server.clock.listeners.append(self._on_clock_advanced)
        self.server.hooks.shutdown.append(self._stop_watching)

    def _stop_watching(self) -> None:
        """The wait is over (the failover goes on, ended, or the server stops): no timer, and
        nothing left on the clock's listeners or the shutdown hooks to keep this failover."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        server = self.server
        for hooks, hook in ((server.clock.listeners, self._on_clock_advanced),
                            (server.hooks.shutdown, self._stop_watching)):
            try:
                hooks.remove(hook)
            except ValueError:
                pass

    def _past_deadline(self) -> bool:
        """Whether the wait for the target is over (updateFailoverStatus's failover_end_time)."""
        return self.end_ms != 0 and self.end_ms <= self.server.clock.ms()

    def _on_timeout(self) -> None:
        self.timer = None
        if current(self.server) is not self or self.state != WAIT_FOR_SYNC:
            return
        if not self._past_deadline():
            self._arm_timeout()  # (the timer fired early: the server's clock decides)
            return
        self.check()

    def _on_clock_advanced(self) -> None:
        """MINIRED ADVANCE moved the clock: past the deadline, the wait ends at once, as a
        CLIENT PAUSE's does (becoming the target's replica inside a command is what REPLICAOF
        does too; only an acknowledgement waits for the end of the pass, its replica's client
        being one that failing over may change)."""
        if self._past_deadline():
            self.check()

    def check(self) -> None:
        """updateFailoverStatus: past the timeout, fail over anyway (FORCE) or give up; else
        fail over once the target (or any replica) acknowledged the whole stream."""
        server = self.server
        if current(server) is not self or self.state != WAIT_FOR_SYNC:
            return
        if self._past_deadline():
            if self.force:
                log.info("FAILOVER to %s:%d time out exceeded, failing over.", self.host, self.port)
                self._fail_over()
            else:
                abort(server, "Replica never caught up before timeout")
            return
        state = replication.master(server)
        offset = state.offset_now
        if self.host is not None:
            replica = find_replica(state, self.host, self.port)
        else:
            replica = next((r for r in state.replicas if r.ack_offset == offset), None)
            if replica is not None:
                self.host, self.port = replica.ip, replica.listening_port
        if replica is not None and replica.ack_offset == offset:
            log.info("Failover target %s:%d is synced, failing over.", self.host, self.port)
            self._fail_over()

    def _fail_over(self) -> None:
        """failover-in-progress: this server becomes the target's replica (replicationSetMaster),
        its writes still paused until the target answers the PSYNC."""
        self.state = IN_PROGRESS
        self._stop_watching()
        replica_link.replicate(self.server, self.host, self.port)
        set_role(self.server.config, replica=True)


def current(server: "Server") -> Failover | None:
    """The failover under way, if any."""
    state = replication.state(server)
    return state.failover if state is not None else None


def state_name(server: "Server") -> str:
    """INFO's master_failover_state."""
    failover = current(server)
    return failover.state if failover is not None else NO_FAILOVER


def find_replica(state: replication.Master, host: str, port: int) -> replication.Replica | None:
    """findReplica: the replica that listens on host:port (its address compared as Redis does,
    case-insensitively, with the one it announced or its connection's)."""
    host = host.lower()
    for replica in state.replicas:
        if replica.ip.lower() == host and replica.listening_port == port:
            return replica
    return None


_INT64 = 1 << 63


def start(server: "Server", host: str | None, port: int, timeout_ms: int, force: bool) -> None:
    """FAILOVER [TO host port [FORCE]] [TIMEOUT ms], its arguments parsed: the checks in Redis's
    order, then the wait for the target, writes paused."""
    if current(server) is not None:
        raise RedisError(errors.FAILOVER_ALREADY)
    state = replication.state(server)
    if state is not None and state.link is not None:
        raise RedisError(errors.FAILOVER_ON_REPLICA)
    if state is None or not state.replicas:
        raise RedisError(errors.FAILOVER_NO_REPLICAS)
    if force and (not timeout_ms or host is None):
        raise RedisError(errors.FAILOVER_FORCE_NEEDS_TARGET)
    if host is not None:
        if find_replica(state, host, port) is None:
            raise RedisError(errors.FAILOVER_TARGET_NOT_REPLICA)
        # (minired attaches a replica once its snapshot is written: every one is online)
        log.info("FAILOVER requested to %s:%d.", host, port)
    else:
        log.info("FAILOVER requested to any replica.")
    # mstime() + timeout_ms in a long long: a TIMEOUT near 2^63 wraps to a deadline long gone,
    # and Redis gives up at once; so does minired.
    end_ms = (server.clock.ms() + timeout_ms + _INT64) % (2 * _INT64) - _INT64 if timeout_ms else 0
    failover = state.failover = Failover(server, host, port, end_ms, force)
    pause.pause_for(server, pause.FOR_FAILOVER)
    failover._watch_deadline()
    failover.schedule_check()


def abort(server: "Server", reason: str) -> None:
    """abortFailover: logged; a server that already became the target's replica is a master
    again (replicationUnsetMaster: a new ID, the old one kept for its replicas)."""
    failover = current(server)
    if failover is None:
        return
    if failover.host is not None:
        log.info("FAILOVER to %s:%d aborted: %s", failover.host, failover.port, reason)
    else:
        log.info("FAILOVER to any replica aborted: %s", reason)
    if failover.state == IN_PROGRESS:
        replica_link.promote(server)
        set_role(server.config, replica=False)
    clear(server)


def abort_by_user(server: "Server") -> None:
    """FAILOVER ABORT."""
    if current(server) is None:
        raise RedisError(errors.FAILOVER_NOT_IN_PROGRESS)
    abort(server, "Failover manually aborted")


def clear(server: "Server") -> None:
    """clearFailoverState: no failover, and the writes it paused go on."""
    state = replication.state(server)
    failover = state.failover if state is not None else None
    if failover is None:
        return
    state.failover = None
    failover._stop_watching()
    pause.end_pause_for(server, pause.FOR_FAILOVER)


def take_over(c: "Client", replid: bytes) -> None:
    """The target's side: `PSYNC <replid> <offset> FAILOVER` from its master, which asks it to
    take over; it does when the ID is the one it holds (replicationUnsetMaster), then answers
    the PSYNC as any other (syncCommand)."""
    server = c.server
    log.warning("Failover request received for replid %s.", replid.decode(errors="replace"))
    state = replication.state(server)
    if state is None or state.link is None:
        raise RedisError(errors.PSYNC_FAILOVER_TO_MASTER)
    if replid.decode(errors="replace").lower() != state.replid_now.lower():
        raise RedisError(errors.PSYNC_FAILOVER_REPLID)
    replica_link.promote(server)
    set_role(server.config, replica=False)
    log.info("MASTER MODE enabled (failover request from '%s')", client_info_line(c, c, "psync"))
