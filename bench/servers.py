"""Servers under benchmark, started on free loopback ports, with their CPU time readable.

CPU time comes from /proc/<pid>/task/*/schedstat (nanoseconds on CPU, all threads): steadier
than requests/s on a shared machine, and fine-grained enough for short runs.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

# The repository's root, for tests.support (benchmarks run as scripts, from bench/).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.support.servers import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has had so far, all its threads."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def wait_ready(port: int, timeout: float = 15.0) -> float:
    """Poll with PING until the server answers; returns the moment it first did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return time.perf_counter()
        except OSError:
            time.sleep(0.001)
    raise RuntimeError(f"no PONG from port {port} within {timeout}s")


class BenchServer:
    name = "server"

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.started_in: float = 0.0

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict | None:
        """The server's environment (None: this process's)."""
        return None

    def workdir(self) -> str:
        return ROOT

    def start(self) -> "BenchServer":
        began = time.perf_counter()
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=self.workdir(), env=self.environment())
        self.started_in = wait_ready(self.port) - began
        return self

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        return cpu_seconds(self.proc.pid)

    def rss_bytes(self) -> int:
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Redis(BenchServer):
    name = "redis"

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")

    def command(self) -> list[str]:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server is not installed (apt-get install -y redis-server)")
        return [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--loglevel", "warning"]

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Minired(BenchServer):
    name = "minired"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minired", "--port", str(self.port), "--loglevel", "warning"]


class Checkout(BenchServer):
    """minired from a checkout given as TREE (a directory holding minired/, built in place:
    the old build of an old-against-new run), or TREE:pure for its uncompiled build."""

    def __init__(self, target: str) -> None:
        super().__init__()
        tree, _, mode = target.partition(":")
        self.tree = os.path.abspath(tree)
        self.pure = mode == "pure"
        self.name = self.tree + (":pure" if self.pure else "")
        self.dir = tempfile.mkdtemp(prefix="bench-minired-")

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minired", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--loglevel", "warning"]

    def workdir(self) -> str:
        # Not this checkout: `python -m` puts the working directory first on the path, ahead
        # of the tree's.
        return self.dir

    def environment(self) -> dict:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([self.tree, os.path.join(self.tree, "queue")])}
        env.pop("MINIRED_PURE_PYTHON", None)
        if self.pure:
            env["MINIRED_PURE_PYTHON"] = "1"
        return env

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Floor(BenchServer):
    name = "floor"

    def command(self) -> list[str]:
        return [sys.executable, os.path.join(ROOT, "bench", "floor_server.py"), str(self.port)]
