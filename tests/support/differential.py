"""Differential testing: the same commands to a real redis-server and to minired, replies compared.

    def test_lpush(diff):
        diff.check("RPUSH", "l", "a", "b")
        diff.check("LRANGE", "l", 0, -1)
        diff.check("SMEMBERS", "s", unordered=True)

Each test gets a fresh pair of connections on flushed servers (both in RESP2 unless
`diff.hello(3)`). `check` returns the (equal) reply so a test can go on from it.
"""
from __future__ import annotations

from .respclient import Err, Map, Push, RawClient, SetReply


def _canonical(reply, unordered: bool):
    """Make replies comparable where Redis's order is unspecified (sets, hash field order)."""
    if isinstance(reply, (SetReply, Map)) or (unordered and isinstance(reply, list)):
        items = [(_canonical(x, unordered) if not isinstance(x, tuple) else
                  tuple(_canonical(y, unordered) for y in x)) for x in reply]
        return (type(reply).__name__, sorted(items, key=repr))
    if isinstance(reply, list):
        return (type(reply).__name__, [_canonical(x, unordered) for x in reply])
    return reply


class Differential:
    def __init__(self, redis_port: int, minired_port: int) -> None:
        self.redis_port, self.minired_port = redis_port, minired_port
        self.redis = RawClient(redis_port)
        self.minired = RawClient(minired_port)
        self.log: list[tuple] = []

    def close(self) -> None:
        self.redis.close()
        self.minired.close()

    def both(self, *args):
        """Send to both; return (redis_reply, minired_reply) without comparing."""
        self.log.append(args)
        return self.redis.call(*args), self.minired.call(*args)

    def check(self, *args, unordered: bool = False, pairs: bool = False):
        """Send to both and assert the replies are the same (types and error texts included).

        unordered: compare arrays as multisets (SMEMBERS, HKEYS, KEYS ...).
        pairs: a flat array of field/value pairs whose pair order is unspecified (HGETALL in RESP2).
        """
        expected, actual = self.both(*args)
        if pairs and isinstance(expected, list) and isinstance(actual, list):
            expected_cmp = sorted(zip(expected[::2], expected[1::2]), key=repr)
            actual_cmp = sorted(zip(actual[::2], actual[1::2]), key=repr)
        else:
            expected_cmp = _canonical(expected, unordered)
            actual_cmp = _canonical(actual, unordered)
        assert actual_cmp == expected_cmp, (
            f"reply differs for {args!r}\n  redis:   {expected!r}\n  minired: {actual!r}\n"
            f"  history: {self.log[-15:]!r}")
        return expected

    def check_error(self, *args):
        """Both must answer with the same error."""
        reply = self.check(*args)
        assert isinstance(reply, Err), f"expected an error for {args!r}, got {reply!r}"
        return reply

    def hello(self, protocol: int) -> None:
        self.both("HELLO", protocol)

    def read_both(self):
        """Read one more reply (a push, a late blocked reply) from each side and compare."""
        expected, actual = self.redis.read(), self.minired.read()
        assert _canonical(actual, False) == _canonical(expected, False), (
            f"pushed reply differs\n  redis:   {expected!r}\n  minired: {actual!r}")
        return expected


__all__ = ["Differential", "Err", "Map", "Push", "SetReply"]
