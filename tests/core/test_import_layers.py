"""Import cycles and layers: no cycle among the modules of minired or of the queue, and minired's
layers (its folders) import only downwards.

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

# minired's layers, bottom up: a module may import its own layer and those below, never one above.
# The package root (the version constants, and the loader that picks compiled or source modules)
# is the ground every layer stands on; the front ends are the modules directly in minired/.
LAYERS = ("protocol", "data", "engine", "features", "commands", "scripting")
GROUND = {"minired", "minired._sources"}


def layer_of(module: str) -> int:
    """The rank of a minired module: its folder's place in LAYERS, front ends above them all."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    if len(parts) == 2 and parts[1] in LAYERS:  # a layer's own __init__
        return LAYERS.index(parts[1])
    return len(LAYERS)


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


def test_minired_has_no_import_cycle():
    graph = import_graph(ROOT / "minired")
    assert "minired.engine.table" in graph and graph["minired.commands.lists"]
    found = cycles(graph)
    assert not found, "\n".join(_describe(graph, c) for c in found)


def test_minired_layers_import_only_downwards():
    graph = import_graph(ROOT / "minired")
    modules = [m for m in graph if m not in GROUND]
    assert {m.split(".")[1] for m in modules if m.count(".") >= 2} >= set(LAYERS)
    upward = sorted(f"{m} -> {target}" for m in modules for target in graph[m]
                    if target not in GROUND and layer_of(target) > layer_of(m))
    assert not upward, "imports from a lower layer up into a higher one:\n" + "\n".join(upward)


def test_the_layer_rule_sees_an_upward_import():
    assert layer_of("minired.engine.dispatch") < layer_of("minired.features.security")
    assert layer_of("minired.scripting.engine") > layer_of("minired.commands.keys")
    assert layer_of("minired.cli") > layer_of("minired.scripting")
