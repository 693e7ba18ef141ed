"""Commands as ACL rules see them: one bit per command and subcommand, the categories each
belongs to, and names as rules spell them ('config|get'). Built on first use, once every
command group has registered its commands."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minired.engine.categories import ACL_CATEGORIES, acl_categories
from minired.engine.table import COMMANDS, all_specs

if TYPE_CHECKING:
    from minired.engine.table import CommandSpec


class CommandIndex:
    """One bit per command and subcommand, in the table's order; built once, on first use,
    when every command group has registered its commands."""

    def __init__(self) -> None:
        self.specs = list(all_specs())
        self.bit = {id(spec): 1 << i for i, spec in enumerate(self.specs)}
        self.all = (1 << len(self.specs)) - 1
        self.top_level = list(COMMANDS.values())
        # A container's bit with its subcommands' (ACLChangeSelectorPerm changes them together).
        self.family: dict[int, int] = {}
        for spec in self.specs:
            mask = self.bit[id(spec)]
            for sub in spec.subcommands.values():
                mask |= self.bit[id(sub)]
            self.family[id(spec)] = mask
        self.categories = ACL_CATEGORIES
        self.category_members: dict[str, list] = {name: [] for name in ACL_CATEGORIES}
        self.category_mask: dict[str, int] = dict.fromkeys(ACL_CATEGORIES, 0)
        for spec in self.specs:
            for category in acl_categories(spec):
                self.category_members[category].append(spec)
                self.category_mask[category] |= self.bit[id(spec)]


_index: CommandIndex | None = None


def index() -> CommandIndex:
    global _index
    if _index is None:
        _index = CommandIndex()
    return _index


def lookup_command(name: bytes) -> "CommandSpec | None":
    """Redis's ACLLookupCommand: 'get', or 'config|get' for a subcommand."""
    parts = name.split(b"|")
    if not name or len(parts) > 2:
        return None
    base = COMMANDS.get(parts[0].lower())
    if base is None or len(parts) == 1 or not base.subcommands:
        return base if len(parts) == 1 else None
    return base.subcommands.get(parts[1].lower())
