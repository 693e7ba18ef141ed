"""Integers 0..9999 as text, one bytes object each, shared by every loaded value that holds one
(as Redis shares OBJ_SHARED_INTEGERS): a snapshot's small integers cost a reference, not an
object, per element. Made on first use: most servers never load a snapshot."""
from __future__ import annotations

COUNT = 10000  # OBJ_SHARED_INTEGERS

TEXTS: list[bytes] = []            # TEXTS[i] is b"%d" % i once filled
BY_TEXT: dict[bytes, bytes] = {}   # each of them, keyed by itself


def fill() -> None:
    if not TEXTS:
        TEXTS.extend([b"%d" % i for i in range(COUNT)])
        BY_TEXT.update(zip(TEXTS, TEXTS))
