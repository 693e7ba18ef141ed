"""Start-up: what `minired` loads before its first reply, and that lazy loading is invisible.

The script engine, and stdlib modules only a rare command needs, load on first use; these tests
keep them off the start-up path, and check that a fresh server still describes every command
and runs scripts as its first commands.
"""
from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys

import pytest

import minired
from minired.embed import EmbeddedServer, SubprocessServer
from minired.startup import COMMANDS
from tests.support.respclient import RawClient

# Loaded on first use, each costing ~1-9 ms of start-up if imported eagerly.
LAZY_MODULES = {
    "lupa", "minired.scripting.engine", "minired.scripting.sandbox", "importlib.resources",
    "pathlib", "tempfile", "zipfile", "pickle", "platform", "ipaddress", "fractions", "decimal",
    "hmac", "hashlib", "shutil", "resource",
    "minired.commands.docs_data",  # COMMAND DOCS's ~200 kB of Redis's documentation
    "anycrc",  # CRC64 of DUMP payloads and RDB files
    # The RDB codec (~4 ms): loaded with the first dump.rdb, SAVE, DUMP/RESTORE or full sync.
    "minired.features.rdb", "minired.features.rdb_file", "minired.features.rdb_format",
    "minired.features.rdb_containers", "minired.features.rdb_streams", "minired.features.lzf",
}

# Runs the CLI; once the server has answered a PING, prints the loaded modules and whether
# the cyclic GC is on, then exits.
_REPORT_AT_FIRST_PONG = """
import gc, json, os, socket, sys, threading
import minired.engine.server as server_module

def report(server):
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"PING\\r\\n")
        assert sock.recv(16) == b"+PONG\\r\\n"
    print(json.dumps({"modules": sorted(sys.modules), "gc": gc.isenabled()}), flush=True)
    os._exit(0)

def banner(server):
    if not getattr(banner, "called", False):
        banner.called = True
        threading.Thread(target=report, args=(server,)).start()
    return "ready"

server_module.banner = banner
from minired.__main__ import main
main(["--port", "0", "--loglevel", "warning"])
"""


def _run_python(code: str) -> str:
    """Runs `code` in a new interpreter without the site hooks (-S), on this one's path plus
    minired's checkout: what a .pth file imports differs between machines (an editable
    install's finder, a venv's or a distribution's hooks) and would hide, or add, modules
    minired loads itself, so the test would depend on how and where minired is installed."""
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(minired.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([checkout, *filter(None, sys.path)]))
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          timeout=60, check=True, env=env).stdout


@pytest.fixture(scope="module")
def first_pong_report() -> dict:
    return json.loads(_run_python(_REPORT_AT_FIRST_PONG).splitlines()[-1])


def test_first_reply_needs_none_of_the_lazily_loaded_modules(first_pong_report):
    # Whatever the interpreter loads by itself is not ours.
    bare = set(json.loads(_run_python("import json, sys; print(json.dumps(sorted(sys.modules)))")))
    loaded_by_minired = set(first_pong_report["modules"]) - bare
    assert sorted(loaded_by_minired & LAZY_MODULES) == []


def test_a_compiled_start_loads_no_cython_module(first_pong_report):
    """Compiled modules say `import cython` only to the compiler: a compiled start must load
    neither Cython's pure-Python module (~3 ms, ~0.5 MB) nor minired's stand-in for it."""
    import minired.engine.dispatch as dispatch

    if dispatch.__file__.endswith(".py"):
        pytest.skip("this run is uncompiled: its modules with C types import `cython`")
    assert {"cython", "Cython"} & set(first_pong_report["modules"]) == set()


def test_without_cython_the_stand_in_answers_import_cython():
    """Where Cython is not installed (a wheel's environment), the uncompiled modules' `import
    cython` finds minired/_cython.py, last on sys.meta_path, with what the modules use."""
    import importlib.util

    from minired._sources import CythonStandIn

    assert any(isinstance(finder, CythonStandIn) for finder in sys.meta_path)
    assert CythonStandIn().find_spec("Cython") is None
    spec = CythonStandIn().find_spec("cython")
    stand_in = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stand_in)
    assert stand_in.compiled is False

    @stand_in.locals(n=stand_in.longlong)
    def double(n):
        return 2 * n

    assert double(21) == 42


def test_loading_sources_over_compiled_modules_needs_none_of_them(tmp_path, monkeypatch):
    # The uncompiled run of a compiled install (MINIRED_PURE_PYTHON=1, or a source edited since
    # the build) loads modules through minired._sources' finder, which the first-reply test
    # above only meets where this checkout happens to be compiled. Its imports must stay off
    # the lazy list either way (importlib.abc, say, brings importlib.resources and tempfile).
    probe = tmp_path / "minired_source_probe.py"
    probe.write_text("LOADED = True\n")
    monkeypatch.setenv("MINIRED_PURE_PYTHON", "1")  # (the finder then prints no notice)
    code = ("import json, sys\n"
            "from minired._sources import SourceOverStaleExtension\n"
            f"sys.meta_path.insert(0, SourceOverStaleExtension({{'minired_source_probe': {str(probe)!r}}}))\n"
            "import minired_source_probe\n"
            "assert minired_source_probe.LOADED\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    bare = set(json.loads(_run_python("import json, sys; print(json.dumps(sorted(sys.modules)))")))
    loaded = set(json.loads(_run_python(code).splitlines()[-1])) - bare
    assert "minired_source_probe" in loaded
    assert sorted(loaded & LAZY_MODULES) == []


def test_cli_server_runs_with_the_cyclic_gc_on(first_pong_report):
    assert first_pong_report["gc"] is True


def test_cli_turns_the_gc_back_on_when_start_up_fails():
    from minired.__main__ import main

    assert main(["--port", "not-a-number"]) == 1  # (a FATAL CONFIG FILE ERROR, as Redis)
    assert gc.isenabled()


def test_fresh_server_describes_every_command_and_runs_scripts_first_thing():
    with SubprocessServer() as server:
        client = RawClient(server.port)
        try:
            assert client.call("COMMAND", "COUNT") == len(COMMANDS)
            info = client.call("COMMAND", "INFO", "eval", "fcall", "script")
            assert [entry[0] for entry in info] == [b"eval", b"fcall", b"script"]
            assert client.call("EVAL", "return redis.call('PING')", "0") == b"PONG"
        finally:
            client.close()


def _ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("bind", ["127.0.0.1", "localhost", "127.0.0.1 ::1"])
def test_listeners_for_ip_literals_and_host_names(bind):
    # IP literals are bound by minired itself (server.bind_ip_literal), names by the loop.
    if "::1" in bind and not _ipv6_loopback_available():
        pytest.skip("no IPv6 loopback here")
    with EmbeddedServer(host=bind) as server:
        for host in bind.split():
            client = RawClient(server.port, host=host)
            assert client.call("PING") == b"PONG"
            client.close()
        with pytest.raises(RuntimeError, match=r"error while attempting to bind on address .*: "
                                               r"address already in use"):
            EmbeddedServer(host=bind.split()[0], port=server.port).start()
