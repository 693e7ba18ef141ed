"""HyperLogLog as Redis 7.0 stores it in a string value, byte for byte (hyperloglog.c).

A value is a 16-byte header ("HYLL", encoding, 3 unused bytes, cached cardinality as a
little-endian uint64 whose top bit marks it stale) followed by the registers, either dense
(16384 six-bit registers packed LSB first, 12288 bytes) or sparse (run-length opcodes, see
hyperloglog_sparse.py).

Values stay immutable `bytes` (they are strings to every other command); updates work on a
bytearray copy. Whole-register work (counting, merging) goes through "raw" registers, one byte
per register, converted from the dense packing with big-integer bit operations over all
registers at once.
"""
from __future__ import annotations

import math
import random
import re
import struct

from minired.data import hyperloglog_sparse as sparse
from minired.data.hyperloglog_sparse import HEADER_SIZE, REGISTERS
from minired.protocol import errors

P = 14
Q = 64 - P
DENSE_SIZE = HEADER_SIZE + REGISTERS * 6 // 8
DENSE, SPARSE = 0, 1
MAGIC = b"HYLL"
STALE_BIT = 0x80  # in the cached cardinality's last byte
_CARD_LAST = HEADER_SIZE - 1
ALPHA_INF = 0.721347520444481703680  # 0.5 / ln(2)
# What llroundl gives (then read as uint64) for a result no long long holds: LLONG_MIN's bits.
ROUND_OVERFLOW = 1 << 63

_M = 0xC6A4A7935BD1E995
_MASK64 = (1 << 64) - 1
_SEED = 0xADC83B19
_QUAD = struct.Struct("<Q")

# Per-byte masks over the 4096 bytes of one lane of dense groups (3 bytes hold 4 registers).
_LANE = REGISTERS // 4


def _lane_mask(byte: int) -> int:
    return int.from_bytes(bytes((byte,)) * _LANE, "little")


_M03, _M0F, _M3C, _M3F = (_lane_mask(b) for b in (0x03, 0x0F, 0x3C, 0x3F))
_M30, _MC0, _MF0, _MFC = (_lane_mask(b) for b in (0x30, 0xC0, 0xF0, 0xFC))
_HIGH_BITS = int.from_bytes(b"\x80" * REGISTERS, "little")
_ALL_BITS = (1 << (8 * REGISTERS)) - 1
_NONZERO = re.compile(rb"[^\x00]")


class CorruptedHLL(Exception):
    """A value that passes the header checks but whose registers cannot be read.

    `value` is what Redis leaves stored when it fails half way (PFADD keeps the elements it
    added before the failing one), or None when nothing changed."""

    def __init__(self, value: bytes | None = None) -> None:
        super().__init__("corrupted HyperLogLog")
        self.value = value


# --- hashing ---------------------------------------------------------------------------------

def murmurhash64a(key: bytes, seed: int = _SEED) -> int:
    """MurmurHash2, 64-bit, as Redis reads the blocks: little endian on every platform."""
    length = len(key)
    h = seed ^ ((length * _M) & _MASK64)
    body = length & ~7
    if body:
        for (k,) in _QUAD.iter_unpack(key[:body]):
            k = (k * _M) & _MASK64
            k ^= k >> 47
            h ^= (k * _M) & _MASK64
            h = (h * _M) & _MASK64
    if length & 7:
        h ^= int.from_bytes(key[body:], "little")
        h = (h * _M) & _MASK64
    h ^= h >> 47
    h = (h * _M) & _MASK64
    return h ^ (h >> 47)


def pattern(element: bytes) -> tuple[int, int]:
    """(register index, length of the 000..1 run) for an element (hllPatLen)."""
    h = murmurhash64a(element)
    rest = (h >> P) | (1 << Q)
    return h & (REGISTERS - 1), (rest & -rest).bit_length()


# --- headers ---------------------------------------------------------------------------------

def is_hll(value: bytes) -> bool:
    """The header checks of isHLLObjectOrReply."""
    if len(value) < HEADER_SIZE or value[:4] != MAGIC:
        return False
    encoding = value[4]
    return encoding == SPARSE or (encoding == DENSE and len(value) == DENSE_SIZE)


def new_hll() -> bytes:
    """An empty HLL as createHLLObject makes it: sparse, one XZERO covering every register."""
    return MAGIC + bytes((SPARSE,)) + bytes(11) + sparse.xzero(REGISTERS)


def cached_cardinality(value: bytes) -> int | None:
    """The cached cardinality, or None when PFADD/PFMERGE marked it stale."""
    if value[_CARD_LAST] & STALE_BIT:
        return None
    return int.from_bytes(value[8:16], "little")


def with_cardinality(value: bytes, card: int) -> bytes:
    return value[:8] + card.to_bytes(8, "little") + value[16:]


def with_stale_cache(value: bytes) -> bytes:
    return value[:_CARD_LAST] + bytes((value[_CARD_LAST] | STALE_BIT,)) + value[HEADER_SIZE:]


def as_signed(card: int) -> int:
    """The reply addReplyLongLong makes of a uint64 cardinality."""
    return card - (1 << 64) if card >= 1 << 63 else card


# --- dense registers -------------------------------------------------------------------------

def dense_get(buf, index: int) -> int:
    bit = index * 6
    byte = HEADER_SIZE + (bit >> 3)
    shift = bit & 7
    if shift <= 2:  # the register lies within one byte
        return (buf[byte] >> shift) & 63
    return ((buf[byte] >> shift) | (buf[byte + 1] << (8 - shift))) & 63


def dense_put(buf: bytearray, index: int, value: int) -> None:
    bit = index * 6
    byte = HEADER_SIZE + (bit >> 3)
    shift = bit & 7
    buf[byte] = (buf[byte] & ~(63 << shift) & 0xFF) | ((value << shift) & 0xFF)
    if shift > 2:
        spill = 8 - shift
        buf[byte + 1] = (buf[byte + 1] & ~(63 >> spill) & 0xFF) | (value >> spill)


def dense_to_raw(value) -> bytes:
    """One byte per register from a dense value's packed registers."""
    packed = bytes(value[HEADER_SIZE:DENSE_SIZE])
    b0 = int.from_bytes(packed[0::3], "little")
    b1 = int.from_bytes(packed[1::3], "little")
    b2 = int.from_bytes(packed[2::3], "little")
    lanes = (b0 & _M3F, ((b0 >> 6) & _M03) | ((b1 << 2) & _M3C),
             ((b1 >> 4) & _M0F) | ((b2 << 4) & _M30), (b2 >> 2) & _M3F)
    raw = bytearray(REGISTERS)
    for offset, lane in enumerate(lanes):
        raw[offset::4] = lane.to_bytes(_LANE, "little")
    return bytes(raw)


def raw_to_dense(header: bytes, raw: bytes) -> bytes:
    """A dense value with `header` (encoding set to dense) and registers `raw` (each < 64)."""
    r0, r1, r2, r3 = (int.from_bytes(raw[offset::4], "little") for offset in range(4))
    packed = bytearray(DENSE_SIZE - HEADER_SIZE)
    packed[0::3] = (r0 | ((r1 << 6) & _MC0)).to_bytes(_LANE, "little")
    packed[1::3] = (((r1 >> 2) & _M0F) | ((r2 << 4) & _MF0)).to_bytes(_LANE, "little")
    packed[2::3] = (((r2 >> 4) & _M03) | ((r3 << 2) & _MFC)).to_bytes(_LANE, "little")
    return header[:4] + bytes((DENSE,)) + header[5:HEADER_SIZE] + bytes(packed)


def max_registers(a: bytes, b: bytes) -> bytes:
    """Register-wise maximum of two raw register arrays (values below 128), in one pass of
    big-integer arithmetic: per byte, (a | 0x80) - b keeps its high bit exactly when a >= b."""
    x = int.from_bytes(a, "little")
    y = int.from_bytes(b, "little")
    a_wins = ((((x | _HIGH_BITS) - y) & _HIGH_BITS) >> 7) * 0xFF
    return ((x & a_wins) | (y & (_ALL_BITS ^ a_wins))).to_bytes(REGISTERS, "little")


# --- sparse to dense -------------------------------------------------------------------------

def sparse_to_dense(value) -> bytes:
    """hllSparseToDense: the header is kept (cached cardinality included)."""
    raw = sparse.to_raw(value)
    if raw is None:
        raise CorruptedHLL()
    return raw_to_dense(bytes(value[:HEADER_SIZE]), raw)


def _sparse_set(buf: bytearray, index: int, count: int, max_bytes: int) -> int:
    """hllSparseSet: 1 if the register rose, 0 if not; raises CorruptedHLL. May leave buf
    dense."""
    result = sparse.set_register(buf, index, count, max_bytes)
    if result == sparse.PROMOTE:
        _promote(buf, sparse_to_dense(buf), index, count)
        return 1
    if result == sparse.INVALID:
        raise CorruptedHLL()
    return result


def _promote(buf: bytearray, dense: bytes, index: int, count: int) -> None:
    """buf becomes `dense` with the register set that did not fit the sparse encoding (it
    was lower, or Redis would not promote)."""
    buf[:] = dense
    dense_put(buf, index, count)


# --- the HLL operations ----------------------------------------------------------------------

def to_raw(value) -> bytes:
    """One byte per register (hllMerge's reading); raises CorruptedHLL."""
    if value[4] == DENSE:
        return dense_to_raw(value)
    raw = sparse.to_raw(value)
    if raw is None:
        raise CorruptedHLL()
    return raw


def add(value: bytes, elements, max_bytes: int) -> tuple[bytes | None, int]:
    """PFADD's work on a valid HLL value: (the new value, or None if unchanged; how many
    elements raised a register, as Redis counts them in server.dirty). The stale bit is set
    when one did. Raises CorruptedHLL."""
    if value[4] == SPARSE and len(elements) > 1:
        runs = sparse.Runs.decode(value)
        if runs is not None:
            return _add_to_runs(value, runs, elements, max_bytes)
    buf: bytearray | None = None
    updated = 0
    for element in elements:
        index, count = pattern(element)
        current = value if buf is None else buf
        if current[4] == DENSE:
            if count <= dense_get(current, index):
                continue
            if buf is None:
                buf = bytearray(value)
            dense_put(buf, index, count)
            updated += 1
            continue
        if buf is None:
            buf = bytearray(value)
        try:
            if _sparse_set(buf, index, count, max_bytes):
                updated += 1
        except CorruptedHLL:
            # What Redis leaves: the updates made before, each of which marked the cache stale.
            if not updated:
                raise
            buf[_CARD_LAST] |= STALE_BIT
            raise CorruptedHLL(bytes(buf)) from None
    if not updated:
        return None, 0
    buf[_CARD_LAST] |= STALE_BIT
    return bytes(buf), updated


def _add_to_runs(value: bytes, runs: sparse.Runs, elements, max_bytes: int
                 ) -> tuple[bytes | None, int]:
    """add() for a well-formed sparse value: its registers are all readable, so no element
    can fail."""
    buf = bytearray(value[:HEADER_SIZE])  # the header, or the whole value once dense
    updated = 0
    for element in elements:
        index, count = pattern(element)
        if runs is None:
            if count > dense_get(buf, index):
                dense_put(buf, index, count)
                updated += 1
            continue
        result = runs.set(index, count, max_bytes)
        if result == sparse.PROMOTE:  # (a register that rose past what sparse can hold)
            _promote(buf, sparse_to_dense(runs.encode(buf)), index, count)
            runs = None
        if result:
            updated += 1
    if not updated:
        return None, 0
    if runs is not None:
        buf = bytearray(runs.encode(buf))
    buf[_CARD_LAST] |= STALE_BIT
    return bytes(buf), updated


def histogram(raw: bytes) -> list[int]:
    counts = [0] * 64
    remaining = REGISTERS
    for regval in range(64):
        n = raw.count(regval)
        counts[regval] = n
        remaining -= n
        if not remaining:
            break
    return counts


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        previous = z
        z += x * y
        y += y
        if previous == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        previous = z
        y *= 0.5
        z -= math.pow(1 - x, 2) * y
        if previous == z:
            return z / 3


def estimate(counts: list[int]) -> int:
    """hllCount's estimate from a register histogram (Ertl's improved estimator), as the
    uint64 Redis computes, including its overflow values."""
    m = float(REGISTERS)
    z = m * _tau((m - counts[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += counts[j]
        z *= 0.5
    z += m * _sigma(counts[0] / m)
    if z == 0.0:
        return ROUND_OVERFLOW
    e = ALPHA_INF * m * m / z
    if not e < 2.0 ** 63:  # inf too
        return ROUND_OVERFLOW
    whole = math.floor(e)
    return int(whole) + (1 if e - whole >= 0.5 else 0)  # llroundl: halves away from zero


def count(value: bytes) -> int:
    """The cardinality of one valid HLL value, computed; raises CorruptedHLL."""
    if value[4] == DENSE:
        return estimate(histogram(dense_to_raw(value)))
    counts = sparse.histogram(value)
    if counts is None:
        raise CorruptedHLL()
    return estimate(counts)


def merge_into(dest: bytes | None, raw: bytes, use_dense: bool, max_bytes: int) -> bytes:
    """PFMERGE's result: dest (None: a new HLL) with its registers raised to raw's, dense if
    use_dense, else by Redis's sequence of sparse updates; the cached cardinality stale."""
    target = new_hll() if dest is None else dest
    if use_dense:
        if target[4] == SPARSE:
            target = sparse_to_dense(target)
        header = bytearray(target[:HEADER_SIZE])
        header[_CARD_LAST] |= STALE_BIT
        return raw_to_dense(bytes(header), max_registers(dense_to_raw(target), raw))
    runs = sparse.Runs.decode(target) if target[4] == SPARSE else None
    buf = bytearray(target[:HEADER_SIZE] if runs is not None else target)
    for found in _NONZERO.finditer(raw):
        index = found.start()
        regval = raw[index]
        if runs is not None:
            if runs.set(index, regval, max_bytes) == sparse.PROMOTE:
                _promote(buf, sparse_to_dense(runs.encode(buf)), index, regval)
                runs = None
        elif buf[4] == DENSE:
            if regval > dense_get(buf, index):
                dense_put(buf, index, regval)
        else:
            _sparse_set(buf, index, regval, max_bytes)
    if runs is not None:
        buf = bytearray(runs.encode(buf))
    buf[_CARD_LAST] |= STALE_BIT
    return bytes(buf)


# --- PFSELFTEST ------------------------------------------------------------------------------

def selftest(max_bytes: int, register_cycles: int = 2, max_checkpoint: int = 10_000) -> str | None:
    """PFSELFTEST's checks, with fewer rounds than Redis's 1000 register cycles and 10^7
    elements: the error text of the first failure, or None."""
    dense = bytearray(DENSE_SIZE)
    dense[:5] = MAGIC + bytes((DENSE,))
    rng = random.Random()
    for _ in range(register_cycles):
        expected = [rng.randrange(64) for _ in range(REGISTERS)]
        for index, regval in enumerate(expected):
            dense_put(dense, index, regval)
        for index, regval in enumerate(expected):
            got = dense_get(dense, index)
            if got != regval:
                return errors.HLL_TEST_REGISTER.format(index, regval, got)
    dense[HEADER_SIZE:] = bytes(DENSE_SIZE - HEADER_SIZE)
    sparse_hll = bytearray(new_hll())
    relerr = 1.04 / math.sqrt(REGISTERS)
    seed = rng.getrandbits(64)
    checkpoint = 1
    for j in range(1, max_checkpoint + 1):
        index, regcount = pattern((j ^ seed).to_bytes(8, "little"))
        if regcount > dense_get(dense, index):
            dense_put(dense, index, regcount)
        if sparse_hll[4] == SPARSE:
            _sparse_set(sparse_hll, index, regcount, max_bytes)
        elif regcount > dense_get(sparse_hll, index):
            dense_put(sparse_hll, index, regcount)
        if j != checkpoint:
            continue
        if j < max_bytes / 2 and sparse_hll[4] != SPARSE:
            return errors.HLL_TEST_SPARSE_NOT_USED
        card = count(bytes(dense))
        if card != count(bytes(sparse_hll)):
            return errors.HLL_TEST_DISAGREE
        max_error = 1 if j == 10 else math.ceil(relerr * 6 * checkpoint)
        if abs(checkpoint - card) > max_error:
            return errors.HLL_TEST_ERROR.format(checkpoint, abs(checkpoint - card))
        checkpoint *= 10
    return None
