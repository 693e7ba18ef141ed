"""Subprocess start to first PONG, for several minired checkouts and redis-server, in one run.

    python bench/first_pong.py [--runs 20] [CHECKOUT ...]

Each launch: spawn the server on a free port, connect as soon as the port accepts, send PING,
time the PONG; then kill it. Launches take turns between the servers so that a slow spell of
a shared machine does not land on one of them only; the median is reported. Each CHECKOUT (a
directory holding `minired/`, default: this one) runs as `python -m minired` with PYTHONPATH
set to it, so an old tree and a new one, compiled in place or not, compare in the same run. A
CHECKOUT that is a virtualenv (a `pyvenv.cfg` in it) runs that environment's own Python with
minired as `pip install` put there: the start a user gets, without this machine's site hooks
(an editable install's finder, a certifi hook) that every start of the system Python pays.
Also reported, per checkout: the cumulative import time of `minired.__main__`'s start-up
imports by `-X importtime` (steadier than wall time here), and the interpreter's own floor.
"""
from __future__ import annotations

import argparse
import os
import random
import site
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.support.servers import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
EMPTY_DIR = tempfile.mkdtemp(prefix="first_pong.")


def cpu_seconds(pid: int) -> float:
    """CPU time the process has used, all threads (steadier than wall time on a shared machine:
    other tenants delay a launch but do not add to its CPU time)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def time_to_pong(command: list[str], port: int, env: dict | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning `command` to its first PONG."""
    began = time.perf_counter()
    # (run from an empty directory: `-m` puts the working directory first on the path, and
    # the server would load a dump.rdb found there)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=EMPTY_DIR)
    try:
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except ConnectionRefusedError:
                if process.poll() is not None:
                    raise RuntimeError(f"{command} exited with {process.returncode}") from None
                time.sleep(0.0002)
        with sock:
            sock.sendall(b"PING\r\n")
            assert sock.recv(16) == b"+PONG\r\n"
        return time.perf_counter() - began, cpu_seconds(process.pid)
    finally:
        process.kill()
        process.wait()


def is_virtualenv(checkout: str) -> bool:
    return os.path.exists(os.path.join(checkout, "pyvenv.cfg"))


def python_of(checkout: str) -> str:
    return os.path.join(checkout, "bin", "python") if is_virtualenv(checkout) else PYTHON


def checkout_env(checkout: str, pure: bool, no_site: bool = False) -> dict:
    if is_virtualenv(checkout):  # (minired is installed there: no path to add)
        env = {name: value for name, value in os.environ.items()
               if name not in ("PYTHONPATH", "MINIRED_PURE_PYTHON")}
        return dict(env, MINIRED_PURE_PYTHON="1") if pure else env
    # Without site (-S) the installed dependencies (uvloop, sortedcontainers) are found
    # through PYTHONPATH instead, with no .pth file run.
    path = [checkout, *site.getsitepackages()] if no_site else [checkout]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    env.pop("MINIRED_PURE_PYTHON", None)
    if pure:
        env["MINIRED_PURE_PYTHON"] = "1"
    return env


def minired_launch(checkout: str, pure: bool, flags: tuple[str, ...] = ()):
    env = checkout_env(checkout, pure, "-S" in flags)

    def launch() -> float:
        port = free_port()
        return time_to_pong([python_of(checkout), *flags, "-m", "minired", "--port", str(port)],
                            port, env)
    return launch


def redis_launch() -> float:
    port = free_port()
    return time_to_pong(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                        port)


def import_time_ms(checkout: str, pure: bool) -> float:
    """Cumulative -X importtime of the modules minired's start-up imports (asyncio included,
    site not): the sum of the top-level `minired*` lines, each of which includes its children."""
    code = ("import gc; gc.disable()\n"
            "import minired.cli, minired.startup, minired.engine.server\n")
    result = subprocess.run([python_of(checkout), "-X", "importtime", "-c", code],
                            env=checkout_env(checkout, pure), capture_output=True, text=True,
                            check=True, cwd=EMPTY_DIR)
    total = 0
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|")
        if name.startswith(" minired"):  # depth 0: one space before the name
            total += int(cumulative)
    return total / 1000


def interpreter_ms(python: str, flags: list[str]) -> tuple[float, float]:
    began = time.perf_counter()
    process = subprocess.Popen([python, *flags, "-c", "import os; os._exit(0)"], cwd=EMPTY_DIR)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return time.perf_counter() - began, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", default=[ROOT])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--builds", choices=("compiled", "pure", "both"), default="both",
                        help="compiled: as built in place; pure: MINIRED_PURE_PYTHON=1")
    parser.add_argument("--no-site", action="store_true", help="also launch minired with -S")
    args = parser.parse_args()
    for checkout in args.checkouts:
        if is_virtualenv(checkout):
            continue  # (pip compiled its bytecode at install time)
        # An installed package has its bytecode compiled at install time (pip does it); do the
        # same, since this environment may forbid writing .pyc files as modules import.
        subprocess.run([PYTHON, "-m", "compileall", "-q", os.path.join(checkout, "minired")],
                       check=True, stdout=subprocess.DEVNULL)
    measures = {"redis-server": redis_launch,
                "python -c pass": lambda: interpreter_ms(PYTHON, []),
                "python -S -c pass": lambda: interpreter_ms(PYTHON, ["-S"])}
    for checkout in args.checkouts:
        if is_virtualenv(checkout):
            measures[f"{checkout}: python -c pass"] = (
                lambda c=checkout: interpreter_ms(python_of(c), []))
    builds = {"compiled": [False], "pure": [True], "both": [False, True]}[args.builds]
    for checkout in args.checkouts:
        for pure in builds:
            label = f"{checkout} {'uncompiled' if pure else 'compiled'}"
            measures[f"minired {label}"] = minired_launch(checkout, pure)
            if args.no_site:
                measures[f"minired -S {label}"] = minired_launch(checkout, pure, ("-S",))
            measures[f"importtime {label}"] = (
                lambda c=checkout, p=pure: (import_time_ms(c, p) / 1000, 0.0))
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
    # A new order every round: in a fixed one, each launch always followed the same other
    # (an -X importtime run, say), and two builds read 18 ms apart that strict alternation
    # finds 5 ms apart.
    order = random.Random(0)
    names = list(measures)
    for _ in range(args.runs):
        order.shuffle(names)
        for name in names:
            times[name].append(measures[name]())
    print(f"{'':60s} {'wall median':>12s} {'wall min':>9s} {'CPU median':>11s}")
    for name, values in times.items():
        wall = [w * 1000 for w, _ in values]
        cpu = [c * 1000 for _, c in values]
        print(f"{name:60s} {statistics.median(wall):9.1f} ms {min(wall):6.1f} ms "
              f"{statistics.median(cpu):8.1f} ms")


if __name__ == "__main__":
    main()
