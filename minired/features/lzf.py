"""LZF, the compression of RDB strings: a port of the liblzf 3.6 that Redis builds (lzf_c.c with
Redis's lzfP.h: HLOG 16, VERY_FAST), so a compressed string is byte for byte the one Redis
writes and DUMP payloads and RDB files compare equal with Redis's.

The compiled build (setup.py) types this module's loops in C (lzf.pxd): `buf` is then a
pointer into the input, read without a Python object per byte; uncompiled it is the same bytes.
"""
from __future__ import annotations

_HSIZE = 1 << 16
_MAX_LIT = 1 << 5
_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)
_MASK32 = 0xFFFFFFFF


def _idx(h: int) -> int:
    # VERY_FAST's IDX on a 32-bit unsigned hval: ((h >> (3*8 - HLOG)) - h*5) & (HSIZE - 1)
    return ((h >> 8) - h * 5) & (_HSIZE - 1)


def compress(data: bytes, out_len: int) -> bytes | None:
    """lzf_compress into at most `out_len` bytes; None where it does not fit (as 0 in C)."""
    in_len = len(data)
    if not in_len or not out_len:
        return None
    # Positions stand for pointers; -1 is a slot never set (Redis's table is uninitialised
    # stack memory, which in practice never passes the `ref > in_data` test either).
    htab: dict[int, int] = {}
    out = bytearray(b"\x00")  # the first literal run's length byte, filled in when it ends
    lit = 0
    run_at = 0  # where the current run's length byte is
    ip = 0
    in_end = in_len
    buf = data
    hval = (buf[0] << 8) | buf[1] if in_len > 1 else 0
    while ip < in_end - 2:
        hval = ((hval << 8) | buf[ip + 2]) & _MASK32
        slot = _idx(hval)
        ref = htab.get(slot, -1)
        htab[slot] = ip
        off = ip - ref - 1
        if (ref > 0 and off < _MAX_OFF and buf[ref] == buf[ip]
                and buf[ref + 1] == buf[ip + 1] and buf[ref + 2] == buf[ip + 2]):
            length = 2
            maxlen = in_end - ip - length
            if maxlen > _MAX_REF:
                maxlen = _MAX_REF
            if lit:
                out[run_at] = lit - 1  # stop run
            else:
                del out[run_at]  # undo an empty run
            if len(out) + 3 + 1 >= out_len:
                return None
            # lzf_c.c compares 16 bytes unrolled, without the maxlen check, when maxlen > 16:
            # a match may then run past maxlen, and Redis's output has it so.
            matched = True
            if maxlen > 16:
                for _ in range(16):
                    length += 1
                    if buf[ref + length] != buf[ip + length]:
                        matched = False
                        break
            if matched:
                while True:
                    length += 1
                    if length >= maxlen or buf[ref + length] != buf[ip + length]:
                        break
            length -= 2  # now #octets - 1
            ip += 1
            if length < 7:
                out.append((off >> 8) + (length << 5))
            else:
                out.append((off >> 8) + (7 << 5))
                out.append(length - 7)
            out.append(off & 0xFF)
            lit = 0
            run_at = len(out)
            out.append(0)  # start run
            ip += length + 1
            if ip >= in_end - 2:
                break
            ip -= 2
            hval = (buf[ip] << 8) | buf[ip + 1]
            hval = ((hval << 8) | buf[ip + 2]) & _MASK32
            htab[_idx(hval)] = ip
            ip += 1
            hval = ((hval << 8) | buf[ip + 2]) & _MASK32
            htab[_idx(hval)] = ip
            ip += 1
        else:
            if len(out) >= out_len:
                return None
            lit += 1
            out.append(buf[ip])
            ip += 1
            if lit == _MAX_LIT:
                out[run_at] = lit - 1
                lit = 0
                run_at = len(out)
                out.append(0)
    if len(out) + 3 > out_len:
        return None
    while ip < in_end:
        lit += 1
        out.append(buf[ip])
        ip += 1
        if lit == _MAX_LIT:
            out[run_at] = lit - 1
            lit = 0
            run_at = len(out)
            out.append(0)
    if lit:
        out[run_at] = lit - 1
    else:
        del out[run_at]
    return bytes(out)


class LzfError(ValueError):
    """The bytes are not an LZF stream of the announced length."""


# The most one byte of LZF input can stand for: a 3-byte back reference copies 264 bytes.
_MAX_RATIO = 88


def decompress(data: bytes, expected: int) -> bytes:
    if expected > _MAX_RATIO * len(data):  # (no buffer of a size the data cannot fill)
        raise LzfError
    return decompress_span(data, 0, len(data), expected)


# Whether this module runs compiled (setup.py): its byte loops are then C loops, faster than
# slicing for the short runs and references LZF is made of; uncompiled, slices are faster.
_COMPILED = not __file__.endswith((".py", ".pyc"))


def decompress_span(data: bytes, start: int, end: int, expected: int) -> bytes:
    """lzf_decompress of data[start:end] (the reader's strings decompress in place, unsliced)
    into exactly `expected` bytes; LzfError if it is not that."""
    if start < 0 or end > len(data) or expected < 0 or expected > _MAX_RATIO * (end - start):
        raise LzfError
    if not expected:
        # lzf_decompress into no room stops at once and returns 0, whatever the input: the
        # length Redis asked for, so it takes an empty string.
        return b""
    out = bytearray(expected)
    obuf = out  # compiled, a pointer into out (lzf.pxd)
    buf = data  # compiled, a pointer into data
    i, o = start, 0
    while i < end:
        ctrl = buf[i]
        i += 1
        if ctrl < 32:
            run = ctrl + 1
            if i + run > end or o + run > expected:
                raise LzfError
            if _COMPILED:
                for k in range(run):
                    obuf[o + k] = buf[i + k]
            else:
                out[o:o + run] = data[i:i + run]
            i += run
            o += run
            continue
        length = ctrl >> 5
        if length == 7:
            if i >= end:
                raise LzfError
            length += buf[i]
            i += 1
        if i >= end:
            raise LzfError
        ref = o - ((ctrl & 0x1F) << 8) - buf[i] - 1
        i += 1
        length += 2
        if ref < 0 or o + length > expected:
            raise LzfError
        if _COMPILED:  # byte by byte, as lzf_d.c: an overlapping copy repeats what it wrote
            for k in range(length):
                obuf[o + k] = obuf[ref + k]
        elif ref + length <= o:
            out[o:o + length] = out[ref:ref + length]
        else:  # the copy overlaps what it writes: the bytes from ref on, repeated
            pattern = out[ref:o]
            out[o:o + length] = (pattern * (length // len(pattern) + 1))[:length]
        o += length
    if o != expected:
        raise LzfError
    if _COMPILED:  # the C buffer's bytes straight into a new bytes object: no second call
        return obuf[:expected]
    return bytes(out)
