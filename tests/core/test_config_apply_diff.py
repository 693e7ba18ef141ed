"""What CONFIG SET does at once, compared with Redis 7.0: the parameters Redis applies as it
sets them (dir's chdir, maxclients' open files limit, oom-score-adj's write to /proc) and the
rollback of a whole CONFIG SET when one of them fails, earlier applies undone (a new port
left again). Fresh server processes: these change the process itself (its directory, its
limits, its OOM score), so the suite's shared minired, in the test process, stays out."""
from __future__ import annotations

import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import MiniredProcess, RedisServer, free_port
from tests.support.waiting import wait_until

# Over what the open files limit may be raised to anywhere (fs.nr_open is at most 2^30), and
# small enough that Redis's walk down from it by 16 takes no time.
_TOO_MANY_CLIENTS = 2_000_000


def _layout(root) -> str:
    """A server's own directory, with a subdirectory and a file in it, and a file where the
    AOF's directory would go (appendonly yes fails)."""
    os.makedirs(os.path.join(root, "sub"))
    for name in ("file", "appendonlydir"):
        with open(os.path.join(root, name), "w"):
            pass
    return str(root)


@pytest.fixture
def servers(tmp_path):
    """A real Redis and a minired process, each in its own directory (same layout), protected
    configs allowed (dir is one)."""
    args = ("--enable-protected-configs", "yes", "--save", "")
    redis_dir, mini_dir = _layout(tmp_path / "redis"), _layout(tmp_path / "mini")
    with RedisServer(*args, "--dir", redis_dir) as redis, \
            MiniredProcess(*args, "--dir", mini_dir) as mini:
        yield (redis, os.path.realpath(redis_dir)), (mini, os.path.realpath(mini_dir))


def _run(server, home: str, commands: list[tuple]) -> list:
    """Each command's reply on one server, its directory shown as <home>."""
    client = RawClient(server.port)
    try:
        return [_neutral(client.call(*command), home) for command in commands]
    finally:
        client.close()


def _neutral(reply, home: str):
    if isinstance(reply, bytes):
        return reply.replace(home.encode(), b"<home>")
    if isinstance(reply, list):
        return [_neutral(item, home) for item in reply]
    return reply


def _compare(servers, commands: list[tuple]) -> list:
    (redis, redis_home), (mini, mini_home) = servers
    theirs, ours = _run(redis, redis_home, commands), _run(mini, mini_home, commands)
    assert ours == theirs
    return theirs


def _answers(port: int) -> bool:
    try:
        client = RawClient(port)
    except OSError:
        return False
    try:
        return client.call("PING") == b"PONG"
    finally:
        client.close()


def test_dir_moves_as_chdir_does(servers):
    replies = _compare(servers, [
        ("CONFIG", "SET", "dir", "sub"),  # relative to the current one
        ("CONFIG", "GET", "dir"),  # absolute, as getcwd answers
        ("CONFIG", "SET", "dir", ".."),
        ("CONFIG", "GET", "dir"),
        ("CONFIG", "SET", "dir", "missing"),
        ("CONFIG", "SET", "dir", "file"),
        ("CONFIG", "SET", "dir", ""),
        # refused while setting: the other parameters are not changed either
        ("CONFIG", "SET", "hz", "5", "dir", "missing"),
        ("CONFIG", "GET", "hz"),
        ("CONFIG", "GET", "dir"),
    ])
    assert replies[1] == [b"dir", b"<home>/sub"]
    assert "No such file or directory" in repr(replies[4])


def test_maxclients_needs_the_open_files_limit(servers):
    replies = _compare(servers, [
        ("CONFIG", "SET", "maxclients", _TOO_MANY_CLIENTS),
        ("CONFIG", "GET", "maxclients"),
        ("CONFIG", "SET", "maxclients", "5000"),
        ("CONFIG", "GET", "maxclients"),
    ])
    assert "The operating system is not able to handle" in str(replies[0])


def test_maxclients_at_start_is_what_the_limit_allows(tmp_path):
    args = ("--maxclients", str(_TOO_MANY_CLIENTS), "--save", "")
    with RedisServer(*args) as redis, MiniredProcess(*args, "--dir", str(tmp_path)) as mini:
        shown = [RawClient(s.port).call("CONFIG", "GET", "maxclients") for s in (redis, mini)]
    assert shown[1] == shown[0]


def test_a_failed_apply_undoes_the_new_port(servers):
    """updatePort ran before updateMaxclients failed: Redis listens on the old port again."""
    replies = []
    for server, _ in servers:
        new_port = free_port()
        client = RawClient(server.port)
        try:
            replies.append(client.call("CONFIG", "SET", "port", new_port,
                                       "maxclients", _TOO_MANY_CLIENTS))
            replies.append(client.call("CONFIG", "GET", "port") == [b"port",
                                                                   str(server.port).encode()])
        finally:
            client.close()
        replies.append(_answers(server.port))
        replies.append(_answers(new_port))
    assert replies[4:] == replies[:4]
    assert replies[1:4] == [True, True, False]


def test_an_aof_that_cannot_start_undoes_the_new_port(servers):
    """updatePort ran before updateAppendonly failed: both are undone."""
    replies = []
    for server, _ in servers:
        new_port = free_port()
        client = RawClient(server.port)
        try:
            replies += [client.call("CONFIG", "SET", "port", new_port, "appendonly", "yes"),
                        client.call("CONFIG", "GET", "appendonly")]
        finally:
            client.close()
        replies += [_answers(server.port), _answers(new_port)]
    assert replies[4:] == replies[:4]
    assert "Unable to turn on AOF" in repr(replies[0])


def test_oom_score_failure_names_the_parameter_that_changed(servers):
    """Both oom-score-adj parameters share one apply function: a failure names the first of
    them whose value changed, with the one error text. (Lowering a process's score needs
    CAP_SYS_RESOURCE: with it, both servers succeed alike.)"""
    _compare(servers, [
        ("CONFIG", "SET", "oom-score-adj-values", "-500 -500 -500"),  # off: stored only
        ("CONFIG", "SET", "oom-score-adj-values", "-500 -500 -500", "oom-score-adj",
         "absolute"),
        ("CONFIG", "GET", "oom-score-adj"),
        ("CONFIG", "SET", "oom-score-adj-values", "0 0 0", "oom-score-adj", "absolute"),
        ("CONFIG", "SET", "oom-score-adj-values", "-600 -600 -600"),
        ("CONFIG", "GET", "oom-score-adj-values"),
        ("CONFIG", "SET", "oom-score-adj", "no"),
    ])


def test_port_rolled_back_while_listening_anew(servers):
    """A busy port fails its own apply: the old listeners are made again (the new ones, bound
    in the same command, are let go)."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        used = busy.getsockname()[1]
        _compare(servers, [("CONFIG", "SET", "hz", "9", "port", used),
                           ("CONFIG", "GET", "hz")])
        for server, _ in servers:
            assert _answers(server.port)
    finally:
        busy.close()


def _writes_after_lowering_the_lag(master, replica) -> list:
    """A replica stalled for 3 s (DEBUG SLEEP: no ACK meanwhile); 2.2 s in, the lag allowed is
    lowered to 1 s: the very next write is refused, as Redis counts the good replicas again
    when the setting changes (updateGoodSlaves), not at its next second's count."""
    admin, stalled = RawClient(master.port), RawClient(replica.port)
    try:
        stalled.call("REPLICAOF", "127.0.0.1", master.port)
        wait_until(lambda: b"master_link_status:up" in stalled.call("INFO", "replication"),
                   "replica in sync")
        wait_until(lambda: b"slave0:" in admin.call("INFO", "replication"), "replica listed")
        time.sleep(1.5)  # (an ACK has come)
        seen = [admin.call("CONFIG", "SET", "min-replicas-to-write", "1"),
                admin.call("SET", "a", "1")]
        stalled.send("DEBUG", "SLEEP", "3")
        time.sleep(2.2)
        seen += [admin.call("CONFIG", "SET", "min-replicas-max-lag", "1"),
                 admin.call("SET", "b", "1")]
        assert stalled.read() == b"OK"
        return seen
    finally:
        admin.close()
        stalled.close()


def _each_pair_at_once(tmp_path, sequence, debug: bool = False) -> tuple[list, list]:
    """`sequence(master, replica)` on a Redis pair and on a minired pair at the same time (its
    waits are seconds long): Redis's result, then minired's."""
    extra = ("--enable-debug-command", "yes") if debug else ()

    def on_redis():
        with RedisServer("--save", "") as master, RedisServer("--save", "", *extra) as replica:
            return sequence(master, replica)

    def on_minired():
        with MiniredProcess("--save", "", "--dir", str(tmp_path)) as master, MiniredProcess(
                "--save", "", *extra) as replica:
            return sequence(master, replica)

    with ThreadPoolExecutor(2) as pool:
        theirs, ours = pool.submit(on_redis), pool.submit(on_minired)
        return theirs.result(), ours.result()


def test_min_replicas_max_lag_applies_at_once(tmp_path):
    theirs, ours = _each_pair_at_once(tmp_path, _writes_after_lowering_the_lag, debug=True)
    assert ours == theirs
    assert "NOREPLICAS" in repr(theirs[-1])


def _backlog_after_shortening_its_ttl(master, replica) -> list:
    """The only replica leaves (the default repl-backlog-ttl, an hour, starts); then the ttl
    is set to 1 s: Redis's cron frees the backlog a second or two later, the hour forgotten."""
    admin, leaving = RawClient(master.port), RawClient(replica.port)
    try:
        leaving.call("REPLICAOF", "127.0.0.1", master.port)
        wait_until(lambda: b"master_link_status:up" in leaving.call("INFO", "replication"),
                   "replica in sync")
        leaving.call("REPLICAOF", "NO", "ONE")
        wait_until(lambda: b"connected_slaves:0" in admin.call("INFO", "replication"),
                   "replica gone")
        seen = [b"repl_backlog_active:1" in admin.call("INFO", "replication"),
                admin.call("CONFIG", "SET", "repl-backlog-ttl", "1")]
        seen.append(bool(wait_until(
            lambda: b"repl_backlog_active:0" in admin.call("INFO", "replication"),
            "backlog freed", timeout=5)))
        return seen
    finally:
        admin.close()
        leaving.close()


def test_repl_backlog_ttl_applies_to_a_backlog_already_waiting(tmp_path):
    theirs, ours = _each_pair_at_once(tmp_path, _backlog_after_shortening_its_ttl)
    assert ours == theirs
