"""Import cycles among the package's modules: none in the queue, and in minired none beyond the
knot listed below, which may only shrink.

Every import statement counts, module level or inside a function (an import placed in a function
to dodge a cycle at load time is still an arrow pointing up); only imports under
`if TYPE_CHECKING:` are left out, as they never run. Relative imports are resolved, and
`from package import name` is an arrow to the submodule when `name` is one, else to the package.
(Cython-only sources, scripting/luabridge.pyx, are not parsed.)
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The modules of minired that are in an import cycle today, a ratchet: a module may leave this
# list (the test says when one has), never join it. Untying them takes the folder-per-layer move of
# issue 22 with typed hook points in the engine, in files other work was changing at the time.
KNOWN_MINIRED_KNOT = frozenset({
    # The engine (server, dispatch) and the features it calls by module (security, pause,
    # tracking, monitor, faults, scripting), which import the engine back; security and monitor
    # also reach up into commands/connection.py (client_info_line, on_unix_socket), and
    # connection into pause and security.
    "minired.server", "minired.dispatch", "minired.security", "minired.pause", "minired.tracking",
    "minired.monitor", "minired.faults",
    "minired.scripting", "minired.scripting.busy", "minired.scripting.engine",
    "minired.scripting.functions",
    "minired.commands.connection", "minired.commands.client_tracking",
    # lualibs/__init__.py imports the four libraries (inside a function) and they import its
    # load_chunk and lua_safe: a helpers module of their own would untie it.
    "minired.scripting.lualibs", "minired.scripting.lualibs.lua_bit",
    "minired.scripting.lualibs.lua_cjson", "minired.scripting.lualibs.lua_cmsgpack",
    "minired.scripting.lualibs.lua_struct",
})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(path_root(path)).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def path_root(path: Path) -> Path:
    return ROOT / "queue" if "minired_queue" in path.parts else ROOT


def _modules(package_dir: Path) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(package_dir.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every Import/ImportFrom in the tree, except under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                base = alias.name
                while base and base not in known:
                    base = base.rpartition(".")[0]
                if base:
                    targets.add(base)
            continue
        if node.level:
            base_parts = package.split(".")
            base_parts = base_parts[:len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in known:
                targets.add(submodule)
            elif base in known:
                targets.add(base)
    targets.discard(name)
    return targets


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    modules = _modules(package_dir)
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _describe(graph: dict[str, set[str]], component: set[str]) -> str:
    lines = [f"{len(component)} modules in a cycle:"]
    for name in sorted(component):
        lines.append(f"  {name} -> {', '.join(sorted(graph[name] & component))}")
    return "\n".join(lines)


def test_cycle_finder_finds_a_cycle_and_only_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert cycles(graph) == [{"a", "b", "c"}]


def test_the_queue_has_no_import_cycle():
    graph = import_graph(ROOT / "queue" / "minired_queue")
    assert "minired_queue.worker" in graph
    found = cycles(graph)
    assert not found, "\n".join(_describe(graph, c) for c in found)


def test_minired_has_no_import_cycle_beyond_the_known_knot():
    graph = import_graph(ROOT / "minired")
    assert "minired.commands.table" in graph and graph["minired.commands.lists"]
    found = cycles(graph)
    in_cycles = set().union(*found)
    print("\n".join(_describe(graph, c) for c in found))
    joined = in_cycles - KNOWN_MINIRED_KNOT
    assert not joined, (f"new import cycle through {sorted(joined)}:\n"
                        + "\n".join(_describe(graph, c) for c in found if c & joined))
    left = KNOWN_MINIRED_KNOT - in_cycles
    assert not left, f"{sorted(left)} no longer in a cycle: remove them from KNOWN_MINIRED_KNOT"
