"""Packaging: the built wheel carries every non-Python file the code loads at run time (the
Lua sandbox, the queue's scripts), which an editable install would not notice missing; and
where setup.py compiled the hot modules, those are what runs, unless a source was edited."""
from __future__ import annotations

import ast
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from minired._sources import pure_python_asked

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_wheel_contains_runtime_data_files(tmp_path):
    # Build from a clean copy: a stale build/ directory in the checkout would hide a miss.
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", ".hypothesis", "appendonlydir", "*.so", "*.c",
        "_compiled.txt", "node_modules"))
    out = tmp_path / "dist"
    # Uncompiled (setup.py): what is checked here does not depend on it, and compiling takes minutes.
    env = {**os.environ, "MINIRED_PURE_PYTHON": "1"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(source)], check=True, capture_output=True, env=env)
    [wheel] = out.glob("minired-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {  # sandbox.lua, the Lua libraries' chunks and the .pxd files
        str(p.relative_to(ROOT)) for p in (ROOT / "minired").rglob("*.lua")} | {
        str(p.relative_to(ROOT)) for p in (ROOT / "minired").rglob("*.pxd")} | {
        f"minired_queue/lua/{p.name}" for p in (ROOT / "queue" / "minired_queue" / "lua").glob("*.lua")}
    assert len(expected) > 10 and "minired/scripting/lualibs/cjson.lua" in expected
    assert expected <= names, sorted(expected - names)
    assert "queue/__init__.py" not in names and not any(n.startswith("queue/") for n in names)


def _compiled_modules() -> list[str]:
    record = ROOT / "minired" / "_compiled.txt"
    if not record.exists():
        pytest.skip("minired is installed uncompiled (no C compiler, or MINIRED_PURE_PYTHON)")
    names = [line.split()[0] for line in record.read_text().splitlines()]
    return [name for name in names if not name.endswith(".pxd")]  # the .pxd files' checksums


def test_the_compiled_modules_are_the_ones_tested():
    """Where setup.py compiled the hot modules, the suite runs them, not their sources."""
    import importlib

    names = _compiled_modules()
    assert "minired.engine.server" in names and "minired.scripting.engine" in names
    pure = pure_python_asked()  # the uncompiled build, asked for
    for name in names:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:  # a module written in Cython (a .pyx) is absent when pure
            assert pure and (ROOT / (name.replace(".", "/") + ".pyx")).exists(), name
            continue
        assert module.__file__.endswith(".py") == pure, f"{name} was loaded from {module.__file__}"


@pytest.mark.parametrize("value, pure", [("", False), ("0", False), ("false", False),
                                         ("No", False), ("off", False), ("1", True),
                                         ("yes", True), ("true", True)])
def test_minired_pure_python_is_read_as_a_switch(monkeypatch, value, pure):
    monkeypatch.setenv("MINIRED_PURE_PYTHON", value)
    assert pure_python_asked() is pure


def test_minired_pure_python_0_keeps_the_compiled_build():
    """MINIRED_PURE_PYTHON=0 says "not uncompiled": the compiled modules load as when unset."""
    _compiled_build_in_use()
    probe = "import minired.engine.server as s; print(s.__file__)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=ROOT, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "MINIRED_PURE_PYTHON": "0"})
    assert not loaded.stdout.strip().endswith(".py"), loaded.stdout


def _compiled_build_in_use() -> list[str]:
    """The compiled modules, for tests of how the compiled build loads; skipped on the
    uncompiled run (MINIRED_PURE_PYTHON), where nothing compiled is loaded at all."""
    if pure_python_asked():
        pytest.skip("the uncompiled build's run: no compiled module is loaded")
    return _compiled_modules()


def _run_in_edited_copy(tmp_path, edited: str, addition: str, probe: str):
    """Run probe (Python code) against a copy of the built package in which `edited` (a path
    under minired/) got `addition` appended after the build."""
    _compiled_build_in_use()
    shutil.copytree(ROOT / "minired", tmp_path / "minired",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "minired" / edited, "a") as f:
        f.write(addition)
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})


# Serve one PING from the copy: `reply` holds the answer.
_PING = ("from minired.embed import EmbeddedServer\n"
         "import socket\n"
         "with EmbeddedServer() as server:\n"
         "    s = socket.create_connection(('127.0.0.1', server.port))\n"
         "    s.sendall(b'PING\\r\\n')\n"
         "    reply = s.recv(100)\n")


def test_an_edited_source_wins_over_its_stale_compiled_module(tmp_path):
    probe = ("import minired.protocol.resp as r, minired.data.keyspace as k; "
             "print(r.__file__.endswith('.py'), getattr(r, 'EDITED_AFTER_THE_BUILD', False), "
             "k.__file__.endswith('.py'))")
    run = _run_in_edited_copy(tmp_path, "protocol/resp.py", "\nEDITED_AFTER_THE_BUILD = True\n", probe)
    assert run.stdout.split() == ["True", "True", "False"], run.stderr
    assert "minired.protocol.resp" in run.stderr  # said once, on stderr


def test_modules_built_against_an_edited_one_load_from_source_with_it(tmp_path):
    """dispatch and server are compiled against client's extension type (their .pxd files
    cimport it), so an edited client.py takes them with it, and the server still answers."""
    probe = ("import minired.engine.client as c, minired.engine.server as d,"
             " minired.data.keyspace as k\n" + _PING +
             "print(c.__file__.endswith('.py'), d.__file__.endswith('.py'),"
             " k.__file__.endswith('.py'), reply)")
    run = _run_in_edited_copy(tmp_path, "engine/client.py", "\nEDITED_AFTER_THE_BUILD = True\n", probe)
    assert run.stdout.split() == ["True", "True", "False", "b'+PONG\\r\\n'"], run.stderr


def _slots_by_class(source: pathlib.Path) -> dict[str, set[str]]:
    slots = {}
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if (isinstance(item, ast.Assign) and len(item.targets) == 1
                        and getattr(item.targets[0], "id", None) == "__slots__"):
                    slots[node.name] = set(ast.literal_eval(item.value))
    return slots


def test_every_extension_type_declares_exactly_its_classs_slots():
    """A .pxd turns a class into an extension type for the compiled build; a field missing
    there would be an AttributeError only when compiled, an extra one a silent difference."""
    checked = 0
    for pxd in sorted((ROOT / "minired").rglob("*.pxd")):
        if not pxd.with_suffix(".py").exists():  # declarations only (luaapi.pxd: Lua's C API)
            continue
        slots = _slots_by_class(pxd.with_suffix(".py"))
        classes = re.findall(r"^cdef class (\w+):\n((?:    .*\n?)+)", pxd.read_text(), re.M)
        for name, body in classes:
            fields = {field.strip() for line in re.findall(r"cdef public (?:long long|\w+) (.*)", body)
                      for field in line.split(",")}
            assert name in slots, f"{pxd.name}: {name} has no __slots__ in {pxd.stem}.py"
            assert fields == slots[name], (pxd.name, name, fields ^ slots[name])
            checked += 1
    assert checked >= 8


def test_no_function_a_pxd_makes_cpdef_is_decorated():
    """Cython drops the decorators of a function its .pxd declares cpdef, without a word: a
    command handler declared there would be compiled but never registered."""
    checked = 0
    for pxd in sorted((ROOT / "minired").rglob("*.pxd")):
        source = pxd.with_suffix(".py")
        if not source.exists():
            continue
        declared = set(re.findall(r"^cpdef\s+(?:[\w.]+\s+)?(\w+)\s*\(", pxd.read_text(), re.M))
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name in declared:
                assert not node.decorator_list, f"{source.name}: {node.name} is decorated"
                checked += 1
    assert checked >= 15


# A cpdef/cdef function a .pxd declares (at the top or in a cdef class): its indentation, name
# and argument list, possibly over several lines.
_PXD_FUNCTION = re.compile(r"^( *)c?p?def\s+(?!class\b)(?:[\w.]+\s+)*?(\w+)\s*\(([^)]*)\)", re.M)


def _pxd_functions(pxd_text: str) -> dict[str, list[str]]:
    """Each function a .pxd declares ("Class.method" inside a cdef class) -> its argument names."""
    declared = {}
    for match in _PXD_FUNCTION.finditer(pxd_text):
        indent, name, arguments = match.groups()
        if indent:  # a method: the cdef class it belongs to is the last one above it
            owner = re.findall(r"^cdef class (\w+)", pxd_text[:match.start()], re.M)[-1]
            name = f"{owner}.{name}"
        names = [re.findall(r"\w+", argument.split("=")[0])[-1]
                 for argument in arguments.split(",") if argument.strip()]
        declared[name] = names
    return declared


def _py_functions(source: pathlib.Path) -> dict[str, list[str]]:
    """Each top-level function and class method of a module -> its argument names."""
    found = {}
    for node in ast.parse(source.read_text()).body:
        members = [(node.name, node)] if isinstance(node, ast.FunctionDef) else [
            (f"{node.name}.{item.name}", item) for item in node.body
            if isinstance(item, ast.FunctionDef)] if isinstance(node, ast.ClassDef) else []
        for name, function in members:
            found[name] = [a.arg for a in function.args.posonlyargs + function.args.args]
    return found


def test_every_function_a_pxd_declares_matches_its_source():
    """A .pxd's cpdef/cdef declaration must name a function of the .py beside it with the same
    arguments: Cython refuses to compile a mismatch, which the uncompiled build (the one tests
    run on where there is no compiler) would never show."""
    checked = 0
    for pxd in sorted((ROOT / "minired").rglob("*.pxd")):
        source = pxd.with_suffix(".py")
        if not source.exists():  # declarations only (luaapi.pxd: Lua's C API)
            continue
        defined = _py_functions(source)
        for name, arguments in _pxd_functions(pxd.read_text()).items():
            assert name in defined, f"{pxd.name} declares {name}, which {source.name} does not define"
            assert arguments == defined[name], (pxd.name, name, arguments, defined[name])
            checked += 1
    assert checked >= 40


def test_an_edited_pxd_makes_every_compiled_module_load_from_source(tmp_path):
    """The compiled modules are built against each other's .pxd types, so one edited .pxd
    sends them all to their sources until the next build, and the server still answers."""
    probe = ("import minired.data.keyspace as k, minired.protocol.resp as r\n" + _PING +
             "print(k.__file__.endswith('.py'), r.__file__.endswith('.py'), reply)")
    run = _run_in_edited_copy(tmp_path, "engine/dispatch.pxd", "\n# edited after the build\n", probe)
    assert run.stdout.split() == ["True", "True", "b'+PONG\\r\\n'"], run.stderr


def test_redis_call_takes_the_native_bridge_where_it_is_compiled():
    """luabridge falls back to lupa's bridge silently where it cannot work, so the compiled
    build checks here that it does work."""
    names = _compiled_build_in_use()
    assert "minired.scripting.luabridge" in names
    from minired.embed import EmbeddedServer
    from minired.scripting.feature import engine_of

    with EmbeddedServer() as server:
        assert server.call(lambda: engine_of(server.server).eval_sandbox.native)


def test_an_edited_cython_module_is_left_out_until_the_next_build(tmp_path):
    """luabridge.pyx has no Python source to fall back to: edited after the build, it is not
    imported at all, and scripts run on lupa's bridge."""
    probe = ("import socket\n"
             "from minired.embed import EmbeddedServer\n"
             "from minired.scripting.feature import engine_of\n"
             "try:\n"
             "    import minired.scripting.luabridge\n"
             "    imported = True\n"
             "except ImportError:\n"
             "    imported = False\n"
             "with EmbeddedServer() as server:\n"
             "    s = socket.create_connection(('127.0.0.1', server.port))\n"
             "    s.sendall(b'EVAL \"return redis.call(\\'echo\\', -0.0)\" 0\\r\\n')\n"
             "    reply = s.recv(100)\n"
             "    native = server.call(lambda: engine_of(server.server).eval_sandbox.native)\n"
             "print(imported, native, reply)")
    run = _run_in_edited_copy(tmp_path, "scripting/luabridge.pyx", "\n# edited after the build\n",
                              probe)
    assert run.stdout.split() == ["False", "False", "b'$2\\r\\n-0\\r\\n'"], run.stderr


def test_a_build_that_compiles_nothing_keeps_the_record_of_the_last_one(tmp_path):
    """`setup.py build_ext` without Cython (or with MINIRED_PURE_PYTHON) compiles nothing; the
    modules compiled before are still there, so their record must stay, or a stale module
    would pass for up to date and shadow its edited source."""
    _compiled_modules()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "minired", tmp_path / "minired",
                    ignore=shutil.ignore_patterns("__pycache__"))
    record = tmp_path / "minired" / "_compiled.txt"
    before = record.read_text()
    with open(tmp_path / "minired" / "protocol" / "resp.py", "a") as f:
        f.write("\nEDITED_AFTER_THE_BUILD = True\n")
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                           capture_output=True, text=True,
                           env={**os.environ, "MINIRED_PURE_PYTHON": "1"})
    assert build.returncode == 0, build.stderr
    assert record.read_text() == before
    probe = "import minired.protocol.resp as r; print(getattr(r, 'EDITED_AFTER_THE_BUILD', False))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.stdout.split() == ["True"], run.stderr
