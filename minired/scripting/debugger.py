"""SCRIPT DEBUG YES|SYNC: Redis's Lua debugger (LDB), as `redis-cli --ldb` drives it.

A client that asked for debugging has its next EVAL run as a session: the script stops at its
first line and the client steers it with debugger commands, read straight from its socket
while the session lasts (debugger.lua has the commands; this module the connection). As in
Redis, a SYNC session holds the whole server until the script ends, and keeps what the script
wrote; a YES session runs in a forked child, so the server goes on serving and the script's
writes vanish with the child. Either way the connection closes after the EVAL's reply.
"""
from __future__ import annotations

import logging
import os
import select
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from minired.protocol import errors, resp
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.scripting.engine import ScriptEngine

log = logging.getLogger("minired")

MAX_COMMAND_BUFFER = 1 << 20  # past this the session ends ("max client buffer reached")
MAX_ARGUMENTS = 1024          # ldbReplParseCommand's limits: arguments, and bytes per argument
_PROTOCOL_ERROR = b"protocol error"
_SEND_TIMEOUT = 5.0           # connSendTimeout(ldb.conn, 5000)
_TERMINATING = (signal.SIGTERM, signal.SIGINT)


class _Interrupted(Exception):
    """SIGTERM or SIGINT arrived while the session waited on its client."""


def parse_command(buffer: bytes) -> tuple[list[bytes] | None, int, bytes | None]:
    """ldbReplParseCommand: (argv, bytes used, None), (None, 0, None) to read more, or
    (None, 0, error). As forgiving as Redis's: text before the '*' is skipped."""
    start = buffer.find(b"*")
    if start < 0:
        return None, 0, _PROTOCOL_ERROR if buffer else None
    end = buffer.find(b"\r\n", start)
    if end < 0:
        return None, 0, None
    count = _atoi(buffer[start + 1:end])
    if count <= 0 or count > MAX_ARGUMENTS:
        return None, 0, _PROTOCOL_ERROR
    position = end + 2
    argv: list[bytes] = []
    while len(argv) < count:
        if position >= len(buffer):
            return None, 0, None
        if buffer[position:position + 1] != b"$":
            return None, 0, _PROTOCOL_ERROR
        end = buffer.find(b"\r\n", position)
        if end < 0:
            return None, 0, None
        length = _atoi(buffer[position + 1:end])
        if length <= 0 or length > MAX_ARGUMENTS:
            return None, 0, _PROTOCOL_ERROR
        position = end + 2
        if position + length + 2 > len(buffer):
            return None, 0, None
        argv.append(buffer[position:position + length])
        position += length
        if buffer[position:position + 2] != b"\r\n":
            return None, 0, _PROTOCOL_ERROR
        position += 2
    return argv, position, None


def _atoi(text: bytes) -> int:
    """C's atoi: the leading digits (after blanks and a sign), 0 when there are none."""
    text = text.lstrip(b" \t\n\v\f\r")
    sign = 1
    if text[:1] in (b"+", b"-"):
        sign = -1 if text[:1] == b"-" else 1
        text = text[1:]
    digits = len(text) - len(text.lstrip(b"0123456789"))
    return sign * int(text[:digits]) if digits else 0


class Session:
    """One debugging session's connection: blocking reads and writes on the client's socket,
    which the event loop does not touch until the session ends."""

    def __init__(self, fd: int, time_limit_ms: int, table_from: Any = list) -> None:
        self.fd = fd
        self.table_from = table_from
        self.buffer = b""
        self.gone = False
        self.time_limit = (time_limit_ms or 5000) / 1000  # Redis's default when unlimited
        self.started = time.monotonic()
        self.refusal: bytes | None = None
        # SIGTERM/SIGINT end a wait on the client (and with it the session: the script runs
        # to its end unstopped), then the server's loop acts on the signal as usual.
        self.waiting = False
        self.interrupted = False

    def interrupt(self, signum: int, frame: Any) -> None:
        self.interrupted = True
        if self.waiting:
            raise _Interrupted()

    def read(self) -> Any:
        """The next debugger command (a Lua table of its arguments), None when the client went
        away, or the text of the error that ends the session."""
        while True:
            argv, used, problem = parse_command(self.buffer)
            if problem is not None:
                self.buffer = b""
                return problem
            if argv is not None:
                self.buffer = b""  # (Redis drops the rest of the buffer too)
                self.started = time.monotonic()  # the time limit counts from the last stop
                return self.table_from(argv)
            if self.interrupted:
                data = b""
            else:
                try:
                    self.waiting = True
                    select.select([self.fd], [], [])
                    data = os.read(self.fd, 1024)
                except BlockingIOError:
                    continue
                except (OSError, _Interrupted):
                    data = b""
                finally:
                    self.waiting = False
            if not data:
                self.gone = True
                return None
            self.buffer += data
            if len(self.buffer) > MAX_COMMAND_BUFFER:
                self.buffer = b""
                return b"max client buffer reached"

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + _SEND_TIMEOUT
        while view and not self.gone:
            try:
                self.waiting = True
                _, ready, _ = select.select([], [self.fd], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    return  # (Redis ignores a failed write: the next read finds the problem)
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                continue
            except (OSError, _Interrupted):
                return
            finally:
                self.waiting = False

    def expired(self) -> bool:
        """The script has run past the time limit since the session started or last stopped."""
        return time.monotonic() - self.started >= self.time_limit

    def take_refusal(self) -> bytes | None:
        refusal, self.refusal = self.refusal, None
        return refusal


class LuaDebugger:
    """The clients that asked for SCRIPT DEBUG, and the sessions their EVALs run."""

    def __init__(self, engine: "ScriptEngine") -> None:
        self.engine = engine
        self.children: set[int] = set()

    def set_mode(self, c: "Client", mode: bytes) -> None:
        """SCRIPT DEBUG YES|SYNC|NO for this client."""
        if mode == b"no":
            self.engine.debugging.pop(c.id, None)
        else:
            self.engine.debugging[c.id] = mode

    def eval(self, c: "Client", argv: list, by_sha: bool, read_only: bool) -> Any:
        """EVAL from a client in debug mode (evalGenericCommandWithDebugging)."""
        if by_sha:
            raise RedisError(errors.LDB_EVALSHA)
        mode = self.engine.debugging.pop(c.id)
        if mode == b"yes":
            return self._forked(c, argv, read_only)
        log.warning("Redis synchronous debugging eval session started")
        try:
            return self._session(c, argv, read_only)
        finally:
            log.warning("Redis synchronous debugging eval session ended")
            c.close_after_reply = True

    def _session(self, c: "Client", argv: list, read_only: bool) -> Any:
        engine = self.engine
        sandbox = engine.eval_sandbox
        session = Session(c.fd, engine.server.config.busy_reply_threshold_ms, sandbox.table_from)
        guard = sandbox.guard_callback
        source = argv[1].rstrip(b"\r\n").split(b"\n")
        with open(os.path.join(os.path.dirname(__file__), "debugger.lua"), "rb") as f:
            code = f.read()
        lua = sandbox.api[b"load_debugger"](
            code, guard(session.read), guard(session.write), guard(session.expired),
            guard(session.take_refusal))
        previous = {}
        if threading.current_thread() is threading.main_thread():  # (not in-process, embed.py)
            previous = {signum: signal.signal(signum, session.interrupt) for signum in _TERMINATING}
        engine.debug_session = session
        lua[b"begin"](sandbox.table_from(source))
        try:
            return engine.eval(c, argv, False, read_only)
        finally:
            engine.debug_session = None
            lua[b"finish"]()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _forked(self, c: "Client", argv: list, read_only: bool) -> Any:
        """A YES session: the child runs it and answers; the parent lets go of the client."""
        try:
            pid = os.fork()
        except OSError as exc:
            raise RedisError(errors.LDB_FORK_FAILED.format(os.strerror(exc.errno or 0))) from None
        if pid:
            self.children.add(pid)
            threading.Thread(target=self._reap, args=(pid,), daemon=True,
                             name="minired-ldb-reaper").start()
            c.close()
            return None
        try:
            self._child(c, argv, read_only)
        finally:
            os._exit(0)

    def _child(self, c: "Client", argv: list, read_only: bool) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in _TERMINATING:
                signal.signal(signum, signal.SIG_IGN)
            signal.set_wakeup_fd(-1)  # the pipe is the parent's loop's
        for listener in self.engine.server.listeners:
            for sock in listener.sockets or ():
                try:
                    os.close(sock.fileno())
                except OSError:
                    pass
        log.warning("Redis forked for debugging eval")
        try:
            reply: Any = self._session(c, argv, read_only)
        except RedisError as exc:
            reply = exc
        Session(c.fd, 0).write(resp.encode(reply, c.protocol))
        log.warning("Lua debugging session child exiting")

    def _reap(self, pid: int) -> None:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        self.children.discard(pid)

    def kill_sessions(self) -> None:
        """At shutdown (ldbKillForkedSessions)."""
        for pid in list(self.children):
            log.warning("Killing debugging session %d", pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
