"""CLIENT REPLY ON|OFF|SKIP: which parts of a client's replies leave.

Redis decides reply by reply, as each is added to the client's output: nothing while OFF, or
for the one command SKIP applies to; pushes (pub/sub messages and confirmations, tracking
invalidations) always leave. minired builds a command's whole reply before writing it, so the
connection (server.py) asks `encode_outgoing` what of it leaves whenever `Client.reply_mode` is
not 0, walking EXEC's array in order: a CLIENT REPLY inside the transaction silences or
unsilences the replies after it, its array's header included, exactly where Redis would.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minired.protocol import resp
from minired.protocol.resp import Push, Replies, Status

if TYPE_CHECKING:
    from minired.engine.client import Client

OFF = 1
SKIP = 2  # silences the command being run
SKIP_NEXT = 4  # set by CLIENT REPLY SKIP: becomes SKIP when its command is over
SILENCED = OFF | SKIP
# CLIENT REPLY ran during the current command, and whether that command started silenced.
CHANGED = 8
SILENCED_BEFORE = 16
# A fault changes how this command's reply leaves: the connection hands the reply to the server's
# FaultInjector (hooks.py) instead of encoding it, now or, for a blocked command, when
# Client.send gets it.
DISRUPTED = 32


class _Silence(Replies):
    """CLIENT REPLY OFF's reply: nothing, and nothing after it until CLIENT REPLY ON."""


class _NoReply(Replies):
    """CLIENT REPLY SKIP's reply: nothing."""


class _ReplyOn(Status):
    """CLIENT REPLY ON's +OK, after which replies leave again."""


# Distinct types, so no one extends them in place (tracking extends plain Replies), and
# recognised by identity inside EXEC's array.
SILENCE = _Silence()
NO_REPLY = _NoReply()
REPLY_ON = _ReplyOn(b"OK")


def _changing(c: "Client") -> int:
    mode = c.reply_mode
    if not mode & CHANGED:
        mode |= CHANGED | (SILENCED_BEFORE if mode & SILENCED else 0)
    return mode


def turn_on(c: "Client") -> Any:
    c.reply_mode = _changing(c) & ~SILENCED
    return REPLY_ON


def turn_off(c: "Client") -> Any:
    c.reply_mode = _changing(c) | OFF
    return SILENCE


def skip_next(c: "Client") -> Any:
    mode = _changing(c)
    if not mode & OFF:
        mode |= SKIP_NEXT
    c.reply_mode = mode
    return NO_REPLY


def reset(c: "Client") -> None:
    """RESET: replies back on, except a SKIP already applying to RESET itself (as Redis)."""
    c.reply_mode &= ~(OFF | SKIP_NEXT)


def command_over(c: "Client") -> None:
    """A command ended (resetClient in Redis): SKIP is used up, a new SKIP takes effect."""
    mode = c.reply_mode & (OFF | SKIP_NEXT)
    if mode & SKIP_NEXT:
        mode = (mode & ~SKIP_NEXT) | SKIP
    c.reply_mode = mode


def encode_outgoing(c: "Client", reply: Any, out: list) -> bool:
    """Append to `out` what of the reply leaves, and end the command; True if the command
    ended silenced."""
    mode = c.reply_mode
    proto = c.protocol
    if mode & CHANGED:
        silenced = _emit(reply, proto, out, bool(mode & SILENCED_BEFORE))
    elif mode & SILENCED:
        silenced = _emit(reply, proto, out, True)
    else:
        resp.encode_into(reply, proto, out)
        silenced = False
    command_over(c)
    return silenced


def _emit(value: Any, proto: int, out: list, silenced: bool) -> bool:
    """Encode the parts of `value` that leave, in order; returns whether the client is
    silenced after it."""
    if value is SILENCE:
        return True
    if value is REPLY_ON:
        resp.encode_into(value, proto, out)
        return False
    kind = type(value)
    if kind is Push:
        resp.encode_into(value, proto, out)
    elif isinstance(value, Replies):
        for item in value:
            silenced = _emit(item, proto, out, silenced)
    elif kind is list:  # EXEC's array among others: its header leaves unless silenced
        if not silenced:
            out.append(b"*%d\r\n" % len(value))
        for item in value:
            silenced = _emit(item, proto, out, silenced)
    elif not silenced:
        resp.encode_into(value, proto, out)
    return silenced
