"""`minired` started as redis-server is: config files and argv merged as Redis merges them, the
FATAL CONFIG FILE ERROR texts and exit codes, -v/--help, the log's format, the logo's PID line,
the pid file, daemonize, the unix socket's removal. Compared with Debian's redis-server 7.0.15
wherever the behaviour is Redis's."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from minired import config_file
from minired.startup import COMMANDS
from tests.support.respclient import RawClient
from tests.support.servers import free_port, redis_server_binary, start_on_free_port, terminate

MINIRED = [sys.executable, "-m", "minired"]
# `pid:role dd Mon yyyy hh:mm:ss.mmm <level> message`
LOG_LINE = re.compile(r"^\d+:[CM] \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] .+$")


def _run(command: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def _both(args: list[str], cwd) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    return _run([redis_server_binary(), *args], cwd), _run([*MINIRED, *args], cwd)


def _log_messages(stdout: str) -> list[str]:
    """The messages of a log, without pid, role and time."""
    return [line.split(" ", 5)[5] for line in stdout.splitlines() if LOG_LINE.match(line)]


OVERCOMMIT_WARNING_TAIL = (
    " Without it, a background save or replication may fail under low memory condition. Being "
    "disabled, it can can also cause failures without low memory condition, see "
    "https://github.com/jemalloc/jemalloc/issues/1328. To fix this issue add "
    "'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command "
    "'sysctl vm.overcommit_memory=1' for this to take effect.")


def _overcommit_off() -> bool:
    with open("/proc/sys/vm/overcommit_memory") as handle:
        return handle.read().strip() != "1"


def _names() -> list[str]:
    return [name.decode() for name in COMMANDS]


# --- the configuration text ----------------------------------------------------------------------

def test_quoting_include_multi_word_values_and_options_merged(tmp_path):
    (tmp_path / "extra.conf").write_text('maxmemory-policy "allkeys-lru"\n')
    (tmp_path / "main.conf").write_text(
        "# a comment\n"
        "   hz 20   \n"
        "save 900 1\n"
        "save 300 10\n"
        f"include {tmp_path / 'extra.conf'}\n"
        "requirepass \"a\\x41\\\"b\"\n"
        "notify-keyspace-events 'KEA'\n"
        "client-output-buffer-limit pubsub 1mb 2mb 3\n"
        "rename-command FLUSHALL \"\"\n"
        "rename-command GET fetch\n"
        "user alice on >pw ~* +@all\n")
    loaded = config_file.load([str(tmp_path / "main.conf"), "--save", "60 5", "--hz 30"],
                              _names())
    config = loaded.config
    # After an include, Redis no longer counts itself as reading the file: `save` replaces.
    assert config.get("save") == "60 5"
    assert config.get("hz") == "30" and config.get("maxmemory-policy") == "allkeys-lru"
    assert config.get("requirepass") == 'aA"b' and config.get("notify-keyspace-events") == "AKE"
    assert config.get("client-output-buffer-limit").endswith("pubsub 1048576 2097152 3")
    assert loaded.renames == [("flushall", ""), ("get", "fetch")]
    assert loaded.users == [["alice", "on", ">pw", "~*", "+@all"]]
    assert loaded.config_file == str(tmp_path / "main.conf")


def test_save_lines_add_up_while_the_file_is_read(tmp_path):
    (tmp_path / "s.conf").write_text('save 900 1\nsave "300 10"\n')
    loaded = config_file.load([str(tmp_path / "s.conf"), "--save", "60", "5", "--save 70 6"],
                              _names())
    assert loaded.config.get("save") == "900 1 300 10 60 5 70 6"
    assert config_file.load(["--save", "--port", "7000"], _names()).config.get("save") == ""
    # An empty save (a bare --save too) empties the list even after the file's lines, as
    # redis-server's CONFIG GET save answers for each of these (the suite's "save with empty
    # input" test).
    for args in (["--save", "--loglevel", "verbose"], ["--loglevel", "verbose", "--save"],
                 ["--save", "", "--loglevel", "verbose"], ["--proc-title-template", "--save",
                                                           "--save", ""]):
        loaded = config_file.load([str(tmp_path / "s.conf"), *args], _names())
        assert loaded.config.get("save") == "", args


def test_stdin_config(tmp_path):
    import io

    loaded = config_file.load(["-", "--hz", "40"], _names(), stdin=io.StringIO("hz 11\ndatabases 3\n"))
    assert (loaded.config.get("hz"), loaded.config.get("databases")) == ("40", "3")


def test_argv_to_options_as_redis_main():
    invocation = config_file.parse_argv(["conf", "--port", "7", "--save", "900 1", '--x "a b"',
                                         "--bind", "1.2.3.4", "-"])
    assert invocation.config_file == os.path.abspath("conf") and invocation.from_stdin
    assert invocation.options == ('port "7" \nsave "900 1" \nx "a b" \nbind "1.2.3.4" ')


# --- what Redis refuses, compared with redis-server --------------------------------------------

@pytest.mark.parametrize("text", [
    "port 5\nnosuch 1\n",
    'port 5\nfoo "bar\n',
    "port\n",
    "save 1\n",
    "maxmemory-policy sometimes\n",
    "hz abc\n",
    "rename-command NOSUCH x\n",
    "rename-command get set\n",
    "user bob on\nuser bob off\n",
    "sentinel monitor a 127.0.0.1 1 1\n",
    "bind 127.0.0.1\ndatabases 0\n",
    "list-max-ziplist-entries 5\ncluster-enabled maybe\n",
    "dir /nonexistent-dir\n",
    "replicaof 127.0.0.1 0\nnosuch 1\n",  # (replicaof's two words accepted: line 2 refused)
    "dbfilename a/dump.rdb\n",  # names of files in `dir`: no path, the AOF's not empty
    "appendfilename a/x.aof\n",
    'appendfilename ""\n',
    "appenddirname a/b\n",
    'appenddirname ""\n',
])
def test_config_file_errors_match_redis(tmp_path, text):
    (tmp_path / "bad.conf").write_text(text)
    real, mini = _both([str(tmp_path / "bad.conf")], tmp_path)
    assert (mini.returncode, mini.stderr) == (real.returncode, real.stderr) == (1, mini.stderr)
    assert "*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***" in mini.stderr


@pytest.mark.parametrize("args", [
    ["--port", "1", "--nosuch", "2"],
    ["--port", "abc"],
    ["--save", "1"],
    ["--hz 10 20"],
    ["--maxmemory", "lots"],
    ["--port", "0", "--logfile", "/nonexistent-dir/x.log"],
])
def test_command_line_errors_match_redis(tmp_path, args):
    real, mini = _both(args, tmp_path)
    assert (mini.returncode, mini.stderr) == (real.returncode, real.stderr)
    assert mini.returncode == 1


def test_unreadable_config_file_is_logged_as_redis_does(tmp_path):
    (tmp_path / "inc.conf").write_text(f"include {tmp_path / 'missing.conf'}\n")
    real, mini = _both([str(tmp_path / "inc.conf")], tmp_path)
    assert real.returncode == mini.returncode == 1
    assert _log_messages(mini.stdout) == _log_messages(real.stdout) == [
        f"# Fatal error, can't open config file '{tmp_path / 'missing.conf'}': "
        "No such file or directory"]


def test_values_match_redis_after_the_same_file_and_options(tmp_path):
    (tmp_path / "extra.conf").write_text('maxmemory-policy "allkeys-lru"\n')
    (tmp_path / "main.conf").write_text(
        "save 900 1\nsave 300 10\n"
        f"include {tmp_path / 'extra.conf'}\n"
        "client-output-buffer-limit replica 4mb 5mb 6\n"
        "requirepass \"p\\x41 w\"\nlogfile ''\nloglevel warning\n"
        "rename-command GET FETCH\n"
        # (several words, as CONFIG REWRITE writes them: Redis's MULTI_ARG_CONFIG)
        "shutdown-on-sigterm nosave now\n")
    names = ("save", "maxmemory-policy", "client-output-buffer-limit", "requirepass", "hz",
             "dir", "logfile", "shutdown-on-sigterm")
    (tmp_path / "data").mkdir()
    answers = []
    for command in ([redis_server_binary()], MINIRED):
        # (the second server loads the dump.rdb the first saved as it stopped: only a PONG
        # after AUTH says it has loaded)
        proc, port = start_on_free_port(
            lambda port: [*command, str(tmp_path / "main.conf"), "--port", str(port),
                          "--save", "60 5", "--hz", "33", "--dir", "data", "--logfile", "log"],
            password="pA w", cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = RawClient(port)
            client.call("AUTH", "pA w")
            answers.append([client.call("CONFIG", "GET", name) for name in names]
                           + [client.call("FETCH", "k"), client.call("GET", "k")])
            client.call("CONFIG", "SET", "shutdown-on-sigterm", "default")  # (terminate's)
            client.close()
        finally:
            terminate(proc)
    assert answers[0] == answers[1]
    assert answers[1][0] == [b"save", b"60 5"]
    assert answers[1][5] == [b"dir", str(tmp_path / "data").encode()]
    assert (tmp_path / "data" / "log").exists()  # (relative to dir, read before it)


def test_dir_not_given_is_the_working_directory_as_redis_shows_it(tmp_path):
    # Redis's CONFIG GET dir is getcwd(), given `dir` or not: the absolute path with its
    # symbolic links resolved (the servers start in a directory reached through a link).
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    answers = []
    for command in ([redis_server_binary()], MINIRED):
        proc, port = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--save", ""],
            cwd=tmp_path / "link", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = RawClient(port)
            answers.append([client.call("CONFIG", "GET", "dir"),
                            client.call("CONFIG", "GET", "dir*")])
            client.call("CONFIG", "SET", "dir", ".")  # (relative to the directory it shows)
            answers.append(client.call("CONFIG", "GET", "dir"))
            client.close()
        finally:
            terminate(proc)
    assert answers[:2] == answers[2:]
    assert answers[0][0] == [b"dir", str((tmp_path / "data").resolve()).encode()]


def test_dir_removed_while_serving_is_answered_as_redis_does(tmp_path):
    # getcwd() fails once the working directory is removed: Redis answers "" (and CONFIG GET *
    # still answers every other parameter).
    answers = []
    for n, command in enumerate(([redis_server_binary()], MINIRED)):
        home = tmp_path / f"home{n}"
        home.mkdir()
        proc, port = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--save", ""],
            cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            home.rmdir()
            client = RawClient(port)
            everything = client.call("CONFIG", "GET", "*")
            answers.append([client.call("CONFIG", "GET", "dir"),
                            everything[everything.index(b"dir") + 1]])
            client.close()
        finally:
            terminate(proc)
    assert answers == [[[b"dir", b""], b""]] * 2


# --- -v, --help ----------------------------------------------------------------------------------

def test_version_line_is_redis_servers_then_minireds(tmp_path):
    real, mini = _both(["--version"], tmp_path)
    pattern = r"^Redis server v=7\.0\.15 sha=00000000:0 malloc=\S+ bits=64 build=[0-9a-f]+"
    assert re.match(pattern, real.stdout) and re.match(pattern, mini.stdout), mini.stdout
    assert "minired=" in mini.stdout.split("build=")[1]
    # pytest-redis takes the first dotted number as the Redis version it checks.
    assert re.search(r"\d+(?:\.\d+)+", mini.stdout).group(0) == "7.0.15"
    assert _run([*MINIRED, "-v"], tmp_path).stdout == mini.stdout and mini.returncode == 0


def test_help_is_redis_servers_usage(tmp_path):
    real, mini = _both(["--help"], tmp_path)
    assert real.returncode == mini.returncode == 1 and real.stdout == mini.stdout == ""
    assert mini.stderr.startswith(real.stderr)


# --- the log, the pid file, the unix socket, daemonize ---------------------------------------------

def _wait_for(path, text: str, proc: subprocess.Popen | None = None, timeout: float = 30.0) -> str:
    """The file's content once it holds `text` (the server's log, polled)."""
    deadline = time.monotonic() + timeout
    content = ""
    while time.monotonic() < deadline:
        content = path.read_text() if path.exists() else ""
        if text in content:
            return content
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.02)
    raise AssertionError(f"{text!r} not in {path}: {content}")


def test_logo_log_lines_pidfile_and_unix_socket_removal(tmp_path):
    port = free_port()
    socket_path = tmp_path / "socket"
    (tmp_path / "r.conf").write_text(
        f"always-show-logo yes\nport {port}\nunixsocket {socket_path}\nloglevel verbose\n"
        f"logfile {tmp_path / 'log'}\npidfile {tmp_path / 'pid'}\ndir {tmp_path}\n")
    proc = subprocess.Popen([*MINIRED, str(tmp_path / "r.conf")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        log = _wait_for(tmp_path / "log", "The server is now ready to accept connections", proc)
        assert f" PID: {proc.pid}\n" in log and f"     Port: {port}\n" in log
        assert (tmp_path / "pid").read_text() == f"{proc.pid}\n" and socket_path.exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        terminate(proc)
    log = (tmp_path / "log").read_text()
    assert not (tmp_path / "pid").exists() and not socket_path.exists()
    lines = [line for line in log.splitlines() if LOG_LINE.match(line)]
    assert [line.split(" ", 5)[5] for line in lines] == [
        "# oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
        f"# Redis version=7.0.15, bits=64, commit=00000000, modified=0, pid={proc.pid}, "
        "just started",
        "# Configuration loaded",
        "* monotonic clock: POSIX clock_gettime",
        "# Server initialized",
        *(["# WARNING Memory overcommit must be enabled!" + OVERCOMMIT_WARNING_TAIL]
          if _overcommit_off() else []),
        "* Ready to accept connections",
        f"* The server is now ready to accept connections at {socket_path}",
        "# User requested shutdown...",
        "* Removing the pid file.",
        "* Removing the unix socket file.",
        "# Redis is now ready to exit, bye bye..."]
    assert [line.split(":")[1][0] for line in lines[:4]] == ["C", "C", "C", "M"]
    assert f"{proc.pid}:signal-handler (" in log


def test_short_banner_without_the_logo_and_loglevel_filters(tmp_path):
    proc, port = start_on_free_port(
        lambda port: [*MINIRED, "--port", str(port), "--loglevel", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        client = RawClient(port)
        client.call("CONFIG", "SET", "loglevel", "notice")
        client.send("SHUTDOWN", "NOSAVE")
        assert proc.wait(30) == 0
    finally:
        terminate(proc)
    messages = _log_messages(proc.stdout.read())
    assert "* Running mode=standalone, port=%d." % port not in messages  # (a notice)
    assert messages[-2:] == ["# User requested shutdown...",
                             "# Redis is now ready to exit, bye bye..."]
    assert all(message.startswith("#") for message in messages[:-1])


def test_port_zero_with_a_unix_socket_opens_no_tcp_listener(tmp_path):
    socket_path = tmp_path / "s"
    proc = subprocess.Popen([*MINIRED, "--port", "0", "--unixsocket", str(socket_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in proc.stdout:
            if "ready to accept connections" in line:
                break
        assert "The server is now ready to accept connections at" in line
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(socket_path))
            client.sendall(b"CONFIG GET port\r\n")
            assert client.recv(100) == b"*2\r\n$4\r\nport\r\n$1\r\n0\r\n"
    finally:
        terminate(proc)


def test_daemonize_detaches_and_writes_the_pid_file(tmp_path):
    port = free_port()
    pidfile = tmp_path / "pid"
    result = _run([*MINIRED, "--port", str(port), "--daemonize", "yes", "--pidfile", str(pidfile),
                   "--logfile", str(tmp_path / "log")], tmp_path)
    assert result.returncode == 0 and result.stdout == result.stderr == ""
    log = _wait_for(tmp_path / "log", "Ready to accept connections")
    pid = int(pidfile.read_text())
    assert f"pid={pid}, just started" in log
    client = RawClient(port)
    client.send("SHUTDOWN", "NOSAVE")
    _wait_for(tmp_path / "log", "bye bye")
    client.close()
    deadline = time.monotonic() + 30
    while pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pidfile.exists()


def test_busy_port_is_reported_as_redis_does(tmp_path):
    holder, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                      "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, cwd=tmp_path)
    try:
        real, mini = _both(["--port", str(port), "--bind", "127.0.0.1", "--save", ""], tmp_path)
    finally:
        terminate(holder)
    assert real.returncode == mini.returncode == 1
    tail = _log_messages(real.stdout)[-2:]
    assert _log_messages(mini.stdout)[-2:] == tail == [
        f"# Warning: Could not create server TCP listening socket 127.0.0.1:{port}: bind: "
        "Address already in use", f"# Failed listening on port {port} (TCP), aborting."]


def test_crash_signal_logs_redis_bug_report_and_dies_of_it(tmp_path):
    port = free_port()
    proc = subprocess.Popen([*MINIRED, "--port", str(port), "--logfile", str(tmp_path / "log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        _wait_for(tmp_path / "log", "Ready to accept connections", proc)
        proc.send_signal(signal.SIGABRT)
        assert proc.wait(30) == -signal.SIGABRT
    finally:
        terminate(proc)
    log = (tmp_path / "log").read_text()
    assert "=== REDIS BUG REPORT START: Cut & paste starting from here ===" in log
    assert " # Redis 7.0.15 crashed by signal: 6, si_code: 0\n" in log
    assert "=== REDIS BUG REPORT END. Make sure to include from START to END. ===" in log


@pytest.mark.parametrize("command", [MINIRED, [redis_server_binary()]], ids=["minired", "redis"])
def test_a_second_sigint_during_the_shutdown_save_removes_its_temp_file(tmp_path, command):
    """Redis's unit/shutdown "Temp rdb will be deleted in signal handle": the shutdown save is
    slowed by rdb-key-save-delay (a save on the loop too), and a second SIGINT while it runs
    exits at once with the temporary file removed and no dump.rdb written."""
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "900 1", "--dir", str(tmp_path),
                      "--logfile", str(tmp_path / "log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        client = RawClient(port)
        for i in range(20):
            client.call("SET", i, i)
        assert client.call("CONFIG", "SET", "rdb-key-save-delay", 100000) == b"OK"  # 2 s
        temp = tmp_path / f"temp-{proc.pid}.rdb"
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30
        while not temp.exists():
            assert time.monotonic() < deadline, "the shutdown save never started"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 1
        client.close()
    finally:
        terminate(proc)
    assert not temp.exists() and not (tmp_path / "dump.rdb").exists()
    assert "You insist... exiting now." in (tmp_path / "log").read_text()


# --- CONFIG REWRITE --------------------------------------------------------------------------------

def _rewritten(command: list[str], folder, text: str, commands: list[list[str]]) -> tuple:
    folder.mkdir()
    path = folder / "w.conf"
    path.write_text(text)
    proc, port = start_on_free_port(
        lambda port: [*command, str(path), "--port", str(port), "--requirepass", "a b"],
        password="a b", cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        client.call("AUTH", "a b")
        replies = [client.call(*args) for args in commands]
        client.close()
    finally:
        terminate(proc)
    assert _info_field(replies[-1], "config_file") == str(path)
    head, _, tail = path.read_text().partition("# Generated by CONFIG REWRITE\n")
    return replies, head, sorted(line for line in tail.splitlines()
                                 if not line.startswith(("dir ", "port ")))


def _info_field(info: bytes, name: str) -> str:
    return next(line.split(":", 1)[1] for line in info.decode().splitlines()
                if line.startswith(name + ":"))


def test_config_rewrite_matches_redis(tmp_path):
    (tmp_path / "inc.conf").write_text("maxmemory-policy allkeys-lru\n")
    text = ("# my conf\n  save 900 1\nsave 300 10\nmaxmemory 1mb\nslave-read-only yes\nhz 10\n\n"
            "rename-command GET FETCH\n"
            f"include {tmp_path / 'inc.conf'}\nuser bob on >x ~* +@all\n")
    commands = [["CONFIG", "SET", "maxmemory", "3000000"],
                ["CONFIG", "SET", "notify-keyspace-events", "KEA"],
                ["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 2mb 3"],
                ["CONFIG", "SET", "maxmemory-clients", "10%"],
                ["CONFIG", "SET", "unixsocketperm", "700"],
                ["CONFIG", "REWRITE"],
                ["CONFIG", "SET", "save", ""], ["CONFIG", "SET", "maxmemory", "0"],
                ["CONFIG", "REWRITE"], ["INFO", "server"]]
    real = _rewritten([redis_server_binary()], tmp_path / "real", text, commands)
    mini = _rewritten(MINIRED, tmp_path / "mini", text, commands)
    assert mini[0][:-1] == real[0][:-1] and mini[1:] == real[1:]
    assert 'save ""\n' in mini[1] and "client-output-buffer-limit pubsub 1mb 2mb 3" in mini[2]


def test_config_rewrite_without_a_config_file(tmp_path):
    proc, port = start_on_free_port(lambda port: [*MINIRED, "--port", str(port)], cwd=tmp_path,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        reply = client.call("CONFIG", "REWRITE")
        assert str(reply) == str(type(reply)("ERR The server is running without a config file"))
        client.close()
    finally:
        terminate(proc)


# --- ACL users at start-up -------------------------------------------------------------------------

def _acl_list_at_start(command: list[str], folder, args: list[str]) -> list:
    # (the default user is off: only alice's PONG lets the start ask whose it is)
    proc, port = start_on_free_port(lambda port: [*command, *args, "--port", str(port)],
                                    user="alice", password="pw", cwd=folder,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        client.call("AUTH", "alice", "pw")
        listed = client.call("ACL", "LIST")
        client.close()
        return listed
    finally:
        terminate(proc)


def test_user_lines_and_aclfile_are_loaded_at_start_as_redis_does(tmp_path):
    (tmp_path / "users.acl").write_text("user alice on >pw ~k* +@all\nuser default off\n")
    (tmp_path / "with-file.conf").write_text(f"aclfile {tmp_path / 'users.acl'}\n")
    (tmp_path / "with-lines.conf").write_text("user alice on >pw ~k* +@all\nuser default off\n")
    for conf in ("with-file.conf", "with-lines.conf"):
        args = [str(tmp_path / conf)]
        real = _acl_list_at_start([redis_server_binary()], tmp_path, args)
        assert _acl_list_at_start(MINIRED, tmp_path, args) == real
        assert real[0].startswith(b"user alice on #")


@pytest.mark.parametrize("text", [
    "user bob on >x +nosuchcommand\n",
    "aclfile /nonexistent/users.acl\nuser bob on\n",
])
def test_acl_errors_at_start_match_redis(tmp_path, text):
    (tmp_path / "acl.conf").write_text(text + "bind 127.0.0.1\nport 0\n"
                                       f"unixsocket {tmp_path / 'sock'}\n")
    real, mini = _both([str(tmp_path / "acl.conf")], tmp_path)
    assert real.returncode == mini.returncode == 1
    assert _log_messages(mini.stdout)[-2:] == _log_messages(real.stdout)[-2:]


def test_loading_messages_match_redis(tmp_path):
    maker, port = start_on_free_port(
        lambda port: [redis_server_binary(), "--port", str(port), "--save", "",
                      "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        client.call("SET", "a", "1")
        client.call("SAVE")
        client.close()
    finally:
        terminate(maker)
    logs = []
    for command in ([redis_server_binary()], MINIRED):
        proc, _ = start_on_free_port(
            lambda port: [*command, "--port", str(port), "--save", "", "--dir", str(tmp_path)],
            stdout=subprocess.PIPE, text=True, stderr=subprocess.DEVNULL)
        terminate(proc)
        messages = _log_messages(proc.stdout.read())
        logs.append([re.sub(r"[\d.]+ (seconds|Mb)", "N", m) for m in messages
                     if "RDB" in m or "DB loaded" in m])
    assert logs[1] == logs[0] == [
        "* Loading RDB produced by version 7.0.15", "* RDB age N", "* RDB memory usage when "
        "created N", "* Done loading RDB, keys loaded: 1, keys expired: 0.",
        "* DB loaded from disk: N"]


def _mapped_libc() -> str:
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/libc.so" in line or "/libc-" in line}
    return sorted(paths)[0]


def _module_file(folder, kind: str) -> str:
    """A `loadmodule` path that fails for one of the reasons Redis's moduleLoad() tells apart."""
    if kind == "missing":
        return "nonexistent.so"
    target = folder / f"{kind}.so"
    if kind == "library_without_onload":
        # any real shared object without RedisModule_OnLoad: the C library this process runs on
        target.write_bytes(open(_mapped_libc(), "rb").read())
    else:
        target.write_text("not a shared object\n")
    target.chmod(0o644 if kind == "not_executable" else 0o755)
    return str(target)


@pytest.mark.parametrize("kind", ["missing", "not_executable", "not_elf", "library_without_onload"])
def test_module_load_failures_are_logged_as_redis_does(tmp_path, kind):
    # pytest-redis's own suite looks for dlopen()'s message in the log of a failed start
    path = _module_file(tmp_path, kind)
    real, mini = _both(["--port", str(free_port()), "--save", "", "--loadmodule", path,
                        "--loadmodule", "second.so"], tmp_path)
    assert real.returncode == mini.returncode == 1
    assert _log_messages(mini.stdout)[-2:] == _log_messages(real.stdout)[-2:]
    assert path in _log_messages(mini.stdout)[-1]
