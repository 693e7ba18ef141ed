"""Small collections held as one bytes object until a command first looks them up.

A production snapshot is mostly keys nobody reads for a while, and Redis holds each small
hash, set, sorted set or list in one allocation (a listpack, an intset). Held as Python
objects, one per element, the same values take 5-15 times the memory. So the RDB loader keeps
each small collection as a `Packed`: the file's own listpack or intset where it has one (the
RDB loader registers how those unpack), else its live value `marshal`ed (one C call each way;
the format never leaves the process), and `Database.get` swaps the live value in the first time
any lookup meets the key. From then on the key is an ordinary value: nothing else sees a
Packed but the code that walks a database's dictionary without a lookup (SAVE, the AOF
rewrite, DEBUG DIGEST and DEBUG OBJECT, the memory estimate), and each of those reads it
through `live()`.

The types register how they pack (`register_packing`), so this module names none but the
built-in ones.
"""
from __future__ import annotations

import marshal
from typing import Any, Callable

from minired.data.quicklist import QuickList
from minired.data.shared_integers import BY_TEXT

# The most elements a packed value holds: Redis's default listpack limit for hashes and sorted
# sets (hash-max-listpack-entries, zset-max-listpack-entries). Unpacking that many takes a few
# microseconds, paid once per key.
PACK_LIMIT = 128

_loads = marshal.loads


def dumps(value: Any) -> bytes:
    """marshal's format 2: no back-references (3 and 4 look every object up in a table of
    those seen, twice the time for values that share none)."""
    return marshal.dumps(value, 2)

_share = BY_TEXT.get


def shared(texts) -> map:
    """The texts, each small integer's replaced by the shared object (marshal makes a new
    bytes object for each: the loader had shared them, minired/data/shared_integers.py)."""
    return map(_share, texts, texts)


class Packed:
    """A value as the bytes `blob`, in the format `kind` names: a type (dict, set, QuickList,
    ZSet ...) for the value marshaled, or a format registered with register_unpacking."""

    __slots__ = ("kind", "blob")

    def __init__(self, kind: type, blob: bytes) -> None:
        self.kind = kind
        self.blob = blob

    def unpacked(self) -> Any:
        """A new live value equal to the one packed."""
        return _BUILDERS[self.kind](self.blob)

    def view(self) -> Any:
        """The value, to be read and then dropped: what the live value would give to
        iteration, len() and its type's read-only fields, made as cheaply as the type can."""
        return _VIEWS[self.kind](self.blob)

    def __repr__(self) -> str:
        return f"Packed({self.kind.__name__}, {len(self.blob)} bytes)"


_PACKERS: dict[type, Callable[[Any], bytes]] = {}
_BUILDERS: dict[type, Callable[[bytes], Any]] = {}
_VIEWS: dict[type, Callable[[bytes], Any]] = {}


def register_packing(kind: type, pack_value: Callable[[Any], bytes],
                     build: Callable[[bytes], Any],
                     view: Callable[[bytes], Any] | None = None) -> None:
    """Values of type `kind` pack as pack_value(value) and unpack as build(blob); view(blob),
    if given, is a cheaper read-only form for SAVE and the other walks (else build's)."""
    _PACKERS[kind] = pack_value
    register_unpacking(kind, build, view)


def register_unpacking(kind: type, build: Callable[[bytes], Any],
                       view: Callable[[bytes], Any] | None = None) -> None:
    """Packed values of `kind` that another module makes (a loader keeping its file's own
    encoding, as the RDB loader keeps a listpack) unpack as build(blob), view as view(blob)."""
    _BUILDERS[kind] = build
    _VIEWS[kind] = view or build


def small(count: int) -> bool:
    """Whether a collection of `count` elements is small enough to be held packed."""
    return count <= PACK_LIMIT


def pack(value: Any) -> Any:
    """The value as a Packed if it is a small collection of a type that packs, else itself."""
    kind = type(value)
    packer = _PACKERS.get(kind)
    if packer is None or not small(len(value)):
        return value
    return Packed(kind, packer(value))


def live(value: Any) -> Any:
    """The value as commands see it, to read and drop: a Packed's view (SAVE, the AOF rewrite,
    DEBUG DIGEST and the memory estimate walk every key; none keeps or changes what it reads)."""
    return value.view() if type(value) is Packed else value


def _build_hash(blob: bytes) -> dict:
    fields = _loads(blob)
    return dict(zip(shared(fields), shared(fields.values())))


# marshal keeps a dict's order (a hash replies in it) and holds bytes, floats and tuples (a set
# goes as a tuple: marshal sorts a set's members, for files that must not vary).
register_packing(dict, dumps, _build_hash, _loads)
register_packing(set, lambda members: dumps(tuple(members)),
                 lambda blob: set(shared(_loads(blob))), lambda blob: set(_loads(blob)))
register_packing(QuickList, lambda items: dumps(tuple(items)),
                 lambda blob: QuickList(tuple(shared(_loads(blob)))),
                 lambda blob: QuickList(_loads(blob)))
