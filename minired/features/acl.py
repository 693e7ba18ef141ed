"""ACL users as Redis 7.0 models them (a network-free port of the model in Redis's acl.c).

A user has flags (on/off, nopass, sanitize-payload), password hashes (SHA-256 hex) and a list
of selectors, the first being its root selector. A selector holds the commands it may run (a
bitmap over the command table, one bit per command and subcommand, plus a bit for "future"
commands that only +@all sets), first arguments allowed for otherwise denied commands
("+select|0"), key patterns with read/write permissions and channel patterns. A command runs
if any selector allows the command and all its keys and channels.

`describe_commands` ports ACLDescribeSelectorCommandRules, so ACL LIST and ACL GETUSER show the
same compact "+@all -@dangerous +info" strings Redis builds. Redis walks its command dict in
hash order (seeded at random per process), so the order of the single-command part of those
strings differs between two Redis processes; minired walks the command table's order.

Key permissions: as in Redis, each key's read/write need comes from the flags its command's key
spec gives it (ACCESS: read; INSERT, DELETE, UPDATE: write; see `key_permission_needed`), the
keys and flags found as COMMAND GETKEYSANDFLAGS finds them (engine/keyspecs.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from minired.data.glob import glob_match
from minired.engine.keyspecs import has_keys, keys_with_flags
from minired.features.acl_index import CommandIndex, index, lookup_command
from minired.protocol import errors

if TYPE_CHECKING:
    from minired.engine.table import CommandSpec

READ = 1
WRITE = 2
ALL_PERMISSIONS = READ | WRITE

# check results, ordered as Redis's ACL_DENIED_* (a higher one wins when selectors disagree)
ALLOWED = 0
DENIED_COMMAND = 1
DENIED_KEY = 2
DENIED_CHANNEL = 4


# Commands whose arguments name channels (Redis's ACLDoesCommandHaveChannels).
_CHANNEL_COMMANDS = frozenset({"publish", "spublish", "subscribe", "ssubscribe", "psubscribe"})


class RuleError(Exception):
    """An ACL rule refused; the message is Redis's ACLSetUserStringError text."""


def has_spaces(text: bytes) -> bool:
    """ACLStringHasSpaces: C isspace characters or NUL."""
    return any(ch in b" \t\n\v\f\r\x00" for ch in text)


def hash_password(password: bytes) -> str:
    import hashlib

    return hashlib.sha256(password).hexdigest()


def _valid_hash(text: bytes) -> bool:
    return len(text) == 64 and all(ch in b"0123456789abcdef" for ch in text)


def _password_digest(op: bytes, hashed: bool) -> str:
    """The stored form of a password rule's argument: >pass and <pass hash it, #hash and !hash
    give the hash itself, which must be 64 lowercase hex digits."""
    if not hashed:
        return hash_password(op[1:])
    if not _valid_hash(op[1:]):
        raise RuleError(errors.ACL_RULE_BAD_HASH)
    return op[1:].decode()


def _lower(op: bytes) -> bytes:
    return op.lower()


class Selector:
    """Commands, keys and channels one selector allows."""

    __slots__ = ("root", "allkeys", "allchannels", "allcommands", "commands", "future",
                 "firstargs", "keys", "channels")

    def __init__(self, root: bool = False, allchannels: bool = False) -> None:
        self.root = root
        self.allkeys = False
        self.allchannels = allchannels
        self.allcommands = False
        self.commands = 0          # bitmap over index().specs
        self.future = False        # the reserved bit +@all sets: commands added later
        self.firstargs: dict[int, list[bytes]] = {}   # bit -> first arguments allowed
        self.keys: list[list] = []  # [pattern, READ|WRITE]
        self.channels: list[bytes] = []

    def copy(self) -> "Selector":
        other = Selector(self.root, self.allchannels)
        other.allkeys = self.allkeys
        other.allcommands = self.allcommands
        other.commands = self.commands
        other.future = self.future
        other.firstargs = {bit: list(args) for bit, args in self.firstargs.items()}
        other.keys = [list(pattern) for pattern in self.keys]
        other.channels = list(self.channels)
        return other

    @property
    def unrestricted(self) -> bool:
        return self.allkeys and self.allchannels and (
            self.allcommands or self.commands == index().all)

    # --- rules ---------------------------------------------------------------------------------

    def change(self, spec: "CommandSpec", allow: bool) -> None:
        """ACLChangeSelectorPerm: a command with all its subcommands."""
        idx = index()
        bit = idx.bit[id(spec)]
        self._set_bits(idx.family[id(spec)], allow)
        self.firstargs.pop(bit, None)

    def _set_bits(self, mask: int, allow: bool) -> None:
        if allow:
            self.commands |= mask
        else:
            self.commands &= ~mask
            self.allcommands = False

    def change_category(self, category: str, allow: bool) -> None:
        for spec in index().category_members[category]:
            self.change(spec, allow)

    def apply(self, op: bytes) -> None:
        """ACLSetSelector: one rule; RuleError if refused."""
        lowered = _lower(op)
        if lowered in (b"allkeys", b"~*"):
            self.allkeys = True
            self.keys = []
        elif lowered == b"resetkeys":
            self.allkeys = False
            self.keys = []
        elif lowered in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = []
        elif lowered == b"resetchannels":
            self.allchannels = False
            self.channels = []
        elif lowered in (b"allcommands", b"+@all"):
            self.commands = index().all
            self.future = True
            self.allcommands = True
            self.firstargs = {}
        elif lowered in (b"nocommands", b"-@all"):
            self.commands = 0
            self.future = False
            self.allcommands = False
            self.firstargs = {}
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.allchannels:
                raise RuleError(errors.ACL_RULE_CHANNELS_AFTER_ALL)
            pattern = op[1:]
            if has_spaces(pattern):
                raise RuleError(errors.ACL_RULE_SYNTAX)
            if pattern not in self.channels:
                self.channels.append(pattern)
        elif op[:1] == b"+" and op[1:2] != b"@":
            self._allow_command(op[1:])
        elif op[:1] == b"-" and op[1:2] != b"@":
            spec = lookup_command(op[1:])
            if spec is None:
                raise RuleError(errors.ACL_RULE_UNKNOWN_COMMAND)
            self.change(spec, False)
        elif op[:2] in (b"+@", b"-@"):
            category = op[2:].lower().decode(errors="replace")
            if category not in index().category_mask:
                raise RuleError(errors.ACL_RULE_UNKNOWN_COMMAND)
            self.change_category(category, op[:1] == b"+")
        else:
            raise RuleError(errors.ACL_RULE_SYNTAX)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.allkeys:
            raise RuleError(errors.ACL_RULE_KEYS_AFTER_ALL)
        permissions = 0
        offset = 1
        if op[:1] == b"%":
            while offset < len(op):
                char = op[offset:offset + 1]
                if char.upper() == b"R" and not permissions & READ:
                    permissions |= READ
                elif char.upper() == b"W" and not permissions & WRITE:
                    permissions |= WRITE
                elif char == b"~":
                    offset += 1
                    break
                else:
                    raise RuleError(errors.ACL_RULE_SYNTAX)
                offset += 1
            if not permissions:
                raise RuleError(errors.ACL_RULE_SYNTAX)
        else:
            permissions = ALL_PERMISSIONS
        pattern = op[offset:]
        if has_spaces(pattern):
            raise RuleError(errors.ACL_RULE_SYNTAX)
        for existing in self.keys:
            if existing[0] == pattern:
                existing[1] |= permissions
                break
        else:
            self.keys.append([pattern, permissions])
        self.allkeys = False

    def _allow_command(self, name: bytes) -> None:
        if b"|" not in name:
            spec = lookup_command(name)
            if spec is None:
                raise RuleError(errors.ACL_RULE_UNKNOWN_COMMAND)
            self.change(spec, True)
            return
        command_name, _, first_arg = name.rpartition(b"|")
        spec = lookup_command(command_name)
        if spec is None:
            raise RuleError(errors.ACL_RULE_UNKNOWN_COMMAND)
        if spec.parent is not None:
            raise RuleError(errors.ACL_RULE_FIRSTARG_OF_SUBCOMMAND)
        if not first_arg:
            raise RuleError(errors.ACL_RULE_SYNTAX)
        if spec.subcommands:
            sub = lookup_command(name)
            if sub is None:
                raise RuleError(errors.ACL_RULE_UNKNOWN_COMMAND)
            self.change(sub, True)
            return
        allowed = self.firstargs.setdefault(index().bit[id(spec)], [])
        if all(existing.lower() != first_arg.lower() for existing in allowed):
            allowed.append(first_arg)

    # --- description ---------------------------------------------------------------------------

    def describe_keys(self) -> bytes:
        if self.allkeys:
            return b"~*"
        return b" ".join(_pattern_text(pattern, permissions) for pattern, permissions in self.keys)

    def describe_channels(self) -> bytes:
        if self.allchannels:
            return b"&*"
        return b" ".join(b"&" + pattern for pattern in self.channels)

    def describe(self) -> bytes:
        """ACLDescribeSelector: keys, channels and commands in ACL SETUSER syntax."""
        parts = []
        if self.allkeys:
            parts.append(b"~*")
        else:
            parts.extend(_pattern_text(pattern, flags) for pattern, flags in self.keys)
        if self.allchannels:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts.extend(b"&" + pattern for pattern in self.channels)
        parts.append(describe_commands(self))
        return b" ".join(parts)

    # --- checks --------------------------------------------------------------------------------

    def check(self, spec: "CommandSpec", argv: list, keys: list) -> tuple[int, int]:
        """ACLSelectorCheckCmd: (result, argv index of the refused key or channel)."""
        if not self.allcommands and "no_auth" not in spec.flags:
            bit = index().bit[id(spec)]
            if not self.commands & bit:
                allowed = self.firstargs.get(bit)
                if allowed is None or len(argv) < 2:
                    return DENIED_COMMAND, 0
                first = argv[1].lower()
                if all(arg.lower() != first for arg in allowed):
                    return DENIED_COMMAND, 0
        if not self.allkeys and keys:
            for position, flags in keys:
                if not self.key_allowed(argv[position], key_permission_needed(flags)):
                    return DENIED_KEY, position
        if not self.allchannels and spec.name in _CHANNEL_COMMANDS and spec.parent is None:
            literal = spec.name == "psubscribe"
            last = 2 if spec.name in ("publish", "spublish") else len(argv)
            for position in range(1, last):
                if not channel_allowed(self.channels, argv[position], literal):
                    return DENIED_CHANNEL, position
        return ALLOWED, 0

    def unrestricted_keys(self, needed: int) -> bool:
        """ACLSelectorHasUnrestrictedKeyAccess: all keys, or the pattern '*' with `needed`."""
        return self.allkeys or any(pattern == b"*" and permissions & needed == needed
                                   for pattern, permissions in self.keys)

    def key_allowed(self, key: bytes, needed: int) -> bool:
        if self.allkeys:
            return True
        for pattern, permissions in self.keys:
            if permissions & needed == needed and glob_match(pattern, key):
                return True
        return False


def key_permission_needed(flags: tuple) -> int:
    """ACLSelectorCheckKey: the permissions a key with these key-spec flags needs."""
    needed = _NEEDED.get(flags)
    if needed is None:
        needed = READ if "access" in flags else 0
        if "insert" in flags or "delete" in flags or "update" in flags:
            needed |= WRITE
        _NEEDED[flags] = needed
    return needed


_NEEDED: dict[tuple, int] = {}


def channel_allowed(patterns: list[bytes], channel: bytes, literal: bool) -> bool:
    """ACLCheckChannelAgainstList: PSUBSCRIBE's patterns must be listed as they are."""
    for pattern in patterns:
        if (pattern == channel) if literal else glob_match(pattern, channel):
            return True
    return False


def _pattern_text(pattern: bytes, permissions: int) -> bytes:
    prefix = {ALL_PERMISSIONS: b"~", READ: b"%R~", WRITE: b"%W~"}[permissions]
    return prefix + pattern


def describe_commands(selector: Selector) -> bytes:
    """ACLDescribeSelectorCommandRules: start from +@all or -@all, greedily apply the category
    that best fits the remaining differences, then fix single commands."""
    idx = index()
    additive = not selector.future
    fake = Selector()
    rules = [b"-@all" if additive else b"+@all"]
    fake.apply(rules[0])
    temp = selector.commands
    applied = set()
    while True:
        best = None
        min_diff = 1 << 62
        max_same = 0
        for category in idx.categories:
            if category in applied:
                continue
            on = _count_category(idx, temp, category)
            off = _count_members(idx, category) - on
            diff, same = (off, on) if additive else (on, off)
            if same > diff and (diff < min_diff or (diff == min_diff and same > max_same)):
                best, min_diff, max_same = category, diff, same
        if best is None:
            break
        fake.change_category(best, additive)
        temp = _category_applied(idx, temp, best, not additive)
        rules.append((b"+@" if additive else b"-@") + best.encode())
        applied.add(best)
    for spec in idx.top_level:
        rules.extend(_single_command_rules(idx, selector, fake, spec))
    return b" ".join(rules)


def _count_members(idx: CommandIndex, category: str) -> int:
    return len(idx.category_members[category])


def _count_category(idx: CommandIndex, bitmap: int, category: str) -> int:
    # Members are counted one by one, as Redis does (a container and its subcommands count
    # separately); the mask has exactly those bits.
    return (bitmap & idx.category_mask[category]).bit_count()


def _category_applied(idx: CommandIndex, bitmap: int, category: str, allow: bool) -> int:
    for spec in idx.category_members[category]:
        mask = idx.family[id(spec)]
        bitmap = bitmap | mask if allow else bitmap & ~mask
    return bitmap


def _single_command_rules(idx: CommandIndex, selector: Selector, fake: Selector,
                          spec: "CommandSpec") -> list[bytes]:
    rules = []
    bit = idx.bit[id(spec)]
    user_bit = bool(selector.commands & bit)
    if user_bit != bool(fake.commands & bit):
        rules.append((b"+" if user_bit else b"-") + spec.full_name.encode())
        fake.change(spec, user_bit)
    for sub in spec.subcommands.values():
        rules.extend(_single_command_rules(idx, selector, fake, sub))
    if not user_bit:
        for first_arg in selector.firstargs.get(bit, ()):
            rules.append(b"+" + spec.full_name.encode() + b"|" + first_arg)
    return rules


class User:
    """An ACL user: flags, password hashes, selectors (the root one first)."""

    __slots__ = ("name", "flags", "passwords", "selectors")

    FLAG_ORDER = ("on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload")

    def __init__(self, name: bytes, allchannels: bool = False) -> None:
        self.name = name
        self.flags = {"off"}
        self.passwords: list[str] = []
        self.selectors = [Selector(root=True, allchannels=allchannels)]

    def copy(self, name: bytes | None = None) -> "User":
        other = User(self.name if name is None else name)
        other.flags = set(self.flags)
        other.passwords = list(self.passwords)
        other.selectors = [selector.copy() for selector in self.selectors]
        return other

    def take_rules_of(self, other: "User") -> None:
        """ACLCopyUser: this user gets other's rules and keeps its name."""
        self.flags = set(other.flags)
        self.passwords = list(other.passwords)
        self.selectors = [selector.copy() for selector in other.selectors]

    @property
    def enabled(self) -> bool:
        return "on" in self.flags

    @property
    def nopass(self) -> bool:
        return "nopass" in self.flags

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def restricted(self) -> bool:
        return not any(selector.unrestricted for selector in self.selectors)

    def ordered_flags(self) -> list[str]:
        return [flag for flag in self.FLAG_ORDER if flag in self.flags]

    def apply(self, op: bytes, pubsub_default_all: bool) -> None:
        """ACLSetUser: one rule; RuleError if refused."""
        if not op:
            return
        lowered = op.lower()
        if lowered in (b"on", b"off"):
            self.flags.discard("off" if lowered == b"on" else "on")
            self.flags.add(lowered.decode())
        elif lowered in (b"skip-sanitize-payload", b"sanitize-payload"):
            self.flags.discard("sanitize-payload" if lowered.startswith(b"skip")
                               else "skip-sanitize-payload")
            self.flags.add(lowered.decode())
        elif lowered == b"nopass":
            self.flags.add("nopass")
            self.passwords = []
        elif lowered == b"resetpass":
            self.flags.discard("nopass")
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            digest = _password_digest(op, hashed=op[:1] == b"#")
            if digest not in self.passwords:
                self.passwords.append(digest)
            self.flags.discard("nopass")
        elif op[:1] in (b"<", b"!"):
            digest = _password_digest(op, hashed=op[:1] == b"!")
            if digest not in self.passwords:
                raise RuleError(errors.ACL_RULE_NO_SUCH_PASSWORD)
            self.passwords.remove(digest)
        elif op[:1] == b"(" and op[-1:] == b")":
            selector = Selector(allchannels=pubsub_default_all)
            for rule in op[1:-1].split():
                selector.apply(rule)
            self.selectors.append(selector)
        elif lowered == b"clearselectors":
            del self.selectors[1:]
        elif lowered == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels"):
                self.apply(rule, pubsub_default_all)
            if pubsub_default_all:
                self.apply(b"allchannels", pubsub_default_all)
            for rule in (b"off", b"sanitize-payload", b"clearselectors", b"-@all"):
                self.apply(rule, pubsub_default_all)
        else:
            self.root.apply(op)

    def describe(self) -> bytes:
        """ACLDescribeUser: the rules after 'user <name>' in ACL LIST."""
        parts = [flag.encode() for flag in self.ordered_flags()]
        parts.extend(b"#" + digest.encode() for digest in self.passwords)
        text = b" ".join(parts + [self.root.describe()])
        for selector in self.selectors[1:]:
            text += b" (" + selector.describe() + b")"
        return text

    def check(self, spec: "CommandSpec", argv: list) -> tuple[int, int]:
        """ACLCheckAllUserCommandPerm: (result, argv index of the refused key or channel)."""
        keys = keys_with_flags(spec, argv) if has_keys(spec) else []
        relevant, last_position = DENIED_COMMAND, 0
        for selector in self.selectors:
            result, position = selector.check(spec, argv, keys)
            if result == ALLOWED:
                return ALLOWED, 0
            if result > relevant or (result == relevant and position > last_position):
                relevant, last_position = result, position
        return relevant, last_position

    def unrestricted_key_access(self, spec: "CommandSpec", argv: list, needed: int) -> bool:
        """ACLUserCheckCmdWithUnrestrictedKeyAccess: a selector allows the command and every
        key (for SORT's BY and GET, whose patterns may name any key)."""
        keys = keys_with_flags(spec, argv) if has_keys(spec) else []
        return any(selector.check(spec, argv, keys)[0] == ALLOWED
                   and selector.unrestricted_keys(needed) for selector in self.selectors)

    def password_matches(self, password: bytes) -> bool:
        import hmac

        digest = hash_password(password)
        return any(hmac.compare_digest(digest, known) for known in self.passwords)


def merge_selector_arguments(ops: list[bytes]) -> tuple[list[bytes], int]:
    """ACLMergeSelectorArguments: '(+get' '~x)' -> '(+get ~x)'. Returns the merged rules and
    -1, or the index of the argument opening an unclosed selector."""
    merged: list[bytes] = []
    opened = -1
    selector = b""
    for i, op in enumerate(ops):
        if op[:1] == b"(" and op[-1:] != b")":
            selector = op
            opened = i
            continue
        if opened != -1:
            selector += b" " + op
            if op[-1:] == b")":
                opened = -1
                merged.append(selector)
            continue
        merged.append(op)
    return merged, opened
