"""Running scripts: the run context, the redis.* bridge back into the command table, EVAL's
script cache, error replies in Redis's format, and SCRIPT KILL.

A script runs inline on the event-loop thread, so it is atomic by construction. Commands it
calls go through `dispatch.call` on one script client whose database starts as the caller's.
"""
from __future__ import annotations

import hashlib
import logging
import time
from itertools import chain
from typing import TYPE_CHECKING, Any, Iterable

from minired.engine import dispatch
from minired.engine.args import parse_int
from minired.engine.blocking import Block
from minired.engine.client import Client
from minired.engine.shebang import declared_flags, parse_shebang
from minired.engine.table import COMMANDS, stats_of
from minired.features import security
from minired.protocol import errors, resp
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY, OK, Encoded, Status, format_double
from minired.scripting.sandbox import LuaError, Sandbox, format_number_argument, out_of_memory

if TYPE_CHECKING:
    from minired.engine.server import Server

log = logging.getLogger("minired")

_LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.INFO, logging.WARNING)
_ERR = b"err"
# The kind of an error a command gave or its call was refused with, which INFO has already
# counted: its Lua table says so (ignore_error_stats_update), and a script ending with it is
# not counted again.
_COUNTED_ERR = b"counted_err"
_OK = b"ok"
_SPEC_CACHE_SIZE = 1024
_OK_REPLY = (b"OK", _OK)
# call_native's answer for a reply that `unbox` converts (luabridge.pyx fetches it).
_DEFERRED = (None, b"py")
_OUT_OF_MEMORY = (False, errors.SCRIPT_OUT_OF_MEMORY.encode())
# The null frame of the calling client's protocol, for results the Lua side encodes.
_NULL_RESP2 = b"$-1\r\n"
_NULL_RESP3 = b"_\r\n"
_BIG_INT = 10**17  # format_number_argument prints integers inside this range with %d
# Arrays up to this long reach Lua as return values (Lua's stack takes them at once).
_UNPACKED_MAX = 256
_GC_PERIOD = 50  # runs between two looks at the Lua heap (Redis's LUA_GC_CYCLE_PERIOD)
# A module global, read without the attribute lookup on `time` (once per run).
_monotonic = time.monotonic


class Script:
    """A compiled EVAL script. `flags` is None for scripts without a shebang (compat mode)."""

    __slots__ = ("sha", "body", "function", "flags")

    def __init__(self, sha: bytes, body: bytes, function: Any, flags: frozenset | None) -> None:
        self.sha = sha
        self.body = body
        self.function = function
        self.flags = flags


class Run:
    """The script (or function) currently running."""

    __slots__ = ("caller", "name", "eval_mode", "read_only", "allow_oom", "started", "dirty",
                 "timed_out", "abort", "command", "sandbox", "propagate", "stale")

    def __init__(self, caller: Client, name: bytes, eval_mode: bool, read_only: bool,
                 allow_oom: bool, command: list) -> None:
        self.caller = caller
        self.name = name
        self.eval_mode = eval_mode
        self.read_only = read_only
        self.allow_oom = allow_oom
        self.started = _monotonic()
        self.dirty = False
        self.timed_out = False
        # Set (to the error Lua raises) when the run must stop: SCRIPT KILL, SHUTDOWN NOSAVE.
        self.abort: bytes | None = None
        self.command = command  # the caller's argv (FUNCTION STATS shows it)
        self.sandbox: Sandbox | None = None
        # Where its writes go from now on, as redis.set_repl sets it: REPL_AOF (1) | REPL_REPLICA
        # (2); the AOF logs them only with REPL_AOF (features/propagation.py).
        self.propagate = 3
        # Running on a replica whose link is down with replica-serve-stale-data no (an
        # allow-stale script): a command not flagged stale is refused (scriptVerifyAllowStale).
        self.stale = caller.config.stale_refused


def lua_error_text(message: str) -> bytes:
    """The `err` field Lua sees for an error reply (luaPushErrorBuff on "-<message>")."""
    if " " not in message:
        message = errors.GENERIC + message
    return message.strip("\r\n").encode("utf-8", "surrogateescape")


def _all_plain(items: Iterable) -> bool:
    """Whether every item is bytes or an int (what Lua takes with no conversion): a loop the
    compiled build runs in C, cheaper than a frozenset's issuperset of map(type, items)."""
    for item in items:
        kind = type(item)
        if kind is not bytes and kind is not int:
            return False
    return True


def _nulls_as_false(items: list) -> list | None:
    """The items with None (a null bulk) as False, what RESP2's conversion gives Lua; None if
    any item is neither bytes, an int nor None."""
    flat = []
    for item in items:
        kind = type(item)
        if kind is bytes or kind is int:
            flat.append(item)
        elif item is None:
            flat.append(False)
        else:
            return None
    return flat


def run_error(name: bytes, outcome: tuple) -> RedisError:
    """The error reply of a failed run: the message plus where it happened, on one line;
    counted already where the error table said so (outcome[4])."""
    message = outcome[1]
    if isinstance(message, bytes):  # (any bytes: the reply carries them back as they are)
        message = message.decode("utf-8", "surrogateescape")
    source = outcome[2] if len(outcome) > 2 else None
    line = outcome[3] if len(outcome) > 3 else None
    if source is not None and line is not None:
        if isinstance(source, bytes):
            source = source.decode("utf-8", "surrogateescape")
        if isinstance(line, float) and line.is_integer():
            line = int(line)
        message = f"{message} script: {name.decode('utf-8', 'replace')}, on {source}:{line}."
    return RedisError(message, len(outcome) > 4 and outcome[4] is True)


class Lrand48:
    """Redis's redisLrand48 (rand.c): the 48-bit lrand48 generator behind math.random."""

    _A = 0x5DEECE66D
    _MASK = (1 << 48) - 1
    _MAX = 2**31 - 1

    def __init__(self) -> None:
        self.state = 0x1234ABCD330E

    def seed(self, value: int) -> None:
        self.state = (((value & 0xFFFFFFFF) << 16) | 0x330E) & self._MASK

    def next_double(self) -> float:
        self.state = (self._A * self.state + 0xB) & self._MASK
        return ((self.state >> 17) % self._MAX) / self._MAX


class ScriptEngine:
    """Per-server scripting state: Lua runtimes, the EVAL cache, the running script."""

    __slots__ = ("server", "scripts", "current", "client", "prng", "_eval_sandbox",
                 "_specs", "functions", "busy", "deferred", "gc_countdown",
                 "cluster", "clock", "debugging", "debugger", "debug_session")

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.scripts: dict[bytes, Script] = {}
        self.current: Run | None = None
        self.client = Client(server)
        self.client.in_script = True
        self.client.name = b""
        self.prng = Lrand48()
        self._eval_sandbox: Sandbox | None = None
        self._specs: dict[bytes, tuple] = {}  # redis.call's command names, as spelled
        self.functions: Any = None  # functions.FunctionLibraries, attached by the package
        self.busy: Any = None        # busy.BusyService, attached by the package
        self.deferred: tuple | None = None  # the reply call_native left for unbox
        # The server's cluster node (minired/features/cluster.py), None outside cluster mode: read on
        # every redis.call, so a field of the engine (startup.start_cluster sets it on an
        # engine made before the cluster formed).
        self.cluster = server.cluster
        self.gc_countdown = _GC_PERIOD
        self.clock = server.clock
        # SCRIPT DEBUG: the clients whose next EVAL runs in the debugger (client id -> YES or
        # SYNC), the debugger (debugger.py, made at the first SCRIPT DEBUG), and the session
        # running, which notes redis.call's refusals for its log.
        self.debugging: dict[int, bytes] = {}
        self.debugger: Any = None
        self.debug_session: Any = None

    @property
    def eval_sandbox(self) -> Sandbox:
        if self._eval_sandbox is None:
            self._eval_sandbox = Sandbox("eval", self)
        return self._eval_sandbox

    def eval_memory(self) -> int:
        """INFO's used_memory_lua: the bytes the EVAL runtime's heap holds beyond its own code
        (the sandbox, and the cjson, cmsgpack, struct and bit written in Lua, which Redis has in
        C, outside the heap it reports), garbage not yet collected included, as Lua counts them
        (collectgarbage('count'))."""
        sandbox = self._eval_sandbox
        if sandbox is None:
            return 0
        return max(0, sandbox.lua.get_memory_used() - sandbox.code_memory)

    # --- EVAL / EVALSHA --------------------------------------------------------------------------

    def load(self, body: bytes) -> Script:
        """Compile a script into the cache (SCRIPT LOAD, first EVAL of a body)."""
        sha = hashlib.sha1(body).hexdigest().encode()
        script = self.scripts.get(sha)
        if script is not None:
            return script
        flags, shebang_len = parse_shebang(body)
        # The shebang line is skipped but its line feed kept, so line numbers stay the user's.
        function, problem = self.eval_sandbox.compile(body[shebang_len:], b"@user_script")
        if function is None:
            raise RedisError(errors.SCRIPT_COMPILE.format(problem))
        script = Script(sha, body, function, flags)
        self.scripts[sha] = script
        self.eval_sandbox.remember(sha, function)
        return script

    def eval(self, c: Client, argv: list, by_sha: bool, read_only: bool) -> Any:
        if self.debugging and c.id in self.debugging:
            return self.debugger.eval(c, argv, by_sha, read_only)
        if by_sha:
            script = self.scripts.get(argv[1])  # the usual lowercase sha, as SCRIPT LOAD gave it
            if script is None and len(argv[1]) != 40:
                raise RedisError(errors.NOSCRIPT)
            numkeys = _SMALL_COUNTS.get(argv[2])
            if numkeys is None or numkeys > len(argv) - 3:
                numkeys = count_keys(argv)
            if script is None:
                script = self.scripts.get(argv[1].lower())
                if script is None:
                    raise RedisError(errors.NOSCRIPT)
        else:
            numkeys = count_keys(argv)
            script = self.load(argv[1])
        flags = script.flags
        if flags is None:
            run_read_only, allow_oom = read_only, False
        else:
            self._check_flags(flags, read_only, c.flags == "M")
            run_read_only = read_only or "no-writes" in flags
            allow_oom = "allow-oom" in flags
        run = Run(c, script.sha, True, run_read_only, allow_oom, argv)
        sandbox = self._eval_sandbox or self.eval_sandbox
        return self.execute(run, sandbox, sandbox.run_eval, script.function, numkeys, argv[3:],
                            script.sha)

    @staticmethod
    def _failed(run: Run, sandbox: Sandbox, outcome: tuple) -> RedisError:
        # Lua 5.1 has no emergency collection: a script that ran into the memory cap leaves its
        # garbage behind, and the next script would fail too unless it is collected now.
        sandbox.cap_guard.restore()
        if outcome is _OUT_OF_MEMORY or sandbox.lua.get_memory_used() > sandbox.max_memory // 2:
            sandbox.lua.gccollect()
        return run_error(run.name, outcome)

    def _check_flags(self, flags: frozenset, read_only: bool, obey: bool = False) -> None:
        """scriptPrepareForRun's checks of a script's declared flags; `obey`: the caller is a
        master's link or the AOF, whose writes are never refused (mustObeyClient)."""
        if "no-cluster" in flags and self.server.cluster is not None:
            raise RedisError(errors.SCRIPT_NO_CLUSTER)
        if "no-writes" not in flags and not obey:
            # (Redis refuses a script that may write for want of replicas before it runs,
            # as it refuses any write command, so before the *_RO check)
            if self.server.config.writes_refused:
                raise RedisError(self.server.config.write_refusal())
            if read_only:
                raise RedisError(errors.SCRIPT_RO_WITH_WRITE_FLAG)
            # (no-writes implies allow-oom: scriptPrepareForRun checks memory after the above)
            if "allow-oom" not in flags and self.server.over_maxmemory():
                raise RedisError(errors.SCRIPT_OOM)

    def execute(self, run: Run, sandbox: Sandbox, runner: Any, function: Any, numkeys: int,
                arguments: list, sha: bytes | None = None) -> Any:
        """Run a script or function (KEYS = arguments[:numkeys], ARGV = the rest) and turn its
        outcome into the reply. `runner` is sandbox.run_eval or sandbox.run_function; an EVAL
        script's `sha` lets the sandbox run it through the native entry."""
        self.gc_countdown -= 1
        if self.gc_countdown <= 0:
            # Where Redis steps its collector, every 50 runs: garbage never piles up to a
            # full (slow) cycle of Lua's own, and the heap stays near its live size.
            self.gc_countdown = _GC_PERIOD
            sandbox.settle_garbage()
        script_client = self.client
        if script_client.db is not run.caller.db:  # a database number always has the same object
            script_client.select(run.caller.db_index)
        script_client.protocol = 2
        run.sandbox = sandbox
        null = _NULL_RESP3 if run.caller.protocol == 3 else _NULL_RESP2
        self.current = run
        clock = self.clock
        clock.start_script()  # the script runs at one instant (scriptTimeSnapshot)
        try:
            outcome = None if sha is None else sandbox.run_cached(sha, null, numkeys, arguments)
            if outcome is None:
                outcome = sandbox.start(runner, function, null, numkeys, arguments)
        except LuaError as exc:
            # The cap reached outside the script's own protected call (while its arguments or
            # its outcome were being built) is the same script error as inside it.
            if not out_of_memory(exc):
                raise
            outcome = _OUT_OF_MEMORY
        finally:
            self.current = None
            clock.end_script()
            if run.timed_out:
                self.busy.end(run)
        if outcome[0]:
            if len(outcome) == 2:
                value = outcome[1]
                return value if type(value) is bytes else sandbox.to_reply(value, script_client.protocol)
            tag = outcome[2]
            if tag == b"raw":
                if len(outcome) > 4:
                    self._count_nested_errors(run, outcome[4], outcome[5], outcome[6])
                return Encoded(outcome[3])
            if tag == b"ok" and outcome[3] == b"OK":
                return OK
            return sandbox.shaped_reply(outcome[2:])
        return self._failed(run, sandbox, outcome)

    def _count_nested_errors(self, run: Run, counted: int, fresh: int, messages: bytes) -> None:
        """Errors within a script's table result are error replies of their own in Redis: each
        counted in INFO unless it is a command's error the script passed on (`counted` of
        them), and each of those marks the script's call failed, as one fresh error or more
        does (afterErrorReply and call's incrCommandStatsOnError). `messages`: the `fresh`
        others' texts, joined by LF (sandbox.lua's encode_reply)."""
        stats = self.server.stats
        if fresh:
            for message in messages.split(b"\n"):
                stats.count_error(message.decode("utf-8", "surrogateescape"))
        spec = COMMANDS.get(run.command[0].lower())
        if spec is not None:
            stats_of(self.server, spec).failed_calls += int(counted) + (fresh > 0)

    # --- the redis.* bridge (called from Lua; must never raise) ---------------------------------

    def call(self, *args: Any) -> Any:
        """redis.call / redis.pcall through lupa's bridge (where luabridge is not compiled): the
        reply as a Lua value, (text, b"ok"|b"err"), or for a flat array (True, count,
        *elements), which sandbox.lua turns into the table. Must never raise."""
        result = self.call_native(args)
        if type(result) is list:
            return (True, len(result), *result)
        return self.unbox() if result is _DEFERRED else result

    def call_native(self, args: tuple | list) -> Any:
        """redis.call / redis.pcall: like `call`, except that a flat array of strings and
        integers is answered as a list of them, and a reply which must become Lua tables is
        kept and answered as (None, b"py"): the native bridge (luabridge.pyx) fetches it with
        `unbox` through lupa, since it runs outside lupa's view of the state, where building
        Lua tables from Python is not safe. The bridge passes the arguments as a list of its
        own, taken as they are. Called from Lua: must never raise."""
        try:
            run = self.current
            if run is None:
                return errors.SCRIPT_CALL_OUTSIDE.encode(), _ERR
            for arg in args:
                if type(arg) is not bytes:
                    argv = _string_arguments(args)
                    if argv is None:
                        return errors.SCRIPT_CALL_BAD_ARG.encode(), _ERR
                    break
            else:
                if not args:
                    return errors.SCRIPT_CALL_NO_ARGS.encode(), _ERR
                argv = args if type(args) is list else list(args)
            known = self._specs.get(argv[0])
            if known is None:
                known = self._lookup(argv)
                if type(known) is bytes:  # refused, and counted, by _lookup
                    return known, _COUNTED_ERR
            spec, arity, write = known
            # A command refused here counts as rejected in INFO commandstats, as in Redis.
            if (len(argv) != arity) if arity >= 0 else (len(argv) < -arity):
                return self._refused(spec, errors.SCRIPT_CALL_ARITY.encode())
            if run.stale and "stale" not in spec.flags:
                return self._refused(spec, errors.SCRIPT_CALL_STALE.encode())
            if write:  # (may-replicate commands count as writes in a read-only script)
                if run.read_only:
                    return self._refused(spec, errors.SCRIPT_CALL_WRITE_IN_RO.encode())
                if spec.write:
                    # Until the script has written, the server's state may still refuse it.
                    if not run.dirty:
                        if self.server.config.writes_refused and run.caller.flags != "M":
                            return self._refused(spec, self.server.config.write_refusal().encode())
                        if (not run.allow_oom and spec.denyoom and self.server.config.maxmemory
                                and self.server.over_maxmemory()):
                            return self._refused(spec, lua_error_text(errors.OOM))
                    run.dirty = True
            cluster = self.cluster  # cluster mode: keys this node does not serve
            if cluster is not None:
                refusal = cluster.script_refusal(run.caller, spec, argv)
                if refusal is not None:
                    return self._refused(spec, refusal.encode())
            script_client = self.client
            faults = self.server.faults  # fault injection: IN-SCRIPT rules (minired/features/faults.py)
            if faults is not None:
                injected = faults.in_script(run.caller, spec, argv, run.name)
                if injected is not None:
                    return self._refused(spec, lua_error_text(injected))
            if run.caller.user_restricted:  # the caller's ACL rules, logged as "lua"
                denied = security.check_script_call(run.caller, script_client, spec, argv)
                if denied is not None:
                    return lua_error_text(denied.message), _COUNTED_ERR
            reply = dispatch.call(script_client, spec, argv)
            kind = type(reply)
            if kind is bytes or kind is int:
                return reply
            if kind is list and len(reply) <= _UNPACKED_MAX:
                if _all_plain(reply):
                    return reply
                if script_client.protocol == 2:  # (HMGET, MGET: RESP2's nulls are false)
                    flat = _nulls_as_false(reply)
                    if flat is not None:
                        return flat
            if kind is Status:
                return _OK_REPLY if reply is OK else (reply, _OK)
            if kind is RedisError:  # (counted by dispatch.call)
                return lua_error_text(reply.message), _COUNTED_ERR
            if kind is Block:  # cannot happen (scripts never block), but never hang a script
                reply = reply.timeout_reply
            resp3 = script_client.protocol == 3
            # The common replies to_lua would give without building tables, here without it.
            if reply is None or reply is NULL_ARRAY:
                return None if resp3 else False
            if kind is float and not resp3:
                return format_double(reply)
            if (kind is dict and not resp3 and len(reply) <= _UNPACKED_MAX // 2
                    and _all_plain(reply) and _all_plain(reply.values())):
                return list(chain.from_iterable(reply.items()))
            self.deferred = (reply, resp3)
            return _DEFERRED
        except BaseException:  # noqa: BLE001 - nothing may cross into Lua
            log.exception("internal error in redis.call")
            return errors.SCRIPT_INTERNAL_ERROR.encode(), _ERR

    def declared_flags(self, name: str, argv: list) -> frozenset | None:
        """The flags the script or function argv runs declares, for a WRITE pause (pause.py);
        None for a script without a shebang or one not found."""
        if name == "fcall":
            function = self.functions.functions.get(argv[1])
            return frozenset(function.flags) if function is not None else None
        if name == "evalsha":
            script = self.scripts.get(argv[1].lower())
            return script.flags if script is not None else None
        body = argv[1]
        script = self.scripts.get(hashlib.sha1(body).hexdigest().encode())
        return script.flags if script is not None else declared_flags(body)

    def script_flags(self, kind: str, argv: list) -> frozenset | None:
        """The hooks.ScriptFlags the engine registers: the flags the script or function argv
        runs declares (empty without a shebang), None when there is no such script or
        function (EVALSHA, FCALL)."""
        if kind == "evalsha" and argv[1].lower() not in self.scripts:
            return None
        flags = self.declared_flags(kind, argv)
        if flags is None and kind != "fcall":
            return frozenset()
        return flags

    def _refused(self, spec: Any, text: bytes) -> tuple:
        """A command a script may not run as called (scriptCall's checks), as redis.call
        answers it: its error, counted by _count_refusal."""
        return self._count_refusal(spec, text), _COUNTED_ERR

    def _count_refusal(self, spec: Any, text: bytes) -> bytes:
        """An error reply counted in INFO, and a rejected call of the command where there is
        one; the error text back."""
        if spec is not None:
            stats_of(self.server, spec).rejected_calls += 1
        self.server.stats.count_error(text.decode("utf-8", "replace"))
        if self.debug_session is not None:
            self.debug_session.refusal = text
        return text

    def unbox(self) -> Any:
        """The Lua value of the reply call_native kept (called from Lua through lupa)."""
        deferred, self.deferred = self.deferred, None
        return None if deferred is None else self.to_lua(*deferred)

    def _lookup(self, argv: list) -> tuple | bytes:
        """(spec, arity, whether a read-only script may not run it: it writes or may replicate)
        for the command argv names, or the error text.
        Commands without subcommands are remembered by the name as spelled, so the next call
        skips lowercasing and resolving."""
        name = argv[0]
        spec = COMMANDS.get(name.lower())
        if spec is None:
            return self._count_refusal(None, errors.SCRIPT_CALL_UNKNOWN.encode())
        cacheable = not spec.subcommands
        if spec.subcommands:
            sub = spec.subcommands.get(argv[1].lower()) if len(argv) >= 2 else None
            if sub is not None:
                spec = sub
            elif len(argv) >= 2 and spec.handler is None:
                return self._count_refusal(None, errors.SCRIPT_CALL_UNKNOWN.encode())
        arity = spec.arity
        if (len(argv) != arity) if arity >= 0 else (len(argv) < -arity):
            return self._count_refusal(spec, errors.SCRIPT_CALL_ARITY.encode())
        if "noscript" in spec.flags:
            if not self.server.debug.disable_deny_scripts:
                return self._count_refusal(spec, errors.SCRIPT_CALL_NOSCRIPT.encode())
            cacheable = False  # allowed only while DEBUG SET-DISABLE-DENY-SCRIPTS 1 lasts
        known = (spec, arity, spec.write or "may_replicate" in spec.flags)
        if cacheable:
            if len(self._specs) >= _SPEC_CACHE_SIZE:
                self._specs.clear()
            self._specs[name] = known
        return known

    def to_lua(self, reply: Any, resp3: bool) -> Any:
        """A command reply as the Lua value Redis gives scripts (RESP2 or RESP3 conversion)."""
        kind = type(reply)
        if kind is bytes or kind is int:
            return reply
        if reply is None or reply is NULL_ARRAY:
            return None if resp3 else False
        table = self.current.sandbox.table_from
        if kind is bool:
            return reply if resp3 else int(reply)
        if kind is float:
            return table({b"double": reply}) if resp3 else resp.format_double(reply)
        if kind is resp.Status:
            return table({b"ok": bytes(reply)})
        if kind is RedisError:  # (within an array: counted by the command that gave it)
            return table({b"err": lua_error_text(reply.message),
                          b"ignore_error_stats_update": True})
        if kind is resp.Verbatim:
            if resp3:
                return table({b"verbatim_string": table({b"format": b"txt", b"string": bytes(reply)})})
            return bytes(reply)
        if kind is resp.BigNumber:
            return table({b"big_number": bytes(reply)}) if resp3 else bytes(reply)
        if kind is str:
            return reply.encode("utf-8", "surrogateescape")
        if isinstance(reply, dict):
            if resp3:
                return table({b"map": table({self.to_lua(k, resp3): self.to_lua(v, resp3)
                                             for k, v in reply.items()})})
            flat = []
            for k, v in reply.items():
                flat.append(self.to_lua(k, resp3))
                flat.append(self.to_lua(v, resp3))
            return table(flat)
        if kind is resp.Replies:
            # An attribute (DEBUG PROTOCOL ATTRIB) before the reply: Redis's Lua parser skips
            # it, so the script sees the reply that follows.
            return self.to_lua(reply[-1], resp3)
        if isinstance(reply, (set, frozenset, resp.OrderedSet)):
            if resp3:
                return table({b"set": table({self.to_lua(m, resp3): True for m in reply})})
            return table([self.to_lua(m, resp3) for m in reply])
        if isinstance(reply, (list, tuple)):
            if _all_plain(reply):  # HGETALL, LRANGE ...: no conversion
                return table(reply)
            return table([self.to_lua(item, resp3) for item in reply])
        if isinstance(reply, bytes):
            return bytes(reply)
        if isinstance(reply, int):
            return int(reply)
        log.warning("script got a reply of unexpected type %s", kind.__name__)
        return False

    def acl_check(self, *args: Any) -> Any:
        """redis.acl_check_cmd: whether the script's caller may run the command, as ACL judges
        it (true/false), or an error for an unknown command."""
        if not args:
            return errors.SCRIPT_CALL_NO_ARGS.encode(), _ERR
        argv = _string_arguments(args)
        if argv is None:
            return errors.SCRIPT_CALL_BAD_ARG.encode(), _ERR
        spec = COMMANDS.get(argv[0].lower())
        if spec is not None and spec.subcommands and len(argv) >= 2:
            sub = spec.subcommands.get(argv[1].lower())
            if sub is not None:
                spec = sub
            elif spec.handler is None:
                spec = None
        if spec is None:
            return errors.SCRIPT_ACL_UNKNOWN.encode(), _ERR
        run = self.current
        return run is None or security.permits(run.caller, spec, argv)

    def check(self) -> Any:
        """The count hook: None to go on, or the error text that stops the run."""
        # The native entry (luabridge) runs scripts holding the GIL, so a long script would
        # starve the other threads of an embedding process (a test sending SCRIPT KILL): each
        # tick of the hook lets them run.
        time.sleep(0)
        run = self.current
        if run is None:
            return self.functions.check_load() if self.functions is not None else None
        if run.abort is not None:
            return run.abort
        if not run.timed_out:
            threshold = self.server.config.busy_reply_threshold_ms
            elapsed_ms = (time.monotonic() - run.started) * 1000
            if threshold <= 0 or elapsed_ms < threshold:
                return None
            log.warning("Slow script detected: still in execution after %d milliseconds. "
                        "You can try killing the script using the %s command.", elapsed_ms,
                        "SCRIPT KILL" if run.eval_mode else "FUNCTION KILL")
            run.timed_out = True
            self.busy.begin(run)
        self.busy.service()
        if run.abort is None and self.server.shutdown_requested:
            run.abort = errors.SCRIPT_KILLED.encode()
        return run.abort

    def sha1hex(self, text: bytes) -> bytes:
        return hashlib.sha1(text).hexdigest().encode()

    def log(self, level: Any, message: bytes) -> None:
        log.log(_LOG_LEVELS[int(level)], "%s", message.decode("utf-8", "replace"))

    def setresp(self, version: Any) -> None:
        self.client.protocol = int(version)

    def set_repl(self, flags: Any) -> None:
        if self.current is not None:
            self.current.propagate = int(flags)

    def random(self) -> float:
        return self.prng.next_double()

    def randomseed(self, seed: Any) -> None:
        self.prng.seed(int(seed))

    def register_function(self, *args: Any) -> Any:
        if self.functions is None:
            return errors.FUNCTION_REGISTER_OUTSIDE_LOAD.encode()
        return self.functions.register(*args)

    # --- SCRIPT KILL / FUNCTION KILL -------------------------------------------------------------

    def kill(self, is_eval: bool) -> Any:
        run = self.current
        if run is None:
            raise RedisError(errors.NOTBUSY)
        if run.dirty:
            raise RedisError(errors.UNKILLABLE)
        if is_eval and not run.eval_mode:
            raise RedisError(errors.BUSY_FUNCTION)
        if not is_eval and run.eval_mode:
            raise RedisError(errors.BUSY)
        run.abort = errors.SCRIPT_KILLED.encode()
        return resp.OK

    def flush(self) -> None:
        """SCRIPT FLUSH. As Redis's scriptingReset, the EVAL runtime goes with the scripts, and
        with it whatever scripts changed in it (cjson's settings) and its garbage; the next
        EVAL makes a new one."""
        self.scripts.clear()
        self._eval_sandbox = None


_SMALL_COUNTS = {b"%d" % n: n for n in range(64)}


def _string_arguments(args: tuple) -> list | None:
    """redis.call's arguments as Redis reads them: strings as they are, numbers formatted
    ("%.17g"), anything else refused (None)."""
    argv = list(args)
    for index, arg in enumerate(args):
        kind = type(arg)
        if kind is bytes:
            continue
        if kind is int and -_BIG_INT < arg < _BIG_INT:
            argv[index] = b"%d" % arg
        elif kind is int or kind is float:
            argv[index] = format_number_argument(arg)
        else:
            return None
    return argv


def count_keys(argv: list, not_integer: str = errors.NOT_INTEGER) -> int:
    """numkeys of EVAL/FCALL argv (at index 2), with Redis's checks (FCALL words a count that
    is no integer differently: `not_integer`)."""
    numkeys = _SMALL_COUNTS.get(argv[2])
    if numkeys is not None and numkeys <= len(argv) - 3:
        return numkeys
    numkeys = parse_int(argv[2], not_integer)
    if numkeys > len(argv) - 3:
        raise RedisError(errors.NUMKEYS_GREATER)
    if numkeys < 0:
        raise RedisError(errors.NUMKEYS_NEGATIVE)
    return numkeys

