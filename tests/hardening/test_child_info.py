"""A background save's child reports its progress and its copy-on-write memory to the parent, as
Redis's does (childinfo.c): INFO's current_save_keys_processed, current_fork_perc,
current_cow_size while the child works, rdb_last_cow_size / aof_last_cow_size once it is done.
The same session runs against redis-server and minired (the sizes differ, what they do does not).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import redis

from minired.features.child_info import KeyProgress, private_dirty
from tests.support.servers import redis_server_binary, start_on_free_port, terminate
from tests.support.waiting import wait_until

KEYS = 2100
DELAY_US = 1500  # ~3 s of saving: reports after key 1 and key 1025, at least a second apart


def _start(which: str, directory, log) -> tuple[subprocess.Popen, int]:
    program = [redis_server_binary()] if which == "redis" else [sys.executable, "-m", "minired"]
    return start_on_free_port(
        lambda port: [*program, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                      str(directory), "--save", "", "--appendonly", "no", "--logfile", str(log),
                      "--loglevel", "notice"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _persistence(client: redis.Redis) -> dict:
    return client.info("persistence")


@pytest.mark.parametrize("which", ["redis", "minired"])
def test_bgsave_child_reports_progress_and_cow(tmp_path, which):
    log = tmp_path / "server.log"
    proc, port = _start(which, tmp_path, log)
    try:
        client = redis.Redis(port=port)
        info = _persistence(client)
        assert [info[f] for f in ("current_cow_size", "current_cow_peak",
                                  "current_save_keys_processed", "current_save_keys_total",
                                  "rdb_last_cow_size")] == [0, 0, 0, 0, 0]
        assert info["current_fork_perc"] == 0
        pipe = client.pipeline(transaction=False)
        for k in range(KEYS):
            pipe.set(f"key{k}", "A" * 500)
        pipe.execute()
        client.config_set("rdb-key-save-delay", DELAY_US)
        assert client.bgsave()
        processed, cows = set(), []
        k = 0
        while True:
            info = _persistence(client)
            if not info["rdb_bgsave_in_progress"]:
                break
            assert info["current_save_keys_total"] == KEYS
            if info["current_save_keys_processed"]:
                processed.add(info["current_save_keys_processed"])
                assert info["current_fork_perc"] == pytest.approx(
                    info["current_save_keys_processed"] / KEYS * 100, abs=0.01)
                cows.append(info["current_cow_size"])
                assert info["current_cow_peak"] >= info["current_cow_size"]
            client.setrange(f"key{k % KEYS}", 0, "B" * 500)  # copy-on-write for the child
            k += 1
            time.sleep(0.02)
        # rdbSaveDb reports after the first key, then every 1024 keys once a second is over
        assert len(processed) >= 2 and processed <= {1, 1025, 2049}, processed
        assert max(cows) > 0
        info = _persistence(client)
        assert info["rdb_last_bgsave_status"] == "ok"
        # the last report's peak, at least what any report said while it worked
        assert info["rdb_last_cow_size"] >= max(cows)
        assert [info[f] for f in ("current_cow_size", "current_cow_peak",
                                  "current_save_keys_processed", "current_save_keys_total",
                                  "current_cow_size_age")] == [0, 0, 0, 0, 0]
        assert info["current_fork_perc"] == 0

        client.config_set("rdb-key-save-delay", 0)
        client.bgrewriteaof()
        wait_until(lambda: _persistence(client)["aof_last_cow_size"] > 0,
                   "aof_last_cow_size after BGREWRITEAOF")
        wait_until(lambda: "Fork CoW for AOF rewrite: current" in log.read_text(),
                   "the AOF child's last CoW line")
        assert "Fork CoW for RDB: current" in log.read_text()
    finally:
        terminate(proc)


def test_key_progress_spends_the_delay_after_each_key():
    """rdb-key-save-delay is microseconds per key (debugDelay), spent as each key is saved;
    without a child to report to, only the count moves."""
    progress = KeyProgress(2000)
    started = time.monotonic()
    for _ in range(5):
        progress()
    assert time.monotonic() - started >= 0.010
    assert progress.keys == 5


def test_private_dirty_reads_this_process():
    """(Linux: /proc/self/smaps_rollup; a running Python has dirtied its own pages.)"""
    assert private_dirty() > 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry))
    return found


def _port_free(port: int) -> bool:
    """Whether a server could listen on the port (SO_REUSEADDR, as servers and the Tcl harness
    bind: the child's copies of the parent's client connections do not count)."""
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


@pytest.mark.parametrize("which", ["redis", "minired"])
def test_a_saving_child_does_not_keep_the_port(tmp_path, which):
    """The child closes the parent's listening sockets (closeChildUnusedResourceAfterFork): when
    the parent is killed while the child still saves, the port is free at once, for a server
    restarted on it (the Tcl harness's restart_server does not retry on a busy port)."""
    proc, port = _start(which, tmp_path, tmp_path / "server.log")
    child = None
    try:
        client = redis.Redis(port=port)
        pipe = client.pipeline(transaction=False)
        for k in range(200):
            pipe.set(f"key{k}", "v")
        pipe.execute()
        # Ten seconds a key: the child's first report (after its first key), whose failed write
        # ends an orphaned child, comes long after the checks below.
        client.config_set("rdb-key-save-delay", 10_000_000)
        assert client.bgsave()
        child = wait_until(lambda: _children(proc.pid), "the saving child")[0]
        proc.kill()
        proc.wait()
        wait_until(lambda: _port_free(port), "the port released with the parent", timeout=5)
        assert os.path.exists(f"/proc/{child}")  # while the child still saves
    finally:
        terminate(proc)
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
