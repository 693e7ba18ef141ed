"""The command table is built explicitly: every declaring module listed once in GROUPS, and a
command or subcommand declared twice is an error at registration, not a silent replacement."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import minired.commands as commands
from minired.commands.table import COMMANDS, command, container_command

COMMANDS_DIR = Path(commands.__file__).parent


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


def test_every_declaring_module_is_listed_once_in_groups():
    declaring = {p.stem for p in COMMANDS_DIR.glob("*.py")
                 if p.stem not in ("__init__", "table") and _declares_commands(p)}
    assert len(commands.GROUPS) == len(set(commands.GROUPS))
    assert declaring == set(commands.GROUPS)


def test_no_command_module_imports_another_for_its_registrations():
    """A group is loaded because GROUPS lists it, not as a side effect of a sibling's import."""
    groups = set(commands.GROUPS)
    for path in COMMANDS_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                unused = {alias.asname or alias.name for alias in node.names} - used
                assert not unused & groups, f"{path.name} imports {sorted(unused)} and uses none"
