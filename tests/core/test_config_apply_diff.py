"""What CONFIG SET does at once, compared with Redis 7.0: the parameters Redis applies as it
sets them (dir's chdir). Fresh server processes: these change the process itself (its
directory), so the suite's shared minired, in the test process, stays out."""
from __future__ import annotations

import os

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
