"""bit (LuaBitOp 1.0.2, as built into Redis 7.0): 32-bit operations on Lua numbers.

Lua 5.1 has no integer operators, so the arithmetic is done in Python; the Lua
side converts and checks arguments (so error texts name the call site) and
passes only numbers across.

Number conversion follows LuaBitOp's barg(): the argument is added to 2^52+2^51
as a double and the low 32 bits of the result's IEEE-754 representation are
the operand.  That rounds fractions to nearest-even and wraps modulo 2^32,
with LuaBitOp's own results for huge values.  Results are signed 32-bit.
"""
from __future__ import annotations

import struct

from minired.scripting.lualibs.support import lua_safe, lua_source

_MAGIC = 6755399441055744.0  # 2^52 + 2^51
_DOUBLE = struct.Struct("<d")
_UINT64 = struct.Struct("<Q")


def _barg(n: float) -> int:
    bits = _UINT64.unpack(_DOUBLE.pack(float(n) + _MAGIC))[0]
    return bits & 0xFFFFFFFF


def _signed(b: int) -> int:
    b &= 0xFFFFFFFF
    return b - 0x100000000 if b & 0x80000000 else b


def _tobit(x: float) -> int:
    return _signed(_barg(x))


def _bnot(x: float) -> int:
    return _signed(~_barg(x))


def _band(*xs: float) -> int:
    b = 0xFFFFFFFF
    for x in xs:
        b &= _barg(x)
    return _signed(b)


def _bor(*xs: float) -> int:
    b = 0
    for x in xs:
        b |= _barg(x)
    return _signed(b)


def _bxor(*xs: float) -> int:
    b = 0
    for x in xs:
        b ^= _barg(x)
    return _signed(b)


def _lshift(x: float, n: float) -> int:
    return _signed(_barg(x) << (_barg(n) & 31))


def _rshift(x: float, n: float) -> int:
    return _signed(_barg(x) >> (_barg(n) & 31))


def _arshift(x: float, n: float) -> int:
    return _signed(_signed(_barg(x)) >> (_barg(n) & 31))


def _rol(x: float, n: float) -> int:
    b, s = _barg(x), _barg(n) & 31
    return _signed((b << s) | (b >> (32 - s)))


def _ror(x: float, n: float) -> int:
    b, s = _barg(x), _barg(n) & 31
    return _signed((b >> s) | (b << (32 - s)))


def _bswap(x: float) -> int:
    return _signed(int.from_bytes(_barg(x).to_bytes(4, "little"), "big"))


def _tohex(x: float, n: float | None) -> bytes:
    b = _barg(x)
    width = 8 if n is None else _signed(_barg(n))
    digits = "0123456789abcdef"
    if width < 0:
        width, digits = -width, "0123456789ABCDEF"
    width = min(width, 8)
    out = []
    for _ in range(width):
        out.append(digits[b & 15])
        b >>= 4
    return "".join(reversed(out)).encode()


SOURCE = lua_source("bit.lua")


# The Python helpers bit.lua receives, in its order: the arithmetic Lua 5.1 cannot do.
HELPERS = tuple(lua_safe(op) for op in (
    _tobit, _bnot, _band, _bor, _bxor, _lshift, _rshift, _arshift, _rol, _ror, _bswap, _tohex))
