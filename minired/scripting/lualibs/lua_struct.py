"""struct (Roberto Ierusalimschy's struct.c, as built into Redis 7.0), in Lua.

Formats: '>' big / '<' little endian, '![n]' alignment, 'x' padding,
b/B h/H l/L T i[n]/I[n] integers (1, 2, 8, 8 and n bytes, default 4),
'c[n]' fixed strings (pack: c0 = whole string; unpack: c0 = previous value as
length), 's' zero-terminated strings, 'f'/'d' floats, ' ' ignored.  The native
byte order of Redis's x86-64 build (little endian) is the default.

Integers are handled as two exact 32-bit halves of C's 64-bit ``unsigned long``
so that every double→integer conversion matches x86-64 C: truncation toward
zero, out-of-range negatives and NaN become 0x8000000000000000, values >= 2^64
become 0, sizes above 8 bytes are zero-filled, and unpacking keeps the low 64
bits with the (x86-masked) sign-extension shift of the original.  Only IEEE-754
float conversion is done in Python.
"""
from __future__ import annotations

import ctypes
import struct

from minired.scripting.lualibs.support import lua_safe, lua_source


def _pack_float(n: float) -> bytes:
    """Little-endian bytes of C's (float)n (rounding; overflow gives inf)."""
    return bytes(ctypes.c_float(float(n)))


def _pack_double(n: float) -> bytes:
    return struct.pack("<d", float(n))


def _unpack_float(data: bytes) -> float:
    return ctypes.c_float.from_buffer_copy(data).value


def _unpack_double(data: bytes) -> float:
    return struct.unpack("<d", data)[0]


SOURCE = lua_source("struct.lua")


# The Python helpers struct.lua receives, in its order (after the support table).
HELPERS = (lua_safe(_pack_float), lua_safe(_pack_double),
           lua_safe(_unpack_float), lua_safe(_unpack_double))
