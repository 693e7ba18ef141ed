#!/usr/bin/env python3
"""Redis's own Tcl test suite (7.0.15, vendored in tests/redis_tcl/vendor/) against minired, with a
real redis-server as the control.

Every unit that can run against an external server runs against a fresh server of its own, so
one failure cannot hide the next, in two lanes (the machine has two cores). A unit that fails
on minired runs again on redis-server: a test that fails there too in this environment is
reported, not counted. What is left must be empty, apart from the short list of documented
differences (tests/redis_tcl/differences.txt, each with its reason, mirrored in
docs/differences.md); otherwise, or when a unit stops early or leaves its server dead, the
exit status is 1.

    python3 scripts/redis_tcl.py                       # every unit, compiled minired
    python3 scripts/redis_tcl.py unit/scripting unit/multi
    MINIRED_PURE_PYTHON=1 python3 scripts/redis_tcl.py  # the uncompiled build

Normal mode (--normal): the suite's own harness starts the server per test group, as
`src/redis-server <generated config file>`, so it tests start-up, config files, persistence,
DEBUG, shutdown and logging too. src/redis-server runs minired given redis-server's arguments
unchanged; a unit with failures runs again with Debian's redis-server as src/redis-server.

    python3 scripts/redis_tcl.py --normal unit/printver unit/info   # chosen units
    python3 scripts/redis_tcl.py --normal --quick                    # those test.sh runs
    python3 scripts/redis_tcl.py --normal                            # the 67 (the long run)
"""
from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# The repository's root, for tests.support (this runs as a script, from scripts/).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "redis_tcl" / "vendor" / "redis-tests-7.0.15"
DIFFERENCES = ROOT / "tests" / "redis_tcl" / "differences.txt"
SKIPFILE = Path(tempfile.gettempdir()) / f"minired-redis-tcl-skip-{os.getpid()}.txt"
# This checkout's minired (as normal mode's MINIRED_EXECUTABLE), whatever is installed: the
# server starts in a scratch directory, where `-m minired` would find only an installed one.
MINIRED = f"PYTHONPATH={ROOT} {sys.executable} -m minired --port {{PORT}}"
REDIS = 'redis-server --port {PORT} --save "" --appendonly no'
# Units that need a cluster, TLS or the server's own binary: none can run against minired.
EXCLUDED = {"unit/tls", "unit/cluster", "unit/cluster-scripting", "unit/printver",
            "unit/type/list-common"}
# Ports for the suite's own test driver, per lane: below the ephemeral range that the servers
# under test get their free ports from.
LANE_PORTS, LANE_PORT_SPAN = 24000, 2000
# Lanes are numbered from here (--first-lane): a second run at the same time takes others.
FIRST_LANE = [0]
SLOW_UNITS = {"unit/hyperloglog", "unit/type/list", "unit/type/zset", "unit/type/stream",
              "unit/scripting", "unit/geo", "unit/type/set", "unit/type/hash"}
_FAILED = re.compile(r"^\[err\]: (.*?) in tests/", re.M)


@dataclass
class UnitResult:
    unit: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    errors: str = "none"
    alive: bool = True
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return self.errors == "none" and self.alive


def all_units() -> list[str]:
    tests = SUITE / "tests"
    found = sorted(str(p.relative_to(tests).with_suffix(""))
                   for folder in (tests / "unit", tests / "unit" / "type")
                   for p in folder.glob("*.tcl"))
    return [u for u in found if u not in EXCLUDED]


def answers(port: int, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def run_unit(unit: str, server_cmd: str, suite_copy: Path, lane: int, logs: Path) -> UnitResult:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="redis-tcl-server-")
    name = unit.replace("/", "_")
    with open(logs / f"server.{name}.log", "wb") as server_log:
        server = subprocess.Popen(server_cmd.replace("{PORT}", str(port)), shell=True,
                                  cwd=workdir, stdout=server_log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 15
        while not answers(port, 0.5) and time.monotonic() < deadline:
            time.sleep(0.05)
        # Each lane's test driver listens on ports of its own (it takes the first free one
        # below --baseport): two lanes on the default range would take each other's.
        ports = f"--baseport {LANE_PORTS + LANE_PORT_SPAN * lane} --portcount {LANE_PORT_SPAN // 2}"
        env = {**os.environ, "SKIPFILE": str(SKIPFILE), "PROFILE": "subset", "UNIT_TIMEOUT": "300",
               "NOPROGRESS_TIMEOUT": "180", "RESTORE_CONFIG": "0", "LOG_DIR": str(logs),
               "EXTRA_ARGS": f"{os.environ.get('EXTRA_ARGS', '')} {ports}"}
        started = time.monotonic()
        out = subprocess.run([str(suite_copy / "run_redis_tcl.sh"), str(suite_copy),
                              "127.0.0.1", str(port), unit], env=env, capture_output=True,
                             text=True).stdout
        result = UnitResult(unit, seconds=time.monotonic() - started)
        summary = next((line for line in out.splitlines() if line.startswith(unit + " ")), "")
        match = re.search(r"passed=(\d+)", summary)
        result.passed = int(match.group(1)) if match else 0
        match = re.search(r"errors=(.*?) skipped_tag=", summary)
        result.errors = match.group(1) if match else "unit did not report"
        log = logs / f"{name}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        result.failed = _FAILED.findall(text)
        result.alive = server.poll() is None and answers(port)
        return result
    finally:
        try:
            os.killpg(server.pid, 9)
        except ProcessLookupError:
            pass
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def in_lanes(units: list[str], jobs: int, make_copy, run) -> dict[str, UnitResult]:
    """Run `run(unit, copy, lane)` for every unit on `jobs` lanes, each with a copy of the suite
    of its own (`make_copy(lane)`; the suite writes under tests/tmp), the slowest units first so
    that the lanes finish together; each result printed as it comes."""
    lanes: queue.Queue[tuple[Path, int]] = queue.Queue()
    for lane in range(FIRST_LANE[0], FIRST_LANE[0] + jobs):
        lanes.put((make_copy(lane), lane))

    def work(unit: str) -> UnitResult:
        copy, lane = lanes.get()
        try:
            result = run(unit, copy, lane)
        finally:
            lanes.put((copy, lane))
        print(describe(result), flush=True)
        return result

    ordered = sorted(units, key=lambda u: u not in SLOW_UNITS)
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(work, ordered))
    finally:
        while not lanes.empty():
            shutil.rmtree(lanes.get()[0].parent, ignore_errors=True)
    return {r.unit: r for r in results}


def _suite_copy(lane: int) -> Path:
    copy = Path(tempfile.mkdtemp(prefix=f"redis-tcl-lane{lane}-")) / "suite"
    shutil.copytree(SUITE, copy)
    return copy


def run_units(units: list[str], server_cmd: str, logs: Path, jobs: int) -> dict[str, UnitResult]:
    logs.mkdir(parents=True, exist_ok=True)
    # The documented differences are skipped, not run and excused: a test that fails half-way
    # leaves the server as it was mid-test (the eviction test leaves maxmemory set), and the
    # tests after it would fail for that. The control runs them too, skipped alike.
    write_skipfile()
    return in_lanes(units, jobs, _suite_copy,
                    lambda unit, copy, lane: run_unit(unit, server_cmd, copy, lane, logs))


# --- normal mode ----------------------------------------------------------------------------------

# The units that need no replication, cluster, sentinel or modules (as the suite's RUNNING.md).
NORMAL_UNITS = (
    "unit/printver unit/dump unit/auth unit/protocol unit/keyspace unit/scan unit/info "
    "unit/info-command unit/type/string unit/type/incr unit/type/list unit/type/list-2 "
    "unit/type/list-3 unit/type/set unit/type/zset unit/type/hash unit/type/stream "
    "unit/type/stream-cgroups unit/sort unit/expire unit/other unit/multi unit/quit unit/aofrw "
    "unit/acl unit/acl-v2 unit/latency-monitor integration/shutdown integration/aof "
    "integration/aof-multi-part integration/rdb integration/corrupt-dump "
    "integration/corrupt-dump-fuzzer integration/convert-zipmap-hash-on-load "
    "integration/convert-ziplist-hash-on-load integration/convert-ziplist-zset-on-load "
    "integration/logging integration/redis-cli integration/redis-benchmark "
    "integration/dismiss-mem unit/pubsub unit/pubsubshard unit/slowlog unit/scripting "
    "unit/functions unit/maxmemory unit/introspection unit/introspection-2 unit/limits "
    "unit/obuf-limits unit/bitops unit/bitfield unit/geo unit/memefficiency unit/hyperloglog "
    "unit/lazyfree unit/pause unit/querybuf unit/pendingquerybuf unit/tls unit/tracking "
    "unit/oom-score-adj unit/shutdown unit/networking unit/client-eviction unit/violations "
    "unit/replybufsize").split()
# The normal-mode units scripts/test.sh runs (--quick): those that pass whole on minired, the
# documented differences skipped, longest first (about three minutes on two lanes). The others
# are slow (hyperloglog, geo, aof-multi-part, corrupt-dump, maxmemory's million-command test), or
# integration/aof, which starts many servers in one directory: if a port is taken between the
# harness's check and the server's bind, start_server retries on another port but truncates
# the log first, then waits without limit for more "Ready to accept" lines than the log held
# before (support/server.tcl; restart_server does not retry at all), on redis-server as on
# minired. Collisions come mostly on lanes whose ports lie in the ephemeral range (32768 and
# up: lane 5 and above), where any outgoing connection can take one. They are the long run,
# `python3 scripts/redis_tcl.py --normal` (all 67 units; on 2026-12-06 and 2026-12-07, on two
# lanes of an idle machine, 6 minutes: 2,547 passed, 0 failed, none aborted; Redis 2,577, the
# rest documented).
NORMAL_QUICK_UNITS = (
    "unit/scripting unit/type/list-3 unit/introspection unit/type/list "
    "unit/latency-monitor integration/shutdown unit/type/stream unit/expire unit/obuf-limits "
    "integration/redis-cli unit/type/zset unit/bitfield "
    "unit/protocol unit/memefficiency unit/sort unit/bitops unit/type/set unit/type/string "
    "unit/functions unit/multi unit/type/stream-cgroups integration/redis-benchmark unit/other "
    "unit/acl unit/acl-v2 unit/scan unit/shutdown unit/dump unit/introspection-2 unit/tracking "
    "unit/type/list-2 unit/querybuf unit/violations unit/info unit/slowlog unit/limits "
    "unit/type/hash unit/networking unit/oom-score-adj unit/lazyfree unit/replybufsize "
    "unit/pubsubshard unit/auth integration/convert-ziplist-zset-on-load unit/keyspace "
    "unit/pubsub unit/pause unit/type/incr unit/info-command unit/quit "
    "integration/convert-zipmap-hash-on-load integration/convert-ziplist-hash-on-load "
    "integration/logging"
    # beyond the 67: replication's FAILOVER (the unit starts its three servers itself)
    " integration/failover").split()
MINIRED_EXECUTABLE = f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m minired "$@"\n'
REDIS_EXECUTABLE = '#!/bin/sh\nexec redis-server "$@"\n'
_RESULT_LINE = re.compile(r"^\[(ok|err|exception|TIMEOUT)\]: (.*?)(?: in tests/\S+)?(?: \(\d+ ms\))?$",
                          re.M)


def normal_suite_copy(executable: str) -> Path:
    """A copy of the suite whose src/redis-server is `executable` (a script's text), with
    Debian's redis-tools beside it, and the runtest script the harness expects."""
    copy = Path(tempfile.mkdtemp(prefix="redis-tcl-normal-")) / "suite"
    shutil.copytree(SUITE / "tests", copy / "tests", ignore=shutil.ignore_patterns("tmp"))
    (copy / "tests" / "tmp").mkdir()
    (copy / "src").mkdir()
    for name, text in (("runtest", '#!/bin/sh\nexec tclsh tests/test_helper.tcl "$@"\n'),
                       ("src/redis-server", executable)):
        (copy / name).write_text(text)
        (copy / name).chmod(0o755)
    for tool in ("redis-cli", "redis-benchmark", "redis-check-aof", "redis-check-rdb"):
        found = shutil.which(tool)
        if found:
            (copy / "src" / tool).symlink_to(found)
    return copy


def run_normal_unit(unit: str, copy: Path, lane: int, logs: Path) -> UnitResult:
    name = unit.replace("/", "_")
    base = LANE_PORTS + LANE_PORT_SPAN * lane
    started = time.monotonic()
    try:
        out = subprocess.run(["./runtest", "--clients", "2", "--baseport", str(base),
                              "--portcount", "400", "--timeout", "120", "--skipfile", str(SKIPFILE),
                              "--single", unit],
                             cwd=copy, capture_output=True, text=True, timeout=900,
                             stdin=subprocess.DEVNULL).stdout
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + "\n[TIMEOUT]: the unit\n"
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    (logs / f"{name}.log").write_text(out)
    result = UnitResult(unit, seconds=time.monotonic() - started)
    for kind, test in _RESULT_LINE.findall(out):
        if kind == "ok":
            result.passed += 1
        else:
            result.failed.append(test)
    if "All tests passed without errors" not in out and not result.failed:
        result.errors = "the unit stopped early"
    elif any(kind in ("exception", "TIMEOUT") for kind, _ in _RESULT_LINE.findall(out)):
        result.errors = "exception"
    return result


def run_normal_units(units: list[str], executable: str, logs: Path,
                     jobs: int) -> dict[str, UnitResult]:
    logs.mkdir(parents=True, exist_ok=True)
    write_skipfile()
    return in_lanes(units, jobs, lambda lane: normal_suite_copy(executable),
                    lambda unit, copy, lane: run_normal_unit(unit, copy, lane, logs))


def main_normal(units: list[str], jobs: int, logs: Path) -> int:
    """Normal mode: minired as src/redis-server; units with failures again on redis-server."""
    units = units or NORMAL_UNITS
    print(f"Redis's Tcl suite in normal mode: {len(units)} units, minired as src/redis-server "
          f"(logs: {logs})", flush=True)
    results = run_normal_units(units, MINIRED_EXECUTABLE, logs / "minired", jobs)
    suspicious = [u for u, r in results.items() if r.failed or not r.clean]
    control = {}
    if suspicious:
        print(f"control: {len(suspicious)} unit(s) again with redis-server", flush=True)
        control = run_normal_units(suspicious, REDIS_EXECUTABLE, logs / "redis", jobs)
    unexpected, also_on_redis = [], []
    for unit in units:
        r = results[unit]
        redis_failed = set(control[unit].failed) if unit in control else set()
        for name in r.failed:
            (also_on_redis if name in redis_failed else unexpected).append(f"{unit}: {name}")
        if not r.clean:
            redis_passed = control[unit].passed if unit in control else 0
            unexpected.append(f"{unit}: stopped early ({r.errors}) after {r.passed} tests; "
                              f"redis-server passed {redis_passed}")
    for title, lines in (("fail on redis-server too here (not counted)", also_on_redis),
                         ("FAILED on minired, passed on redis-server", unexpected)):
        if lines:
            print(f"\n{title}:")
            for line in lines:
                print(f"  {line}")
    passed = sum(r.passed for r in results.values())
    print(f"\nredis-tcl normal mode: {passed} passed, {len(unexpected)} failed "
          f"({len(also_on_redis)} failing on Redis too)", flush=True)
    return 1 if unexpected else 0


def describe(r: UnitResult) -> str:
    state = "" if r.clean else f" errors={r.errors}" + ("" if r.alive else " SERVER DEAD")
    return f"{r.unit}: passed={r.passed} failed={len(r.failed)} ({r.seconds:.0f}s){state}"


def write_skipfile() -> None:
    SKIPFILE.write_text("".join(f"{name}\n" for _, name in documented()))


def documented() -> dict[tuple[str, str], str]:
    """(unit, test name) -> why minired differs, from differences.txt."""
    known = {}
    if DIFFERENCES.exists():
        for line in DIFFERENCES.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                unit, name, reason = (part.strip() for part in line.split("|", 2))
                known[(unit, name)] = reason
    return known


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("units", nargs="*", help="units to run (default: all external units)")
    parser.add_argument("--server", default=MINIRED, help="command starting the server "
                        "under test in the foreground; {PORT} is replaced")
    parser.add_argument("--control", default=REDIS, help="the control server's command")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="with --normal: the units that "
                        "pass whole (scripts/test.sh runs these), not all 67")
    parser.add_argument("--first-lane", type=int, default=0, help="number of the first lane "
                        "(its ports): 2 for a second run beside one on the default lanes")
    parser.add_argument("--logs", default=None, help="folder for the unit and server logs")
    parser.add_argument("--normal", action="store_true", help="normal mode: the harness starts "
                        "minired itself as src/redis-server (control: redis-server)")
    args = parser.parse_args()
    FIRST_LANE[0] = args.first_lane
    if shutil.which("tclsh") is None:
        print("redis-tcl: tclsh is missing (Debian: apt-get install tcl)", file=sys.stderr)
        return 2
    prefix = "redis-tcl-normal-logs-" if args.normal else "redis-tcl-logs-"
    logs = Path(args.logs or tempfile.mkdtemp(prefix=prefix))
    status = run(args, logs)
    if args.logs is None and status == 0:
        # A folder of our own making goes with a run that passed (each run of the test
        # command would otherwise leave two in /tmp); a failed run's stays, for its logs.
        shutil.rmtree(logs, ignore_errors=True)
        print(f"redis-tcl: {logs} removed (--logs DIR keeps the logs of a run that passes)")
    return status


def run(args: argparse.Namespace, logs: Path) -> int:
    if args.normal:
        return main_normal(args.units or (NORMAL_QUICK_UNITS if args.quick else []), args.jobs,
                           logs)
    units = args.units or all_units()
    print(f"Redis's Tcl suite: {len(units)} units against `{args.server}` (logs: {logs})",
          flush=True)
    results = run_units(units, args.server, logs / "minired", args.jobs)
    suspicious = [u for u, r in results.items() if r.failed or not r.clean]
    control: dict[str, UnitResult] = {}
    if suspicious:
        print(f"control: {len(suspicious)} unit(s) again on redis-server", flush=True)
        control = run_units(suspicious, args.control, logs / "redis", args.jobs)
    known = documented()
    unexpected, also_on_redis = [], []
    differences = [f"{unit}: {name} — {reason} (skipped)" for (unit, name), reason in known.items()
                   if unit in results]
    for unit in sorted(results):
        r = results[unit]
        redis_failed = set(control[unit].failed) if unit in control else set()
        for name in r.failed:
            if name in redis_failed:
                also_on_redis.append(f"{unit}: {name}")
            else:
                unexpected.append(f"{unit}: {name}")
        if not r.clean:
            unexpected.append(f"{unit}: stopped early or killed its server ({r.errors}; "
                              f"server {'alive' if r.alive else 'dead'})")
    for title, lines in (("fail on redis-server too here (not counted)", also_on_redis),
                         ("documented differences (docs/differences.md)", differences),
                         ("FAILED on minired, passed on redis-server", unexpected)):
        if lines:
            print(f"\n{title}:")
            for line in lines:
                print(f"  {line}")
    passed = sum(r.passed for r in results.values())
    print(f"\nredis-tcl: {passed} passed, {len(unexpected)} failed "
          f"({len(differences)} documented, {len(also_on_redis)} failing on Redis too)",
          flush=True)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
