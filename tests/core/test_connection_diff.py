"""Connection commands compared with real Redis."""
import re

from tests.support.respclient import RawClient


def test_ping_echo_and_errors(diff):
    diff.check("PING")
    diff.check("PING", "hello")
    diff.check("PING", "a", "b")
    diff.check("ECHO", "x")
    diff.check("ECHO")
    diff.check("NOSUCHCOMMAND", "a", "b")
    diff.check("NOSUCHCOMMAND")
    diff.check("SELECT", "16")
    diff.check("SELECT", "x")
    # past a C int: getIntFromObjectOrReply's own error, not "DB index is out of range"
    for index in ("2147483648", "-2147483649", "9223372036854775807", "-9223372036854775808"):
        diff.check("SELECT", index)
        diff.check("MOVE", "nokey", index)
        diff.check("COPY", "nokey", "other", "DB", index)
        diff.check("SWAPDB", index, "0")
        diff.check("SWAPDB", "0", index)
    diff.check("SELECT", "01")
    diff.check("SELECT", "3")
    diff.check("CLIENT", "FOO")
    diff.check("CLIENT", "KILL")
    diff.check("CLIENT", "GETNAME")
    diff.check("CLIENT", "SETNAME", "a b")
    diff.check("CLIENT", "SETNAME", "worker-1")
    diff.check("CLIENT", "GETNAME")
    diff.check("AUTH", "x")
    diff.check("AUTH", "a", "b")
    diff.check("AUTH", "default", "anything")  # no requirepass: the default user is nopass
    diff.check("AUTH", "default", "")
    diff.check("HELLO", "4")
    diff.check("HELLO", "x")
    # Python's int() takes these; Redis's string2ll does not (nor a number past int64)
    for version in (" 3", "3 ", "+3", "03", "3_0", "9223372036854775808"):
        diff.check("HELLO", version)


def test_hello_3_reply_shape(diff):
    redis_reply, mini_reply = diff.both("HELLO", "3")
    assert [k for k, _ in mini_reply] == [k for k, _ in redis_reply]
    assert dict(mini_reply)[b"proto"] == 3
    diff.check("PING")


def test_client_kill_of_itself_answers_then_closes(real_redis, mini):
    """CLIENT KILL addr:port (the old form) naming the client that sends it: +OK, then the
    connection closes, the commands after it unanswered (as with CLIENT KILL ID of itself)."""
    replies = []
    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        addr = re.search(rb"addr=(\S+)", client.call("CLIENT", "INFO")).group(1)
        client.send_raw(b"CLIENT KILL " + addr + b"\r\nPING\r\n")
        replies.append(client.read_until_closed())
        client.close()
    assert replies[1] == replies[0] == b"+OK\r\n"
