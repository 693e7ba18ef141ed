"""What CONFIG SET does at once, compared with Redis 7.0: the parameters Redis applies as it
sets them (dir's chdir, oom-score-adj's write to /proc) and the rollback of a whole CONFIG SET
when one of them fails. Fresh server processes: these change the process itself (its
directory, its OOM score), so the suite's shared minired, in the test process, stays out."""
from __future__ import annotations

import os
import socket

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import MiniredProcess, RedisServer


def _layout(root) -> str:
    """A server's own directory, with a subdirectory and a file in it."""
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "file"), "w"):
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
