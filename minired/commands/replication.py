"""Replication commands. REPLICAOF and SLAVEOF: replicate a master (minired/features/
replica_link.py), or stop (NO ONE, which a master answers OK doing nothing). SYNC, PSYNC and
REPLCONF: replicas attaching to this master (minired/features/replication.py)."""
from __future__ import annotations

import logging

from minired.engine.args import parse_int
from minired.engine.client_info import client_info_line
from minired.engine.table import command
from minired.features import failover, replica_link, replication
from minired.features.oom_score import set_role
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Encoded, ProtocolError, Status, split_inline

G = "server"
log = logging.getLogger("minired.replication")


def _replicaof(c, argv):
    if c.server.cluster is not None:
        raise RedisError(errors.REPLICAOF_IN_CLUSTER)
    if failover.current(c.server) is not None:
        raise RedisError(errors.REPLICAOF_WHILE_FAILING_OVER)
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        if replica_link.promote(c.server):
            log.info("MASTER MODE enabled (user request from '%s')",
                     client_info_line(c, c, argv[0].lower().decode(errors="replace")))
        set_role(c.server.config, replica=False)
        return OK
    try:
        port = parse_int(argv[2])
    except RedisError:
        raise RedisError(errors.INVALID_MASTER_PORT) from None
    if not 0 <= port <= 65535:
        raise RedisError(errors.INVALID_MASTER_PORT)
    if not replica_link.replicate(c.server, argv[1].decode(errors="replace"), port):
        return Status(errors.REPLICAOF_ALREADY.encode())
    set_role(c.server.config, replica=True)
    return OK


@command("replicaof", arity=3, flags="admin noscript stale no_async_loading", group=G)
def replicaof(c, argv):
    """Make the server a replica of another instance, or promote it as master."""
    return _replicaof(c, argv)


@command("slaveof", arity=3, flags="admin noscript stale no_async_loading", group=G)
def slaveof(c, argv):
    """Make the server a replica of another instance, or promote it as master."""
    return _replicaof(c, argv)


# --- the master side: replicas attaching (minired/features/replication.py) ----------------------

@command("sync", arity=1, flags="admin noscript no_async_loading no_multi", group=G)
def sync(c, argv):
    """Internal command used in replication"""
    if c.flags != "S":  # (a second SYNC on a replica's link is ignored, as in Redis)
        replication.master(c.server).sync(c, psync=False)
    return Encoded(b"")


@command("psync", arity=-3, flags="admin noscript no_async_loading no_multi", group=G)
def psync(c, argv):
    """An internal command used in replication"""
    if c.flags != "S":  # (a second PSYNC on a replica's link is ignored, as in Redis)
        if len(argv) > 3 and argv[3].lower() == b"failover":
            failover.take_over(c, argv[1])  # (its master failing over to it)
        replication.master(c.server).psync(c, argv[1], parse_int(argv[2]))
    return Encoded(b"")


@command("failover", arity=-1, flags="admin noscript stale", group=G)
def failover_(c, argv):
    """Start a coordinated failover between this server and one of its replicas."""
    if c.server.cluster is not None:
        raise RedisError(errors.FAILOVER_IN_CLUSTER)
    if len(argv) == 2 and argv[1].lower() == b"abort":
        failover.abort_by_user(c.server)
        return OK
    host, port, timeout_ms, force = _failover_arguments(argv)
    failover.start(c.server, host, port, timeout_ms, force)
    return OK


def _failover_arguments(argv: list) -> tuple[str | None, int, int, bool]:
    """FAILOVER [TO host port [FORCE]] [TIMEOUT ms], read as failoverCommand reads them: in any
    order, each once (FORCE anywhere), numbers checked as they come, ABORT only alone."""
    host: str | None = None
    port = timeout_ms = 0
    force = False
    i, argc = 1, len(argv)
    while i < argc:
        option = argv[i].lower()
        if option == b"timeout" and i + 1 < argc and timeout_ms == 0:
            timeout_ms = parse_int(argv[i + 1])
            if timeout_ms <= 0:
                raise RedisError(errors.FAILOVER_TIMEOUT_NOT_POSITIVE)
            i += 2
        elif option == b"to" and i + 2 < argc and host is None:
            port = parse_int(argv[i + 2])
            host = argv[i + 1].decode(errors="replace")
            i += 3
        elif option == b"force" and not force:
            force = True
            i += 1
        else:
            raise RedisError(errors.SYNTAX)
    return host, port, timeout_ms, force


# The longest address a replica may announce, plus one (Redis's NET_HOST_STR_LEN).
_NET_HOST_STR_LEN = 256


@command("replconf", arity=-1, flags="admin noscript loading stale allow_busy", group=G)
def replconf(c, argv):
    """An internal command for configuring the replication stream"""
    if len(argv) % 2 == 0:
        raise RedisError(errors.SYNTAX)
    state = replication.master(c.server)
    for i in range(1, len(argv), 2):
        option, value = argv[i].lower(), argv[i + 1]
        if option == b"listening-port":
            state.listening_ports[c.id] = parse_int(value)
        elif option == b"ack":
            state.acknowledged(c, parse_int(value))
            return Encoded(b"")  # a replica's ACK gets no reply
        elif option == b"getack":
            return Encoded(b"")  # (a master's question to its replicas: no reply here)
        elif option == b"capa":
            if value.lower() == b"psync2":
                state.psync2.add(c.id)  # (+CONTINUE then names the replication ID)
        elif option == b"rdb-filter-only":
            # Include filters for the RDB: "functions" only, or nothing at all ("").
            try:
                filters = split_inline(value)  # (sdssplitargs)
            except ProtocolError:
                raise RedisError(errors.REPLCONF_FILTER_MISSING) from None
            for name in filters:
                if name.lower() != b"functions":
                    raise RedisError(errors.REPLCONF_FILTER_UNSUPPORTED.format(
                        name.decode(errors="replace")))
            state.rdb_filters[c.id] = {name.lower().decode() for name in filters}
        elif option == b"ip-address":
            if len(value) >= _NET_HOST_STR_LEN:
                raise RedisError(errors.REPLCONF_IP_TOO_LONG.format(len(value)))
            state.announced_ips[c.id] = value.decode(errors="replace")
        elif option != b"rdb-only":
            raise RedisError(errors.REPLCONF_UNRECOGNIZED.format(argv[i].decode(errors="replace")))
    return OK
