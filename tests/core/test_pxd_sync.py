"""Every .pxd beside a .py declares only what the .py has: its functions, its classes, the
attributes of its cdef classes (all of them: a cdef class has no room for an attribute its .pxd
leaves out) and its module variables. A .pxd left behind by a change to its .py is caught here,
in the uncompiled run, instead of at the next compiled build (or, for a missing attribute, by an
AttributeError in the compiled server only).

The .pxd is read line by line, which its plain declarations allow: statements joined across
parentheses, comments dropped, `cdef extern` blocks and cimports skipped.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAIRS = sorted(p for p in (ROOT / "minired").rglob("*.pxd") if p.with_suffix(".py").exists())

_SKIPPED = ("cimport ", "from ", "import ", "@", "ctypedef ", "DEF ", "include ")
_FUNCTION = re.compile(r"^c?p?def\b.*?\b(\w+)\s*\(")
_QUALIFIERS = {"cdef", "public", "readonly", "inline", "const", "unsigned", "signed"}


class Declared:
    def __init__(self) -> None:
        self.functions: set[str] = set()
        self.variables: set[str] = set()
        self.classes: dict[str, dict[str, set[str]]] = {}


def _statements(text: str):
    """(indent, statement) for each statement, continuation lines joined."""
    pending, indent, depth = "", 0, 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip() and not pending:
            continue
        if not pending:
            indent = len(line) - len(line.lstrip())
        pending += " " + line.strip()
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            yield indent, pending.strip()
            pending, depth = "", 0


def _names_of(declaration: str) -> list[str]:
    """The names a variable declaration declares: `cdef public long long a, b` -> a, b."""
    chunks = [chunk.strip() for chunk in declaration.split(",")]
    first = [w for w in chunks[0].replace("*", " ").split() if w not in _QUALIFIERS]
    return [first[-1]] + [chunk.replace("*", "").strip() for chunk in chunks[1:]]


def parse_pxd(text: str) -> Declared:
    declared = Declared()
    current: dict[str, set[str]] | None = None
    skip_below: int | None = None
    for indent, statement in _statements(text):
        if skip_below is not None:
            if indent > skip_below:
                continue
            skip_below = None
        if indent == 0:
            current = None
        if statement.startswith(_SKIPPED):
            continue
        if statement.startswith(("cdef extern", "cdef struct", "cdef enum", "cdef union")):
            skip_below = indent
            continue
        match = re.match(r"cdef class (\w+)", statement)
        if match:
            current = declared.classes.setdefault(match.group(1),
                                                  {"attributes": set(), "methods": set()})
            continue
        function = _FUNCTION.match(statement)
        if function:
            if current is not None and indent > 0:
                current["methods"].add(function.group(1))
            else:
                declared.functions.add(function.group(1))
            continue
        if statement.startswith("cdef "):
            names = _names_of(statement)
            if current is not None and indent > 0:
                current["attributes"].update(names)
            else:
                declared.variables.update(names)
    return declared


class Defined:
    def __init__(self, tree: ast.Module) -> None:
        self.functions: set[str] = set()
        self.names: set[str] = set()
        self.classes: dict[str, dict[str, set[str] | None]] = {}
        for node in tree.body:
            for found in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else (node,):
                self._top(found)

    def _top(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions.add(node.name)
            self.names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            self.names.add(node.name)
            methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            slots = None
            for n in node.body:
                if isinstance(n, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "__slots__" for t in n.targets):
                    slots = set(ast.literal_eval(n.value))
            self.classes[node.name] = {"methods": methods, "slots": slots}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self.names.add(name.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.names.update((a.asname or a.name).split(".")[0] for a in node.names)


def mismatches(pxd_text: str, py_text: str) -> list[str]:
    declared = parse_pxd(pxd_text)
    defined = Defined(ast.parse(py_text))
    problems = [f"function {name} is not in the .py"
                for name in sorted(declared.functions - defined.functions)]
    problems += [f"variable {name} is not in the .py"
                 for name in sorted(declared.variables - defined.names)]
    for name, parts in sorted(declared.classes.items()):
        cls = defined.classes.get(name)
        if cls is None:
            problems.append(f"class {name} is not in the .py")
            continue
        problems += [f"method {name}.{m} is not in the .py"
                     for m in sorted(parts["methods"] - cls["methods"])]
        slots = cls["slots"]
        if slots is not None:
            problems += [f"attribute {name}.{a} is not in the .py's __slots__"
                         for a in sorted(parts["attributes"] - slots)]
            problems += [f"attribute {name}.{a} of __slots__ is not declared"
                         for a in sorted(slots - parts["attributes"])]
    return problems


@pytest.mark.parametrize("pxd", PAIRS, ids=lambda p: str(p.relative_to(ROOT)))
def test_pxd_declares_only_what_its_py_has(pxd: Path):
    problems = mismatches(pxd.read_text(), pxd.with_suffix(".py").read_text())
    assert not problems, f"{pxd.relative_to(ROOT)} is stale:\n" + "\n".join(problems)


def test_every_compiled_module_with_types_is_checked():
    assert len(PAIRS) >= 20
    assert ROOT / "minired" / "engine" / "server.pxd" in PAIRS


def test_a_stale_pxd_is_caught():
    py = ("import cython\n_CACHE = {}\n"
          "class Conn:\n    __slots__ = ('a', 'b')\n    def run(self): pass\n"
          "def go(x): pass\n")
    pxd = ("# C types\ncimport cython\ncdef dict _CACHE, _GONE\n"
           "cdef class Conn:\n    cdef public object a, c\n"
           "    cpdef run(self)\n    cpdef stop(self)\n"
           "@cython.locals(n=cython.int)\ncpdef object go(\n    object x)\ncpdef gone()\n"
           "cdef class Missing:\n    cdef public object z\n")
    assert mismatches(pxd, py) == [
        "function gone is not in the .py",
        "variable _GONE is not in the .py",
        "method Conn.stop is not in the .py",
        "attribute Conn.c is not in the .py's __slots__",
        "attribute Conn.b of __slots__ is not declared",
        "class Missing is not in the .py",
    ]
    fresh = ("cimport cython\ncdef dict _CACHE\ncdef class Conn:\n    cdef public object a, b\n"
             "    cpdef run(self)\n@cython.locals(n=cython.int)\ncpdef object go(object x)\n")
    assert mismatches(fresh, py) == []


def test_the_uncompiled_build_loads_without_cython():
    """`import cython` in the typed modules finds minired's stand-in when Cython is missing
    (the path finder is made blind to it, as where it is not installed)."""
    import subprocess
    import sys

    code = ("import sys, importlib.machinery as machinery\n"
            "class NoCython:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.partition('.')[0] in ('cython', 'Cython'):\n"
            "            return None\n"
            "        return machinery.PathFinder.find_spec(name, path, target)\n"
            "sys.meta_path[:] = [NoCython() if finder is machinery.PathFinder else finder\n"
            "                    for finder in sys.meta_path]\n"
            "import minired, minired.startup\n"
            "from minired.engine.table import COMMANDS\n"
            "stand_in = sys.modules['cython']\n"
            "print(stand_in.__file__.endswith('/minired/_cython.py'), stand_in.compiled, "
            "COMMANDS[b'get'].handler.__module__)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "MINIRED_PURE_PYTHON": "1"}, check=True)
    assert run.stdout.split() == ["True", "False", "minired.commands.strings"]
