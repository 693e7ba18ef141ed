"""Start and stop real servers (Debian's redis-server, minired subprocesses) on free loopback ports."""
from __future__ import annotations

import functools
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Callable

# The ports free_port hands out: below the kernel's ephemeral range (ip_local_port_range,
# 32768-60999 by default), which bind(0) and outgoing connections draw from, so neither can
# take one between its pick and the server's bind; above Redis's Tcl suite's (21111 on). Each
# is handed out once across every process of a run (both xdist workers, nested pytest runs, the
# bench scripts), by a file created exclusively per port, and again only once that reservation
# is old enough that the server it was for has bound it long ago (or gone).
_PORTS = range(23000, 32000)
_RESERVATIONS = os.path.join(tempfile.gettempdir(), f"minired-test-ports-{os.getuid()}")
_RESERVATION_S = 15 * 60
_pick = random.SystemRandom().randrange  # (not `random`: tests seed it, each worker alike)


def free_port() -> int:
    """A loopback port no other process of the run has been given, and free now."""
    os.makedirs(_RESERVATIONS, exist_ok=True)
    for _ in range(2 * len(_PORTS)):
        port = _pick(_PORTS.start, _PORTS.stop)
        if _reserve(os.path.join(_RESERVATIONS, str(port))) and _port_is_free(port):
            return port
    raise RuntimeError(f"no free port left in {_PORTS} (reservations: {_RESERVATIONS})")


def _reserve(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        pass
    try:
        if time.time() - os.stat(path).st_mtime < _RESERVATION_S:
            return False
        # Stale: one process only renames it away (the others find it gone), then creates it.
        stale = f"{path}.{os.getpid()}"
        os.rename(path, stale)
        os.unlink(stale)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except OSError:
        return False


CLUSTER_BUS_OFFSET = 10000  # Redis puts a node's cluster bus on port + 10000


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: frozenset[int] | set[int] = frozenset()) -> int:
    """A free port for a redis-server in cluster mode: its cluster bus (port + 10000) must be
    free too, or the server does not start."""
    while True:
        port = free_port()
        bus = port + CLUSTER_BUS_OFFSET
        if port not in taken and bus < 65536 and _port_is_free(bus):
            return port


class PortTaken(RuntimeError):
    """The server started on a port something else holds: it exited (it could not bind), or
    another process answered there."""


def wait_for_ping(port: int, host: str = "127.0.0.1", timeout: float = 10.0,
                  password: str | None = None,
                  proc: subprocess.Popen | None = None, user: str | None = None) -> None:
    """Until the server answers PING. Without `password`, -NOAUTH counts as an answer; with
    it (and `user`'s name, for an ACL user's), the server must answer PONG once authenticated:
    a server still loading its data answers -NOAUTH before -LOADING, so only the password
    tells loading from ready; and only a PONG lets `proc`'s check below ask whose it is.

    With `proc`, the answer must come from that process (INFO's process_id): a port picked by
    free_port is free when picked, but another test's server (the other xdist worker's, which
    picked the same port) or an outgoing connection may take it before this server binds it.
    PortTaken then, so that the caller can start again on another port."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    auth = b""
    if password is not None:
        words = [b"AUTH", *([user.encode()] if user is not None else []), password.encode()]
        auth = b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise PortTaken(f"the server for port {port} exited ({proc.returncode}) at start")
        try:
            with socket.create_connection((host, port), timeout=1.0) as s:
                s.sendall(auth + b"PING\r\n")
                reply = s.recv(64)
                if auth and reply.startswith(b"+OK\r\n"):
                    reply = reply[5:] or s.recv(64)
                    if reply.startswith(b"+PONG"):
                        _check_pid(s, port, proc)
                        return
                elif not auth and reply.startswith((b"+PONG", b"-NOAUTH")):
                    if reply.startswith(b"+PONG"):
                        _check_pid(s, port, proc)
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.02)
    raise RuntimeError(f"server on port {port} did not answer PING within {timeout}s: {last!r}")


def _check_pid(s: socket.socket, port: int, proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    s.sendall(b"INFO server\r\n")
    data = b""
    found = None
    while found is None:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        found = re.search(rb"process_id:(\d+)\r\n", data)
    if found is None or int(found.group(1)) != proc.pid:
        raise PortTaken(f"another process answers on port {port}")


START_ATTEMPTS = 5


def start_on_free_port(argv: Callable[[int], list[str]], *, password: str | None = None,
                       user: str | None = None, timeout: float = 10.0,
                       **popen) -> tuple[subprocess.Popen, int]:
    """Start a server as `argv(port)` (its arguments for a port free_port picks) and wait for
    its PONG, from that process: (process, port). A server that wants a password needs it here
    (and `user`), else its -NOAUTH ends the wait before the process can be asked its pid.

    A test that starts its own server starts it so, never as Popen then wait_for_ping(port)
    alone: should another process take the port before the server binds it (the other xdist
    worker's server, which picked it too), the PONG comes from that process and the test goes
    on against it, while its own server is still starting or has exited. A signal the test
    sends its server then kills it before it has even opened its log (a FileNotFoundError on
    the log file), or the replies are another server's.

    On PortTaken the attempt is killed (SIGKILL: a signal handler it may have installed logs
    nothing; a log file the next attempt shares keeps at most start-up lines and the bind
    failure) and the server starts again on another port; after START_ATTEMPTS attempts,
    PortTaken (a server that exits at start for another reason ends there too)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        port = free_port()
        proc = subprocess.Popen(argv(port), **popen)
        try:
            wait_for_ping(port, password=password, user=user, timeout=timeout, proc=proc)
        except PortTaken:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            if attempt == START_ATTEMPTS:
                raise
            continue
        except BaseException:
            terminate(proc)
            raise
        return proc, port
    raise AssertionError("unreachable")


def terminate(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within `grace` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# The release minired answers like (minired.REDIS_VERSION); the differential tests compare
# with it, and another release differs in replies, error texts and INFO fields.
REFERENCE_SERIES = "7.0."


@functools.cache
def redis_server_binary() -> str:
    """The redis-server on PATH, once it has said it is a 7.0 release."""
    path = shutil.which("redis-server")
    if not path:
        raise RuntimeError(
            "redis-server is not installed; the differential tests need it "
            "(scripts/test.sh installs Debian's redis-server package)"
        )
    banner = subprocess.run([path, "--version"], capture_output=True, text=True,
                            timeout=30).stdout
    version = re.search(r"\bv=(\S+)", banner)
    if version is None or not version.group(1).startswith(REFERENCE_SERIES):
        found = version.group(1) if version else repr(banner.strip())
        raise RuntimeError(
            f"{path} is Redis {found}; the differential tests compare minired with Redis "
            f"{REFERENCE_SERIES}x (7.0.15: Debian bookworm's redis-server package). Put a "
            f"{REFERENCE_SERIES}x redis-server first on PATH."
        )
    return path


def _launched(server, args: list, **popen):
    """Start `server` (a RedisServer or MiniredProcess) as `args` and wait for its PONG. On a
    port taken meanwhile (PortTaken), start it again on a new one, unless the caller chose
    the port."""
    server.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   **popen)
    try:
        wait_for_ping(server.port, proc=server.proc)
    except PortTaken:
        terminate(server.proc)
        if server.fixed_port:
            raise
        server.port = free_cluster_port() if server.cluster else free_port()
        return server.start()
    return server


# For a redis-server that replicas attach to: it starts each full sync at once, as minired does,
# instead of waiting repl-diskless-sync-delay (5 s by default) for more replicas to share it.
NO_SYNC_DELAY = ("--repl-diskless-sync-delay", "0")


class RedisServer:
    """A real redis-server on a free port, in a throwaway directory, persistence off."""

    def __init__(self, *extra_args: str, port: int | None = None) -> None:
        self.cluster = any(a == "--cluster-enabled" and b == "yes"
                           for a, b in zip(extra_args, extra_args[1:]))
        # A port of the caller's is kept; one picked here is picked again if taken at start.
        self.fixed_port = port is not None
        self.port = port or (free_cluster_port() if self.cluster else free_port())
        self.host = "127.0.0.1"
        self.extra_args = list(extra_args)
        self.dir: str | None = None  # made by start() unless the caller gives one, removed by stop()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def start(self) -> "RedisServer":
        # A caller's --dir (it comes later in the arguments, so it wins) is the caller's to
        # remove: a directory made here would be left behind by a test that ends the server
        # with SHUTDOWN instead of stop().
        if self.dir is None and "--dir" not in self.extra_args:
            self.dir = tempfile.mkdtemp(prefix="redis-")
        where = ("--dir", self.dir) if self.dir is not None else ()
        args = [
            redis_server_binary(), "--port", str(self.port), "--bind", self.host,
            "--save", "", "--appendonly", "no", *where,
            "--daemonize", "no", "--loglevel", "warning", *self.extra_args,
        ]
        return _launched(self, args)

    def stop(self) -> None:
        terminate(self.proc)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def start_server(kind: str, *args: str):
    """A redis-server ("redis") or a minired subprocess (anything else) started with args:
    the two sides of a side-by-side test."""
    if kind == "redis":
        return RedisServer(*args).start()
    from minired.embed import SubprocessServer

    return SubprocessServer(*args).start()


class MiniredProcess:
    """minired as a subprocess (python -m minired), on a free port."""

    def __init__(self, *extra_args: str, port: int | None = None) -> None:
        self.cluster = any(a == "--cluster-enabled" and b == "yes"
                           for a, b in zip(extra_args, extra_args[1:]))
        # A port of the caller's is kept; one picked here is picked again if taken at start.
        self.fixed_port = port is not None
        self.port = port or (free_cluster_port() if self.cluster else free_port())
        self.host = "127.0.0.1"
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def start(self) -> "MiniredProcess":
        args = [sys.executable, "-m", "minired", "--port", str(self.port), *self.extra_args]
        return _launched(self, args, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def stop(self) -> None:
        terminate(self.proc)

    def __enter__(self) -> "MiniredProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextmanager
def debug_server_pair(**mini_options):
    """A real redis-server and an in-process minired (with `mini_options`), DEBUG allowed on
    both: a pair of a module's own, since DEBUG changes what the shared servers must not."""
    from minired.embed import EmbeddedServer

    real = RedisServer("--enable-debug-command", "yes").start()
    try:
        mini = EmbeddedServer(port=0, enable_debug_command="yes", **mini_options).start()
        try:
            yield real, mini
        finally:
            mini.stop()
    finally:
        real.stop()
