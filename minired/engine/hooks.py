"""The engine's hook points: the events optional features plug into, as typed lists of callables,
the interfaces of the features the engine asks about each command (access control, client pause,
tracking, cluster routing, fault injection, memory admission), each a slot on the Server, and
`Features`, where the features keep their own per-server state.

The engine (server.py, dispatch.py) calls what is registered here and never imports a feature;
a feature registers itself when it is attached (startup.prepare_server) or first used (MONITOR,
CLIENT TRACKING, ...). A list left empty costs one truth test where the event happens.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import ClientProtocol
    from minired.engine.table import CommandSpec
    from minired.protocol.errors import RedisError

ClientHook = Callable[["Client"], None]
CommandHook = Callable[["Client", "CommandSpec", list], None]
# A write that changed the dataset, with its reply: persistence logs and counts it.
Propagate = Callable[["Client", "CommandSpec", list, Any], None]
# Memory admission (Server.memory_admission), processCommand's maxmemory handling: asked while
# maxmemory is set (not 0), before any command runs or is queued (not while a script is busy),
# and True when memory is still over maxmemory: dispatch then refuses with OOM a command
# flagged denyoom, an EXEC that queued one, and inside MULTI every command but EXEC, DISCARD,
# QUIT and RESET. The engine's own, Server.over_maxmemory, compares used memory with
# maxmemory. A feature that frees memory (key eviction) puts its own in the slot: free what
# maxmemory-policy allows, then answer whether memory is still over the limit. Without
# maxmemory nothing is asked: the check is a read of the client's config, whatever is
# registered.
MemoryAdmission = Callable[[], bool]
# The flags a script declares (Hooks.script_flags), for the checks dispatch makes before the
# script engine runs it (a stale replica runs only allow-stale scripts): (kind, argv), kind one
# of "eval", "evalsha", "fcall"; the flags of the script or function argv runs (empty for a
# script without a shebang), None when there is no such script or function (EVALSHA, FCALL:
# the command runs on to its own error).
ScriptFlags = Callable[[str, list], "frozenset | None"]


class AccessControl(Protocol):
    """What dispatch asks the ACL users about a client and its commands."""

    def auth_required(self) -> bool:
        """Whether a client that has not authenticated must still do so."""

    def check_command(self, c: "Client", spec: "CommandSpec", argv: list) -> "RedisError | None":
        """A restricted user's command, at the top level or as MULTI queues it: None if
        allowed, else the NOPERM error (logged)."""

    def check_exec(self, c: "Client", spec: "CommandSpec", argv: list) -> "RedisError | None":
        """A command EXEC runs for a restricted user, whose rules may have changed since it
        was queued."""


class Pause(Protocol):
    """CLIENT PAUSE in force."""

    def holds(self, c: "Client", spec: "CommandSpec", argv: list) -> bool:
        """Whether the command waits for the end of the pause."""

    def hold(self, c: "Client", argv: list) -> Any:
        """Keep the command until the pause ends: the Block the client waits on."""

    def lift(self) -> None:
        """End the pause now (CLIENT UNPAUSE, shutdown)."""


class Tracking(Protocol):
    """Client-side caching, from the first CLIENT TRACKING ON."""

    def execute(self, c: "Client", argv: list, run: Callable[["Client", list], Any]) -> Any:
        """Run argv with run(c, argv), sending the invalidations it causes in Redis's order."""

    def remember(self, c: "Client", spec: "CommandSpec", argv: list) -> None:
        """A command ran: note the keys it read for the clients tracking them."""

    def state(self, c: "Client") -> Any:
        """The client's tracking settings (CLIENT LIST's flags and redir), None when off."""


class ClusterRouter(Protocol):
    """This server's node in cluster mode."""

    def route(self, c: "Client", spec: "CommandSpec", argv: list) -> str | None:
        """The MOVED/ASK/CROSSSLOT/TRYAGAIN/CLUSTERDOWN error for a command this node may not
        run, or None."""


class FaultInjector(Protocol):
    """The fault rules of MINIRED FAULT, with --fault-injection. A command whose reply a fault
    changes on its way out is marked in its client's reply_mode (client_reply.DISRUPTED), and
    the connection hands that reply to `deliver` instead of encoding it."""

    def intercept(self, c: "Client", spec: "CommandSpec", argv: list) -> Any:
        """The reply that replaces the command's, or None to run it."""

    def deliver(self, conn: "ClientProtocol", reply: Any, out: list) -> None:
        """A disrupted reply, at its place in a batch: append to `out` what of it leaves now;
        the rest of the fault (held output, a close) goes in the connection's `disruption`."""

    def send_disrupted(self, conn: "ClientProtocol", reply: Any) -> bool:
        """A blocked command's late reply while its client is marked (Client.send): True once
        delivered, False for a reply the fault does not change, sent as usual."""


class ConnectionDisruption(Protocol):
    """What faults keep on one connection (ClientProtocol.disruption), from the first reply one
    disrupted: held or paced output, how the connection is to close."""

    def close(self) -> bool:
        """The connection is closing: True if the fault closes it its own way (a TCP reset, a
        late close), False to close as usual once what the fault held is in its outbox."""

    def drop(self) -> None:
        """The peer is gone: stop the fault's timers."""


class OutputBufferGuard(Protocol):
    """Output buffer limits (Server.output_buffer_guard), called after a write left bytes queued
    in the transport."""

    # Writes of at least this many bytes are checked before they leave (the smallest limit).
    threshold: int

    def __call__(self, conn: "ClientProtocol") -> None:
        """A write left output queued: close the client if that takes it over a limit."""

    def refuses(self, conn: "ClientProtocol", size: int) -> bool:
        """Whether a write of size bytes takes the client past its hard limit (then closed,
        and none of it is sent)."""


class ClientEviction(Protocol):
    """Client eviction (Hooks.client_eviction), once maxmemory-clients or CLIENT NO-EVICT is
    first set."""

    # How many clients it evicted (INFO evicted_clients): key eviction takes the clients'
    # memory figure again when it changed.
    evicted: int

    def before_command(self, c: "Client") -> None:
        """Before each command of c while maxmemory-clients is set (dispatch, ahead of the
        maxmemory admission, as processCommand's evictClients): evict clients while their
        memory is over the limit; c itself may be, and its command is then not run."""

    def after_read(self, conn: "ClientProtocol") -> None:
        """A read left a large or incomplete command waiting: evict clients (this one may be)
        while clients' memory is over maxmemory-clients."""

    def after_write(self, conn: "ClientProtocol") -> None:
        """A write left replies queued (output buffer limits, once those are enforced): as
        after_read."""

    def check(self) -> int:
        """Evict clients (largest first) while clients' memory is over maxmemory-clients: how
        many were."""

    def exempt(self, c: "Client") -> bool:
        """Whether c is never evicted (CLIENT NO-EVICT ON): CLIENT LIST's flag e."""


class Features:
    """The features' own per-server state (Server.features), each under the name its feature
    gives it (`server.features.<name>`) when it is attached
    or first used. The engine never reads it: it reaches features only through the hook points
    here, so a feature added touches its own module, startup and its tests, not the server.
    A name no feature has set reads as None: not attached (yet)."""

    def __getattr__(self, name: str) -> None:
        # (only called for names not set; dunders stay missing, for copy, pickle and repr)
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"Features({', '.join(sorted(vars(self)))})"


class Hooks:
    """One server's hook lists, each called in the order its features registered."""

    __slots__ = ("start", "shutdown", "connect", "disconnect", "before_call", "after_call",
                 "rewrite_config", "config_file", "client_eviction", "script_flags")

    def __init__(self) -> None:
        # The server's loop is running (timers of persistence and metrics).
        self.start: list[Callable[[], None]] = []
        # Shutdown begins, before the clients close.
        self.shutdown: list[Callable[[], None]] = []
        # A client was admitted; a hook may close it (protected mode), and the hooks after it
        # are then skipped.
        self.connect: list[ClientHook] = []
        # A client left (or RESET it): forget what features kept for it.
        self.disconnect: list[ClientHook] = []
        # Around every command dispatch.call runs, once a feature turned dispatch.use_extras on
        # (MONITOR): before the handler, and after it with the reply counted.
        self.before_call: list[CommandHook] = []
        self.after_call: list[CommandHook] = []
        # CONFIG REWRITE: writes the config file the server was started from (set by the
        # command line front end when there is one; OSError when it cannot be written).
        self.rewrite_config: Callable[[bool], None] | None = None
        # That file's absolute path, "" without one (INFO's config_file).
        self.config_file = ""
        # Client eviction (ClientEviction), once maxmemory-clients or CLIENT NO-EVICT is first
        # set: dispatch calls its before_command(client) before each command while
        # maxmemory-clients is set (Config.clients_limited), a connection its
        # after_read(protocol) when a read leaves a large or incomplete command waiting.
        self.client_eviction: ClientEviction | None = None
        # The script engine's answer about a script's declared flags (ScriptFlags), from the
        # first script; None before: no script or function exists yet but an EVAL's own body.
        self.script_flags: ScriptFlags | None = None

    @staticmethod
    def add(hooks: list, hook: Callable) -> None:
        """Register hook once, however often its feature is switched on."""
        if hook not in hooks:
            hooks.append(hook)
