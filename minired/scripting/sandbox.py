"""One sandboxed Lua 5.1 runtime (lupa): creation, compilation, runs, and Lua -> reply conversion.

The runtime is created with everything lupa offers for reaching Python switched off, then
`sandbox.lua` builds the environment scripts see (see its header). Python never hands a Python
object to Lua: the callables the environment needs are upvalues of Lua closures, and every
value crossing into Lua is a string, number, boolean, nil or a Lua table.
"""
from __future__ import annotations

import logging
import math
import os
from typing import Any, Callable

import lupa.lua51 as lupa

from minired import REDIS_VERSION
from minired.protocol import errors, resp
from minired.protocol.errors import RedisError
from minired.scripting.memcap import CapGuard

log = logging.getLogger("minired")

LuaError = lupa.LuaError

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63
# Lua's stack takes a few thousand values at once: larger argument lists are passed as tables.
_MAX_VARARGS = 4000


def out_of_memory(exc: BaseException) -> bool:
    """Whether a Lua error is the memory cap: lupa raises LuaMemoryError, the native entry a
    LuaError with Lua's own message."""
    return isinstance(exc, MemoryError) or str(exc) == "not enough memory"


def _refuse_attribute(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("access denied")


def _never_raise(fn: Callable[..., Any], fallback: Any = None) -> Callable[..., Any]:
    """A Python exception crossing into Lua becomes a Lua error *holding the exception object*;
    every callable Lua can reach is guarded so that can never happen."""

    def guarded(*args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException:  # noqa: BLE001 - nothing may cross into Lua
            log.exception("internal error in a Lua bridge function")
            return fallback

    guarded.__name__ = getattr(fn, "__name__", "guarded")
    return guarded


def _lua_callback(cap_guard: CapGuard, fn: Callable[..., Any], fallback: Any = None) -> Any:
    """fn as Lua may call it: never raising (_never_raise), and with the memory cap lifted
    while its result is pushed (memcap.py)."""
    return cap_guard.guard(_never_raise(fn, fallback))


def _library_builder(sandbox: "Sandbox", guard: CapGuard) -> Any:
    """sandbox.lua's build(name) (lualibs.library_builder), which makes each library the first
    time a script reaches it; what its code holds counts as the runtime's own code
    (Sandbox.code_memory), not as memory scripts use."""
    from minired.scripting.lualibs import library_builder

    def note(grown: float) -> None:
        sandbox.code_memory += int(grown)

    return library_builder(sandbox.lua, guard, _lua_callback(guard, note))


def _native_redis_call(lua: Any, bridge: Any, guard: CapGuard) -> tuple | None:
    """luabridge.native_call's (redis.call, redis.pcall, set_entry, encode, NativeCall), or None where
    the native bridge cannot be had here (the uncompiled build); lupa's bridge then gives the
    same replies, slower."""
    try:
        from minired.scripting.luabridge import native_call
    except ImportError:
        return None
    return native_call(lua, bridge.call_native, _lua_callback(guard, bridge.unbox))


def _gathered_call(cap_guard: CapGuard, call: Callable[..., Any]) -> tuple:
    """(gather, call_gathered) for lupa's bridge: a redis.call with more arguments than one Lua
    call to Python can carry passes them to gather in slices, then runs call_gathered."""
    gathered: list = []

    def gather(*values: Any) -> None:
        gathered.extend(values)

    def call_gathered() -> Any:
        arguments = gathered[:]
        gathered.clear()
        return call(*arguments)

    return (_lua_callback(cap_guard, gather),
            _lua_callback(cap_guard, call_gathered, (errors.SCRIPT_INTERNAL_ERROR.encode(), b"err")))


# A cap on what one Lua runtime may allocate. Redis has none, but a hostile or runaway script
# (string.rep('x', 2^34) is one C call, so the busy-script hook never gets a chance) must not
# take a developer's machine down with the server: past the cap the allocation fails inside
# Lua with "not enough memory", as a script error.
LUA_MAX_MEMORY = 2 << 30

# The garbage a runtime may gather before the engine's periodic check has it collected (see
# Sandbox.settle_garbage): Redis's unit/scripting wants INFO's used_memory_lua under 100 KB after
# 10,000 small EVALs, and one check comes every 50 runs. Each collection walks the whole heap
# (~115 KB, mostly minired's own Lua code; ~240 KB once scripts have reached cjson, cmsgpack,
# bit and struct, built on first use), so its cost per run falls as the bound rises: at
# 48 KB it was ~4,800 instructions of an EVALSHA (valgrind, compare.py's script), at 64 KB a
# quarter less, with the garbage peaking near 80 KB over unit/scripting's 10,000 EVALs.
GARBAGE_BOUND = 64 << 10


class Sandbox:
    """A Lua runtime holding one environment, for EVAL scripts (`mode="eval"`) or for function
    libraries (`mode="function"`). `bridge` supplies the Python side of the redis API;
    `native=False` keeps redis.call on lupa's bridge even where luabridge is compiled."""

    __slots__ = ("mode", "max_memory", "lua", "api", "run_eval", "run_function",
                 "_run_load", "table_from", "native", "_native", "cap_guard", "live_memory",
                 "code_memory")

    def __init__(self, mode: str, bridge: Any, native: bool = True) -> None:
        self.mode = mode
        self.max_memory = LUA_MAX_MEMORY
        self.live_memory = 0  # the heap after the last collection settle_garbage ran
        self.code_memory = 0  # the heap its own Lua code holds (set once built, grows with libraries)
        lua = lupa.LuaRuntime(encoding=None, register_eval=False, register_builtins=False,
                              unpack_returned_tuples=True, attribute_filter=_refuse_attribute,
                              max_memory=self.max_memory)
        self.lua = lua
        raw_globals = lua.globals()
        # lupa's own bridges: gone before any script exists.
        raw_globals[b"python"] = None
        loaded = raw_globals[b"package"][b"loaded"]
        loaded[b"python"] = None
        # A plain read: importlib.resources would cost the first script ~5 ms of imports.
        with open(os.path.join(os.path.dirname(__file__), "sandbox.lua"), "rb") as f:
            source = f.read()
        prelude = lua.compile(source, name=b"=minired.sandbox")
        major, minor, patch = (int(part) for part in REDIS_VERSION.split("."))
        self.cap_guard = cap_guard = CapGuard(lua, self.max_memory)
        build_library = _library_builder(self, cap_guard)
        native_calls = _native_redis_call(lua, bridge, cap_guard) if native else None
        self.native = native_calls is not None
        py_call, py_pcall, set_entry, py_encode, self._native = (
            native_calls or (cap_guard.guard(bridge.call), None, None, None, None))
        self.api = prelude(
            mode.encode(), REDIS_VERSION.encode(), (major << 16) | (minor << 8) | patch,
            build_library,
            py_call,  # guards itself (both kinds): it is the hot path
            _lua_callback(cap_guard, bridge.acl_check, (errors.SCRIPT_INTERNAL_ERROR.encode(), b"err")),
            _lua_callback(cap_guard, bridge.check),
            _lua_callback(cap_guard, bridge.sha1hex, b""),
            _lua_callback(cap_guard, bridge.log),
            _lua_callback(cap_guard, bridge.setresp),
            _lua_callback(cap_guard, bridge.set_repl),
            _lua_callback(cap_guard, bridge.random, 0.0),
            _lua_callback(cap_guard, bridge.randomseed),
            _lua_callback(cap_guard, bridge.register_function, errors.SCRIPT_INTERNAL_ERROR.encode()),
            py_pcall,
            py_encode,
            *_gathered_call(cap_guard, bridge.call),
        )
        # run_eval / run_function(fn, null, numkeys, *keys_and_args): see `start`.
        self.run_eval = self.api[b"run_eval"]
        self.run_function = self.api[b"run_function"]
        self._run_load = self.api[b"run_load"]
        self.table_from = lua.table_from
        if set_entry is not None:
            set_entry(self.api[b"run_native"], self.api[b"cached"], self.api[b"hold"])
        # Nothing reachable by name is left over: the state's globals are now the proxy.
        lua.gccollect()
        self.code_memory = lua.get_memory_used()

    # --- compiling and running -----------------------------------------------------------------

    def compile(self, source: bytes, chunkname: bytes) -> tuple[Any, str | None]:
        """(function, None) or (None, Lua's compile error message)."""
        try:
            function = self.lua.compile(source, name=chunkname)
        except LuaError as exc:
            return None, _lua_error_text(exc)
        return self._without_tail_calls(function), None

    def _without_tail_calls(self, function: Any) -> Any:
        """The same function with its tail calls compiled as plain calls.

        Redis's redis.call and libraries are C functions, which Lua never tail-calls, so an
        error in `return redis.call(...)` is reported at the script's line. Ours are Lua
        closures: a tail call would drop the script's frame and with it the error position.
        Turning OP_TAILCALL into OP_CALL (the OP_RETURN after it already returns every result)
        keeps the frame and changes nothing else a script can observe.
        """
        code = self.api[b"dump"](function)
        patched = patch_tail_calls(code)
        if patched == code:
            return function
        return self.api[b"load_binary"](patched, b"=")

    def start(self, runner: Any, fn: Any, null: bytes, numkeys: int, arguments: list) -> tuple:
        """Run `fn` with KEYS = arguments[:numkeys] and ARGV = the rest; `runner` is
        `run_eval` or `run_function`, `null` the caller's null frame. The outcome is
        (True, value) for a plain value, (True, None, b"err", text, counted) for an error
        table, (True, None, b"ok", text) for a status table, (True, None, b"raw", resp[,
        counted, nfresh, fresh]) for another table, encoded by the Lua side with the errors
        it holds (sandbox.lua's encode_reply), or (False, message[, source, line, counted])."""
        if len(arguments) > _MAX_VARARGS:
            table = self.table_from
            return runner(fn, null, -1, table(arguments[:numkeys]), table(arguments[numkeys:]))
        return runner(fn, null, numkeys, *arguments)

    def guard_callback(self, fn: Callable[..., Any], fallback: Any = None) -> Any:
        """fn as Lua may call it (see _lua_callback): for the debugger's I/O."""
        return _lua_callback(self.cap_guard, fn, fallback)

    def remember(self, sha: bytes, fn: Any) -> None:
        """Make an EVAL script known to run_cached (the native entry) by its sha."""
        if self._native is not None:
            self.api[b"cache"](sha, fn)

    def settle_garbage(self) -> None:
        """Collect the garbage once it has reached GARBAGE_BOUND since the last collection; the
        engine asks every 50 runs, where Redis steps its collector (LUA_GC_CYCLE_PERIOD).

        Redis's heap holds only what scripts made, so its step of 50 KB ends a whole cycle
        cheaply. This heap also holds minired's own Lua code (~85 KB of sandbox, and up to
        ~130 KB of libraries once scripts reach them, all of which Redis has in C), which every
        cycle walks: stepping as Redis does cost an EVALSHA
        ~7,600 instructions (valgrind, compare.py's script), a cycle every ~150 runs done in
        increments. One full collection per GARBAGE_BOUND of garbage keeps the same bound on
        what piles up (used_memory_lua) for a walk of the heap every ~130 such runs."""
        lua = self.lua
        if lua.get_memory_used() - self.live_memory >= GARBAGE_BOUND:
            lua.gccollect()
            self.live_memory = lua.get_memory_used()

    def run_cached(self, sha: bytes, null: bytes, numkeys: int, arguments: list) -> tuple | None:
        """`start(run_eval, <the script remembered as sha>, ...)` through the native entry, or
        None where it cannot be used (then `start` must)."""
        if self._native is None:
            return None
        outcome = self._native.run(sha, null, numkeys, arguments)
        if outcome is None:
            return None
        if len(outcome) == 3 and outcome[2] == b"pending":
            return self.api[b"take_pending"]()
        return outcome

    def run_load(self, chunk: Any) -> tuple:
        return self._run_load(chunk)

    # --- Lua values -> reply values ------------------------------------------------------------

    def to_reply(self, value: Any, script_resp: int) -> Any:
        """Convert a script's plain return value as Redis's luaReplyToRedisReply does (tables
        are converted on the Lua side: see sandbox.lua's encode_reply)."""
        kind = type(value)
        if kind is bytes:
            return value
        if kind is int:
            return value if _INT64_MIN <= value < _INT64_MAX else _INT64_MIN
        if kind is float:
            return _truncate(value)
        if kind is bool:
            if script_resp == 2:
                return 1 if value else None
            return value
        return None  # nil, and what has no reply (a function, a coroutine, userdata)

    @staticmethod
    def shaped_reply(shape: tuple) -> Any:
        """The reply for a status or error table at the top of a result: (b"ok", text) or
        (b"err", text, counted), their texts already as Redis writes them (sandbox.lua)."""
        if shape[0] == b"ok":
            text = shape[1]
            return resp.OK if text == b"OK" else resp.Status(text)
        return resp_error(shape[1], shape[2] is True)


def _truncate(value: float) -> int:
    """(long long) of a double, as x86-64 does it: out of range and NaN become INT64_MIN."""
    if value != value or not -9.223372036854775808e18 <= value < 9.223372036854775808e18:
        return _INT64_MIN
    return int(value)


def resp_error(message: bytes | str, counted: bool = False) -> Any:
    if isinstance(message, bytes):
        message = message.decode("utf-8", "surrogateescape")  # (encoded back as it was)
    return RedisError(message, counted)


def _lua_error_text(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text)


def format_number_argument(value: Any) -> bytes:
    """A Lua number passed to redis.call, formatted as Redis does ("%.17g")."""
    if type(value) is int:
        if -10**17 < value < 10**17:
            return b"%d" % value
        value = float(value)
    if math.isnan(value):
        return b"-nan" if math.copysign(1.0, value) < 0 else b"nan"
    return b"%.17g" % value


# --- Lua 5.1 bytecode -------------------------------------------------------------------------

_OP_CALL = 28
_OP_TAILCALL = 29


def patch_tail_calls(code: bytes) -> bytes:
    """Rewrite every OP_TAILCALL of a string.dump()ed Lua 5.1 chunk (all nested functions
    included) as OP_CALL. The chunk must come from this runtime (same sizes and endianness)."""
    if code[:4] != b"\x1bLua" or code[4] != 0x51 or len(code) < 12:
        raise ValueError("not a Lua 5.1 chunk")
    little = code[6] == 1
    int_size, size_t_size, instruction_size, number_size = code[7], code[8], code[9], code[10]
    order = "little" if little else "big"
    out = bytearray(code)
    pos = 12

    def read_int(size: int) -> int:
        nonlocal pos
        value = int.from_bytes(code[pos:pos + size], order)
        pos += size
        return value

    def skip_string() -> None:
        nonlocal pos
        length = read_int(size_t_size)
        pos += length

    def function() -> None:
        nonlocal pos
        skip_string()                      # source
        pos += 2 * int_size + 4            # linedefined, lastlinedefined, nups..maxstacksize
        count = read_int(int_size)
        for _ in range(count):
            instruction = int.from_bytes(code[pos:pos + instruction_size], order)
            if instruction & 0x3F == _OP_TAILCALL:
                patched = (instruction & ~0x3F) | _OP_CALL
                out[pos:pos + instruction_size] = patched.to_bytes(instruction_size, order)
            pos += instruction_size
        for _ in range(read_int(int_size)):  # constants
            kind = code[pos]
            pos += 1
            if kind == 1:
                pos += 1
            elif kind == 3:
                pos += number_size
            elif kind == 4:
                skip_string()
        for _ in range(read_int(int_size)):  # nested functions
            function()
        lines = read_int(int_size)             # line info
        pos += lines * int_size
        for _ in range(read_int(int_size)):    # local variables
            skip_string()
            pos += 2 * int_size
        for _ in range(read_int(int_size)):    # upvalue names
            skip_string()

    function()
    return bytes(out)
