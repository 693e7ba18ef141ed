"""A master's shutdown that waits for a lagging replica (shutdown-timeout), minired compared
with Redis 7.0 as the master, a real redis-server as the replica in both runs.

The replica is stopped (SIGSTOP) after it acknowledged the master's whole stream, then the
master takes one more write and is asked to shut down: it pauses writes, asks the replica for
its offset (REPLCONF GETACK) and waits. What the sessions compare: the replies, INFO's fields
while the shutdown waits, the replica's data, and the master's log lines about the shutdown
(the replica's port and its lag in seconds, which depend on the run, masked).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.respclient import Err, RawClient
from tests.support.servers import (
    NO_SYNC_DELAY,
    RedisServer,
    redis_server_binary,
    start_on_free_port,
    terminate,
)
from tests.support.waiting import info_field, wait_link_up, wait_until

_SHUTDOWN_LINES = ("shutdown", "insist", "shutting down", "Lagging replica", "replicas are in sync",
                   "can't exit", "Exit anyway", "bye bye")


class _Session:
    """A master (the given command) with a real redis-server replica, the replica stopped
    once it acknowledged everything, and one write the replica has not acknowledged."""

    def __init__(self, command: list, directory: Path, timeout: int) -> None:
        self.logfile = directory / "master.log"
        self.master, self.port = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--save", "", "--dir", str(directory),
                          "--logfile", str(self.logfile), "--shutdown-timeout", str(timeout),
                          "--repl-ping-replica-period", "3600", *NO_SYNC_DELAY],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.replica: RedisServer | None = None
        self.stopped = False
        self.client = RawClient(self.port)
        self.replica = RedisServer("--replicaof", "127.0.0.1", str(self.port)).start()
        wait_link_up(self.replica.port)  # (attached first: the stream's SELECTs then agree)
        self.client.call("SET", "k", "1")
        offset = info_field(self.client, "replication", "master_repl_offset")
        wait_until(lambda: _acknowledged(self.client) == offset,
                   "the replica's acknowledgement of the whole stream")
        os.kill(self.replica.proc.pid, signal.SIGSTOP)
        self.stopped = True
        self.client.call("INCR", "k")

    def resume_replica(self) -> None:
        os.kill(self.replica.proc.pid, signal.SIGCONT)
        self.stopped = False

    def wait_for_log(self, text: str) -> None:
        wait_until(lambda: text in self.logfile.read_text(), f"{text!r} in the master's log")

    def shutdown_log(self) -> list[str]:
        """The master's lines about the shutdown, without their prefix, port and lag masked."""
        lines = []
        for line in self.logfile.read_text().splitlines():
            message = line.split(" ", 5)[-1]  # (after pid:role and the date and time)
            if any(marker in message for marker in _SHUTDOWN_LINES):
                message = message.replace(f":{self.replica.port} ", ":<port> ")
                lines.append(re.sub(r"lag=\d+", "lag=<s>", message))
        return lines

    def waiting_info(self) -> list:
        """INFO while the shutdown waits: its time left shown, the blocked clients."""
        wait_until(lambda: "shutdown_in_milliseconds:" in _info(self.client, "server"),
                   "shutdown_in_milliseconds in INFO")
        return [int(info_field(self.client, "server", "shutdown_in_milliseconds")) > 0,
                info_field(self.client, "clients", "blocked_clients"),
                info_field(self.client, "clients", "connected_clients")]

    def close(self) -> None:
        if self.stopped:
            self.resume_replica()
        self.client.close()
        terminate(self.master)
        if self.replica is not None:
            self.replica.stop()


def _acknowledged(client: RawClient) -> str | None:
    """The offset INFO replication shows the first replica acknowledged."""
    found = re.search(r"slave0:\S*,offset=(\d+),", _info(client, "replication"))
    return found.group(1) if found else None


def _info(client: RawClient, section: str) -> str:
    return client.call("INFO", section).decode()


def _both(tmp_path: Path, scenario) -> list:
    """Run the scenario against redis-server and minired as the master: the same results
    (returned, for the test to say what they must show)."""
    results = []
    for name, command in (("redis", [redis_server_binary()]),
                          ("minired", [sys.executable, "-m", "minired"])):
        directory = tmp_path / name
        directory.mkdir()
        results.append(scenario(command, directory))
    real, mini = results
    assert mini == real
    return real


def _caught_up_after_shutdown_command(command: list, directory: Path) -> list:
    session = _Session(command, directory, timeout=300)
    try:
        waiter = RawClient(session.port)
        waiter.send("SHUTDOWN")
        seen = session.waiting_info()
        writer = RawClient(session.port)
        writer.send("SET", "during", "wait")  # held by the pause: one more blocked client
        wait_until(lambda: info_field(session.client, "clients", "blocked_clients") == "2",
                   "the write held by the shutdown's pause")
        seen.append(session.client.call("GET", "k"))  # reads still served
        session.resume_replica()
        assert session.master.wait(timeout=30) == 0
        seen.append(RawClient(session.replica.port).call("GET", "k"))
        seen.append(session.shutdown_log())
        return seen
    finally:
        session.close()


def test_shutdown_waits_for_the_replica_to_catch_up(tmp_path):
    seen = _both(tmp_path, _caught_up_after_shutdown_command)
    assert seen[-2] == b"2" and "* 1 of 1 replicas are in sync when shutting down." in seen[-1]


def _timed_out_after_sigterm(command: list, directory: Path) -> list:
    session = _Session(command, directory, timeout=1)
    try:
        os.kill(session.master.pid, signal.SIGTERM)
        seen = session.waiting_info()
        assert session.master.wait(timeout=30) == 0  # the timeout passed: exits regardless
        seen.append(session.shutdown_log())
        return seen
    finally:
        session.close()


def test_sigterm_gives_up_on_a_replica_after_shutdown_timeout(tmp_path):
    seen = _both(tmp_path, _timed_out_after_sigterm)
    assert "* 0 of 1 replicas are in sync when shutting down." in seen[-1]


def _aborted(command: list, directory: Path) -> list:
    session = _Session(command, directory, timeout=300)
    try:
        first, second = RawClient(session.port), RawClient(session.port)
        first.send("SHUTDOWN")
        second.send("SHUTDOWN")
        wait_until(lambda: info_field(session.client, "clients", "blocked_clients") == "2",
                   "both SHUTDOWN commands blocked")
        seen = session.waiting_info()
        seen.append(session.client.call("SHUTDOWN", "ABORT"))
        seen += [first.read(), second.read()]
        seen.append("shutdown_in_milliseconds" in _info(session.client, "server"))
        seen.append(session.client.call("SET", "after", "abort"))  # writes go on
        seen.append(session.client.call("SHUTDOWN", "ABORT"))  # nothing left to abort
        seen.append(session.shutdown_log())
        return [_plain(value) for value in seen]
    finally:
        session.close()


def _plain(value):
    return ("error", value.message) if isinstance(value, Err) else value


def test_shutdown_abort_answers_every_waiting_shutdown(tmp_path):
    seen = _both(tmp_path, _aborted)
    assert seen[4] == seen[5] == ("error", "ERR Errors trying to SHUTDOWN. Check logs.")


def _fails_while_writing_the_first_aof(command: list, directory: Path) -> list:
    """The replica catches up while an AOF just turned on has its first rewrite running: the
    shutdown gives up (the data is in no file yet) and SHUTDOWN fails; FORCE exits anyway."""
    session = _Session(command, directory, timeout=300)
    try:
        waiter = RawClient(session.port)
        waiter.send("SHUTDOWN")
        seen = session.waiting_info()
        seen.append(session.client.call("CONFIG", "SET", "rdb-key-save-delay", "30000000"))
        seen.append(session.client.call("CONFIG", "SET", "appendonly", "yes"))
        session.resume_replica()
        seen.append(_plain(waiter.read()))
        seen.append("shutdown_in_milliseconds" in _info(session.client, "server"))
        seen.append(session.shutdown_log())
        try:
            session.client.call("SHUTDOWN", "NOSAVE", "FORCE")
        except ConnectionError:
            pass  # (the server closed the connection as it exited)
        assert session.master.wait(timeout=30) == 0
        seen.append(session.shutdown_log()[len(seen[-1]):])
        return seen
    finally:
        session.close()


def test_a_shutdown_that_cannot_finish_answers_the_waiting_shutdown(tmp_path):
    seen = _both(tmp_path, _fails_while_writing_the_first_aof)
    assert "# Writing initial AOF, can't exit." in seen[-2]
    assert seen[-1][-1] == "# Redis is now ready to exit, bye bye..."


def _sigint_while_waiting(command: list, directory: Path) -> list:
    """A SIGINT while a signal's shutdown waits for the replica: "You insist", exit at once."""
    session = _Session(command, directory, timeout=300)
    try:
        os.kill(session.master.pid, signal.SIGTERM)
        seen = session.waiting_info()
        os.kill(session.master.pid, signal.SIGINT)
        seen.append(session.master.wait(timeout=30))
        seen.append(session.shutdown_log())
        return seen
    finally:
        session.close()


def test_sigint_while_a_signal_s_shutdown_waits_exits_at_once(tmp_path):
    seen = _both(tmp_path, _sigint_while_waiting)
    assert seen[-2] == 1


def _pause_purposes(command: list, directory: Path) -> list:
    """The shutdown's pause and CLIENT PAUSE end apart: CLIENT UNPAUSE leaves the writes held
    while the shutdown waits, and SHUTDOWN ABORT leaves a CLIENT PAUSE WRITE in force."""
    session = _Session(command, directory, timeout=300)
    try:
        waiter, writer = RawClient(session.port), RawClient(session.port)
        waiter.send("SHUTDOWN")
        seen = session.waiting_info()
        writer.send("SET", "held", "1")
        wait_until(lambda: info_field(session.client, "clients", "blocked_clients") == "2",
                   "the write held by the shutdown's pause")
        seen.append(session.client.call("CLIENT", "UNPAUSE"))
        seen.append(info_field(session.client, "clients", "blocked_clients"))  # still held
        seen.append(session.client.call("CLIENT", "PAUSE", "100000", "WRITE"))
        seen.append(session.client.call("SHUTDOWN", "ABORT"))
        seen.append(_plain(waiter.read()))
        seen.append(info_field(session.client, "clients", "blocked_clients"))  # the write, still
        seen.append(session.client.call("CLIENT", "UNPAUSE"))
        seen.append(writer.read())
        return seen
    finally:
        session.close()


def test_client_unpause_and_shutdown_abort_end_only_their_own_pause(tmp_path):
    seen = _both(tmp_path, _pause_purposes)
    assert seen[-3:] == ["1", b"OK", b"OK"] and seen[4] == "2"


def _buffers_while_the_replica_is_stopped(command: list, directory: Path) -> list:
    """What the stopped replica cannot take stays in the master's replication buffer: written
    1 MB at a time (as the shutdown unit's fill_up_os_socket_send_buffer_for_repl), it passes
    2 MB once the OS's socket buffers are full, and what is beyond repl-backlog-size counts as
    the replicas' (mem_clients_slaves)."""
    session = _Session(command, directory, timeout=1)
    try:
        value = b"x" * 1024
        for step in range(64):  # (the OS buffers a few MB at most)
            session.client.pipeline([("SET", b"junk%d:%d" % (step, i), value)
                                     for i in range(1024)])
            if int(info_field(session.client, "memory", "mem_total_replication_buffers")) \
                    > 2 * 1024 * 1024:
                break
        return [int(info_field(session.client, "memory", field)) > 0
                for field in ("mem_total_replication_buffers", "mem_clients_slaves")] + [step < 63]
    finally:
        session.close()


def test_replication_buffers_hold_what_a_stopped_replica_has_not_taken(tmp_path):
    assert _both(tmp_path, _buffers_while_the_replica_is_stopped) == [True, True, True]
