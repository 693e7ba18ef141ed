"""Start minired from Python: in this process (a background thread with its own event loop) or
as a subprocess, on a free port; read its url; stop it.

    with EmbeddedServer(time_control=True) as srv:
        r = redis.Redis.from_url(srv.url)

    with SubprocessServer() as srv:
        ...
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from typing import Any

from minired.engine.config import Config


class EmbeddedServer:
    """A minired server running in a daemon thread of the current process."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", time_control: bool = False,
                 use_uvloop: bool = True, fault_injection: bool = False, cluster: int = 0,
                 cluster_control: bool = False, cluster_replicas: int = 0,
                 cluster_spares: int = 0, **config: Any) -> None:
        self.host = host
        self.port = port
        self.use_uvloop = use_uvloop
        self.config = Config(bind=host, port=port, time_control=time_control,
                             fault_injection=fault_injection, **config)
        # Without a `dir`, a directory of its own for what SAVE, BGSAVE or DEBUG RELOAD write
        # (made at start, removed at stop): a fresh server per test, as a redis-server in a
        # fresh directory, rather than one that reads and writes the caller's working directory.
        self._private_dir: Any = None  # (a weakref.finalize that removes it)
        self._wants_private_dir = "dir" not in config
        self.server: Any = None
        # cluster=N: N masters on this thread's loop (minired/features/cluster.py), `server` the first;
        # cluster_control allows MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER.
        self.cluster = cluster
        self.cluster_control = cluster_control
        self.cluster_replicas = cluster_replicas  # replicas per master (--cluster-replicas)
        self.cluster_spares = cluster_spares  # nodes in no cluster yet (--cluster-spares)
        self.servers: list = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """The server's URL; for a cluster, its first node's (a startup node for clients)."""
        return f"redis://{self.host}:{self.port}"

    @property
    def nodes(self) -> list[tuple[str, int]]:
        """(host, port) of every node: the one server, or each node of a cluster (the masters,
        then their replicas)."""
        return [(server.host, server.port) for server in self.servers]

    @property
    def urls(self) -> list[str]:
        return [f"redis://{host}:{port}" for host, port in self.nodes]

    def start(self, timeout: float = 10.0) -> "EmbeddedServer":
        if self._wants_private_dir and self._private_dir is None:
            import shutil
            import tempfile
            import weakref

            directory = tempfile.mkdtemp(prefix="minired-")
            # Removed at stop, or else when the server is collected or the process exits (a
            # test that never stops its server leaves nothing behind either).
            self._private_dir = weakref.finalize(self, shutil.rmtree, directory, True)
            self.config.set("dir", directory)
            self.config.set("temporary-dir", "yes")
        self._thread = threading.Thread(target=self._run, name=f"minired-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("minired did not start in time")
        if self._error is not None:
            raise RuntimeError(f"minired failed to start: {self._error}") from self._error
        return self

    def _new_loop(self) -> asyncio.AbstractEventLoop:
        if self.use_uvloop:
            try:
                import uvloop
                return uvloop.new_event_loop()
            except ImportError:
                pass
        return asyncio.new_event_loop()

    def _run(self) -> None:
        from minired.engine.server import Server
        from minired.startup import prepare_server

        loop = self._loop = self._new_loop()
        asyncio.set_event_loop(loop)
        try:
            if self.cluster:
                from minired.startup import node_configs, start_cluster

                self.servers = loop.run_until_complete(start_cluster(
                    node_configs(self.config,
                                 self.cluster * (1 + self.cluster_replicas) + self.cluster_spares),
                    self.host, self.cluster_control, self.cluster_replicas, self.cluster_spares))
                self.server = self.servers[0]
            else:
                self.server = prepare_server(Server(self.config))
                loop.run_until_complete(self.server.start(self.host, self.port,
                                                          self.config.get("unixsocket") or None))
                self.servers = [self.server]
            self.port = self.server.port
        except BaseException as exc:  # reported to the thread that called start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_until_complete(asyncio.gather(
                *(server.serve_until_stopped() for server in self.servers)))
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    def call(self, fn, *args) -> Any:
        """Run fn(*args) on the server's loop thread and return its result (direct data access)."""
        if self._loop is None:
            raise RuntimeError("server not started")
        done = threading.Event()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:
                box["error"] = exc
            done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait()
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def advance_clock(self, ms: int) -> int:
        """MINIRED ADVANCE from Python: the clock moves, and keys whose time passed expire."""
        return self.call(self.server.advance_clock, ms)

    def flushall(self) -> None:
        for server in self.servers:
            self.call(server.keyspace.flushall)

    @property
    def faults(self) -> "Faults":
        """Fault injection from Python (the server needs fault_injection=True)."""
        if self.server is None or self.server.faults is None:
            raise RuntimeError("fault injection is off: EmbeddedServer(fault_injection=True)")
        return Faults(self)

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self.server is not None and self._thread is not None \
                and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._shutdown)
            self._thread.join(timeout)
        if self._private_dir is not None:
            self._private_dir()
            self._private_dir = None
            self.config.set("dir", ".")
            self.config.set("temporary-dir", "no")

    def _shutdown(self) -> None:
        for server in self.servers:
            server.request_shutdown()

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class FaultRule:
    """A rule `Faults.add` made, with its counters (kept after COUNT removed it): `with` it to
    remove it at the end of the block."""

    def __init__(self, faults: "Faults", rule: Any) -> None:
        self.faults = faults
        self._rule = rule  # minired.features.faults.Rule, updated on the server's loop
        self.id = rule.id

    @property
    def matched(self) -> int:
        return self._rule.matched

    @property
    def fired(self) -> int:
        return self._rule.fired

    def remove(self) -> bool:
        return self.faults.remove(self.id)

    def __enter__(self) -> "FaultRule":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class RemoteFaultRule(FaultRule):
    """A rule `RemoteFaults.add` made: its counters are read with MINIRED FAULT LIST. Once
    the rule is gone (COUNT, FOR, DEL) they are the last ones read, and `fired` its COUNT if it
    had one (COUNT removes a rule the moment it has fired that often)."""

    def __init__(self, faults: "RemoteFaults", rule_id: int, count: int | None) -> None:
        self.faults = faults
        self.id = rule_id
        self._count = count
        self._last = {b"matched": 0, b"fired": 0}

    def _counters(self) -> dict:
        for entry in self.faults.list():
            if entry[b"id"] == self.id:
                self._last = entry
                return entry
        if self._count:
            self._last = {**self._last, b"fired": self._count}
        return self._last

    @property
    def matched(self) -> int:
        return self._counters()[b"matched"]

    @property
    def fired(self) -> int:
        return self._counters()[b"fired"]


class Faults:
    """MINIRED FAULT for an EmbeddedServer, run on its loop: the same rules as over the wire.

        with srv.faults.add("ERROR", "LOADING Redis is loading the dataset in memory",
                            command="get", count=1):
            ...
    """

    _OPTIONS = (("command", "COMMAND"), ("key", "KEY"), ("client_name", "CLIENT-NAME"),
                ("client_id", "CLIENT-ID"), ("script", "SCRIPT"), ("in_script", "IN-SCRIPT"),
                ("count", "COUNT"), ("after", "AFTER"), ("probability", "PROBABILITY"),
                ("seed", "SEED"), ("jitter", "JITTER"), ("for_ms", "FOR"))

    def __init__(self, server: EmbeddedServer) -> None:
        self._server = server
        self._injector = server.server.faults

    @classmethod
    def words(cls, action: str, args: tuple, match: dict) -> list[bytes]:
        """MINIRED FAULT ADD's arguments: the action and its arguments as over the wire, then
        the matches given as keywords."""
        words: list[Any] = [action, *args]
        for keyword, option in cls._OPTIONS:
            value = match.pop(keyword, None)
            if value is None:
                continue
            if isinstance(value, bool):
                value = "yes" if value else "no"
            elif isinstance(value, (list, tuple)):
                value = ",".join(value)
            words += [option, value]
        if match:
            raise TypeError(f"unknown fault options {sorted(match)}")
        return [w if isinstance(w, bytes) else str(w).encode() for w in words]

    def add(self, action: str, *args: Any, **match: Any) -> FaultRule:
        """A rule: the action and its argument as over the wire, then the matches as keywords
        (command="get" or ["get", "set"], key, client_name, client_id, script, in_script=True,
        count, after, probability, seed, jitter, for_ms)."""
        argv = self.words(action, args, match)
        return FaultRule(self, self._server.call(self._injector.add, argv))

    def list(self) -> list:
        return self._server.call(self._injector.entries)

    def remove(self, rule_id: int) -> bool:
        return self._server.call(self._injector.remove, rule_id)

    def reset(self) -> None:
        self._server.call(self._injector.reset)

    def kill_clients(self, kind: str | None = None) -> int:
        return self._server.call(self._injector.kill_clients,
                                 kind.encode() if kind is not None else None)

    def loading(self, ms: int) -> None:
        self._server.call(self._injector.start_loading, ms)


class RemoteFaults:
    """The same as `Faults`, for a server in another process: MINIRED FAULT commands over one
    connection of its own, opened once and kept (so REFUSE and STALL-ACCEPT, which act on new
    connections, never take it, and KILL-CLIENTS spares it). Errors are redis-py's."""

    def __init__(self, host: str, port: int) -> None:
        import redis  # a dependency of minired, needed only here

        self._redis = redis.Redis(host=host, port=port, single_connection_client=True,
                                  retry=None)

    def _fault(self, *args: Any) -> Any:
        return self._redis.execute_command("MINIRED", "FAULT", *args)

    def add(self, action: str, *args: Any, **match: Any) -> RemoteFaultRule:
        count = match.get("count")
        rule_id = self._fault("ADD", *Faults.words(action, args, match))
        return RemoteFaultRule(self, rule_id, count)

    def list(self) -> list:
        # (a map under RESP3, a flat array under RESP2, which redis-py may leave as it is)
        return [entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))
                for entry in self._fault("LIST")]

    def remove(self, rule_id: int) -> bool:
        return bool(self._fault("DEL", rule_id))

    def reset(self) -> None:
        self._fault("RESET")

    def kill_clients(self, kind: str | None = None) -> int:
        return self._fault("KILL-CLIENTS", *(("TYPE", kind) if kind is not None else ()))

    def loading(self, ms: int) -> None:
        self._fault("LOADING", ms)

    def close(self) -> None:
        self._redis.close()


class SubprocessServer:
    """minired in a child process, started with `python -m minired --port 0`; the port is read
    from its ready line. `cluster=N` starts a cluster of N masters (`--cluster N`): the line
    names every node (`addresses`), and `port` is the first one's."""

    def __init__(self, *args: str, time_control: bool = False, host: str = "127.0.0.1",
                 fault_injection: bool = False, cluster: int = 0,
                 cluster_control: bool = False, cluster_replicas: int = 0,
                 cluster_spares: int = 0) -> None:
        self.host = host
        self.port = 0
        self.args = list(args)
        if time_control:
            self.args.append("--time-control")
        if fault_injection:
            self.args.append("--fault-injection")
        if cluster:
            self.args += ["--cluster", str(cluster)]
        if cluster_control:
            self.args.append("--cluster-control")
        if cluster_replicas:
            self.args += ["--cluster-replicas", str(cluster_replicas)]
        if cluster_spares:
            self.args += ["--cluster-spares", str(cluster_spares)]
        self.fault_injection = fault_injection
        self.addresses: list[tuple[str, int]] = []
        self.proc: subprocess.Popen | None = None
        self._faults: RemoteFaults | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def start(self, timeout: float = 15.0) -> "SubprocessServer":
        # The log would go to stdout, which is read only up to the ready line: to /dev/null
        # instead, unless the arguments name a log file.
        cmd = [sys.executable, "-m", "minired", "--port", "0", "--bind", self.host,
               "--logfile", os.devnull, *self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode(errors="replace")
            if not line:
                break
            if " ready on " in line:
                for word in line.split(" ready on ")[1].split():
                    host, _, port = word.rpartition(":")
                    if not port.isdigit():
                        break  # the addresses end where "(cluster of N masters)" or pid= start
                    self.addresses.append((host, int(port)))
                self.port = self.addresses[0][1]
                return self
        self.stop()
        raise RuntimeError("minired subprocess did not report ready")

    @property
    def faults(self) -> RemoteFaults:
        """Fault injection from Python, as EmbeddedServer's (the server needs
        fault_injection=True): MINIRED FAULT over a connection kept for it."""
        if not self.fault_injection:
            raise RuntimeError("fault injection is off: SubprocessServer(fault_injection=True)")
        if self.proc is None or not self.port:
            raise RuntimeError("server not started")
        if self._faults is None:
            self._faults = RemoteFaults(self.host, self.port)
        return self._faults

    def stop(self, timeout: float = 5.0) -> None:
        if self._faults is not None:
            self._faults.close()
            self._faults = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> "SubprocessServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
