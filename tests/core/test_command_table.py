"""The command table is built explicitly: every declaring module listed once in
startup.COMMAND_MODULES, and a
command or subcommand declared twice is an error at registration, not a silent replacement."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import minired
from minired.engine.table import COMMANDS, command, container_command
from minired.startup import COMMAND_MODULES

MINIRED_DIR = Path(minired.__file__).parent


def _handler(c, argv):
    return None


@pytest.fixture
def scratch_names():
    """Names this test registers, removed afterwards so the real table is left as it was."""
    names: list[bytes] = []
    yield names
    for name in names:
        COMMANDS.pop(name, None)


def test_a_command_declared_twice_raises(scratch_names):
    scratch_names.append(b"h22-dup")
    command("h22-dup", arity=1)(_handler)
    with pytest.raises(ValueError, match="declared twice"):
        command("h22-dup", arity=1)(_handler)


def test_a_subcommand_declared_twice_raises(scratch_names):
    scratch_names.append(b"h22-parent")
    container_command("h22-parent", group="generic")
    command("one", arity=2, parent="h22-parent")(_handler)
    with pytest.raises(ValueError, match="declared twice"):
        command("ONE", arity=2, parent="h22-parent")(_handler)
    assert list(COMMANDS[b"h22-parent"].subcommands) == [b"one"]


def test_an_existing_subcommand_cannot_be_redeclared():
    with pytest.raises(ValueError, match="declared twice"):
        command("id", arity=2, parent="client")(_handler)
    assert COMMANDS[b"client"].subcommands[b"id"].handler is not _handler


def _declares_commands(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id in ("command", "container_command") for node in ast.walk(tree))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(MINIRED_DIR.parent).with_suffix("").parts)


def test_every_declaring_module_is_listed_once():
    declaring = {_module_name(p) for p in MINIRED_DIR.rglob("*.py")
                 if p.name != "table.py" and _declares_commands(p)}
    assert len(COMMAND_MODULES) == len(set(COMMAND_MODULES))
    assert declaring == set(COMMAND_MODULES)


def test_no_command_module_imports_another_for_its_registrations():
    """A command module is loaded because COMMAND_MODULES lists it, not as a side effect of a
    sibling's import."""
    listed = set(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        path = MINIRED_DIR.parent.joinpath(*name.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text())
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        used |= {node.value.id for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in listed:
                        assert (alias.asname or alias.name) in used, (
                            f"{name} imports {alias.name} and uses none of it")
