"""From argv to reply: command lookup, arity, auth, MULTI queuing, pub/sub context, stats.

`execute` is the one entry for client commands. `call` runs an already-validated spec and is
what EXEC and scripts use, so every path shares the same table and checks.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from minired.engine import latency
from minired.engine.blocking import Block
from minired.engine.shebang import declared_flags
from minired.engine.table import COMMANDS, CommandSpec, lookup, stats_of
from minired.protocol import errors, resp
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.client import Client

log = logging.getLogger("minired")

# Known command names as clients spell them ("GET", "get"), so the usual lookup needs no
# lowercased copy; bounded, since a client may send any mix of cases.
_BY_SPELLING: dict[bytes, CommandSpec] = {}
_SPELLINGS_KEPT = 1024

# Whether any server of this process has used client tracking, CLIENT PAUSE or MONITOR: until
# then the per-command checks for them are skipped, since reading them off the server is an
# attribute lookup on every command (the client's server is not a typed field).
_extras_in_use = False


# The servers of this process whose script runs past busy-reply-threshold (the script
# engine serves their clients from inside it), each with the BUSY error every command not flagged
# allow_busy is refused with. Usually empty: one check per command. (Per server: an embedding
# process may run several, and another's thread runs while a busy script yields.)
_busy: dict = {}


def set_busy(server: Any, message: "str | None") -> None:
    if message is None:
        _busy.pop(server, None)
    else:
        _busy[server] = message


def busy_error(server: Any) -> "str | None":
    return _busy.get(server) if _busy else None


# The servers of this process loading their data at start-up (Redis's server.loading): each
# refuses the commands not flagged loading with -LOADING. Usually empty: one check per command.
_loading: dict = {}


def set_loading(server: Any, loading: bool) -> None:
    if loading:
        _loading[server] = True
    else:
        _loading.pop(server, None)


def is_loading(server: Any) -> bool:
    return bool(_loading) and server in _loading


def use_extras() -> None:
    """Called by tracking, CLIENT PAUSE and MONITOR the first time they are used, and by
    cluster mode as its nodes form."""
    global _extras_in_use
    _extras_in_use = True


# Commands a transaction runs at once instead of queuing.
_MULTI_IMMEDIATE = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})
# Commands a RESP2 client may send while subscribed.
_SUBSCRIBED_ALLOWED = frozenset({"subscribe", "psubscribe", "ssubscribe", "unsubscribe",
                                 "punsubscribe", "sunsubscribe", "ping", "quit", "reset"})


def resolve(argv: list) -> CommandSpec | RedisError:
    """The spec argv names, or the error Redis gives for an unknown command or bad arity."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is None:
        return errors.unknown_command(argv)
    if spec.subcommands:
        if len(argv) >= 2:
            sub = spec.subcommands.get(argv[1].lower())
            if sub is not None:
                spec = sub
            elif spec.handler is None:
                return errors.unknown_subcommand(spec.name, argv[1])
        elif spec.handler is None:
            return errors.wrong_arity(spec.name)
    arity = spec.arity
    argc = len(argv)
    if (argc != arity) if arity >= 0 else (argc < -arity):
        return errors.wrong_arity(spec.full_name)
    return spec


def _touches_keyspace(spec: CommandSpec) -> bool:
    flags = spec.flags
    return "readonly" in flags or "write" in flags or "may_replicate" in flags


def execute(c: "Client", argv: list) -> Any:
    """Run one command from a client and return its reply value."""
    if _extras_in_use:
        tracking = c.server.tracking
        if tracking is not None:  # client-side caching (hooks.Tracking)
            return tracking.execute(c, argv, _execute)
    return _execute(c, argv)


def _execute(c: "Client", argv: list) -> Any:
    spec = _BY_SPELLING.get(argv[0])
    if spec is None:
        spec = COMMANDS.get(argv[0].lower())
        if spec is not None and len(_BY_SPELLING) < _SPELLINGS_KEPT:
            _BY_SPELLING[argv[0]] = spec
    if spec is None or spec.subcommands or not spec.min_args <= len(argv) <= spec.max_args:
        resolved = resolve(argv)
        if type(resolved) is RedisError:
            known = lookup(argv)  # a known command with the wrong arity counts as rejected
            # CLIENT LIST's cmd: Redis's lookupCommand finds a command whatever its arity, and
            # nothing for an unknown subcommand (`lookup` gives its container then).
            c.last_command = None if known is None or known.subcommands and len(argv) > 1 \
                else known
            if known is not None and not known.arity_ok(len(argv)):
                stats_of(c.server, known).rejected_calls += 1
            if known is not None and _is_exec(known):
                return _refuse_exec(c, resolved.message)
            if c.multi is not None:
                c.multi_failed = True
            c.server.stats.count_error(resolved.message)
            return resolved
        spec = resolved
    c.last_command = spec  # (what CLIENT LIST shows: set before the checks, as in Redis)
    if spec.protected:
        refusal = _protected_refusal(c, spec)
        if refusal is not None:
            return _reject(c, spec, refusal)
    # Redis asks the default user's password at each command, so removing requirepass frees
    # clients that connected while it was set.
    if not c.authenticated and "no_auth" not in spec.flags and c.server.access.auth_required():
        return _reject(c, spec, errors.NOAUTH)
    if c.user_restricted:  # ACL: false for a user who may run everything
        denied = c.server.access.check_command(c, spec, argv)
        if denied is not None:
            return _reject(c, spec, denied.message)
    if _extras_in_use:
        redirected = _routed(c, spec, argv)
        if redirected is not None:
            return redirected
        if c.config.stale_refused and _denied_stale(c, spec, argv):
            return _reject(c, spec, errors.MASTERDOWN)
    if c.config.memory_checks and _refused_for_memory(c, spec):
        if c.closing:  # client eviction took this very client (maxmemory-clients): the
            return None  # command is not run (processCommand returns, the client freed)
        return _reject(c, spec, errors.OOM)
    if c.flags == "O" and _touches_keyspace(spec):  # O: a monitor (MONITOR)
        # A monitor is flagged a replica in Redis, and replicas may not read or write.
        return _reject(c, spec, errors.REPLICA_KEYSPACE)
    if (spec.write or c.multi is not None) and c.config.writes_refused and c.flags != "M":
        # (M: the master's link on a replica, whose writes are always applied)
        if spec.write or (_is_exec(spec) and _queued_a_write(c)):
            return _reject(c, spec, c.config.write_refusal())
    if _loading and c.server in _loading and _denied_loading(c, spec):
        return _reject(c, spec, errors.LOADING)
    if _busy and "allow_busy" not in spec.flags:
        busy = _busy.get(c.server)
        if busy is not None:
            return _reject(c, spec, busy)
    if _extras_in_use:
        faults = c.server.faults  # fault injection (hooks.FaultInjector), None unless enabled
        if faults is not None:
            disrupted = faults.intercept(c, spec, argv)
            if disrupted is not None:
                return disrupted
    if c.multi is not None and spec.root_name not in _MULTI_IMMEDIATE:
        if "no_multi" in spec.flags:
            return _reject(c, spec, errors.COMMAND_NOT_ALLOWED_IN_MULTI)
        if _extras_in_use:  # Redis holds a paused write before queuing it
            held = _held(c, spec, argv)
            if held is not None:
                return held
        c.multi.append((spec, argv))
        return resp.QUEUED
    if ((c.channels or c.patterns or c.shard_channels) and c.protocol == 2
            and spec.root_name not in _SUBSCRIBED_ALLOWED):
        return _reject(c, spec, errors.SUBSCRIBE_CONTEXT.format(spec.full_name))
    if _extras_in_use:
        held = _held(c, spec, argv)
        if held is not None:
            return held
    return call(c, spec, argv)


def _protected_refusal(c: "Client", spec: CommandSpec) -> str | None:
    """DEBUG and MODULE's loading commands are refused unless enable-debug-command or
    enable-module-command allows this client: before authentication, and counted as a
    rejected call (a transaction that queued one fails), as processCommand refuses them."""
    if spec.root_name == "debug":
        return None if protected_action_allowed(c, "enable-debug-command") else \
            errors.DEBUG_NOT_ALLOWED
    return None if protected_action_allowed(c, "enable-module-command") else \
        errors.MODULE_NOT_ALLOWED


def protected_action_allowed(c: "Client", option: str) -> bool:
    """Whether a protected option (enable-debug-command, enable-module-command,
    enable-protected-configs) lets c do what it guards: `yes`, or `local` from a loopback
    address or a Unix socket."""
    setting = c.server.config.get(option)
    if setting == "yes":
        return True
    if setting != "local":
        return False
    host = c.addr.rsplit(":", 1)[0].strip("[]")
    if not host:  # a Unix socket is local
        return True
    import ipaddress  # only a "local" setting needs it: kept off start-up

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# What a transaction may still send when memory is over maxmemory (processCommand).
_MULTI_WITHOUT_MEMORY = frozenset({"exec", "discard", "quit", "reset"})


def _refused_for_memory(c: "Client", spec: CommandSpec) -> bool:
    """processCommand's memory handling, asked only while maxmemory or maxmemory-clients is
    set, before any command is run or queued. First evictClients: the client eviction hook
    (hooks.ClientEviction) disconnects clients while all of them are over maxmemory-clients;
    True if that took c itself, whose command is then not run. Then, with maxmemory set, the
    memory admission hook (hooks.MemoryAdmission) frees what maxmemory-policy allows and says
    whether memory is still over maxmemory; if so, a command flagged denyoom is refused, and
    so is an EXEC that queued one; inside MULTI every command is, but EXEC, DISCARD, QUIT and
    RESET (queuing takes memory too). Neither while a script is busy: the server only serves
    allow-busy commands then, the script's caller must stay, and evicting would mix its
    propagation."""
    if _busy and c.server in _busy:
        return False
    if c.config.clients_limited:
        eviction = c.server.hooks.client_eviction
        if eviction is not None:
            eviction.before_command(c)
            if c.closing:
                return True
        if not c.config.maxmemory:
            return False
    # (read as a slot, then called: `c.server.memory_admission()` would be a method lookup that
    # finds no method, ~400 instructions more in the uncompiled build)
    admission = c.server.memory_admission
    if not admission():
        return c.closing  # (evicted by it: not run either)
    if spec.denyoom or c.closing:
        return True
    if c.multi is not None:
        if spec.root_name not in _MULTI_WITHOUT_MEMORY:
            return True
        if _is_exec(spec):
            for queued, _ in c.multi:
                if queued.denyoom:
                    return True
    return False


def _routed(c: "Client", spec: CommandSpec, argv: list) -> RedisError | None:
    """Cluster mode (hooks.ClusterRouter): MOVED, ASK, CROSSSLOT, TRYAGAIN or CLUSTERDOWN for a
    command this node may not run, or None. Refused inside MULTI, the transaction fails; a
    refused EXEC discards it and gives the refusal itself, as Redis's processCommand does."""
    node = c.server.cluster
    if node is None:
        return None
    message = node.route(c, spec, argv)
    if message is None:
        return None
    stats_of(c.server, spec).rejected_calls += 1
    if c.multi is not None:
        if spec.name == "exec":
            c.multi = None
            c.multi_failed = False
            c.unwatch_all()
        else:
            c.multi_failed = True
    c.server.stats.count_error(message)
    return RedisError(message)


_SCRIPT_RUNNERS = frozenset(("eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro"))


def _denied_stale(c: "Client", spec: CommandSpec, argv: list) -> bool:
    """A command a replica with a broken link and replica-serve-stale-data no refuses: one not
    flagged stale, or an EXEC of such a command (processCommand's is_denystale_command). A
    script is judged by its flags: only allow-stale runs (an EVAL without a shebang is
    refused too, as redis-server 7.0.15 refuses it); a script or function not found runs on to
    its own error."""
    if "stale" not in spec.flags:
        return True
    if spec.name in _SCRIPT_RUNNERS and spec.parent is None:
        kind = spec.name.removesuffix("_ro")  # eval, evalsha or fcall
        script_flags = c.server.hooks.script_flags  # (hooks.ScriptFlags)
        if script_flags is not None:
            flags = script_flags(kind, argv)
            if flags is None:
                return False  # no such script or function: on to its own error
        elif kind == "eval":
            flags = declared_flags(argv[1])
        else:
            return False  # no script engine yet, so no such script: on to its own error
        return flags is None or "allow-stale" not in flags
    return _is_exec(spec) and c.multi is not None and any(
        "stale" not in queued.flags for queued, _ in c.multi)


def _denied_loading(c: "Client", spec: CommandSpec) -> bool:
    """A command refused while loading: one not flagged loading, or an EXEC of such a command
    (processCommand's is_denyloading_command)."""
    if "loading" not in spec.flags:
        return True
    return _is_exec(spec) and c.multi is not None and any(
        "loading" not in queued.flags for queued, _ in c.multi)


def _held(c: "Client", spec: CommandSpec, argv: list) -> Any:
    """CLIENT PAUSE (hooks.Pause): the Block that holds this command, or None."""
    paused = c.server.pause
    if paused is not None and paused.holds(c, spec, argv):
        return paused.hold(c, argv)
    return None


# Compiled (setup.py), _bit_length's loop runs in C; uncompiled, that loop is ~15 rounds of Python
# bytecode per command, where int.bit_length is one C call.
_COMPILED = not __file__.endswith(".py")


def _bit_length(nanoseconds: int) -> int:
    """A duration's histogram slot: a loop the compiled build runs in C, where int.bit_length
    would be a method call on a Python int for every command."""
    bits = 0
    while nanoseconds:
        nanoseconds >>= 1
        bits += 1
    return bits


def _slow(c: "Client", spec: CommandSpec, argv: list, reply: Any, elapsed: int) -> None:
    if type(reply) is Block:
        # Logged once it is answered, as Redis logs a blocked command when it unblocks.
        reply.logged_call = (spec, argv, elapsed)
    else:
        c.server.slowlog.push(c, spec, argv, elapsed)


def _reject(c: "Client", spec: CommandSpec, message: str) -> RedisError:
    """A command refused before it runs, as Redis's rejectCommand: an error reply counted in
    INFO (errorstats, the command's rejected_calls), and a failed transaction if queuing."""
    stats_of(c.server, spec).rejected_calls += 1
    if _is_exec(spec):
        return _refuse_exec(c, message)
    if c.multi is not None:
        c.multi_failed = True
    c.server.stats.count_error(message)
    return RedisError(message)


def _queued_a_write(c: "Client") -> bool:
    """Whether the transaction holds a write (an EXEC that Redis judges a write command): an
    EVAL whose shebang does not say no-writes is one (evalGetCommandFlags)."""
    for queued, queued_argv in c.multi:
        if queued.write:
            return True
        if queued.name == "eval" and queued.parent is None:
            flags = declared_flags(queued_argv[1])
            if flags is not None and "no-writes" not in flags:
                return True
    return False


def _is_exec(spec: CommandSpec) -> bool:
    return spec.name == "exec" and spec.parent is None


def _refuse_exec(c: "Client", message: str) -> RedisError:
    """A refused EXEC (arity, ACL, BUSY, ...) ends the transaction, inside MULTI or not, and
    says why, as Redis's execCommandAbort: nothing it queued runs, and the client is not left
    in MULTI queuing everything it sends next."""
    c.multi = None
    c.multi_failed = False
    c.unwatch_all()
    error = RedisError(errors.EXECABORT_BECAUSE.format(message.removeprefix(errors.GENERIC)))
    c.server.stats.count_error(error.message)
    return error


def call(c: "Client", spec: CommandSpec, argv: list) -> Any:
    """Run a validated command, counting it for INFO commandstats, and show it to monitors."""
    if c.user_restricted and c.in_exec:  # EXEC checks again (scripts check their caller)
        denied = c.server.access.check_exec(c, spec, argv)
        if denied is not None:
            return denied
    extras = _extras_in_use
    if extras:
        for hook in c.server.hooks.before_call:  # (MONITOR registers some)
            hook(c, spec, argv)
    # The outermost command fixes the instant expiry sees until it returns, nested commands
    # (EXEC's, a script's) included: Redis's call() with server.fixed_time_expire.
    clock = c.db.clock
    start = clock.enter()
    try:
        reply = spec.handler(c, argv)
    except RedisError as exc:
        reply = exc
    except Exception as exc:  # a bug must cost one reply, never the server
        log.exception("internal error running %r", argv[:1])
        reply = RedisError(errors.INTERNAL_ERROR.format(spec.full_name, type(exc).__name__, exc))
    finally:
        finish = clock.leave()
    elapsed = finish - start
    table = c.command_stats  # this server's counters (table.stats_of)
    stats = table[spec.index] if spec.index < len(table) else stats_of(c.server, spec)
    stats.nanoseconds += elapsed
    stats.calls += 1
    histogram = stats.latency_histogram  # LATENCY HISTOGRAM (minired/engine/latency.py); None: off
    if histogram is not None:
        slot = _bit_length(elapsed) if _COMPILED else elapsed.bit_length()
        if type(reply) is Block:  # counted when the wait ends, if it is answered (blocking.py)
            reply.latency_slot = slot
        else:
            histogram[slot] += 1
    threshold = c.config.slowlog_threshold_ns  # slowlog-log-slower-than; -1: off
    if threshold >= 0 and (threshold <= elapsed or type(reply) is Block):
        _slow(c, spec, argv, reply, elapsed)
    monitored = c.config.latency_threshold_ns  # latency-monitor-threshold; 0: off
    if monitored and elapsed >= monitored and type(reply) is not Block:
        latency.add_sample(c.server, "fast-command" if "fast" in spec.flags else "command",
                           elapsed)
    if type(reply) is RedisError:
        stats.failed_calls += 1
        c.changes = -1  # (a command that failed after counting its changes)
        if not reply.counted:  # (a script's error that its own command already counted)
            c.server.stats.count_error(reply.message)
    elif spec.write or c.changes > 0:
        # Redis's server.dirty (INFO rdb_changes_since_last_save): one per write, or what the
        # command counted itself (a read may write: PFCOUNT's cache); a write that changed
        # nothing is not propagated either.
        changes = c.changes
        if changes < 0:
            if changes == -1:
                if type(reply) is not Block:
                    c.db.dirty += 1
            else:  # PROPAGATED_UNCHANGED
                c.changes = -1
        else:
            c.changes = -1
            c.db.dirty += changes
        if changes and c.server.propagate is not None:
            c.server.propagate(c, spec, argv, reply)  # persistence: AOF and save-point counting
    if extras or _extras_in_use:  # (MONITOR itself may just have turned them on)
        server = c.server
        tracking = server.tracking
        if tracking is not None:
            tracking.remember(c, spec, argv)
        for hook in server.hooks.after_call:  # (read again: MONITOR may just have added one)
            hook(c, spec, argv)
    return reply
