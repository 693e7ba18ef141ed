"""MINIRED FAULT: fault injection rules over the wire (the engine is minired/features/faults.py).

Off unless the server was started with --fault-injection (or the embedding API's
fault_injection): a shared server must not let a client sabotage everyone else's commands.

    MINIRED FAULT ADD <action> [<arg> ...] [match ...] [COUNT n] [AFTER n] [PROBABILITY p]
                      [SEED s] [FOR ms]
    MINIRED FAULT LIST | DEL <id> | RESET | KILL-CLIENTS [TYPE normal|pubsub] | LOADING <ms>
"""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command
from minired.protocol.errors import FAULT_INJECTION_DISABLED, SYNTAX, RedisError
from minired.protocol.resp import OK


def _faults(c):
    faults = c.server.faults
    if faults is None:
        raise RedisError(FAULT_INJECTION_DISABLED)
    return faults


@command("fault", arity=-3, flags="admin noscript loading stale", parent="minired",
         group="server")
def minired_fault(c, argv):
    """Fault injection: ADD a rule (returns its id), LIST, DEL <id>, RESET, KILL-CLIENTS, LOADING."""
    faults = _faults(c)
    sub = argv[2].lower()
    rest = argv[3:]
    if sub == b"add":
        return faults.add(rest).id
    if sub == b"list" and not rest:
        return faults.entries()
    if sub == b"del" and len(rest) == 1:
        return int(faults.remove(parse_int(rest[0])))
    if sub == b"reset" and not rest:
        faults.reset()
        return OK
    if sub == b"kill-clients":
        kind = None
        if rest:
            if len(rest) != 2 or rest[0].lower() != b"type":
                raise RedisError(SYNTAX)
            kind = rest[1].lower()
        return faults.kill_clients(kind, spare=c)
    if sub == b"loading" and len(rest) == 1:
        faults.start_loading(parse_int(rest[0]))
        return OK
    raise RedisError(SYNTAX)
