"""String commands."""
from __future__ import annotations

from ..resp import OK
from .table import command

G = "string"


@command("get", arity=2, flags="readonly fast", keys=(1, 1, 1), group=G)
def get(c, argv):
    return c.db.get_typed(argv[1], bytes)


@command("set", arity=-3, flags="write denyoom", keys=(1, 1, 1), group=G)
def set_(c, argv):
    c.db.set(argv[1], argv[2])
    return OK
