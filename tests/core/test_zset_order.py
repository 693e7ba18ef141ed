"""The sorted set's order on both sides of SMALL_ORDER_LIMIT: a SmallOrder list up to it, a
SortedList past it, always the members' (score, member) in sorted order."""
import random

from sortedcontainers import SortedList

from minired.data.zset import SMALL_ORDER_LIMIT, SmallOrder, ZSet


def _check(zset: ZSet) -> None:
    assert list(zset.order) == sorted((score, member) for member, score in zset.scores.items())


def test_the_order_stays_sorted_through_every_change():
    rng = random.Random(7)
    zset = ZSet()
    members = [b"m%d" % i for i in range(SMALL_ORDER_LIMIT + 300)]
    for step in range(6000):
        action = rng.random()
        member = rng.choice(members)
        if action < 0.6:
            zset.add(member, float(rng.randint(-20, 20)))
        elif action < 0.85:
            zset.remove(member)
        elif action < 0.95:
            start = rng.randrange(len(zset) + 1)
            zset.delete_span(start, min(len(zset), start + rng.randint(0, 3)))
        else:
            zset.pop(rng.randint(1, 3), rng.random() < 0.5)
        if step % 97 == 0:
            _check(zset)
    _check(zset)


def test_the_order_becomes_a_sorted_list_past_the_limit():
    zset = ZSet()
    for i in range(SMALL_ORDER_LIMIT):
        zset.add(b"m%d" % i, float(i % 7))
    assert type(zset.order) is SmallOrder
    zset.add(b"one-more", 3.0)
    assert isinstance(zset.order, SortedList)
    _check(zset)
    assert type(zset.copy().order) is SortedList
    smaller = ZSet.from_scores({b"a": 1.0, b"b": 0.5})
    assert type(smaller.order) is SmallOrder
    assert type(smaller.copy().order) is SmallOrder
    _check(smaller)


def test_a_small_order_answers_the_sorted_list_methods_its_readers_use():
    order = SmallOrder([(1.0, b"a"), (2.0, b"b"), (2.0, b"c"), (3.0, b"d")])
    big = SortedList(order)
    for probe in [(2.0,), (2.0, b"b"), (2.0, b"bb"), (0.0,), (9.0,)]:
        assert order.bisect_left(probe) == big.bisect_left(probe)
        assert order.bisect_right(probe) == big.bisect_right(probe)
    assert list(order.islice(1)) == list(big.islice(1))
    assert list(order.islice(1, 3)) == list(big.islice(1, 3))
