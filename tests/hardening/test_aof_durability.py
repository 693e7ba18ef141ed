"""kill -9 loses no acknowledged write, whatever appendfsync says (it only decides what an OS
crash can take): the AOF buffer reaches the file before any reply leaves, as Redis's beforeSleep
writes it before the clients' replies.

A writer pipelines batches of writes of several types on two connections and notes, per
connection, how many replies it has read; minired is killed with SIGKILL once a given number of
batches was acknowledged, while more are in flight. After a restart every acknowledged write must
be there (and nothing that was never sent)."""
from __future__ import annotations

import signal
import socket
import threading

import pytest
import redis

from minired.embed import SubprocessServer
from tests.support.respclient import encode_command

BATCH = 40


def _reply_ends(buffer: bytes, start: int) -> int:
    """The end of the one-line reply (+OK, :n) at start, or -1 if not complete yet."""
    end = buffer.find(b"\r\n", start)
    return -1 if end < 0 else end + 2


class Writer(threading.Thread):
    """Pipelines batches of BATCH commands; `acked` counts the commands whose replies came."""

    def __init__(self, port: int, name: str) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.name_ = name
        self.acked = 0
        self.sent = 0
        self.progress = threading.Condition()

    def command(self, i: int) -> list:
        name = self.name_
        return [
            ["INCR", f"{name}:counter"],
            ["SET", f"{name}:s:{i}", str(i)],
            ["RPUSH", f"{name}:list", str(i)],
            ["HSET", f"{name}:hash", f"f{i}", str(i)],
            ["ZADD", f"{name}:zset", str(i), f"m{i}"],
            ["SADD", f"{name}:set", str(i)],
            ["XADD", f"{name}:stream", f"{i + 1}-0", "i", str(i)],
            ["SET", f"{name}:ttl:{i}", str(i), "EX", "100000"],
        ][i % 8]

    def run(self) -> None:
        buffer = b""
        pos = 0
        try:
            while True:
                batch = b"".join(encode_command(self.command(self.sent + j))
                                 for j in range(BATCH))
                self.sock.sendall(batch)
                self.sent += BATCH
                while self.acked < self.sent:
                    data = self.sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                    while True:
                        end = _reply_ends(buffer, pos)
                        if end < 0:
                            break
                        assert buffer[pos:pos + 1] in (b"+", b":", b"$"), buffer[pos:end]
                        if buffer[pos:pos + 1] == b"$":  # XADD's ID: a bulk string
                            end = _reply_ends(buffer, end)
                            if end < 0:
                                break
                        pos = end
                        with self.progress:
                            self.acked += 1
                            self.progress.notify_all()
                    buffer, pos = buffer[pos:], 0
        except OSError:
            return

    def wait_for(self, acked: int) -> None:
        with self.progress:
            assert self.progress.wait_for(lambda: self.acked >= acked or not self.is_alive(),
                                          timeout=60)


def _check(port: int, writer: Writer) -> None:
    """Every write the writer had a reply for is there; what is there was sent."""
    client = redis.Redis(port=port)
    name, acked, sent = writer.name_, writer.acked, writer.sent

    def numbers(kind: int, upto: int) -> list[int]:
        return [i for i in range(kind, upto, 8)]

    counter = int(client.get(f"{name}:counter") or 0)
    assert len(numbers(0, acked)) <= counter <= len(numbers(0, sent))
    strings = numbers(1, sent)
    values = client.mget([f"{name}:s:{i}" for i in strings]) if strings else []
    kept = {i for i, value in zip(strings, values) if value == str(i).encode()}
    assert set(numbers(1, acked)) <= kept
    pushed = [int(v) for v in client.lrange(f"{name}:list", 0, -1)]
    assert pushed == numbers(2, 8 * len(pushed)) and len(pushed) >= len(numbers(2, acked))
    fields = client.hgetall(f"{name}:hash")
    assert all(fields[f"f{i}".encode()] == str(i).encode() for i in numbers(3, acked))
    scores = dict(client.zrange(f"{name}:zset", 0, -1, withscores=True))
    assert all(scores[f"m{i}".encode()] == i for i in numbers(4, acked))
    members = client.smembers(f"{name}:set")
    assert {str(i).encode() for i in numbers(5, acked)} <= members
    ids = [entry_id for entry_id, _ in client.xrange(f"{name}:stream")]
    assert [f"{i + 1}-0".encode() for i in numbers(6, acked)] == ids[:len(numbers(6, acked))]
    ttl_keys = numbers(7, acked)
    if ttl_keys:
        assert client.mget([f"{name}:ttl:{i}" for i in ttl_keys]) == [
            str(i).encode() for i in ttl_keys]
        assert 99_000 < client.ttl(f"{name}:ttl:{ttl_keys[-1]}") <= 100_000
    client.close()


@pytest.mark.parametrize("fsync", ["everysec", "no", "always"])
def test_kill9_loses_no_acknowledged_write(tmp_path, fsync):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", fsync)
    # Kill at several moments: early, mid-run, later (counted in acknowledged commands).
    for round_, moment in enumerate((BATCH * 3 + 7, BATCH * 40 + 1, BATCH * 120 + 13)):
        server = SubprocessServer(*args).start()
        writers = [Writer(server.port, f"r{round_}w{n}") for n in range(2)]
        try:
            for writer in writers:
                writer.start()
            writers[0].wait_for(moment)
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            for writer in writers:
                writer.join(30)
                assert not writer.is_alive()
        finally:
            for writer in writers:
                writer.sock.close()
            server.stop()
        assert writers[0].acked >= moment
        with SubprocessServer(*args) as again:
            for writer in writers:
                _check(again.port, writer)
