"""Run generated command sequences on real Redis and on minired in lockstep, compare the
replies, and shrink a mismatching sequence to the fewest commands that still show it.

A sequence is SETUP (a few keys of every type) followed by generated commands; each command goes
to Redis, then to minired, and the first reply pair that differs after normalisation (sorting
unordered replies, reducing random and clock-dependent replies to their shape) ends the run.
"""
from __future__ import annotations

import random
import socket
from dataclasses import dataclass

from .grammar import CommandGenerator, CommandGrammar, exclusion_reason
from .respclient import Err, Map, NullArray, RawClient
from .shrinking import drop_while_same

SETUP: list[list[str]] = [
    ["SET", "str", "hello"],
    ["SET", "int", "10"],
    ["RPUSH", "list", "a", "b", "c", "a", "1"],
    ["HSET", "hash", "f1", "1", "f2", "v2", "a", "1.5"],
    ["SADD", "set", "a", "b", "c", "1"],
    ["SADD", "set2", "b", "c", "d"],
    ["SADD", "intset", "1", "2", "3"],
    ["ZADD", "zset", "1", "a", "2", "b", "3", "c"],
    ["ZADD", "zset2", "2", "b", "3.5", "d", "-inf", "e"],
    ["ZADD", "lexzset", "0", "a", "0", "b", "0", "c", "0", "d"],  # for lex ranges
    ["XADD", "stream", "1-1", "f", "v"],
    ["XADD", "stream", "2-1", "f2", "v2"],
    ["XADD", "stream", "3-1", "f", "v3"],
    ["XGROUP", "CREATE", "stream", "g1", "0"],
    ["XREADGROUP", "GROUP", "g1", "c1", "COUNT", "1", "STREAMS", "stream", ">"],
]

# Replies whose element order Redis leaves unspecified.
UNORDERED = {"smembers", "sinter", "sunion", "sdiff", "hkeys", "hvals", "keys",
             "pubsub|channels", "pubsub|shardchannels"}
# Flat field/value replies whose pair order is unspecified.
UNORDERED_PAIRS = {"hgetall", "config|get"}
# Random picks: compare errors exactly, otherwise only the reply's type and length.
RANDOM_REPLIES = {"spop", "srandmember", "hrandfield", "zrandmember"}
# Random removals leave the two servers with different members: the key is deleted on both.
RANDOM_WRITES = {"spop"}
# Clock-relative: compare as -2, -1 or "positive" (both servers read their own clock).
CLOCK_CLASSES = {"ttl", "pttl", "expiretime", "pexpiretime"}
# Lex ranges are only defined on sorted sets whose members all have the same score: on others
# Redis's answer depends on its skiplist's random levels. Value: argv index of the source key.
LEX_COMMANDS = {"zrangebylex": 1, "zrevrangebylex": 1, "zlexcount": 1, "zremrangebylex": 1,
                "zrange": 1, "zrangestore": 2}
SCANS = {"scan": False, "sscan": False, "hscan": True, "zscan": True}  # -> pairs?
# Replies carrying idle times and delivery times, in milliseconds since an event.
IDLE_FIELDS = {b"idle", b"seen-time", b"active-time", b"inactive"}


def command_name(argv: list[str], grammars: dict[str, CommandGrammar]) -> str:
    """The grammar name of an argv: "object|encoding" for OBJECT ENCODING k."""
    first = argv[0].lower()
    if len(argv) > 1 and f"{first}|{argv[1].lower()}" in grammars:
        return f"{first}|{argv[1].lower()}"
    return first


def _sorted(items) -> list:
    return sorted(items, key=repr)


def _pairs_sorted(flat: list) -> list:
    return _sorted(zip(flat[::2], flat[1::2]))


def _shape(reply):
    if isinstance(reply, list):
        return ("array", len(reply))
    return (type(reply).__name__,)


def _clock_class(reply):
    if isinstance(reply, int) and reply > 0:
        return "positive"
    return reply


def _without_idle_times(reply):
    """Idle and delivery times (ms since an event) differ between two servers by nature."""
    if isinstance(reply, Map):  # RESP3: (field, value) pairs
        return Map([(key, "<ms>" if key in IDLE_FIELDS and isinstance(value, int)
                     else "<timestamp>" if isinstance(value, int) and value > 10**12
                     else _without_idle_times(value)) for key, value in reply])
    if isinstance(reply, list):
        out = []
        previous = None
        for item in reply:
            if isinstance(previous, bytes) and previous in IDLE_FIELDS and isinstance(item, int):
                out.append("<ms>")
            elif isinstance(item, int) and item > 10**12:
                out.append("<timestamp>")  # a delivery time in XINFO STREAM FULL
            else:
                out.append(_without_idle_times(item))
            previous = item
        return out
    return reply


def normalise(name: str, argv: list[str], reply):
    """The part of a reply that real Redis and minired must agree on."""
    if isinstance(reply, Err):
        return reply
    if name in RANDOM_REPLIES:
        return _shape(reply)
    if name in CLOCK_CLASSES:
        return _clock_class(reply)
    if name in UNORDERED and isinstance(reply, list):
        return _sorted(reply)
    if name in UNORDERED_PAIRS and isinstance(reply, Map):
        return sorted(reply, key=repr)  # RESP3's map of the same pairs
    if name in UNORDERED_PAIRS and isinstance(reply, list):
        return _pairs_sorted(reply)
    if name in ("sort", "sort_ro") and "BY" in (a.upper() for a in argv[2:]):
        # Elements whose BY weights tie come out in the source's order, a set's is unspecified.
        limited = "LIMIT" in (a.upper() for a in argv[2:])
        return _shape(reply) if limited else _sorted(reply) if isinstance(reply, list) else reply
    if name in SCANS and isinstance(reply, list) and len(reply) == 2:
        cursor, items = reply
        if not isinstance(items, list):
            return reply
        return (cursor, _pairs_sorted(items) if SCANS[name] else _sorted(items))
    if name == "xpending" and isinstance(reply, list) and len(argv) > 3:
        # The extended form: [id, consumer, idle ms, deliveries] per entry.
        return [[e[0], e[1], "<ms>", e[3]] if isinstance(e, list) and len(e) == 4 else e
                for e in reply]
    if name.startswith("xinfo|"):
        return _without_idle_times(reply)
    return reply


def comparable_pair(name: str, argv: list[str], expected, actual) -> tuple:
    """Both replies reduced to what the servers must agree on."""
    expected, actual = normalise(name, argv, expected), normalise(name, argv, actual)
    if name in SCANS and isinstance(expected, tuple) and isinstance(actual, tuple):
        cursor_given = argv[1] if name == "scan" else argv[2]
        if expected[0] != b"0" or actual[0] != b"0" or cursor_given != "0":
            # How an unfinished scan splits the elements between calls is unspecified.
            return "partial scan", "partial scan"
    return expected, actual


def _kind(reply) -> str:
    if isinstance(reply, Err):
        return "error " + reply.message.split()[0]
    if reply is None:
        return "nil"
    if reply is NullArray:
        return "null-array"
    return type(reply).__name__


def difference_signature(name: str, expected, actual) -> str:
    """A short description of how two replies differ, for deduplicating findings. Errors are
    told apart by their code only: one misplaced check shows many different messages."""
    redis_kind, mini_kind = _kind(expected), _kind(actual)
    if redis_kind == mini_kind:
        return f"{name}: {redis_kind} both, different value"
    return f"{name}: redis {redis_kind} / minired {mini_kind}"


@dataclass
class Mismatch:
    sequence: list[list[str]]  # every command sent, setup included; the last one differed
    name: str
    redis_reply: object
    minired_reply: object
    signature: str

    def describe(self) -> str:
        lines = [f"mismatch {self.signature}"]
        lines += ["  " + " ".join(_quote(a) for a in argv) for argv in self.sequence]
        lines.append(f"  redis:   {self.redis_reply!r}")
        lines.append(f"  minired: {self.minired_reply!r}")
        return "\n".join(lines)


def _quote(arg: str) -> str:
    return repr(arg) if arg == "" or any(c.isspace() for c in arg) else arg


class MiniredFailure(Exception):
    """minired closed the connection or did not answer in time: itself a finding."""


class RedisFailure(Exception):
    """Real Redis did not answer: the generator asked for something it should not have."""


class OutOfStep(Exception):
    """A connection's replies no longer line up with its commands (a command answered twice,
    or not at all): every comparison after it would be meaningless."""


class ServerPair:
    """One connection to each server, both with socket timeouts so nothing can hang."""

    def __init__(self, redis_port: int, minired_port: int, timeout: float = 5.0,
                 protocol: int = 2) -> None:
        self.redis_port, self.minired_port, self.timeout = redis_port, minired_port, timeout
        self.protocol = protocol  # 3: both connections send HELLO 3 first (replies as RESP3)
        self.redis = RawClient(redis_port, timeout=timeout)
        self.minired = RawClient(minired_port, timeout=timeout)
        self._hello()

    def _hello(self) -> None:
        if self.protocol == 3:
            self.redis.call("HELLO", "3")
            self.minired.call("HELLO", "3")

    def close(self) -> None:
        self.redis.close()
        self.minired.close()

    def reconnect(self) -> None:
        for client in (self.redis, self.minired):
            try:
                client.close()
            except OSError:
                pass
        self.redis = RawClient(self.redis_port, timeout=self.timeout)
        self.minired = RawClient(self.minired_port, timeout=self.timeout)
        self._hello()

    def call_both(self, argv: list[str]):
        try:
            expected = self.redis.call(*argv)
        except (OSError, ConnectionError, socket.timeout) as exc:
            raise RedisFailure(f"{argv!r}: {exc!r}") from exc
        try:
            actual = self.minired.call(*argv)
        except (OSError, ConnectionError, socket.timeout) as exc:
            raise MiniredFailure(f"{exc!r}") from exc
        return expected, actual

    def flush(self) -> None:
        """FLUSHALL both, checking first that each connection's replies are still in step."""
        self.check_in_step()
        self.call_both(["FLUSHALL"])

    def check_in_step(self) -> None:
        expected, actual = self.call_both(["ECHO", "in-step"])
        if expected != b"in-step" or actual != b"in-step":
            raise OutOfStep(f"ECHO in-step answered {expected!r} by redis, {actual!r} by minired")


def run_sequence(pair: ServerPair, commands: list[list[str]],
                 grammars: dict[str, CommandGrammar], watch=None) -> Mismatch | None:
    """FLUSHALL both, run the commands in lockstep, return the first mismatch.

    `watch` (a tests/support/notify_diff.EventWatch) also compares what else each command
    did, once its replies agree: `watch.compare(name, sent, redis_reply, minired_reply)`
    answers a Mismatch or None, and
    `watch.discard()` drops the effects of the harness's own commands (FLUSHALL, the probes
    and clean-ups below), which are not under test."""
    pair.flush()
    if watch is not None:
        watch.discard()
    sent: list[list[str]] = []
    for argv in commands:
        name = command_name(argv, grammars)
        if name in LEX_COMMANDS:
            defined = _lex_range_defined(pair, name, argv)
            if watch is not None:
                watch.discard()  # the probe's ZRANGE (a key miss, if the key is missing)
            if not defined:
                continue  # sent to neither server
        sent.append(argv)
        try:
            expected, actual = pair.call_both(argv)
        except MiniredFailure as exc:
            return Mismatch(list(sent), name, "(answered)", f"no answer: {exc}",
                            f"{name}: minired died or timed out")
        comparable_expected, comparable_actual = comparable_pair(name, argv, expected, actual)
        if comparable_expected != comparable_actual:
            return Mismatch(list(sent), name, expected, actual,
                            difference_signature(name, expected, actual))
        if watch is not None:
            mismatch = watch.compare(name, sent, expected, actual)
            if mismatch is not None:
                return mismatch
        if name in RANDOM_WRITES and len(argv) > 1:
            pair.call_both(["DEL", argv[1]])
        if name == "sort" and "BY" in argv and "STORE" in argv[:-1]:
            pair.call_both(["DEL", argv[argv.index("STORE") + 1]])  # stored in tie order
        if watch is not None:
            watch.discard()
    return None


def _lex_range_defined(pair: ServerPair, name: str, argv: list[str]) -> bool:
    if name in ("zrange", "zrangestore") and "BYLEX" not in (a.upper() for a in argv):
        return True
    position = LEX_COMMANDS[name]
    if len(argv) <= position:
        return True
    expected, actual = pair.call_both(["ZRANGE", argv[position], "0", "-1", "WITHSCORES"])
    if not isinstance(expected, list) or expected != actual:
        return True  # not a sorted set (an error to compare), or already a mismatch to show
    # RESP2 answers member, score, member, ...; RESP3 [member, score] pairs.
    pairs = expected and isinstance(expected[0], list)
    scores = [pair[1] for pair in expected] if pairs else expected[1::2]
    return len({repr(score) for score in scores}) <= 1


def shrink(pair: ServerPair, mismatch: Mismatch,
           grammars: dict[str, CommandGrammar], watch=None) -> Mismatch:
    """Drop commands (setup ones too, not the last) while the same mismatch still shows."""
    return drop_while_same(
        mismatch, lambda m: len(m.sequence) - 1,
        lambda m, i: m.sequence[:i] + m.sequence[i + 1:],
        lambda sequence: _rerun(pair, sequence, grammars, watch),
        lambda result: result.signature == mismatch.signature)


def _rerun(pair: ServerPair, commands, grammars, watch=None) -> Mismatch | None:
    try:
        return run_sequence(pair, commands, grammars, watch)
    except RedisFailure:
        pair.reconnect()
        return None


def generate_sequence(rng: random.Random, grammars: dict[str, CommandGrammar],
                      names: list[str], length: int,
                      inner_names: list[str] | None = None) -> list[list[str]]:
    """SETUP, then `length` commands drawn from `names`; COMMAND GETKEYS asks about commands
    from `inner_names` (those minired implements, compared or not)."""
    generator = CommandGenerator(rng, grammars, inner_names or names)
    return SETUP + [generator.generate(grammars[rng.choice(names)]) for _ in range(length)]


def comparable_commands(grammars: dict[str, CommandGrammar],
                        implemented: set[str]) -> tuple[list[str], list[str], list[str]]:
    """(compared, excluded, unimplemented) grammar names. `implemented` holds minired's
    command names, subcommands as "parent|sub"."""
    compared, excluded, unimplemented = [], [], []
    for name in sorted(grammars):
        if exclusion_reason(name):
            excluded.append(name)
        elif name not in implemented:
            unimplemented.append(name)
        else:
            compared.append(name)
    return compared, excluded, unimplemented


def minired_commands(client: RawClient) -> set[str]:
    """Command names minired implements, from its COMMAND reply (subcommands as a|b)."""
    names: set[str] = set()
    for entry in client.call("COMMAND"):
        names.add(entry[0].decode().lower())
        if len(entry) > 9:
            for sub in entry[9]:
                names.add(sub[0].decode().lower())
    return names
