"""cmsgpack (lua-cmsgpack 0.4.0, as built into Redis 7.0), written in Lua.

PyPI's msgpack cannot reproduce Redis's bytes: its single/double choice is one
global switch, while cmsgpack picks float32 per value (whenever the double
survives a round trip through float) and encodes every Lua number that is
exactly an int64 as the smallest integer format.  Traversal order and the
array-versus-map decision also depend on Lua's own ``next`` order.  So the
codec is Lua; Python only converts IEEE-754 bit patterns (exactly as C's
(float) casts do, NaN payloads included).

Reproduced quirks: tables nested 16 deep are encoded as nil; a table is an
array when its keys are exactly 1..N (an empty table is an empty array); array
items are read with metamethods (lua_gettable); uint64 values >= 2^63 decode as
negative numbers; a map entry with a nil key raises "table index is nil"; and
too many results fail where the C stack check (LUAI_MAXCSTACK) would.
"""
from __future__ import annotations

import ctypes
import struct

from minired.scripting.lualibs.support import lua_safe, lua_source


def _pack_float(n: float) -> bytes:
    """mp_encode_double(): float32 when (double)(float)d == d, else float64."""
    d = float(n)
    f = ctypes.c_float(d).value  # C's double -> float conversion (overflow -> inf)
    if f == d:
        return b"\xca" + struct.pack(">f", f)
    return b"\xcb" + struct.pack(">d", d)


def _unpack_float(data: bytes) -> float:
    return ctypes.c_float.from_buffer_copy(data[::-1]).value


def _unpack_double(data: bytes) -> float:
    return struct.unpack(">d", data)[0]


SOURCE = lua_source("cmsgpack.lua")


# The Python helpers cmsgpack.lua receives, in its order (after the support table).
HELPERS = (lua_safe(_pack_float), lua_safe(_unpack_float), lua_safe(_unpack_double))
