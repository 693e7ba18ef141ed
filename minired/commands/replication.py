"""REPLICAOF and SLAVEOF: minired is always a master and has no replication, so the one form
it accepts is REPLICAOF NO ONE, which on a master Redis answers OK without doing anything."""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK

G = "server"


def _replicaof(c, argv):
    if c.server.cluster is not None:
        raise RedisError(errors.REPLICAOF_IN_CLUSTER)
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        return OK
    try:
        port = parse_int(argv[2])
    except RedisError:
        raise RedisError(errors.INVALID_MASTER_PORT) from None
    if not 0 <= port <= 65535:
        raise RedisError(errors.INVALID_MASTER_PORT)
    raise RedisError(errors.REPLICATION_UNSUPPORTED)


@command("replicaof", arity=3, flags="admin noscript stale no_async_loading", group=G)
def replicaof(c, argv):
    """Make the server a replica of another instance, or promote it as master."""
    return _replicaof(c, argv)


@command("slaveof", arity=3, flags="admin noscript stale no_async_loading", group=G)
def slaveof(c, argv):
    """Make the server a replica of another instance, or promote it as master."""
    return _replicaof(c, argv)
