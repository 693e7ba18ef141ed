"""The sparse encoding of Redis's HyperLogLog (hyperloglog.c), read and updated in place.

After the 16-byte header, run-length opcodes cover the 16384 registers in order: ZERO
00xxxxxx (1-64 zero registers), XZERO 01xxxxxx yyyyyyyy (1-16384 zero registers) and VAL
1vvvvvxx (1-4 registers of value 1-32). The layout depends on the order in which registers
were set, so `set_register` replays hllSparseSet's splitting and merging exactly. Values that
pass the header checks may still be corrupted: an XZERO cut short by the end of the string
reads the string's terminating NUL as its second byte, as Redis's reads do.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

HEADER_SIZE = 16
REGISTERS = 1 << 14
VAL_MAX_VALUE = 32
VAL_MAX_LEN = 4
ZERO_MAX_LEN = 64

# set_register's results besides 1 (a register rose) and 0 (none did), as hllSparseSet's.
INVALID = -1
PROMOTE = 2  # the caller converts to dense, then sets the register there


def xzero(length: int) -> bytes:
    return bytes((((length - 1) >> 8) | 0x40, (length - 1) & 0xFF))


def _zero_run(length: int) -> bytes:
    return xzero(length) if length > ZERO_MAX_LEN else bytes((length - 1,))


def _val(value: int, length: int) -> int:
    return ((value - 1) << 2) | (length - 1) | 0x80


def opcodes(value):
    """(register value, run length, size in bytes) of each opcode."""
    end = len(value)
    p = HEADER_SIZE
    while p < end:
        op = value[p]
        if op & 0x80:
            yield ((op >> 2) & 0x1F) + 1, (op & 3) + 1, 1
            p += 1
        elif op & 0x40:
            low = value[p + 1] if p + 1 < end else 0
            yield 0, (((op & 0x3F) << 8) | low) + 1, 2
            p += 2
        else:
            yield 0, (op & 0x3F) + 1, 1
            p += 1


def to_raw(value) -> bytes | None:
    """One byte per register, as hllSparseToDense and hllMerge read them; None when the
    runs do not cover exactly every register (a VAL past the end stops the reading)."""
    raw = bytearray(REGISTERS)
    index = 0
    for regval, runlen, _ in opcodes(value):
        if regval:
            if index + runlen > REGISTERS:
                break
            raw[index:index + runlen] = bytes((regval,)) * runlen
        index += runlen
    return bytes(raw) if index == REGISTERS else None


def histogram(value) -> list[int] | None:
    """hllSparseRegHisto: how many registers hold each value; None when the runs do not
    cover exactly every register."""
    counts = [0] * 64
    index = 0
    for regval, runlen, _ in opcodes(value):
        index += runlen
        counts[regval] += runlen
    return counts if index == REGISTERS else None


def decode(value) -> str:
    """PFDEBUG DECODE's text."""
    words = []
    for regval, runlen, size in opcodes(value):
        if regval:
            words.append(f"v:{regval},{runlen}")
        else:
            words.append(f"{'Z' if size == 2 else 'z'}:{runlen}")
    return " ".join(words)


# Registers covered by each one-byte opcode, 0 for the first byte of an XZERO: between two
# XZEROs every byte is an opcode of its own, so runs of them are summed without a Python loop.
_SPAN = bytes((op & 3) + 1 if op & 0x80 else 0 if op & 0x40 else (op & 0x3F) + 1
              for op in range(256))
_XZERO_START = re.compile(rb"[\x40-\x7f]")
_CHUNK = 128


def _locate(buf, index: int) -> tuple[int, int, int, int]:
    """Step 1 of hllSparseSet: the opcode covering `index` as (p, first, span, prev), where
    first is the first register it covers and prev the opcode before it (-1: none); p is the
    end of buf when no opcode covers index."""
    end = len(buf)
    p = HEADER_SIZE
    first = 0
    prev = -1
    while p < end:
        found = _XZERO_START.search(buf, p)
        q = found.start() if found else end
        if q > p:
            spans = buf[p:q].translate(_SPAN)
            total = sum(spans)
            if index < first + total:
                offset = 0
                while True:
                    chunk_total = sum(spans[offset:offset + _CHUNK])
                    if index < first + chunk_total:
                        break
                    first += chunk_total
                    offset += _CHUNK
                sums = list(accumulate(spans[offset:offset + _CHUNK]))
                k = bisect_right(sums, index - first)
                if k:
                    first += sums[k - 1]
                j = offset + k  # the opcode's position in this run
                if j:
                    prev = p + j - 1
                return p + j, first, spans[j], prev
            prev = q - 1
            first += total
            p = q
        if q >= end:
            break
        span = (((buf[q] & 0x3F) << 8) | (buf[q + 1] if q + 1 < end else 0)) + 1
        if index < first + span:
            return q, first, span, prev
        prev = q
        first += span
        p = q + 2
    return end, first, 0, prev


def set_register(buf: bytearray, index: int, count: int, max_bytes: int) -> int:
    """hllSparseSet on buf in place, up to the promotion to dense, which it asks of the
    caller (PROMOTE) when count does not fit a VAL or the string would outgrow max_bytes.
    Returns 1 if the register rose, 0 if not, INVALID if no opcode covers the register.
    The caller marks the cached cardinality stale. Works on any value that passed the header
    checks; Runs does the same faster on well-formed ones."""
    if count > VAL_MAX_VALUE:
        return PROMOTE
    end = len(buf)
    p, first, span, prev = _locate(buf, index)
    if p >= end:
        return INVALID

    op = buf[p]
    if op & 0x80:  # VAL
        if ((op >> 2) & 0x1F) + 1 >= count:
            return 0
        if span == 1:
            buf[p] = _val(count, 1)
            _merge_adjacent(buf, prev, end)
            return 1
    elif not op & 0x40 and span == 1:  # ZERO of one register
        buf[p] = _val(count, 1)
        _merge_adjacent(buf, prev, end)
        return 1

    # Split the opcode into (run before) VAL (run after).
    last = first + span - 1
    if op & 0x80:
        current = ((op >> 2) & 0x1F) + 1
        seq = bytearray()
        if index != first:
            seq.append(_val(current, index - first))
        seq.append(_val(count, 1))
        if index != last:
            seq.append(_val(current, last - index))
        old_size = 1
    else:
        seq = bytearray(_zero_run(index - first) if index != first else b"")
        seq.append(_val(count, 1))
        if index != last:
            seq += _zero_run(last - index)
        old_size = 2 if op & 0x40 else 1
    delta = len(seq) - old_size
    if delta > 0 and end + delta > max_bytes:
        return PROMOTE
    buf[p:p + old_size] = seq
    # An XZERO cut short by the end of the string: Redis's length arithmetic drops a byte.
    del buf[end + delta:]
    _merge_adjacent(buf, prev, end + delta)
    return 1


def _merge_adjacent(buf: bytearray, prev: int, end: int) -> None:
    """Step 4 of hllSparseSet: merge equal adjacent VALs within five opcodes from prev."""
    p = prev if prev >= 0 else HEADER_SIZE
    scans = 5
    while p < end and scans:
        scans -= 1
        op = buf[p]
        if not op & 0x80:
            p += 2 if op & 0x40 else 1
            continue
        if p + 1 < end and buf[p + 1] & 0x80:
            following = buf[p + 1]
            if (op >> 2) & 0x1F == (following >> 2) & 0x1F:
                length = (op & 3) + (following & 3) + 2
                if length <= VAL_MAX_LEN:
                    buf[p + 1] = (following & 0xFC) | (length - 1)
                    del buf[p]
                    end -= 1
                    continue
        p += 1


class Runs:
    """A well-formed sparse value's opcodes as two lists, for many updates in a row (PFADD of
    many elements, PFMERGE into a sparse key): `codes` holds each opcode's first byte and
    `starts` the first register each covers, plus REGISTERS at the end. Splitting or merging
    opcodes never moves the registers that later ones cover, so finding an opcode is a bisect
    of `starts` rather than a walk of the bytes, and each update a slice assignment. An XZERO's
    second byte follows from its span, so a code of 0x40-0x7f stands for the whole opcode.
    set() makes exactly the opcodes set_register makes, and encode() gives back the bytes."""

    __slots__ = ("codes", "starts", "size")

    def __init__(self, codes: list[int], starts: list[int], size: int) -> None:
        self.codes = codes
        self.starts = starts
        self.size = size  # of the whole value in bytes, header included

    @classmethod
    def decode(cls, value) -> Runs | None:
        """None unless the opcodes cover exactly the 16384 registers and the last is whole:
        values that only pass the header checks keep set_register's byte-level reading."""
        codes: list[int] = []
        starts: list[int] = []
        end = len(value)
        p = HEADER_SIZE
        first = 0
        while p < end:
            found = _XZERO_START.search(value, p)
            q = found.start() if found else end
            if q > p:
                segment = value[p:q]
                codes += segment
                firsts = list(accumulate(segment.translate(_SPAN), initial=first))
                first = firsts.pop()
                starts += firsts
            if q >= end:
                break
            if q + 1 >= end:
                return None
            codes.append(value[q])
            starts.append(first)
            first += (((value[q] & 0x3F) << 8) | value[q + 1]) + 1
            p = q + 2
        if first != REGISTERS:
            return None
        starts.append(REGISTERS)
        return cls(codes, starts, end)

    def encode(self, header) -> bytes:
        """The value: `header` (its first 16 bytes) and the opcodes."""
        body = bytes(self.codes)
        out = bytearray(header[:HEADER_SIZE])
        done = 0
        starts = self.starts
        for found in _XZERO_START.finditer(body):
            i = found.start()
            out += body[done:i]
            out += xzero(starts[i + 1] - starts[i])
            done = i + 1
        out += body[done:]
        return bytes(out)

    def set(self, index: int, count: int, max_bytes: int) -> int:
        """set_register's result (1, 0 or PROMOTE) and change, on these runs."""
        if count > VAL_MAX_VALUE:
            return PROMOTE
        codes = self.codes
        starts = self.starts
        i = bisect_right(starts, index) - 1
        op = codes[i]
        first = starts[i]
        span = starts[i + 1] - first
        if op & 0x80:  # VAL
            current = ((op >> 2) & 0x1F) + 1
            if current >= count:
                return 0
            if span == 1:
                codes[i] = _val(count, 1)
                self._merge_adjacent(i - 1)
                return 1
        elif op < 0x40 and span == 1:  # ZERO of one register
            codes[i] = _val(count, 1)
            self._merge_adjacent(i - 1)
            return 1

        # Split the opcode into (run before) VAL (run after), as set_register does.
        last = first + span - 1
        new_codes = []
        new_starts = []
        if op & 0x80:
            if index != first:
                new_codes.append(_val(current, index - first))
                new_starts.append(first)
            new_codes.append(_val(count, 1))
            new_starts.append(index)
            if index != last:
                new_codes.append(_val(current, last - index))
                new_starts.append(index + 1)
            delta = len(new_codes) - 1
        else:
            new_size = 1
            if index != first:
                new_size += _append_zero_run(new_codes, new_starts, first, index - first)
            new_codes.append(_val(count, 1))
            new_starts.append(index)
            if index != last:
                new_size += _append_zero_run(new_codes, new_starts, index + 1, last - index)
            delta = new_size - (2 if op & 0x40 else 1)
        if delta > 0 and self.size + delta > max_bytes:
            return PROMOTE
        codes[i:i + 1] = new_codes
        starts[i:i + 1] = new_starts
        self.size += delta
        self._merge_adjacent(i - 1)
        return 1

    def _merge_adjacent(self, prev: int) -> None:
        """_merge_adjacent's scan of five opcodes from prev, on the lists."""
        codes = self.codes
        starts = self.starts
        i = prev if prev >= 0 else 0
        scans = 5
        while i < len(codes) and scans:
            scans -= 1
            op = codes[i]
            if op & 0x80 and i + 1 < len(codes) and codes[i + 1] & 0x80:
                following = codes[i + 1]
                if (op >> 2) & 0x1F == (following >> 2) & 0x1F:
                    length = (op & 3) + (following & 3) + 2
                    if length <= VAL_MAX_LEN:
                        codes[i] = (following & 0xFC) | (length - 1)
                        del codes[i + 1]
                        del starts[i + 1]
                        self.size -= 1
                        continue
            i += 1


def _append_zero_run(codes: list[int], starts: list[int], first: int, length: int) -> int:
    """Appends a zero run's code (an XZERO stands for itself, see Runs); returns its size."""
    starts.append(first)
    if length > ZERO_MAX_LEN:
        codes.append(xzero(length)[0])
        return 2
    codes.append(length - 1)
    return 1
