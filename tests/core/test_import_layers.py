"""Import cycles and layers: no cycle among the modules of minired or of the queue, and minired's
layers (its folders) import only downwards.

Every import statement counts, module level or inside a function (an import placed in a function
to dodge a cycle at load time is still an arrow pointing up); only imports under
`if TYPE_CHECKING:` are left out, as they never run. Relative imports are resolved, and
`from package import name` is an arrow to the submodule when `name` is one, else to the package.
(Cython-only sources, scripting/luabridge.pyx, are not parsed.)

And the engine names no feature at all: not in an import (under TYPE_CHECKING included), not a
feature's class, not a feature's module, even in a comment; it knows the hook points it defines
in engine/hooks.py, and features plug into those.
"""
from __future__ import annotations

import ast
import re
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


# --- the engine names no feature ------------------------------------------------------------

# What plugs into the engine: it reaches these only through the hook points it defines itself
# (engine/hooks.py), so it may name none of their modules or classes, not even for typing.
FEATURES = ("features", "scripting")
_BELOW_FEATURES = ("protocol", "data", "engine")


def _all_import_nodes(tree: ast.AST):
    """Every Import/ImportFrom in the tree, those under `if TYPE_CHECKING:` included."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def _classes(paths) -> set[str]:
    return {node.name for path in paths for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef)}


def _feature_sources() -> list[Path]:
    return [p for layer in FEATURES for p in sorted((ROOT / "minired" / layer).rglob("*.py"))]


def _engine_sources() -> list[Path]:
    """The engine and the layers under it (which know features even less)."""
    return [path for layer in _BELOW_FEATURES for pattern in ("*.py", "*.pxd")
            for path in sorted((ROOT / "minired" / layer).rglob(pattern))]


def feature_mentions(path: Path, feature_classes: set[str], feature_modules: set[str]) -> list:
    """Where an engine source names a feature: an import of anything above the engine (under
    TYPE_CHECKING too), a feature's class (in code, annotations or text), or a feature's module
    (`features/pause.py`, `minired.scripting.busy`, `pause.py`)."""
    text = path.read_text()
    found = []
    if path.suffix == ".py":
        graph_known = set(_modules(ROOT / "minired"))
        name = _module_name(path) if ROOT in path.parents else path.stem
        for node in _all_import_nodes(ast.parse(text)):
            targets = _imports_of_node(name, path, node, graph_known)
            found += [f"imports {t}" for t in targets
                      if t.split(".")[0] == "minired" and t not in GROUND
                      and layer_of(t) > LAYERS.index("engine")]
    for word in sorted(_identifiers(path, text) & feature_classes):
        found.append(f"names the class {word}")
    for match in re.finditer(r"\b(?:features|scripting)[/.](\w+)|\b(\w+)\.py\b", text):
        stem = match.group(1) or match.group(2)
        if match.group(1) or stem in feature_modules:
            found.append(f"names the module {match.group(0)}")
    return found


def _identifiers(path: Path, text: str) -> set[str]:
    """The names a source uses in code: variables, attributes, and the names inside string
    annotations ("Persistence | None"); for a .pxd, every word outside comments."""
    if path.suffix != ".py":
        code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        return set(re.findall(r"\b[A-Za-z_]\w*\b", code))
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                annotation = ast.parse(node.value.strip(), mode="eval")
            except SyntaxError:
                continue
            names.update(n.id for n in ast.walk(annotation) if isinstance(n, ast.Name))
    return names


def _imports_of_node(name: str, path: Path, node: ast.AST, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wrapper = ast.Module(body=[node], type_ignores=[])
    targets = set()
    for found in _import_nodes(wrapper):
        if isinstance(found, ast.Import):
            targets |= {alias.name for alias in found.names}
        else:
            base = found.module or ""
            if found.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - (found.level - 1)] + ([base] if base else []))
            targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                        for alias in found.names}
    return targets


def test_the_engine_names_no_feature():
    feature_sources = _feature_sources()
    below = [p for layer in _BELOW_FEATURES for p in (ROOT / "minired" / layer).rglob("*.py")]
    # A class the engine defines itself (a hook's interface, Tracking) is the engine's name,
    # whichever feature implements it.
    feature_classes = _classes(feature_sources) - _classes(below)
    feature_modules = {p.stem for p in feature_sources} - {p.stem for p in below} - {"__init__"}
    assert {"Persistence", "PubSub", "ScriptEngine", "Metrics"} <= feature_classes
    problems = [f"{path.relative_to(ROOT)}: {what}" for path in _engine_sources()
                for what in feature_mentions(path, feature_classes, feature_modules)]
    assert not problems, "the engine names features:\n" + "\n".join(problems)


def test_feature_mentions_sees_every_kind_of_naming(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from minired.features.pubsub import PubSub\n"
                      "saver: \"PubSub | None\" = None  # see pause.py and minired/scripting/busy.py\n")
    found = feature_mentions(source, {"PubSub"}, {"pause"})
    assert "imports minired.features.pubsub" in found
    assert "names the class PubSub" in found
    assert "names the module pause.py" in found
    assert "names the module scripting/busy" in found
