"""Fault injection (MINIRED FAULT, minired/features/faults.py) seen by real clients: redis-py's errors,
retries and timeouts against each action, RESP2 and RESP3, pipelines, MULTI/EXEC, blocking
commands, pub/sub connections, scripts, and the Python API. Timing is only ever asserted as a
lower bound a timer guarantees (a held reply cannot arrive before its delay), or as an order."""
from __future__ import annotations

import select
import shutil
import subprocess
import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from minired.embed import EmbeddedServer, SubprocessServer
from minired.protocol.errors import RedisError as MiniredError
from tests.support.fault_server import fault_server_fixtures
from tests.support.respclient import Err, RawClient
from tests.support.servers import RedisServer, free_port, redis_server_binary, terminate

pytest_plugins = ("pytester",)

LOADING = "LOADING Redis is loading the dataset in memory"


srv, _clean = fault_server_fixtures()


def _client(srv, protocol: int = 2, **options) -> redis.Redis:
    """A redis-py client that gives up at the first error, so each fault shows itself."""
    options.setdefault("retry", None)
    return redis.Redis(port=srv.port, protocol=protocol, **options)


def _fault(r, *args):
    return r.execute_command("MINIRED", "FAULT", *args)


def _closed(raw: RawClient) -> bool:
    """Whether the server closed the raw connection (nothing left to read, then EOF)."""
    raw.sock.settimeout(5)
    try:
        return raw.sock.recv(1) == b""
    except ConnectionResetError:
        return True


# --- the "done when", against `minired --fault-injection` ----------------------------

def test_done_when_scenarios_against_the_command_line_server():
    with SubprocessServer(fault_injection=True) as server:
        admin = redis.Redis(port=server.port)
        r = redis.Redis(port=server.port, retry=None)
        r.set("k", "v")
        _fault(admin, "ADD", "ERROR", LOADING, "COMMAND", "get", "COUNT", "1")
        with pytest.raises(redis.BusyLoadingError):
            r.get("k")
        assert r.get("k") == b"v"

        _fault(admin, "ADD", "DROP-REPLY", "COMMAND", "incr,incrby", "COUNT", "1")
        with pytest.raises(redis.ConnectionError):
            r.incr("n")
        assert admin.get("n") == b"1"

        # Long enough that the PING below is answered well within it on a loaded machine.
        _fault(admin, "ADD", "DELAY", "1000", "COMMAND", "get", "COUNT", "1")
        slow = RawClient(server.port)
        start = time.monotonic()
        slow.send("GET", "k")
        assert admin.ping() is True
        # The PING was answered while the GET's reply was held.
        assert select.select([slow.sock], [], [], 0)[0] == []
        assert slow.read() == b"v" and time.monotonic() - start >= 1.0
        slow.close()

        _fault(admin, "ADD", "ERROR", "OOM command not allowed when used memory > 'maxmemory'.",
               "COMMAND", "set", "IN-SCRIPT", "yes")
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.eval("return redis.call('set','a','1')", 0)
        assert admin.get("a") is None


def test_without_fault_injection_every_fault_command_is_refused(mini):
    raw = RawClient(mini.port)
    for args in (("ADD", "DROP"), ("LIST",), ("RESET",), ("KILL-CLIENTS",), ("LOADING", "10")):
        reply = raw.call("MINIRED", "FAULT", *args)
        assert isinstance(reply, Err) and "--fault-injection" in reply.message
    with EmbeddedServer() as plain, pytest.raises(RuntimeError, match="fault_injection"):
        plain.faults.add("DROP")


# --- each action, RESP2 and RESP3 ------------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_error_replaces_the_reply_and_the_command_does_not_run(srv, protocol):
    r = _client(srv, protocol)
    r.config_resetstat()
    _fault(r, "ADD", "ERROR", "READONLY You can't write against a read only replica.",
           "COMMAND", "set")
    with pytest.raises(redis.ReadOnlyError):
        r.set("k", "v")
    assert r.get("k") is None
    _fault(r, "RESET")
    _fault(r, "ADD", "ERROR", "MOVED 3999 127.0.0.1:6381", "KEY", "user:*")
    with pytest.raises(redis.exceptions.MovedError, match="3999 127.0.0.1:6381"):
        r.get("user:1")
    assert r.get("other") is None
    assert r.info("errorstats")["errorstat_MOVED"] == {"count": 1}


@pytest.mark.parametrize("protocol", [2, 3])
def test_drop_closes_before_running(srv, protocol):
    r = _client(srv, protocol)
    _fault(r, "ADD", "DROP", "COMMAND", "set", "COUNT", "1")
    with pytest.raises(redis.ConnectionError):
        r.set("k", "v")
    assert r.get("k") is None  # (redis-py reconnects for the next command)


@pytest.mark.parametrize("protocol", [2, 3])
def test_drop_reply_runs_then_closes(srv, protocol):
    r = _client(srv, protocol)
    _fault(r, "ADD", "DROP-REPLY", "COMMAND", "incrby", "COUNT", "1")
    with pytest.raises(redis.ConnectionError):
        r.incr("n")
    assert r.get("n") == b"1"


def test_redis_py_default_retry_repeats_a_command_whose_reply_was_lost(srv):
    """The at-least-once hazard: redis-py retries on a connection error, so an INCR whose
    acknowledgement was lost runs twice; a DROP (not executed) is retried harmlessly."""
    r = redis.Redis(port=srv.port, retry=Retry(NoBackoff(), 3))
    _fault(r, "ADD", "DROP-REPLY", "COMMAND", "incrby", "COUNT", "1")
    assert r.incr("n") == 2
    _fault(r, "ADD", "DROP", "COMMAND", "incrby", "COUNT", "2")
    assert r.incr("m") == 1
    assert r.get("m") == b"1"


@pytest.mark.parametrize("protocol", [2, 3])
def test_partial_sends_part_of_the_reply_after_running(srv, protocol):
    r = _client(srv, protocol)
    r.set("big", "x" * 100)
    _fault(r, "ADD", "PARTIAL", "COMMAND", "getset", "COUNT", "1")
    with pytest.raises(redis.ConnectionError):
        r.getset("big", "new")
    assert r.get("big") == b"new"
    raw = RawClient(srv.port)
    raw.call("MINIRED", "FAULT", "ADD", "PARTIAL", "COMMAND", "get", "COUNT", "1")
    raw.send("GET", "big")
    raw.sock.settimeout(5)
    assert raw.read_until_closed() == b"$3\r\nnew\r\n"[:4]


def test_hang_answers_nothing_and_the_client_times_out(srv):
    r = _client(srv)
    r.set("k", "v")
    _fault(r, "ADD", "HANG", "COMMAND", "get", "CLIENT-NAME", "victim")
    victim = _client(srv, socket_timeout=0.2, client_name="victim")
    with pytest.raises(redis.TimeoutError):
        victim.get("k")
    assert r.get("k") == b"v"  # other clients are served
    # A hung connection stays open, shown blocked, until CLIENT KILL or KILL-CLIENTS.
    raw = RawClient(srv.port)
    raw.call("CLIENT", "SETNAME", "victim")
    raw.send("GET", "k")
    raw.send("PING")
    assert any(c["name"] == "victim" and "b" in c["flags"] for c in r.client_list())
    assert _fault(r, "KILL-CLIENTS") >= 1
    assert _closed(raw)


def test_delay_holds_the_reply_and_everything_after_it(srv):
    raw = RawClient(srv.port)
    raw.call("SET", "k", "v")
    raw.call("MINIRED", "FAULT", "ADD", "DELAY", "200", "COMMAND", "get", "COUNT", "1")
    other = _client(srv)
    start = time.monotonic()
    raw.send_raw(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n")
    assert other.set("during", "1")  # served while the reply is held
    assert raw.read() == b"v"
    assert raw.read() == b"PONG"  # the PING after it was not answered first
    assert time.monotonic() - start >= 0.2


def test_stall_stops_the_whole_server(srv):
    r = _client(srv)
    _fault(r, "ADD", "STALL", "300", "COMMAND", "get", "COUNT", "1")
    stalled = RawClient(srv.port)
    start = time.monotonic()
    stalled.send("GET", "k")  # in the server's socket before the PING is even sent
    assert _client(srv).ping()
    pinged = time.monotonic()
    assert stalled.read() is None
    stalled.close()
    assert pinged - start >= 0.3  # the PING waited for the stall


# --- matching ----------------------------------------------------------------------------------

def test_matching_by_key_client_and_counts(srv):
    r = _client(srv)
    _fault(r, "ADD", "ERROR", "TRYAGAIN Multiple keys request during rehashing of slot",
           "COMMAND", "mget", "KEY", "{a}*")
    assert r.mget("x", "y") == [None, None]
    with pytest.raises(redis.exceptions.TryAgainError):
        r.mget("x", "{a}1")
    _fault(r, "RESET")
    target = _client(srv)
    target_id = target.client_id()
    _fault(r, "ADD", "ERROR", "ERR injected", "CLIENT-ID", str(target_id), "AFTER", "2",
           "COUNT", "2")
    assert r.ping() and target.ping() and target.ping()  # AFTER 2 lets two through
    for _ in range(2):
        with pytest.raises(redis.ResponseError, match="injected"):
            target.ping()
    assert target.ping()  # COUNT 2 used up: the rule is gone
    assert _fault(r, "LIST") == []


def test_probability_with_a_seed_is_reproducible(srv):
    r = _client(srv)

    def pattern() -> list[bool]:
        _fault(r, "RESET")
        _fault(r, "ADD", "ERROR", "ERR flaky", "COMMAND", "echo", "PROBABILITY", "0.5",
               "SEED", "42")
        outcome = []
        for _ in range(20):
            try:
                r.echo("x")
                outcome.append(False)
            except redis.ResponseError:
                outcome.append(True)
        return outcome

    first = pattern()
    assert first == pattern() and 0 < sum(first) < 20


def test_list_del_reset_and_syntax_errors(srv):
    raw = RawClient(srv.port)
    first = raw.call("MINIRED", "FAULT", "ADD", "ERROR", LOADING, "COMMAND", "get", "COUNT", "1")
    second = raw.call("MINIRED", "FAULT", "ADD", "DELAY", "5", "KEY", "a*")
    assert second == first + 1
    raw.call("GET", "x")
    assert raw.call("MINIRED", "FAULT", "LIST") == [
        [b"id", second, b"spec", b"DELAY 5 KEY a*", b"matched", 0, b"fired", 0]]
    assert raw.call("MINIRED", "FAULT", "DEL", str(second)) == 1
    assert raw.call("MINIRED", "FAULT", "DEL", str(second)) == 0
    raw.call("MINIRED", "FAULT", "ADD", "ERROR", "ERR x y", "COMMAND", "ping")
    assert raw.call("MINIRED", "FAULT", "LIST")[0][3] == b'ERROR "ERR x y" COMMAND ping'
    raw.call("MINIRED", "FAULT", "ADD", "DROP")  # every command, but not MINIRED's own
    assert raw.call("MINIRED", "FAULT", "RESET") == b"OK"
    assert raw.call("MINIRED", "FAULT", "LIST") == []
    for bad in (("ADD",), ("ADD", "EXPLODE"), ("ADD", "DELAY"), ("ADD", "DELAY", "-1"),
                ("ADD", "DROP", "COMMAND", "nosuchcommand"), ("ADD", "DROP", "COUNT", "0"),
                ("ADD", "DROP", "PROBABILITY", "2"), ("ADD", "DROP", "SEED", "1"),
                ("ADD", "DELAY", "5", "IN-SCRIPT", "yes"), ("ADD", "DROP", "KEY"),
                ("ADD", "ERROR", "a\r\nb"), ("KILL-CLIENTS", "TYPE", "replica"),
                ("LOADING", "-5"), ("NOPE",)):
        reply = raw.call("MINIRED", "FAULT", *bad)
        assert isinstance(reply, Err) and reply.message.startswith("ERR"), (bad, reply)
    assert raw.call("MINIRED", "FAULT", "LIST") == []


def test_syntax_errors_say_what_is_wrong(srv):
    raw = RawClient(srv.port)
    assert raw.call("MINIRED", "FAULT", "ADD", "DROP", "5") == Err(
        "ERR MINIRED FAULT ADD: DROP takes no argument, got '5'")
    assert raw.call("MINIRED", "FAULT", "ADD", "HANG", "COMMAND", "get", "LATER", "1") == Err(
        "ERR MINIRED FAULT ADD: unknown option 'LATER'")
    assert raw.call("MINIRED", "FAULT", "ADD", "STALL", "100000000000") == Err(
        "ERR MINIRED FAULT ADD: STALL is at most 60000 ms (it stops the whole server); "
        "use DELAY or HANG to wait longer")
    assert isinstance(raw.call("MINIRED", "FAULT", "ADD", "STALL", "60000", "COMMAND", "sort"),
                      int)
    assert len(raw.call("MINIRED", "FAULT", "LIST")) == 1


def test_minired_help_lists_every_subcommand(srv):
    raw = RawClient(srv.port)
    lines = raw.call("MINIRED", "HELP")
    assert lines[0] == b"MINIRED <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[-2:] == [b"HELP", b"    Prints this help."]
    for sub in (b"ADVANCE", b"CLOCK", b"FAULT ADD", b"FAULT LOADING", b"CLUSTER MIGRATE"):
        assert any(line.startswith(sub) for line in lines), sub
    assert raw.call("MINIRED", "NOPE") == Err(
        "ERR unknown subcommand 'NOPE'. Try MINIRED HELP.")


def test_many_rules_cost_only_the_commands_they_name(srv, monkeypatch):
    """10,000 rules naming GET with key globs: ECHO looks at none of them, GET at each once,
    and no glob is compiled while commands run (each rule compiled its own when added)."""
    from minired.data import glob
    from minired.features.faults import Rule

    for i in range(10_000):
        srv.faults.add("ERROR", "ERR injected", command="get", key=f"user:{i}:*")
    looked_at = []
    compiled = []
    real_matches, real_compile = Rule.matches, glob._compile

    def counting_matches(rule, *args):
        looked_at.append(rule.id)
        return real_matches(rule, *args)

    def counting_compile(*args):
        compiled.append(args)
        return real_compile(*args)

    monkeypatch.setattr(Rule, "matches", counting_matches)
    monkeypatch.setattr(glob, "_compile", counting_compile)
    r = _client(srv)
    assert r.echo("x") == b"x"
    assert looked_at == []
    assert r.get("order:1") is None
    assert len(looked_at) == 10_000 and len(set(looked_at)) == 10_000
    with pytest.raises(redis.ResponseError, match="injected"):
        r.get("user:9999:name")
    assert compiled == []


def test_rules_keep_their_order_across_command_names(srv):
    r = _client(srv)
    _fault(r, "ADD", "ERROR", "ERR first", "KEY", "a*")  # any command
    _fault(r, "ADD", "ERROR", "ERR second", "COMMAND", "get")
    with pytest.raises(redis.ResponseError, match="first"):
        r.get("abc")
    with pytest.raises(redis.ResponseError, match="second"):
        r.get("xyz")
    _fault(r, "RESET")
    # A rule naming a command and one of its subcommands counts each match once.
    _fault(r, "ADD", "ERROR", "ERR listed", "COMMAND", "client,client|list", "AFTER", "1")
    assert r.client_list()
    with pytest.raises(redis.ResponseError, match="listed"):
        r.client_list()
    assert [(e[b"matched"], e[b"fired"]) for e in srv.faults.list()] == [(2, 1)]


# --- pipelines and transactions ------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_pipeline_with_a_delayed_command_keeps_its_order(srv, protocol):
    r = _client(srv, protocol)
    _fault(r, "ADD", "DELAY", "50", "COMMAND", "get", "COUNT", "1")
    pipe = r.pipeline(transaction=False)
    pipe.set("a", "1").get("a").incr("a").get("a")
    assert pipe.execute() == [True, b"1", 2, b"2"]


def test_pipeline_cut_by_drop_answers_the_commands_before_it(srv):
    raw = RawClient(srv.port)
    raw.call("MINIRED", "FAULT", "ADD", "DROP", "COMMAND", "incr", "COUNT", "1")
    raw.send_raw(b"".join(b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in c)
                          for c in ([b"SET", b"a", b"1"], [b"INCR", b"a"], [b"SET", b"b", b"1"])))
    assert raw.read() == b"OK"
    assert _closed(raw)
    r = _client(srv)
    assert r.get("a") == b"1" and r.get("b") is None


def test_error_on_a_queued_command_aborts_the_transaction(srv):
    r = _client(srv)
    _fault(r, "ADD", "ERROR", "OOM command not allowed when used memory > 'maxmemory'.",
           "COMMAND", "incrby", "COUNT", "1")  # (redis-py's incr sends INCRBY)
    pipe = r.pipeline()
    pipe.set("a", "1").incr("a")
    with pytest.raises(redis.exceptions.OutOfMemoryError) as refused:
        pipe.execute()  # redis-py names the refused command, after EXEC's EXECABORT
    assert isinstance(refused.value.__context__, redis.exceptions.ExecAbortError)
    assert r.get("a") is None


def test_error_on_exec_discards_the_transaction(srv):
    raw = RawClient(srv.port)
    raw.call("MINIRED", "FAULT", "ADD", "ERROR", "CLUSTERDOWN The cluster is down",
             "COMMAND", "exec", "COUNT", "1")
    assert raw.call("MULTI") == b"OK"
    assert raw.call("SET", "a", "1") == b"QUEUED"
    assert raw.call("EXEC") == Err("CLUSTERDOWN The cluster is down")
    assert raw.call("GET", "a") is None  # not queued: the client left MULTI
    assert isinstance(raw.call("EXEC"), Err)


def test_drop_reply_on_exec_runs_the_transaction(srv):
    r = _client(srv)
    _fault(r, "ADD", "DROP-REPLY", "COMMAND", "exec", "COUNT", "1")
    pipe = r.pipeline()
    pipe.set("a", "1").incr("a")
    with pytest.raises(redis.ConnectionError):
        pipe.execute()
    assert r.get("a") == b"2"


# --- blocking commands and pub/sub -------------------------------------------------------------

def _blmove_in_thread(client, result: dict) -> threading.Thread:
    def run() -> None:
        start = time.monotonic()
        try:
            result["reply"] = client.blmove("src", "dst", 5)
        except redis.RedisError as exc:
            result["error"] = exc
        result["waited"] = time.monotonic() - start

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait_blocked(r, count: int = 1) -> None:
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while int(r.info("clients")["blocked_clients"]) < count:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_delay_on_a_blocking_command_holds_its_eventual_reply(srv):
    r = _client(srv)
    _fault(r, "ADD", "DELAY", "200", "COMMAND", "blmove", "COUNT", "1")
    result: dict = {}
    thread = _blmove_in_thread(_client(srv), result)
    _wait_blocked(r)
    r.rpush("src", "job")
    thread.join()
    assert result["reply"] == b"job" and result["waited"] >= 0.2
    assert r.lrange("dst", 0, -1) == [b"job"]


def test_drop_reply_on_a_blocking_command_moves_the_element_and_cuts_the_reply(srv):
    r = _client(srv)
    _fault(r, "ADD", "DROP-REPLY", "COMMAND", "blmove", "COUNT", "1")
    result: dict = {}
    thread = _blmove_in_thread(_client(srv), result)
    _wait_blocked(r)
    r.rpush("src", "job")
    thread.join()
    assert isinstance(result.get("error"), redis.ConnectionError)
    assert r.lrange("dst", 0, -1) == [b"job"] and r.llen("src") == 0


def test_error_and_drop_on_a_blocking_command_move_nothing(srv):
    r = _client(srv)
    r.rpush("src", "job")
    _fault(r, "ADD", "ERROR", LOADING, "COMMAND", "blmove", "COUNT", "1")
    with pytest.raises(redis.BusyLoadingError):
        _client(srv).blmove("src", "dst", 1)
    _fault(r, "ADD", "DROP", "COMMAND", "blmove", "COUNT", "1")
    with pytest.raises(redis.ConnectionError):
        _client(srv).blmove("src", "dst", 1)
    assert r.lrange("src", 0, -1) == [b"job"] and r.llen("dst") == 0


def test_kill_clients_by_type(srv):
    r = _client(srv)
    subscriber = _client(srv).pubsub()
    subscriber.subscribe("news")
    assert subscriber.get_message(timeout=5)["type"] == "subscribe"
    normal = RawClient(srv.port)
    assert normal.call("PING") == b"PONG"
    assert _fault(r, "KILL-CLIENTS", "TYPE", "pubsub") == 1
    assert normal.call("PING") == b"PONG"
    with pytest.raises(redis.ConnectionError):
        subscriber.parse_response(block=True, timeout=5)
    assert _fault(r, "KILL-CLIENTS", "TYPE", "normal") >= 1
    assert _closed(normal)
    assert r.ping()  # the client asking survives


def test_delay_on_subscribe_keeps_messages_behind_the_confirmation(srv):
    raw = RawClient(srv.port)
    raw.call("MINIRED", "FAULT", "ADD", "DELAY", "150", "COMMAND", "subscribe", "COUNT", "1")
    raw.send("SUBSCRIBE", "news")
    publisher = _client(srv)
    deadline = time.monotonic() + 30  # generous: returns as soon as it holds
    while publisher.publish("news", "hello") == 0:  # subscribed at once, confirmed later
        assert time.monotonic() < deadline
    assert raw.read() == [b"subscribe", b"news", 1]
    assert raw.read() == [b"message", b"news", b"hello"]


# --- scripts -------------------------------------------------------------------------------------

def test_in_script_error_raises_inside_the_script_and_earlier_writes_stay(srv):
    r = _client(srv)
    _fault(r, "ADD", "ERROR", "READONLY You can't write against a read only replica.",
           "COMMAND", "set", "KEY", "b", "IN-SCRIPT", "yes")
    script = "redis.call('set', 'a', '1'); redis.call('set', 'b', '2'); return 'done'"
    with pytest.raises(redis.ReadOnlyError):
        r.eval(script, 0)
    assert r.get("a") == b"1" and r.get("b") is None
    caught = "local ok = redis.pcall('set', 'b', '2'); return ok['err']"
    assert r.eval(caught, 0).startswith(b"READONLY")
    assert r.set("b", "top-level")  # IN-SCRIPT rules leave client commands alone


def test_client_rules_leave_script_calls_alone_and_script_matches_a_script(srv):
    r = _client(srv)
    _fault(r, "ADD", "ERROR", "ERR injected", "COMMAND", "set")
    assert r.eval("return redis.call('set', 'a', '1')", 0) == b"OK"
    _fault(r, "RESET")
    sha = r.script_load("return redis.call('incr', KEYS[1])")
    _fault(r, "ADD", "DROP-REPLY", "SCRIPT", sha, "COUNT", "1")
    with pytest.raises(redis.ConnectionError):
        r.evalsha(sha, 1, "n")
    assert r.evalsha(sha, 1, "n") == 2  # it ran the first time; the rule is used up
    r.function_load("#!lua name=lib\nredis.register_function('bump', "
                    "function(keys) return redis.call('incr', keys[1]) end)")
    _fault(r, "ADD", "ERROR", "ERR no bumping", "SCRIPT", "bump", "IN-SCRIPT", "yes")
    with pytest.raises(redis.ResponseError, match="no bumping"):
        r.fcall("bump", 1, "n")
    assert r.eval("return redis.call('incr', KEYS[1])", 1, "n") == 3


# --- the LOADING window ---------------------------------------------------------------------------

def test_loading_window_refuses_data_commands_only(srv):
    raw = RawClient(srv.port)
    raw.call("SET", "k", "v")
    raw.call("MINIRED", "FAULT", "LOADING", "60000")
    assert raw.call("MULTI") == b"OK"  # flagged `loading`, as in Redis
    assert raw.call("SET", "a", "1") == Err(LOADING)  # queued: the transaction fails
    assert raw.call("EXEC") == Err(
        "EXECABORT Transaction discarded because of previous errors.")
    assert raw.call("GET", "k") == Err(LOADING)
    assert raw.call("PING") == Err(LOADING)  # no `loading` flag in Redis either
    assert raw.call("ECHO", "x") == b"x"
    assert isinstance(raw.call("INFO", "server"), bytes)
    assert raw.call("MINIRED", "FAULT", "LOADING", "0") == b"OK"
    assert raw.call("GET", "k") == b"v"


def _info_fields(raw: RawClient, section: str) -> dict:
    text = raw.call("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _loading_redis(tmp_path):
    """A real redis-server held in its loading phase: 2,000 keys at 20 ms each."""
    port = free_port()
    with RedisServer("--enable-debug-command", "yes") as writer:
        raw = RawClient(writer.port)
        raw.call("DEBUG", "POPULATE", "2000")
        raw.call("SAVE")
        shutil.copy(f"{writer.dir}/dump.rdb", tmp_path / "dump.rdb")
    proc = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--dir", str(tmp_path), "--key-load-delay", "20000",
         "--loading-process-events-interval-bytes", "1024"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:  # until it answers (LOADING, as it should)
        try:
            raw = RawClient(port)
            break
        except OSError:
            time.sleep(0.02)
    return proc, raw


def test_info_says_loading_during_the_loading_window(srv, tmp_path):
    """INFO persistence during MINIRED FAULT LOADING has Redis's fields while it loads a file
    (ioredis's ready check polls INFO until loading:0)."""
    proc, real = _loading_redis(tmp_path)
    try:
        assert real.call("GET", "k") == Err(LOADING)
        theirs = _info_fields(real, "persistence")
    finally:
        terminate(proc)
    raw = RawClient(srv.port)
    raw.call("MINIRED", "FAULT", "LOADING", "60000")
    ours = _info_fields(raw, "persistence")
    assert list(ours) == list(theirs)
    assert ours["loading"] == theirs["loading"] == "1"
    assert ours["async_loading"] == theirs["async_loading"] == "0"
    assert 0 < int(ours["loading_eta_seconds"]) <= 60
    assert abs(int(ours["loading_start_time"]) - time.time()) < 60
    raw.call("MINIRED", "FAULT", "LOADING", "0")
    after = _info_fields(raw, "persistence")
    assert after["loading"] == "0" and "loading_start_time" not in after


def test_redis_py_retries_through_a_loading_window(srv):
    r = _client(srv)
    r.set("k", "v")
    srv.faults.loading(150)
    retrying = redis.Redis(port=srv.port, retry=Retry(NoBackoff(), 1000))
    assert retrying.get("k") == b"v"  # BusyLoadingError is a ConnectionError to redis-py


# --- the Python API ------------------------------------------------------------------------------

def test_python_api_rules_are_context_managers(srv):
    r = _client(srv)
    r.set("k", "v")
    with srv.faults.add("ERROR", LOADING, command=["get", "mget"], key="k") as rule:
        with pytest.raises(redis.BusyLoadingError):
            r.get("k")
        assert r.get("other") is None
        assert (rule.matched, rule.fired) == (1, 1)
        assert srv.faults.list()[0][b"spec"] == f'ERROR "{LOADING}" COMMAND get,mget KEY k'.encode()
    assert srv.faults.list() == [] and r.get("k") == b"v"
    with srv.faults.add("ERROR", "ERR x", command="set", in_script=True):
        with pytest.raises(redis.ResponseError):
            r.eval("return redis.call('set', 'a', '1')", 0)
    with pytest.raises(TypeError):
        srv.faults.add("DROP", colour="red")
    with pytest.raises(MiniredError, match="TYPE"):
        srv.faults.kill_clients("replica")
    with pytest.raises(MiniredError, match="ms >= 0"):
        srv.faults.loading(-1)
    with srv.faults.add("DROP", command="blmove", count=1) as rule:
        with pytest.raises(redis.ConnectionError):
            r.blmove("src", "dst", 0.1)
        assert (rule.matched, rule.fired) == (1, 1)  # kept after COUNT removed the rule


def test_pytest_fixture(pytester):
    pytester.makepyfile("""
        import pytest, redis

        def test_fault(minired_client, minired_faults):
            minired_client.set("k", "v")
            with minired_faults.add("ERROR", "LOADING Redis is loading the dataset in memory",
                                    command="get", count=1):
                with pytest.raises(redis.BusyLoadingError):
                    redis.Redis(port=minired_client.connection_pool.connection_kwargs["port"],
                                retry=None).get("k")
            assert minired_client.get("k") == b"v"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
