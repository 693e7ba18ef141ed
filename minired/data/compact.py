"""When Redis 7.0 holds a set as an intset and a hash as a listpack (a sorted set: ZSet's
fits_listpack): one statement of each rule, read by OBJECT ENCODING, the SCAN paging rule and
the format DUMP and SAVE write.

Redis converts a collection out of its compact encoding as it grows and never converts it back.
A set is marked as it shrinks out of one (commands/sets.py) and stays a hash table. A set cannot
carry a field, so the mark is a registry by id, with a weak reference that drops the entry with
the set. A hash has no mark (a dict can neither carry a field nor be weakly referenced): it is
judged by what it holds now (docs/differences.md).
"""
from __future__ import annotations

import weakref

from minired.protocol.resp import string2ll

_HASHTABLE_SETS: dict[int, weakref.ref] = {}


def keep_hashtable(members: set) -> None:
    """Record that this set stays a hash table whatever it holds from now on."""
    key = id(members)
    if key not in _HASHTABLE_SETS:
        _HASHTABLE_SETS[key] = weakref.ref(members, lambda _, key=key: _HASHTABLE_SETS.pop(key, None))


def intset_numbers(members: set, max_entries: int) -> list[int] | None:
    """The integers of this set if Redis holds it as an intset under set-max-intset-entries
    (not marked a hash table, at most max_entries members, every one an integer as string2ll
    reads it), else None: SAVE writes them without reading the members twice."""
    if _HASHTABLE_SETS:
        ref = _HASHTABLE_SETS.get(id(members))
        if ref is not None and ref() is members:
            return None
    if len(members) > max_entries:
        return None
    numbers = []
    for member in members:
        number = string2ll(member)
        if number is None:
            return None
        numbers.append(number)
    return numbers


def set_fits_intset(members: set, max_entries: int) -> bool:
    """Whether Redis holds this set as an intset (intset_numbers' rule)."""
    return intset_numbers(members, max_entries) is not None


def hash_fits_listpack(fields: dict, max_entries: int, max_value: int) -> bool:
    """Whether Redis holds this hash as a listpack under hash-max-listpack-entries and -value:
    at most max_entries fields, no field or value longer than max_value bytes."""
    return len(fields) <= max_entries and all(
        len(field) <= max_value and len(value) <= max_value for field, value in fields.items())
