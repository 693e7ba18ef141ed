"""LZF (minired/features/lzf.py): what compress writes decompresses to the same bytes, in both
builds (the compiled one copies byte by byte in C, the uncompiled one by slices), and input that
is not an LZF stream of the announced size is refused with LzfError, never read past its end.
Byte-for-byte agreement with Redis's own compression is checked by the DUMP tests."""
from __future__ import annotations

import random

import pytest

from minired.features import lzf


def _samples() -> list[bytes]:
    rnd = random.Random(35)
    samples = [
        b"value-123456-" + b"x" * 20,  # a short value as Redis files hold them
        b"a" * 1000,  # one long overlapping reference
        b"ab" * 700,  # references of period 2, over the 264-byte maximum
        bytes(range(256)) * 4,  # literal runs, then far references
    ]
    for size in (21, 64, 300, 5000):
        for alphabet in (b"ab", b"abcdefgh", bytes(range(256))):
            samples.append(bytes(rnd.choice(alphabet) for _ in range(size)))
    return samples


@pytest.mark.parametrize("data", _samples(), ids=lambda data: f"{len(data)}B")
def test_decompress_gives_back_what_compress_wrote(data):
    packed = lzf.compress(data, len(data) + len(data) // 16 + 64)
    assert packed is not None
    assert lzf.decompress(packed, len(data)) == data
    # The reader decompresses in place, from inside the file's bytes.
    framed = b"\xff" * 7 + packed + b"\xee" * 5
    assert lzf.decompress_span(framed, 7, 7 + len(packed), len(data)) == data


def test_input_that_is_not_an_lzf_stream_of_that_size_is_refused():
    rnd = random.Random(7)
    refused = 0
    for data in _samples():
        packed = lzf.compress(data, len(data) + len(data) // 16 + 64)
        for _ in range(40):
            broken = bytearray(packed)
            for _ in range(rnd.randint(1, 3)):
                broken[rnd.randrange(len(broken))] = rnd.randrange(256)
            if rnd.random() < 0.3:
                del broken[rnd.randrange(len(broken)):]
            expected = len(data) + rnd.choice((0, 0, 1, -1))
            try:
                out = lzf.decompress(bytes(broken), expected)
            except lzf.LzfError:
                refused += 1
            else:
                assert len(out) == expected
    assert refused  # (some corruptions still decode: LZF has no checksum, the RDB file has)


@pytest.mark.parametrize("packed, expected", [
    (b"", 1),  # nothing to give the one byte
    (b"\x05abc", 6),  # a literal run past the end
    (b"\x00a\x20\x05", 4),  # a reference before the start
    (b"\x00a\xe0", 10),  # a long reference without its length byte
    (b"\x00a", 2),  # shorter than announced
    (b"\x01ab", 1),  # longer than announced
])
def test_malformed_streams(packed, expected):
    with pytest.raises(lzf.LzfError):
        lzf.decompress(packed, expected)


def test_an_announced_size_the_input_cannot_fill_is_refused_before_any_buffer():
    # 3 input bytes make at most 264 output bytes: a huge announced size is no allocation.
    with pytest.raises(lzf.LzfError):
        lzf.decompress(b"\x00a\xe0", 1 << 62)
    with pytest.raises(lzf.LzfError):
        lzf.decompress_span(b"\x00a", 0, 2, 1 << 40)
