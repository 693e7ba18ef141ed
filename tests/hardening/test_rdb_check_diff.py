"""A dump.rdb that fails to load at start-up: redis-server logs the failure, then runs its checker
(redis-check-rdb) on the file, whose report goes to stdout; a corruption the checker meets too
is logged again and ends in "Terminating server after rdb file reading failure." (the Tcl test
for Redis issue #3505 counts those lines). minired prints the same report and the same log lines,
up to the C source line numbers and the file's age."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import redis

from tests.support.servers import free_port, redis_server_binary, start_on_free_port, terminate

ASSETS = os.path.join(os.path.dirname(__file__), "..", "redis_tcl", "vendor", "redis-tests-7.0.15",
                      "tests", "assets")
LOG_LINE = re.compile(r"^\d+:[MCS] \d\d \w{3} \d{4} [\d:.]+ ([#*.-]) (.*)$")


def _redis_dump(directory) -> bytes:
    """A small dump.rdb written by redis-server: a string, one with a TTL, a list."""
    proc, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
                      "--dir", str(directory), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        client.set("a", "1")
        client.set("b", "hello", px=100_000_000)
        client.rpush("l", 1, 2, 3)
        client.save()
    finally:
        terminate(proc)
    return (directory / "dump.rdb").read_bytes()


def _failed_start(command: list, directory, dbfilename: str) -> tuple[int, list, list]:
    """Exit status, log messages (level and text from the failure on) and the other stdout
    lines of a server that refuses the file."""
    result = subprocess.run([*command, "--port", str(free_port()), "--bind", "127.0.0.1",
                             "--dir", str(directory), "--dbfilename", dbfilename, "--save", "",
                             "--loglevel", "verbose", "--sanitize-dump-payload", "no"],
                            capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    messages, report = [], []
    for line in result.stdout.decode(errors="replace").splitlines():
        found = LOG_LINE.match(line)
        if found:
            text = re.sub(r"rdb\.c:\d+", "rdb.c:N", found.group(2))
            messages.append((found.group(1), re.sub(r"RDB age \d+", "RDB age N", text)))
        elif line.startswith(("[", "---")):
            report.append(re.sub(r"rdb\.c:\d+", "rdb.c:N", line))
    start = next(i for i, (_, text) in enumerate(messages) if text.startswith("Loading RDB"))
    return result.returncode, messages[start:], report


@pytest.mark.parametrize("damage", ["corrupt ziplist", "truncated", "checksum"])
def test_a_damaged_snapshot_is_reported_as_redis_reports_it(tmp_path, damage):
    if damage == "corrupt ziplist":
        name = "corrupt_ziplist.rdb"
        with open(os.path.join(ASSETS, name), "rb") as f:
            data = f.read()
    else:
        made = tmp_path / "made"
        made.mkdir()
        name = "dump.rdb"
        data = _redis_dump(made)
        data = data[:-20] if damage == "truncated" else data[:-8] + b"foobar00"
    outcomes = {}
    for server, command in (("redis", [redis_server_binary()]),
                            ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / server
        directory.mkdir()
        (directory / name).write_bytes(data)
        outcomes[server] = _failed_start(command, directory, name)
        assert (directory / name).read_bytes() == data  # left alone
    assert outcomes["minired"] == outcomes["redis"]
    code, messages, report = outcomes["minired"]
    assert code == 1 and report[0] == f"[offset 0] Checking RDB file {name}"
    assert "--- RDB ERROR DETECTED ---" in report
    if damage == "corrupt ziplist":  # the #3505 test's counts
        lines = [text for _, text in messages] + report
        assert sum("integrity check failed" in line for line in lines) == 2
        assert messages[-1] == ("#", "Terminating server after rdb file reading failure.")
    else:
        assert not any("Terminating" in text for _, text in messages)


def test_the_checker_reports_a_sane_file_as_redis_check_rdb(tmp_path):
    """Run on an undamaged file (a duplicate key fails the load, not the checker), the report
    ends as redis-check-rdb's does."""
    from minired.features.rdb_check import check_report

    data = _redis_dump(tmp_path)
    lines, reported = check_report(data, "dump.rdb", False, 0, 0)
    assert not reported
    tool = shutil.which("redis-check-rdb")
    assert tool is not None
    theirs = subprocess.run([tool, "dump.rdb"], cwd=tmp_path, capture_output=True,
                            timeout=30).stdout.decode().splitlines()
    assert lines == [line for line in theirs if line.startswith("[")]


def test_the_checker_reports_every_cut_as_redis_check_rdb(tmp_path):
    """The file cut short at every byte past its header: the report names the key and type
    being read (a key with a TTL included: its expire is an opcode of its own) and counts the
    keys as redis-check-rdb does, whatever order Redis saved the keys in."""
    from minired.features.rdb_check import check_report

    data = _redis_dump(tmp_path)
    tool = shutil.which("redis-check-rdb")
    assert tool is not None
    cut_file = tmp_path / "cut.rdb"
    for end in range(9, len(data)):
        cut_file.write_bytes(data[:end])
        theirs = subprocess.run([tool, "cut.rdb"], cwd=tmp_path, capture_output=True,
                                timeout=30).stdout.decode(errors="replace").splitlines()
        lines, _ = check_report(data[:end], "cut.rdb", False, int(time.time() * 1000), 0)
        assert lines == [line for line in theirs if line.startswith(("[", "---"))], end
