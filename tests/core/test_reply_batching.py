"""Replies wait for the end of the loop's round over the connections with input, then go out
together, as Redis writes them before it sleeps (server.py, ClientProtocol._write).

Driven without sockets: a stand-in loop whose call_soon callbacks run when the test says the
round is over, and transports that record what is written."""
from __future__ import annotations

from minired.engine.server import ClientProtocol, Server
from minired.startup import prepare_server


class RoundLoop:
    def __init__(self) -> None:
        self.soon: list = []

    def call_soon(self, callback, *args):
        self.soon.append((callback, args))

    def end_round(self) -> None:
        due, self.soon = self.soon, []
        for callback, args in due:
            callback(*args)


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    abort = close

    def get_extra_info(self, name, default=None):
        return default

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def command(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


def server_on_a_loop() -> Server:
    server = prepare_server(Server())
    server.loop = RoundLoop()
    return server


def connect(server: Server) -> ClientProtocol:
    protocol = ClientProtocol(server)
    protocol.connection_made(RecordingTransport())
    return protocol


def test_a_round_s_replies_are_written_once_it_is_over_one_write_a_connection():
    server = server_on_a_loop()
    a, b = connect(server), connect(server)
    a.data_received(command(b"PING"))
    b.data_received(command(b"SET", b"k", b"v"))
    a.data_received(command(b"GET", b"k"))
    assert a.transport.writes == [] and b.transport.writes == []
    assert len(server.loop.soon) == 1  # one flush for the round, however many replies
    server.loop.end_round()
    assert a.transport.writes == [b"+PONG\r\n$1\r\nv\r\n"]
    assert b.transport.writes == [b"+OK\r\n"]
    b.data_received(command(b"INCR", b"n"))
    server.loop.end_round()
    assert b.transport.writes == [b"+OK\r\n", b":1\r\n"]


def test_a_message_pushed_to_a_subscriber_keeps_its_place_among_its_replies():
    server = server_on_a_loop()
    subscriber, publisher = connect(server), connect(server)
    subscriber.data_received(command(b"SUBSCRIBE", b"news"))
    publisher.data_received(command(b"PUBLISH", b"news", b"hello"))
    subscriber.data_received(command(b"PING"))
    server.loop.end_round()
    assert subscriber.transport.writes == [
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
        b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"]
    assert publisher.transport.writes == [b":1\r\n"]


def test_quit_and_protocol_errors_write_what_is_held_before_closing():
    server = server_on_a_loop()
    polite, broken = connect(server), connect(server)
    polite.data_received(command(b"PING") + command(b"QUIT"))
    assert polite.transport.writes == [b"+PONG\r\n+OK\r\n"] and polite.transport.closed
    broken.data_received(command(b"PING") + b"*1\r\n$x\r\n")
    assert broken.transport.closed
    assert broken.transport.writes == [b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"]
    server.loop.end_round()  # nothing is written twice, or after the close
    assert len(polite.transport.writes) == 1 and len(broken.transport.writes) == 1


def test_writing_at_once_sends_what_was_held_first():
    """A busy script's answers (scripting/busy.py) cannot wait for the loop's next round."""
    server = server_on_a_loop()
    client = connect(server)
    client.data_received(command(b"PING"))
    client.write_now(b"-BUSY a script is running\r\n")
    assert client.transport.writes == [b"+PONG\r\n-BUSY a script is running\r\n"]
    server.loop.end_round()
    assert len(client.transport.writes) == 1


def test_a_connection_lost_with_replies_held_drops_them():
    server = server_on_a_loop()
    client = connect(server)
    client.data_received(command(b"PING"))
    client.connection_lost(None)
    server.loop.end_round()
    assert client.transport.writes == []


def test_a_server_driven_without_a_loop_writes_at_once():
    server = prepare_server(Server())
    client = connect(server)
    client.data_received(command(b"PING"))
    assert client.transport.writes == [b"+PONG\r\n"]


def test_one_connection_failing_to_write_holds_back_no_other(caplog):
    class Failing(RecordingTransport):
        def write(self, data: bytes) -> None:
            raise OSError("the transport broke")

    server = server_on_a_loop()
    broken = ClientProtocol(server)
    broken.connection_made(Failing())
    fine = connect(server)
    broken.data_received(command(b"PING"))
    fine.data_received(command(b"PING"))
    server.loop.end_round()
    assert fine.transport.writes == [b"+PONG\r\n"]
    assert "writing the replies" in caplog.text
    fine.data_received(command(b"PING"))  # and the next round is scheduled as usual
    server.loop.end_round()
    assert fine.transport.writes == [b"+PONG\r\n", b"+PONG\r\n"]
