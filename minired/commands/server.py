"""Server commands: INFO, CONFIG, DBSIZE, FLUSHDB, FLUSHALL, TIME, SHUTDOWN, ..."""
from __future__ import annotations

from .. import errors
from ..errors import RedisError
from ..resp import OK
from .table import command

G = "server"


def _flush_mode(argv) -> None:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        raise RedisError(errors.SYNTAX)


@command("flushall", arity=-1, flags="write", group=G)
def flushall(c, argv):
    _flush_mode(argv)
    c.server.keyspace.flushall()
    return OK


@command("flushdb", arity=-1, flags="write", group=G)
def flushdb(c, argv):
    _flush_mode(argv)
    c.db.flush()
    return OK


@command("dbsize", arity=1, flags="readonly fast", group=G)
def dbsize(c, argv):
    return len(c.db)
