"""Runs (PFADD of many elements, PFMERGE into a sparse key) against set_register's byte-level
updates, which the differential tests hold to Redis's bytes: both must make the same value
from the same start, including starts that Redis never makes but accepts (non-canonical
opcodes), every promotion threshold, and values that only pass the header checks."""
from __future__ import annotations

import random

import pytest

from minired.data import hyperloglog as hll
from minired.data import hyperloglog_sparse as sparse
from minired.data.hyperloglog_sparse import HEADER_SIZE, REGISTERS


def _one_by_one(value: bytes, elements: list[bytes], max_bytes: int) -> bytes | None:
    """PFADD's result as single-element PFADDs, each of which takes the byte-level path."""
    changed = None
    for element in elements:
        new_value, _ = hll.add(value if changed is None else changed, [element], max_bytes)
        if new_value is not None:
            changed = new_value
    return changed


def _random_opcodes(rng: random.Random) -> bytes:
    """A well-formed sparse body that Redis would read but may never write: XZEROs of short
    runs, ZEROs side by side, unmerged VALs of equal value."""
    body = bytearray()
    left = REGISTERS
    while left:
        kind = rng.random()
        if kind < 0.3:
            length = min(left, rng.randint(1, 16384))
            body += sparse.xzero(length)
        elif kind < 0.7:
            length = min(left, rng.randint(1, 64))
            body.append(length - 1)
        else:
            length = min(left, rng.randint(1, 4))
            # Mostly the low values elements set, so that updates meet equal neighbours.
            value = rng.choice((1, 1, 2, 2, 3, rng.randint(1, 32)))
            body.append(0x80 | ((value - 1) << 2) | (length - 1))
        left -= length
    return bytes(body)


def _start_values(rng: random.Random) -> list[bytes]:
    header = hll.new_hll()[:HEADER_SIZE]
    grown, _ = hll.add(hll.new_hll(), [b"%d" % i for i in range(300)], 3000)
    return [hll.new_hll(), grown] + [header + _random_opcodes(rng) for _ in range(6)]


@pytest.mark.parametrize("seed", range(12))
def test_pfadd_of_many_elements_makes_the_bytes_of_one_at_a_time(seed):
    rng = random.Random(seed)
    for start in _start_values(rng):
        elements = [b"%x" % rng.getrandbits(40) for _ in range(rng.randrange(2, 1500))]
        all_sparse = _one_by_one(start, elements, 1 << 20)
        # The sizes at which the last update just fits, or just does not.
        edges = (len(all_sparse) - 1, len(all_sparse)) if all_sparse else ()
        for max_bytes in (0, len(start), len(start) + 40, 3000, *edges):
            expected = _one_by_one(start, elements, max_bytes)
            got, updated = hll.add(start, elements, max_bytes)
            assert got == expected
            assert bool(updated) == (expected is not None)


@pytest.mark.parametrize("seed", range(6))
def test_pfmerge_into_a_sparse_key_makes_the_bytes_of_the_byte_level_updates(seed, monkeypatch):
    rng = random.Random(seed)
    for start in _start_values(rng):
        source, _ = hll.add(hll.new_hll(), [b"s%d" % rng.getrandbits(32) for _ in range(400)],
                            20_000)
        raw = hll.max_registers(hll.to_raw(start), hll.to_raw(source))
        for max_bytes in (len(start), 3000, 20_000):
            got = hll.merge_into(start, raw, False, max_bytes)
            with monkeypatch.context() as patched:
                patched.setattr(sparse.Runs, "decode", classmethod(lambda cls, value: None))
                expected = hll.merge_into(start, raw, False, max_bytes)
            assert got == expected


def test_values_that_only_pass_the_header_checks_keep_the_byte_level_reading():
    body = _random_opcodes(random.Random(7))
    header = hll.new_hll()[:HEADER_SIZE]
    too_long = header + body + b"\x00"           # covers one register more
    too_short = header + body[:-1]                # a register left uncovered (or a cut XZERO)
    cut_xzero = header + b"\x7f"                  # an XZERO whose second byte is missing
    for value in (too_long, too_short, cut_xzero):
        assert sparse.Runs.decode(value) is None
    assert sparse.Runs.decode(header + body).encode(header) == header + body
