"""The list type's packed representation (minired/data/quicklist.py): every operation against
collections.deque as the model, with nodes small enough that each step crosses node edges, and
lists long enough to be packed against real Redis."""
from __future__ import annotations

import random
import tracemalloc
from collections import deque

import pytest

from minired.data import quicklist
from minired.data.quicklist import QuickList


@pytest.fixture(params=[(4, 1 << 16), (4, 5000), (128, 1 << 16)], ids=["small", "plain", "real"])
def sizes(request, monkeypatch):
    node, limit = request.param
    monkeypatch.setattr(quicklist, "NODE", node)
    monkeypatch.setattr(quicklist, "PACK_LIMIT", limit)
    return node


@pytest.mark.parametrize("seed", range(8))
def test_against_deque(sizes, seed):
    rnd = random.Random(seed)
    q, d = QuickList(), deque()
    for _ in range(300):
        op = rnd.randrange(12)
        x = b"%d" % rnd.randrange(1000) * rnd.choice([1, 1, 1, 3000])
        if op == 0:
            q.append(x)
            d.append(x)
        elif op == 1:
            q.appendleft(x)
            d.appendleft(x)
        elif op == 2 and d:
            assert q.pop() == d.pop()
        elif op == 3 and d:
            assert q.popleft() == d.popleft()
        elif op == 4 and d:
            i = rnd.randrange(-len(d), len(d))
            assert q[i] == d[i]
        elif op == 5 and d:
            i = rnd.randrange(-len(d), len(d))
            q[i] = d[i] = x
        elif op == 6:
            i = rnd.randrange(0, len(d) + 1)
            q.insert(i, x)
            d.insert(i, x)
        elif op == 7:
            a = rnd.randrange(0, len(d) + 1)
            b = rnd.randrange(a, len(d) + 1)
            assert q.slice_list(a, b) == list(d)[a:b]
        elif op == 8:
            items = [b"%d" % rnd.randrange(9) for _ in range(rnd.randrange(3 * sizes))]
            if rnd.random() < .5:
                q.extend(items)
                d.extend(items)
            else:
                q.extendleft(items)
                d.extendleft(items)
        elif op == 9 and d:
            y = rnd.choice(list(d))
            assert q.index(y) == d.index(y)
        elif op == 11:  # LREM, the model its old way: every element walked, the list rebuilt
            y = rnd.choice([*d, b"0", b""]) if d else b"0"
            count = rnd.choice([0, 1, 2, -1, -2, 5, -5, -(2**63)])
            limit = abs(count) or len(d)
            kept, removed = [], 0
            for element in (reversed(d) if count < 0 else d):
                if removed < limit and element == y:
                    removed += 1
                else:
                    kept.append(element)
            d = deque(reversed(kept) if count < 0 else kept)
            assert q.remove_equal(y, count) == removed
        elif op == 10:
            copy = q.copy()
            q.append(b"only in the original")
            assert list(copy) == list(d)
            q.pop()
        assert len(q) == len(d)
        assert list(q) == list(d)
        assert list(reversed(q)) == list(reversed(d))
    while d:
        assert q.popleft() == d.popleft()
    with pytest.raises(IndexError):
        q.pop()
    with pytest.raises(IndexError):
        q.popleft()


def test_packed_elements_take_little_memory():
    """100,000 elements of 16 bytes take well under half a deque's per-element cost (~64 B)."""
    items = [b"%016d" % i for i in range(100_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = QuickList(items)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(value) == len(items)
    assert held / len(items) < 24


def test_long_lists_against_redis(diff):
    """Lists of many nodes: reads and edits in the middle, near each end, and across nodes."""
    diff.check("RPUSH", "l", *[f"e{i}" for i in range(1000)])
    diff.check("LPUSH", "l", *[f"h{i}" for i in range(700)])
    for start, end in [(0, -1), (0, 99), (126, 260), (-300, -1), (800, 1300), (1650, 1699),
                       (-1, -1), (1699, 5000), (500, 400)]:
        diff.check("LRANGE", "l", start, end)
    for index in (0, 1, 127, 128, 699, 700, 900, 1699, -1, -128, -900, 1700):
        diff.check("LINDEX", "l", index)
    for index in (5, 300, 1000, -5, -400):
        diff.check("LSET", "l", index, f"set{index}")
    diff.check("LINSERT", "l", "BEFORE", "e500", "before500")
    diff.check("LINSERT", "l", "AFTER", "h3", "afterh3")
    diff.check("LPOS", "l", "e600")
    diff.check("LREM", "l", 0, "set300")
    diff.check("LRANGE", "l", 0, -1)
    diff.check("LPOP", "l", 300)
    diff.check("RPOP", "l", 300)
    diff.check("LMOVE", "l", "m", "LEFT", "RIGHT")
    diff.check("LTRIM", "l", 100, 900)
    diff.check("LRANGE", "l", 0, -1)
    diff.check("LTRIM", "l", 10, 20)
    diff.check("LRANGE", "l", 0, -1)
    diff.check("COPY", "l", "c")
    diff.check("RPUSH", "c", "more")
    diff.check("LRANGE", "l", 0, -1)
    diff.check("LRANGE", "c", 0, -1)
    diff.check("OBJECT", "ENCODING", "l")
