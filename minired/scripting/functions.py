"""Redis 7 functions: libraries loaded with FUNCTION LOAD and called with FCALL / FCALL_RO.

Libraries live in their own Lua runtime, as in Redis (function globals differ from EVAL's: no
KEYS/ARGV, no debugger helpers). Library code runs once, at load, against an API that only
registers functions and logs; the functions it registers then run with the full redis API.
"""
from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from minired.data.glob import glob_match
from minired.engine.shebang import SCRIPT_FLAGS
from minired.features.rdb_format import BadData, Reader, encode_length, footer_ok, seal
from minired.protocol import errors, resp
from minired.protocol.errors import RedisError
from minired.protocol.resp import ProtocolError, split_inline
from minired.scripting.engine import Run, count_keys
from minired.scripting.sandbox import Sandbox

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.scripting.engine import ScriptEngine

LOAD_TIMEOUT_SECONDS = 0.5
_NAME = re.compile(rb"[A-Za-z0-9_]+\Z")
# FUNCTION DUMP payload: RDB_OPCODE_FUNCTION2 entries, then RDB version 10 and a CRC64.
_OPCODE_FUNCTION2 = 0xF5


class Function:
    __slots__ = ("name", "callback", "description", "flags", "library")

    def __init__(self, name: bytes, callback: Any, description: bytes | None, flags: list[str],
                 library: "Library") -> None:
        self.name = name
        self.callback = callback
        self.description = description
        self.flags = flags
        self.library = library


class Library:
    __slots__ = ("name", "code", "functions")

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name
        self.code = code
        self.functions: dict[bytes, Function] = {}


def parse_metadata(code: bytes) -> tuple[bytes, bytes]:
    """(library name, code after the first line) from the `#!lua name=<lib>` first line, which
    Redis splits as it splits arguments (quotes, any blank), with Redis's errors in its order."""
    if not code.startswith(b"#!"):
        raise RedisError(errors.FUNCTION_MISSING_METADATA)
    end = code.find(b"\n")
    if end < 0:
        raise RedisError(errors.FUNCTION_INVALID_METADATA)
    try:
        parts = split_inline(code[:end])
    except ProtocolError:  # unbalanced quotes
        parts = []
    if not parts:
        raise RedisError(errors.FUNCTION_INVALID_METADATA)
    engine = parts[0][2:]
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise RedisError(errors.FUNCTION_NAME_TWICE)
            name = part[5:]
        else:
            raise RedisError(errors.FUNCTION_BAD_METADATA.format(part.decode("utf-8", "replace")))
    if name is None:
        raise RedisError(errors.FUNCTION_NO_NAME)
    if not _NAME.match(name):
        raise RedisError(errors.FUNCTION_BAD_NAME)
    if engine.lower() != b"lua":
        raise RedisError(errors.FUNCTION_ENGINE_NOT_FOUND.format(engine.decode("utf-8", "replace")))
    return name, code[end:]


class FunctionLibraries:
    def __init__(self, engine: "ScriptEngine") -> None:
        self.engine = engine
        self.libraries: dict[bytes, Library] = {}
        # Every library's functions by lowercased name: FCALL finds a function whatever the case
        # (Redis's function dict compares names case-insensitively, its libraries' dicts and
        # library names do not). Of two names one library spells differently, the first wins.
        self.functions: dict[bytes, Function] = {}
        self._sandbox: Sandbox | None = None
        # While a library loads: where register_function records, and the load's deadline.
        self._loading: Library | None = None
        self._load_deadline = 0.0

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox("function", self.engine)
        return self._sandbox

    def vm_memory(self) -> int:
        """INFO's used_memory_vm_functions: the libraries runtime's heap beyond its own code."""
        if self._sandbox is None:
            return 0
        return max(0, self._sandbox.lua.get_memory_used() - self._sandbox.code_memory)

    # --- loading ---------------------------------------------------------------------------------

    def load(self, code: bytes, replace: bool) -> bytes:
        name, body = parse_metadata(code)
        existing = self.libraries.get(name)
        if existing is not None and not replace:
            raise RedisError(errors.FUNCTION_LIBRARY_EXISTS.format(name.decode("utf-8", "replace")))
        library = self._compile(name, code, body)
        for fname in library.functions:
            owner = self.functions.get(fname.lower())
            if owner is not None and owner.library is not existing:
                raise RedisError(errors.FUNCTION_EXISTS.format(fname.decode("utf-8", "replace")))
        if existing is not None:
            self._remove(existing)
        self._add(library)
        return name

    def _compile(self, name: bytes, code: bytes, body: bytes) -> Library:
        sandbox = self.sandbox
        chunk, problem = sandbox.compile(body, b"@user_function")
        if chunk is None:
            raise RedisError(errors.FUNCTION_COMPILE.format(problem))
        library = Library(name, code)
        self._loading = library
        self._load_deadline = time.monotonic() + LOAD_TIMEOUT_SECONDS
        try:
            outcome = sandbox.run_load(chunk)
        finally:
            self._loading = None
        if not outcome[0]:
            message = outcome[1]
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise RedisError(errors.FUNCTION_REGISTERING.format(message))
        if not library.functions:
            raise RedisError(errors.FUNCTION_NONE_REGISTERED)
        return library

    def check_load(self) -> bytes | None:
        """Count-hook check while library code runs at load time."""
        if self._loading is not None and time.monotonic() > self._load_deadline:
            return errors.FUNCTION_LOAD_TIMEOUT.encode()
        return None

    def register(self, name: bytes, callback: Any, description: Any, *flags: bytes) -> Any:
        """redis.register_function, after the Lua side checked the arguments."""
        library = self._loading
        if library is None:
            return errors.FUNCTION_REGISTER_OUTSIDE_LOAD.encode()
        if not _NAME.match(name):
            return errors.FUNCTION_BAD_NAME.encode()
        if name in library.functions:
            return errors.FUNCTION_EXISTS_IN_LIBRARY.encode()
        names = []
        for flag in flags:
            text = flag.decode("utf-8", "replace")
            if text not in SCRIPT_FLAGS:
                return errors.FUNCTION_UNKNOWN_FLAG.encode()
            if text not in names:
                names.append(text)
        names.sort(key=SCRIPT_FLAGS.index)
        library.functions[name] = Function(name, callback, description, names, library)
        return None

    def _add(self, library: Library) -> None:
        self.libraries[library.name] = library
        _link(self.functions, library)

    def _remove(self, library: Library) -> None:
        del self.libraries[library.name]
        _unlink(self.functions, library)

    def delete(self, name: bytes) -> None:
        library = self.libraries.get(name)
        if library is None:
            raise RedisError(errors.FUNCTION_LIBRARY_NOT_FOUND)
        self._remove(library)

    def flush(self) -> None:
        self.libraries.clear()
        self.functions.clear()

    # --- FCALL -----------------------------------------------------------------------------------

    def fcall(self, c: "Client", argv: list, read_only: bool) -> Any:
        function = self.functions.get(argv[1].lower())
        if function is None:
            raise RedisError(errors.FUNCTION_NOT_FOUND)
        numkeys = count_keys(argv, errors.FCALL_BAD_NUMKEYS)
        flags = function.flags
        engine = self.engine
        engine._check_flags(frozenset(flags), read_only, c.flags == "M")
        run = Run(c, function.name, False, read_only or "no-writes" in flags,
                  "allow-oom" in flags, argv)
        sandbox = self.sandbox
        return engine.execute(run, sandbox, sandbox.run_function, function.callback, numkeys,
                              argv[3:])

    # --- FUNCTION LIST / STATS / DUMP / RESTORE --------------------------------------------------

    def list(self, pattern: bytes | None, with_code: bool) -> list:
        out = []
        for library in self.libraries.values():
            if pattern is not None and not glob_match(pattern, library.name, nocase=True):
                continue
            # (maps, as Redis writes them: RESP3 clients get maps, RESP2 ones flat arrays)
            functions = [
                {b"name": f.name, b"description": f.description,
                 # (in the flag table's order, as Redis lists them: a Python set's order
                 # changes with the process's string hash seed)
                 b"flags": resp.OrderedSet(resp.Status(flag.encode()) for flag in SCRIPT_FLAGS
                                           if flag in f.flags)}
                for f in library.functions.values()
            ]
            entry = {b"library_name": library.name, b"engine": b"LUA", b"functions": functions}
            if with_code:
                entry[b"library_code"] = library.code
            out.append(entry)
        return out

    def stats(self) -> dict:
        run = self.engine.current
        running = None
        if run is not None:
            if run.eval_mode:  # (what Redis answers while an EVAL script is busy)
                raise RedisError(errors.BUSY)
            running = {b"name": run.name, b"command": list(run.command),
                       b"duration_ms": int((time.monotonic() - run.started) * 1000)}
        return {b"running_script": running,
                b"engines": {b"LUA": {b"libraries_count": len(self.libraries),
                                      b"functions_count": sum(len(library.functions) for library
                                                              in self.libraries.values())}}}

    def dump(self) -> bytes:
        return seal(b"".join(bytes((_OPCODE_FUNCTION2,)) + encode_length(len(library.code)) + library.code
                             for library in self.libraries.values()))

    def restore(self, payload: bytes, policy: bytes) -> None:
        if policy not in (b"append", b"replace", b"flush"):
            raise RedisError(errors.FUNCTION_RESTORE_POLICY)
        codes = _parse_dump(payload)
        # Compile everything first: a bad payload changes nothing.
        loaded = []
        for code in codes:
            name, body = parse_metadata(code)
            loaded.append(self._compile(name, code, body))
        if policy == b"flush":
            self.flush()
        # As Redis's libraryJoin: every library name is checked (and replaced ones unlinked)
        # before any function name is.
        staged_libraries = dict(self.libraries)
        staged_functions = dict(self.functions)
        for library in loaded:
            old = staged_libraries.pop(library.name, None)
            if old is not None:
                if policy != b"replace":
                    raise RedisError(errors.FUNCTION_RESTORE_LIBRARY_EXISTS.format(
                        library.name.decode("utf-8", "replace")))
                _unlink(staged_functions, old)
        for library in loaded:
            for fname in library.functions:
                if fname.lower() in staged_functions:
                    raise RedisError(errors.FUNCTION_EXISTS.format(fname.decode("utf-8", "replace")))
            staged_libraries[library.name] = library
            _link(staged_functions, library)
        self.libraries = staged_libraries
        self.functions = staged_functions


def _link(functions: dict[bytes, Function], library: Library) -> None:
    for fname, function in library.functions.items():
        functions.setdefault(fname.lower(), function)


def _unlink(functions: dict[bytes, Function], library: Library) -> None:
    for fname in library.functions:
        key = fname.lower()
        owner = functions.get(key)
        if owner is not None and owner.library is library:
            del functions[key]


def _parse_dump(payload: bytes) -> list[bytes]:
    """The library sources in a FUNCTION DUMP payload (one FUNCTION2 opcode + string each)."""
    # Redis's RDB loader treats a zero checksum as "not computed", and so does this reader.
    if not footer_ok(payload, allow_zero_crc=True):
        raise RedisError(errors.FUNCTION_RESTORE_PAYLOAD)
    body = payload[:-10]
    reader = Reader(body)
    codes = []
    try:
        while reader.pos < len(body):
            if reader.byte() != _OPCODE_FUNCTION2:
                raise RedisError(errors.FUNCTION_RESTORE_BAD_DATA)
            codes.append(reader.string())
    except BadData:
        raise RedisError(errors.FUNCTION_RESTORE_PAYLOAD) from None
    return codes
