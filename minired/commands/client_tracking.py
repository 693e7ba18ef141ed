"""CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT TRACKINGINFO: client-side
caching's commands. The table and the messages are minired/features/tracking.py."""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command
from minired.features.tracking import Tracking
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, OrderedSet

G = "connection"
_FLAGS = "noscript loading stale"


@command("tracking", arity=-3, flags=_FLAGS, parent="client", group=G)
def client_tracking(c, argv):
    redirect = 0
    options: set[bytes] = set()
    prefixes: list[bytes] = []
    i = 3
    while i < len(argv):
        option = argv[i].lower()
        more = i < len(argv) - 1
        if option == b"redirect" and more:
            i += 1
            if redirect:
                raise RedisError(errors.TRACKING_ONE_REDIRECT)
            redirect = parse_int(argv[i])
            if redirect not in c.server.clients:
                raise RedisError(errors.TRACKING_NO_SUCH_REDIRECT)
        elif option in (b"bcast", b"optin", b"optout", b"noloop"):
            options.add(option)
        elif option == b"prefix" and more:
            i += 1
            prefixes.append(argv[i])
        else:
            raise RedisError(errors.SYNTAX)
        i += 1
    mode = argv[2].lower()
    if mode == b"off":
        if c.server.tracking is not None:
            c.server.tracking.disable(c)
        return OK
    if mode != b"on":
        raise RedisError(errors.SYNTAX)
    _check_options(c, options, prefixes)
    node = c.server.cluster
    if node is not None and node.master is not None:
        # The node serves its master's database, whose invalidations go to one node's clients.
        raise RedisError(errors.TRACKING_ON_REPLICA)
    Tracking.of(c.server).enable(c, redirect, b"bcast" in options, b"optin" in options,
                                 b"optout" in options, b"noloop" in options, prefixes)
    return OK


def _check_options(c, options: set[bytes], prefixes: list[bytes]) -> None:
    """The checks Redis makes before turning tracking on, in its order."""
    bcast = b"bcast" in options
    if prefixes and not bcast:
        raise RedisError(errors.TRACKING_PREFIX_NEEDS_BCAST)
    tracking = c.server.tracking
    state = tracking.state(c) if tracking is not None else None
    if state is not None and state.bcast != bcast:
        raise RedisError(errors.TRACKING_BCAST_SWITCH)
    if bcast and options & {b"optin", b"optout"}:
        raise RedisError(errors.TRACKING_OPTS_WITH_BCAST)
    if {b"optin", b"optout"} <= options:
        raise RedisError(errors.TRACKING_OPTIN_AND_OPTOUT)
    if state is not None and ((b"optin" in options and state.optout)
                              or (b"optout" in options and state.optin)):
        raise RedisError(errors.TRACKING_OPT_SWITCH)
    if bcast:
        for i, prefix in enumerate(prefixes):
            taken = tracking.overlapping_prefix(c, prefix) if tracking is not None else None
            if taken is not None:
                raise RedisError(errors.TRACKING_PREFIX_OVERLAPS_EXISTING.format(
                    _text(prefix), _text(taken)))
            for other in prefixes[i + 1:]:
                if other.startswith(prefix) or prefix.startswith(other):
                    raise RedisError(errors.TRACKING_PREFIX_OVERLAPS_GIVEN.format(
                        _text(prefix), _text(other)))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _state(c):
    tracking = c.server.tracking
    return tracking.state(c) if tracking is not None else None


@command("caching", arity=3, flags=_FLAGS, parent="client", group=G)
def client_caching(c, argv):
    state = _state(c)
    if state is None:
        raise RedisError(errors.CACHING_NEEDS_TRACKING)
    answer = argv[2].lower()
    if answer == b"yes":
        if not state.optin:
            raise RedisError(errors.CACHING_YES_NEEDS_OPTIN)
    elif answer == b"no":
        if not state.optout:
            raise RedisError(errors.CACHING_NO_NEEDS_OPTOUT)
    else:
        raise RedisError(errors.SYNTAX)
    state.caching = True
    return OK


@command("getredir", arity=2, flags=_FLAGS, parent="client", group=G)
def client_getredir(c, argv):
    state = _state(c)
    return -1 if state is None else state.redirect


@command("trackinginfo", arity=2, flags=_FLAGS, parent="client", group=G)
def client_trackinginfo(c, argv):
    state = _state(c)
    if state is None:
        return {b"flags": OrderedSet([b"off"]), b"redirect": -1, b"prefixes": []}
    return {b"flags": OrderedSet(state.flag_names()), b"redirect": state.redirect,
            b"prefixes": sorted(state.prefixes)}
