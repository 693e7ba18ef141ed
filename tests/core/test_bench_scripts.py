"""The benchmark scripts the bench README's figures come from still run and print their tables
(short runs: the figures themselves are never asserted)."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> str:
    return subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True).stdout


def test_queue_script_bench_times_each_transition():
    out = _run("queue_script_bench.py", "-n", "20", "-r", "1")
    for label in ("addJob", "moveToActive", "complete", "all"):
        assert re.search(rf"^{label}\s+\d+\.\d µs/job", out, re.M), out


def test_queue_replay_tcp_reads_both_servers_cpu():
    out = _run("queue_replay_tcp.py", "-n", "20", "-r", "1")
    for name in ("redis", "minired"):
        match = re.search(rf"^\| {name} \| (\d+\.\d) \|", out, re.M)
        assert match and float(match.group(1)) > 0, out
    assert re.search(r"^minired/Redis: \d+\.\d\dx$", out, re.M), out


def test_instructions_tcp_loads_do_what_they_say_on_both_servers(monkeypatch):
    """instructions_tcp.py counts only under valgrind (not in this suite); its loads are checked
    here, without valgrind: every request succeeds, and each load leaves what it should."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import instructions_tcp
    from queue_replay_tcp import Connection
    from servers import Minired, Redis

    from minired_queue.keys import QueueKeys

    completed = QueueKeys("bench").completed.encode()
    for kind in (Redis, Minired):
        server = kind().start()
        try:
            connection = Connection(server.port)
            checks = {instructions_tcp.queue_load: (b"ZCARD", completed),
                      instructions_tcp.evalsha_load: (b"LLEN", b"dst"),
                      instructions_tcp.set_load: (b"DBSIZE",)}
            for load, check in checks.items():
                connection.call(b"*1\r\n$8\r\nFLUSHALL\r\n")
                setup, measured = load(7)
                for request in setup + measured:  # an error reply raises
                    connection.call(request)
                assert connection.call(instructions_tcp.multibulk(*check)) == 7, (kind.name, load)
            connection.close()
        finally:
            server.stop()


def test_wakeups_reads_the_client_sleeps_and_the_server_kernel_time():
    out = _run("wakeups.py", "-n", "2000", "--rounds", "1", "--only", "PING")
    for name in ("redis", "minired"):
        match = re.search(rf"^\| PING \| {name} \| (\d+) \| (\d+\.\d) \| (\d+\.\d\d) \| (\d+\.\d\d) \|$",
                          out, re.M)
        assert match and int(match.group(1)) > 0 and float(match.group(2)) > 0, out


def test_script_commands_measures_every_command_on_both_servers():
    out = _run("script_commands.py", "--calls", "5", "--rounds", "1")
    rows = re.findall(r"^\| (.+?) \| (\d+\.\d\d) \| (\d+\.\d\d) \((\d+\.\d\d)x\) \|$", out, re.M)
    assert len(rows) == 15, out
    assert all(float(redis) > 0 and float(minired) > 0 for _, redis, minired, _ in rows), out
