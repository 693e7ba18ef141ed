"""Key specs: which arguments of a command are keys and how the command uses each, for COMMAND
INFO and COMMAND GETKEYS/GETKEYSANDFLAGS, evaluated as Redis 7.0's getKeysFromCommandWithSpecs
does.

The specs themselves are Redis's (keyspecs_data.py, generated from its COMMAND INFO), looked up
by a command's full name; a command of minired's own, which Redis has no spec for, is described
from the key positions its @command declares. Where Redis falls back to a command's getkeys
procedure (variable flags, an incomplete or unusable spec), the same procedure is written here
with the flags Redis's gives, positions taken from the command table where the table already
has the rule (SORT's STORE).
"""
from __future__ import annotations

from typing import Callable

from minired.engine.args import parse_int
from minired.engine.keyspecs_data import KEY_SPECS, TIPS
from minired.engine.table import CommandSpec
from minired.protocol.errors import RedisError

KeyFlags = tuple[str, ...]
KeyRef = tuple[int, KeyFlags]

RO_ACCESS: KeyFlags = ("RO", "access")
RW_ACCESS_UPDATE: KeyFlags = ("RW", "access", "update")
OW_UPDATE: KeyFlags = ("OW", "update")
_NO_FLAGS: KeyFlags = ()


def specs_of(spec: CommandSpec) -> tuple | None:
    """Redis's key specs for the command, None for a command Redis does not have."""
    return KEY_SPECS.get(spec.full_name)


def tips_of(spec: CommandSpec) -> tuple:
    return TIPS.get(spec.full_name, ())


def _c_string(raw: bytes) -> bytes:
    """What strcasecmp and atoi see: the argument up to its first NUL."""
    end = raw.find(b"\0")
    return raw if end < 0 else raw[:end]


def _atoi(raw: bytes) -> int:
    """C's atoi: leading space, a sign, then digits up to the first other byte."""
    text = _c_string(raw).lstrip(b" \t\n\v\f\r")
    sign = -1 if text[:1] == b"-" else 1
    if text[:1] in (b"-", b"+"):
        text = text[1:]
    digits = 0
    for byte in text:
        if not 48 <= byte <= 57:
            break
        digits = digits * 10 + byte - 48
        if digits > 1 << 63:
            break
    # strtol clamps to a long, and atoi keeps its low 32 bits.
    value = max(-(1 << 63), min((1 << 63) - 1, sign * digits))
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _using_specs(specs: tuple, argv: list) -> list[KeyRef] | None:
    """getKeysUsingKeySpecs: None where a spec cannot be used (Redis's -1)."""
    argc = len(argv)
    found: list[KeyRef] = []
    for _notes, flags, begin, find in specs:
        if "not_key" in flags:
            continue
        if begin[0] == "index":
            first = begin[1]
        elif begin[0] == "keyword":
            keyword, startfrom = begin[1].lower().encode(), begin[2]
            start = startfrom if startfrom > 0 else argc + startfrom
            end = argc - 1 if startfrom > 0 else 1
            first = 0
            i = start
            while i != end:
                if i >= argc or i < 1:
                    break
                if _c_string(argv[i]).lower() == keyword:
                    first = i + 1
                    break
                i = i + 1 if start <= end else i - 1
            if not first:
                continue  # the keyword is absent: this spec names no key
        else:
            return None
        if find[0] == "range":
            _, lastkey, step, limit = find
            if lastkey >= 0:
                last = first + lastkey
            elif not limit:
                last = argc + lastkey
            else:
                last = first + (int((argc - first) / limit) + lastkey)
        elif find[0] == "keynum":
            _, keynumidx, firstkey, step = find
            if keynumidx >= argc or first + keynumidx >= argc:
                return None
            try:
                numkeys = parse_int(argv[first + keynumidx])
            except RedisError:
                return None
            if numkeys < 0:
                return None
            first += firstkey
            last = first + numkeys - 1
        else:
            return None
        if last >= argc or last < first or first >= argc:
            return None
        found.extend((i, flags) for i in range(first, last + 1, step))
        if "incomplete" in flags:
            return None
    return found


def _generic(store: int, count: int, first: int, step: int) -> Callable:
    """genericGetKeys: `count` keys from `first` (numkeys read with atoi), then the store key."""

    def keys(spec: CommandSpec, argv: list) -> list[KeyRef]:
        num = _atoi(argv[count])
        if num < 1 or num > (len(argv) - first) // step:
            return []
        found = [(first + i * step, _NO_FLAGS) for i in range(num)]
        if store:
            found.append((store, _NO_FLAGS))
        return found

    return keys


def _set(spec: CommandSpec, argv: list) -> list[KeyRef]:
    with_get = any(_c_string(arg).lower() == b"get" for arg in argv[3:])
    return [(1, RW_ACCESS_UPDATE if with_get else OW_UPDATE)]


def _bitfield(spec: CommandSpec, argv: list) -> list[KeyRef]:
    readonly = True
    argc = len(argv)
    i = 2
    while i < argc:
        remaining = argc - i - 1
        arg = argv[i].lower()
        if arg == b"get" and remaining >= 2:
            i += 2
        elif arg in (b"set", b"incrby") and remaining >= 3:
            readonly = False
            break
        elif arg == b"overflow" and remaining >= 1:
            i += 1
        else:
            readonly = False  # a syntax error: safer to assume a write, as Redis does
            break
        i += 1
    return [(1, RO_ACCESS if readonly else RW_ACCESS_UPDATE)]


def _sort(spec: CommandSpec, argv: list) -> list[KeyRef]:
    # The table's key finder is sortGetKeys; the sorted key is read, STORE's is overwritten.
    return [(i, RO_ACCESS if i == 1 else OW_UPDATE) for i in spec.key_indexes(argv)]


def _migrate(spec: CommandSpec, argv: list) -> list[KeyRef]:
    # migrateGetKeys (the table's key finder), every key read, written and deleted.
    return [(i, ("RW", "access", "delete")) for i in spec.key_indexes(argv)]


def _sort_ro(spec: CommandSpec, argv: list) -> list[KeyRef]:
    return [(1, RO_ACCESS)]


def _georadius(spec: CommandSpec, argv: list) -> list[KeyRef]:
    stored = -1
    i = 5
    while i < len(argv):
        if argv[i].lower() in (b"store", b"storedist") and i + 1 < len(argv):
            stored = i + 1
            i += 1
        i += 1
    return [(1, _NO_FLAGS)] + ([(stored, _NO_FLAGS)] if stored != -1 else [])


def _xread(spec: CommandSpec, argv: list) -> list[KeyRef]:
    streams = -1
    i = 1
    while i < len(argv):
        arg = argv[i].lower()
        if arg in (b"block", b"count"):
            i += 1
        elif arg == b"group":
            i += 2
        elif arg == b"streams":
            streams = i
            break
        elif arg != b"noack":
            break
        i += 1
    num = len(argv) - streams - 1 if streams != -1 else 0
    if streams == -1 or num == 0 or num % 2:
        return []
    return [(i, _NO_FLAGS) for i in range(streams + 1, streams + 1 + num // 2)]


# The commands Redis gives a getkeys procedure (its fallback when the specs cannot answer).
_NATIVE: dict[str, Callable[[CommandSpec, list], list[KeyRef]]] = {
    "set": _set, "bitfield": _bitfield, "sort": _sort, "sort_ro": _sort_ro, "migrate": _migrate,
    "georadius": _georadius, "georadiusbymember": _georadius,
    "xread": _xread, "xreadgroup": _xread,
    **{name: _generic(1, 2, 3, 1) for name in ("zunionstore", "zinterstore", "zdiffstore")},
    **{name: _generic(0, 1, 2, 1) for name in (
        "zunion", "zinter", "zdiff", "zintercard", "sintercard", "lmpop", "zmpop")},
    **{name: _generic(0, 2, 3, 1) for name in (
        "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "blmpop", "bzmpop")},
}


def has_keys(spec: CommandSpec) -> bool:
    """doesCommandHaveKeys: a getkeys procedure, or a spec that is not NOT_KEY."""
    specs = specs_of(spec)
    if specs is None:
        return bool(spec.first_key) or spec.key_finder is not None
    return spec.full_name in _NATIVE or any("not_key" not in s[1] for s in specs)


def keys_with_flags(spec: CommandSpec, argv: list) -> list[KeyRef]:
    """getKeysFromCommandWithSpecs: the key positions in argv, each with its flags."""
    specs = specs_of(spec)
    if specs is None:
        access = ("RW",) if spec.write else ("RO",)
        return [(i, access) for i in spec.key_indexes(argv)]
    has_keyspec = any("not_key" not in s[1] for s in specs)
    variable = any("variable_flags" in s[1] for s in specs)
    if has_keyspec and not variable:
        found = _using_specs(specs, argv)
        if found is not None:
            return found
    native = _NATIVE.get(spec.full_name)
    return native(spec, argv) if native is not None else []
