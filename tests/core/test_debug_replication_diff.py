"""DEBUG's replication subcommands against Redis 7.0.15: REPLICATE puts a command into the
replication stream as it is (no SELECT before it, nothing in the AOF), CHANGE-REPL-ID starts a
new history, and CONFIG-REWRITE-FORCE-ALL fails as Redis's does on a server started without a
config file. Each test has servers of its own: a replica attached leaves a backlog."""
from __future__ import annotations

import socket

import pytest

from tests.support.respclient import Err, RawClient, encode_command, read_full_resync
from tests.support.servers import NO_SYNC_DELAY, MiniredProcess, RedisServer
from tests.support.waiting import info_field, wait_until

_PING = encode_command(["PING"])


@pytest.fixture(params=(RedisServer, MiniredProcess), ids=("real_redis", "mini"))
def server(request):
    with request.param("--enable-debug-command", "yes", "--repl-diskless-sync", "no") as started:
        yield started


def _replica_after_its_snapshot(port: int):
    """A raw replica that has read its full resynchronization: its reader, at the stream."""
    replica = socket.create_connection(("127.0.0.1", port))
    replica.settimeout(30)
    replica.sendall(encode_command(["REPLCONF", "listening-port", "1"]))
    assert replica.recv(100) == b"+OK\r\n"
    replica.sendall(encode_command(["PSYNC", "?", "-1"]))
    return replica, read_full_resync(replica)[0]


def test_debug_replicate_feeds_the_stream_without_a_select(server):
    admin = RawClient(server.port)
    replica, reader = _replica_after_its_snapshot(server.port)
    try:
        assert admin.call("DEBUG", "REPLICATE", "fake-command-1", "a") == b"OK"
        assert admin.call("SET", "foo", "bar") == b"OK"
        expected = (encode_command(["fake-command-1", "a"]) + encode_command(["SELECT", "0"])
                    + encode_command(["SET", "foo", "bar"]))
        stream = b""
        while len(stream.replace(_PING, b"")) < len(expected):
            stream += reader.read1(65_536)
        assert stream.replace(_PING, b"") == expected
    finally:
        replica.close()
        admin.close()


def test_debug_change_repl_id_starts_a_new_history(server):
    admin = RawClient(server.port)
    try:
        before = info_field(admin, "replication", "master_replid")
        assert admin.call("DEBUG", "CHANGE-REPL-ID") == b"OK"
        after = info_field(admin, "replication", "master_replid")
        assert after != before and len(after) == 40
        assert info_field(admin, "replication", "master_replid2") == "0" * 40
        assert info_field(admin, "replication", "second_repl_offset") == "-1"
    finally:
        admin.close()


def test_config_rewrite_force_all_without_a_config_file(server):
    admin = RawClient(server.port)
    try:
        assert admin.call("DEBUG", "CONFIG-REWRITE-FORCE-ALL") == Err(
            "ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address")
    finally:
        admin.close()


@pytest.fixture(params=(RedisServer, MiniredProcess), ids=("real_redis", "mini"))
def replica_kind(request):
    return request.param


@pytest.mark.parametrize("behavior", ["ignore", "panic-on-replicas"])
def test_an_error_in_reply_to_the_master_is_logged_counted_or_fatal(replica_kind, behavior,
                                                                    tmp_path):
    # afterErrorReply: a replica answering its master's command with an error has diverged; it
    # says so in the log ("== CRITICAL =="), counts it, and panics if propagation-error-behavior
    # asks (integration/replication-4's "Data divergence" tests).
    logfile = tmp_path / "replica.log"
    with RedisServer("--enable-debug-command", "yes", *NO_SYNC_DELAY) as master, replica_kind(
            "--logfile", str(logfile), "--propagation-error-behavior", behavior,
            "--replicaof", "127.0.0.1", str(master.port)) as replica:
        admin, own = RawClient(master.port), RawClient(replica.port)
        try:
            wait_until(lambda: info_field(own, "replication", "master_link_status") == "up",
                       "the replica's link up")
            assert admin.call("DEBUG", "REPLICATE", "fake-command-1", "a") == b"OK"
            if behavior == "ignore":
                assert admin.call("SET", "after", "1") == b"OK"
                assert admin.call("WAIT", "1", "5000") == 1
                assert own.call("GET", "after") == b"1"
                assert info_field(own, "stats", "unexpected_error_replies") == "1"
            else:
                # serverPanic ends in abort() (SIGABRT). redis-server's crash report can itself
                # fault on a loaded machine (it then dies of SIGSEGV: once in five soak runs);
                # minired's panic is always the abort.
                died_of = replica.proc.wait(30)
                assert died_of == -6 or (replica_kind is RedisServer and died_of == -11), died_of
        finally:
            admin.close()
            own.close()
    lines = logfile.read_text().splitlines()
    critical = [line for line in lines if "== CRITICAL ==" in line]
    assert len(critical) == 1
    assert critical[0].endswith(
        "This replica is sending an error to its master: 'unknown command 'fake-command-1', "
        "with args beginning with: 'a' ' after processing the command '<unknown>'")
    if behavior != "ignore":
        assert any("Guru Meditation: This replica panicked sending an error to its master after "
                   "processing the command '<unknown>' #networking.c" in line for line in lines)
