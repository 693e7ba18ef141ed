"""Blocking commands under the differential fuzzer: a waiter blocks, random writes follow,
and what the waiter is answered, and what the keys hold at the end, are compared between
real Redis and minired (bench/grammar_fuzz.py --blocking, tests/core/test_blocking_fuzz_diff.py).

A case is a few setup commands, one to three blocking commands (each on a connection of its
own, sent once the previous one blocked or answered, with an LRANGE pipelined behind it), and
writes on another connection. Every step waits for the servers, never for a clock: a blocking
command counts as blocked once INFO clients shows one more blocked client (it answered at once
if its reply is readable instead). Waits are forever (timeout 0) unless the case is about a
timeout; then their timeouts are short, each waiter's reply (nil, or what it found at once)
is read before the next is sent, and the writes come after. Waiters still blocked after the
writes are ended by CLIENT UNBLOCK, so their replies are read after the sequence, in order.

Stream IDs are explicit (XADD with `*` would take each server's clock), and CLIENT UNBLOCK
names a waiter by `$ID0`/`$ID1`, replaced by that waiter's CLIENT ID on each server.
"""
from __future__ import annotations

import random
import select
import socket
import time
from dataclasses import dataclass, field

from .grammar_diff import _without_idle_times
from .respclient import Err, Map, RawClient, encode_command
from .shrinking import drop_while_same

KEYS = ["a", "b", "c"]
GROUPS = ["g1", "g2"]
MEMBERS = ["x", "y", "z", "w"]
FOREVER = {"seconds": "0", "ms": "0"}
SHORT = {"seconds": "0.01", "ms": "10"}
DEADLINE_S = 10.0


@dataclass
class Case:
    setup: list[list[str]]
    waits: list[tuple[int, list[str]]]  # (database, blocking argv) per waiter
    writes: list[list[str]]
    timeout: bool = False  # the waits' timeouts are short: each is read before the next

    def lines(self) -> list[str]:
        out = ["  " + " ".join(_quote(a) for a in argv) for argv in self.setup]
        for n, (db, argv) in enumerate(self.waits):
            where = f" (db {db})" if db else ""
            out.append(f"  [waiter {n}{where}] " + " ".join(_quote(a) for a in argv))
        out += ["  " + " ".join(_quote(a) for a in argv) for argv in self.writes]
        return out


def _quote(arg: str) -> str:
    return repr(arg) if arg == "" or any(c.isspace() for c in arg) else arg


@dataclass
class BlockingMismatch:
    case: Case
    what: str  # the step that differed
    redis_reply: object
    minired_reply: object
    signature: str
    sequence: list = field(default_factory=list)  # for grammar_fuzz's markdown

    def describe(self) -> str:
        lines = [f"mismatch {self.signature}", *self.case.lines(), f"  differs at: {self.what}",
                 f"  redis:   {self.redis_reply!r}", f"  minired: {self.minired_reply!r}"]
        return "\n".join(lines)


class WaiterFailure(Exception):
    """A server neither blocked a waiter nor answered it, or a connection broke: the servers'
    side of it is itself a finding."""


# ---------------------------------------------------------------------------------------------
# Generation


class Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.next_ms = 1  # stream IDs only grow: <ms>-<seq>
        # The writes that can serve the waiters ("push", "zadd", "xadd"), drawn more often.
        self.serving: list[str] = []
        self.swaps = False  # SWAPDB among the writes (generate_case)

    def key(self) -> str:
        return self.rng.choice(KEYS)

    def members(self, low: int = 1, high: int = 3) -> list[str]:
        return [self.rng.choice(MEMBERS) for _ in range(self.rng.randint(low, high))]

    def stream_id(self) -> str:
        roll = self.rng.random()
        if roll < 0.1:
            return f"{self.next_ms}-*"  # auto sequence: still deterministic
        self.next_ms += self.rng.choice([0, 1, 1, 2])
        if roll < 0.15:
            return "0-1"  # smaller than the top: an error, or the first entry
        return f"{self.next_ms}-{self.rng.randint(1, 3)}"

    # The waiters ------------------------------------------------------------------------------

    def wait(self, timeout: dict[str, str], one_key: bool = False) -> list[str]:
        rng = self.rng
        keys = rng.sample(KEYS, 1 if one_key else rng.choice([1, 1, 2]))
        if not one_key and rng.random() < 0.05:
            keys.append(keys[0])  # a key named twice is waited on once
        kind = rng.choice(["blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin",
                           "bzpopmax", "bzmpop", "xread", "xreadgroup", "xreadgroup"])
        seconds, ms = timeout["seconds"], timeout["ms"]
        if kind in ("blpop", "brpop", "bzpopmin", "bzpopmax"):
            return [kind.upper(), *keys, seconds]
        if kind == "blmove":
            return ["BLMOVE", keys[0], self.key(), rng.choice(["LEFT", "RIGHT"]),
                    rng.choice(["LEFT", "RIGHT"]), seconds]
        if kind == "brpoplpush":
            return ["BRPOPLPUSH", keys[0], self.key(), seconds]
        if kind in ("blmpop", "bzmpop"):
            where = ["LEFT", "RIGHT"] if kind == "blmpop" else ["MIN", "MAX"]
            argv = [kind.upper(), seconds, str(len(keys)), *keys, rng.choice(where)]
            if rng.random() < 0.5:
                argv += ["COUNT", str(rng.randint(1, 3))]
            return argv
        count = ["COUNT", str(rng.randint(1, 3))] if rng.random() < 0.4 else []
        if kind == "xread":
            ids = [rng.choice(["$", "$", "0-0", f"{self.next_ms}-0"]) for _ in keys]
            return ["XREAD", *count, "BLOCK", ms, "STREAMS", *keys, *ids]
        noack = ["NOACK"] if rng.random() < 0.2 else []
        ids = [rng.choice([">", ">", ">", "0"]) for _ in keys]
        return ["XREADGROUP", "GROUP", rng.choice(GROUPS), rng.choice(["c1", "c2"]), *count,
                *noack, "BLOCK", ms, "STREAMS", *keys, *ids]

    # The writes -------------------------------------------------------------------------------

    def write(self, waiters: int, in_multi: bool = False) -> list[list[str]]:
        rng = self.rng
        k = self.key()
        choice = rng.choice([
            "push", "push", "push", "zadd", "zadd", "xadd", "xadd", "xadd", "xgroup", "set",
            "del", "rename", "multi", "lmove", "pop", "sort", "swapdb", "expire", "flushdb",
            "eval", "unblock", "select", "copy", "zstore", "xother", "move", "lother", "zother",
            "nonblocking", "kill", "watch", "xclaim"])
        if self.serving and rng.random() < 0.4:
            choice = rng.choice(self.serving)
        if in_multi and choice in ("multi", "select", "unblock", "kill", "watch"):
            choice = "push"
        if choice == "swapdb" and not self.swaps:
            choice = "select"
        if choice == "kill" and rng.random() < 0.7:
            choice = "unblock"  # a killed waiter tells little more
        if choice == "push":
            command = rng.choice(["LPUSH", "RPUSH", "RPUSH", "LPUSHX", "RPUSHX"])
            return [[command, k, *self.members()]]
        if choice == "zadd":
            argv = ["ZADD", k]
            if rng.random() < 0.2:
                argv.append(rng.choice(["NX", "XX", "GT", "LT", "INCR"]))
            for member in self.members(1, 1 if "INCR" in argv else 3):
                argv += [str(rng.choice([-1, 0, 1, 2, 2.5])), member]
            return [argv]
        if choice == "xadd":
            argv = ["XADD", k]
            if rng.random() < 0.15:
                argv.append("NOMKSTREAM")
            if rng.random() < 0.15:
                argv += ["MAXLEN", str(rng.randint(0, 2))]
            return [argv + [self.stream_id(), "f", rng.choice(MEMBERS)]]
        if choice == "xgroup":
            group = rng.choice(GROUPS)
            sub = rng.choice(["CREATE", "CREATE", "DESTROY", "SETID", "CREATECONSUMER",
                              "DELCONSUMER"])
            if sub == "CREATE":
                argv = ["XGROUP", "CREATE", k, group, rng.choice(["$", "0"])]
                return [argv + (["MKSTREAM"] if rng.random() < 0.6 else [])]
            if sub == "DESTROY":
                return [["XGROUP", "DESTROY", k, group]]
            if sub == "SETID":
                return [["XGROUP", "SETID", k, group, rng.choice(["$", "0"])]]
            return [["XGROUP", sub, k, group, rng.choice(["c1", "c2"])]]
        if choice == "set":
            return [["SET", k, rng.choice(MEMBERS)]]
        if choice == "del":
            return [[rng.choice(["DEL", "UNLINK"]), k]]
        if choice == "rename":
            return [[rng.choice(["RENAME", "RENAME", "RENAMENX"]), k, self.key()]]
        if choice == "copy":
            return [["COPY", k, self.key(), *(["REPLACE"] if rng.random() < 0.5 else []),
                     *(["DB", "1"] if rng.random() < 0.2 else [])]]
        if choice == "move":
            return [["MOVE", k, "1"]]
        if choice == "multi":
            inner = [argv for _ in range(rng.randint(1, 3)) for argv in self.write(waiters, True)]
            return [["MULTI"], *inner, [rng.choice(["EXEC", "EXEC", "EXEC", "DISCARD"])]]
        if choice == "lmove":
            if rng.random() < 0.3:
                return [["RPOPLPUSH", k, self.key()]]
            return [["LMOVE", k, self.key(), rng.choice(["LEFT", "RIGHT"]),
                     rng.choice(["LEFT", "RIGHT"])]]
        if choice == "pop":
            return [[rng.choice(["LPOP", "RPOP", "ZPOPMIN", "ZPOPMAX"]), k]]
        if choice == "lother":
            return [rng.choice([["LTRIM", k, "1", "0"], ["LREM", k, "0", rng.choice(MEMBERS)],
                                ["LSET", k, "0", "new"],
                                ["LINSERT", k, "BEFORE", rng.choice(MEMBERS), "ins"]])]
        if choice == "sort":
            argv = ["SORT", k, "ALPHA"]
            if rng.random() < 0.3:
                argv += ["LIMIT", "0", str(rng.randint(0, 2))]
            return [argv + ["STORE", self.key()]]
        if choice == "zstore":
            if rng.random() < 0.5:
                return [["ZRANGESTORE", k, self.key(), "0", "-1"]]
            return [[rng.choice(["ZUNIONSTORE", "ZINTERSTORE"]), k, "2", self.key(), self.key()]]
        if choice == "swapdb":
            return [["SWAPDB", "0", "1"]]
        if choice == "select":
            return [["SELECT", rng.choice(["0", "1"])]]
        if choice == "expire":
            return [rng.choice([["EXPIRE", k, "-1"], ["PEXPIRE", k, "0"],
                                ["EXPIREAT", k, "1"], ["SET", k, "v", "PXAT", "1"]])]
        if choice == "flushdb":
            return [[rng.choice(["FLUSHDB", "FLUSHDB", "FLUSHALL"])]]
        if choice == "xother":
            return [rng.choice([["XDEL", k, f"{self.next_ms}-1"], ["XTRIM", k, "MAXLEN", "0"],
                                ["XSETID", k, f"{self.next_ms + 5}-0"],
                                ["XACK", k, rng.choice(GROUPS), f"{self.next_ms}-1"]])]
        if choice == "eval":
            return [self.script(k)]
        if choice == "zother":
            return [rng.choice([["ZINCRBY", k, "1", rng.choice(MEMBERS)],
                                ["ZREMRANGEBYRANK", k, "0", "0"], ["ZREM", k, *self.members()],
                                ["ZMPOP", "1", k, rng.choice(["MIN", "MAX"])],
                                ["LMPOP", "2", k, self.key(), "LEFT", "COUNT", "2"]])]
        if choice == "nonblocking":
            # A blocking command in a transaction or a script answers at once.
            argv = self.wait(FOREVER, one_key=True)
            if rng.random() < 0.5 or in_multi:
                return [["MULTI"], argv, ["EXEC"]] if not in_multi else [argv]
            keys = [a for a in argv if a in KEYS]
            body = "return redis.call(" + ", ".join(
                f"KEYS[{keys.index(a) + 1}]" if a in keys else repr(a) for a in argv) + ")"
            return [["EVAL", body, str(len(keys)), *keys]]
        if choice == "watch":
            return [["WATCH", k]]  # a later EXEC fails if a waiter's pop changed k
        if choice == "xclaim":
            group, consumer = rng.choice(GROUPS), rng.choice(["c1", "c2"])
            return [rng.choice([
                ["XAUTOCLAIM", k, group, consumer, "0", "0-0", "COUNT", "2"],
                ["XCLAIM", k, group, consumer, "0", f"{self.next_ms}-1"],
                ["XREADGROUP", "GROUP", group, consumer, "STREAMS", k, ">"]])]
        if choice == "kill":
            return [["CLIENT", "KILL", "ID", f"$ID{rng.randrange(max(waiters, 1))}"]]
        # CLIENT UNBLOCK of a waiter, by its id on each server
        argv = ["CLIENT", "UNBLOCK", f"$ID{rng.randrange(max(waiters, 1))}"]
        return [argv + ([rng.choice(["TIMEOUT", "ERROR"])] if rng.random() < 0.7 else [])]

    def script(self, key: str) -> list[str]:
        bodies = [
            "redis.call('rpush', KEYS[1], ARGV[1]); return redis.call('llen', KEYS[1])",
            "redis.call('del', KEYS[1]); redis.call('lpush', KEYS[1], ARGV[1], ARGV[1])",
            "redis.call('zadd', KEYS[1], 1, ARGV[1]); return redis.call('zcard', KEYS[1])",
            "redis.call('lpush', KEYS[1], ARGV[1]); return redis.call('lpop', KEYS[1])",
            f"return redis.call('xadd', KEYS[1], '{self.stream_id()}', 'f', ARGV[1])",
            "redis.call('set', KEYS[1], ARGV[1]); redis.call('del', KEYS[1]); "
            "return redis.call('rpush', KEYS[1], ARGV[1])",
            # Two keys written in one script: their waiters are served after it, in order.
            "redis.call('rpush', KEYS[2], ARGV[1]); redis.call('zadd', KEYS[1], 2, ARGV[1]); "
            "return redis.call('lpush', KEYS[1], ARGV[1])",
            "redis.call('lpush', KEYS[2], ARGV[1]); return redis.call('lpush', KEYS[1], ARGV[1])",
        ]
        return ["EVAL", self.rng.choice(bodies), "2", key, self.key(), self.rng.choice(MEMBERS)]

    def setup(self, stream_keys: set[str]) -> list[list[str]]:
        """A few keys to start from: mostly empty (a waiter has to block), a stream with groups
        where XREAD or XREADGROUP waits (mostly), sometimes a key of another type."""
        out: list[list[str]] = []
        rng = self.rng
        for key in KEYS:
            roll = rng.random()
            stream_at = 0.8 if key in stream_keys else 0.1
            if roll < stream_at and rng.random() < 0.75:
                out.append(["XGROUP", "CREATE", key, rng.choice(GROUPS), "$", "MKSTREAM"])
                if rng.random() < 0.4:
                    out.append(["XGROUP", "CREATE", key, "g2", "0"])
            elif roll < stream_at:
                out.append(["XADD", key, self.stream_id(), "f", "v"])
                out.append(["XGROUP", "CREATE", key, "g1", "$"])
            elif roll < stream_at + 0.05:
                out.append(["SET", key, "string"])
            elif roll < stream_at + 0.1:
                out.append(["RPUSH", key, *self.members()])
        if self.swaps:
            out += self.other_database()
        return out

    def other_database(self) -> list[list[str]]:
        """Keys in database 1 for SWAPDB to bring in: a waited stream replaced by a list, a
        string or another stream (Redis signals a stream that is one no more, then each waited
        key for its value's type), or a value the waiter can take at once."""
        out: list[list[str]] = [["SELECT", "1"]]
        for key in KEYS:
            roll = self.rng.random()
            if roll < 0.2:
                out.append(["RPUSH", key, *self.members()])
            elif roll < 0.35:
                out.append(["ZADD", key, "1", self.rng.choice(MEMBERS)])
            elif roll < 0.5:
                out.append(["SET", key, "string"])
            elif roll < 0.65:
                out.append(["XADD", key, self.stream_id(), "f", "v"])
                if self.rng.random() < 0.5:
                    out.append(["XGROUP", "CREATE", key, self.rng.choice(GROUPS), "0"])
        return out + [["SELECT", "0"]]


# The writes that serve each kind of waiter.
SERVED_BY = {"BLPOP": "push", "BRPOP": "push", "BLMOVE": "push", "BRPOPLPUSH": "push",
             "BLMPOP": "push", "BZPOPMIN": "zadd", "BZPOPMAX": "zadd", "BZMPOP": "zadd",
             "XREAD": "xadd", "XREADGROUP": "xadd"}


def generate_case(rng: random.Random, length: int = 6) -> Case:
    generator = Generator(rng)
    timeout = rng.random() < 0.1
    # SWAPDB makes every waited-on key it brings in ready in the order of Redis's dict of
    # blocked keys, which its per-process hash seed shuffles: with one waiter on one key
    # there is nothing to order.
    generator.swaps = rng.random() < 0.3
    timeouts = SHORT if timeout else FOREVER
    waits = [(rng.choice([0, 0, 0, 1]), generator.wait(timeouts, one_key=generator.swaps))
             for _ in range(1 if generator.swaps else rng.choice([1, 1, 2, 3]))]
    generator.serving = [SERVED_BY[argv[0]] for _db, argv in waits]
    stream_keys = {a for _db, argv in waits if argv[0].startswith("X") for a in argv
                   if a in KEYS}
    setup = generator.setup(stream_keys)
    writes: list[list[str]] = []
    while len(writes) < length:
        writes += generator.write(len(waits))
    if generator.swaps and ["SWAPDB", "0", "1"] not in writes:
        # (a case drawn to swap does: what database 1 holds is there for it)
        writes.insert(rng.randint(0, len(writes)), ["SWAPDB", "0", "1"])
    return Case(setup, waits, writes, timeout)


# ---------------------------------------------------------------------------------------------
# Running


def _readable(client: RawClient) -> bool:
    if client.buf:
        return True
    ready, _, _ = select.select([client.sock], [], [], 0)
    return bool(ready)


def _blocked_clients(client: RawClient) -> int:
    info = client.call("INFO", "clients")
    text = info.text if hasattr(info, "text") else info
    for line in text.decode().splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":", 1)[1])
    raise AssertionError("no blocked_clients in INFO clients")


class Side:
    """One server's connections: a control one (FLUSHALL, INFO, the final dump), the writer's,
    and a waiter's per blocking command."""

    def __init__(self, port: int, protocol: int) -> None:
        self.port, self.protocol = port, protocol
        self.control = self._connect()
        self.writer: RawClient | None = None
        self.waiters: list[RawClient] = []
        self.ids: list[int] = []

    def _connect(self) -> RawClient:
        client = RawClient(self.port, timeout=DEADLINE_S)
        if self.protocol == 3:
            client.call("HELLO", "3")
        return client

    def start_case(self) -> None:
        self.end_case()
        self.writer = self._connect()

    def add_waiter(self, db: int) -> RawClient:
        waiter = self._connect()
        self.waiters.append(waiter)
        self.ids.append(waiter.call("CLIENT", "ID"))
        if db:
            waiter.call("SELECT", str(db))
        return waiter

    def substitute(self, argv: list[str]) -> list[str]:
        return [str(self.ids[int(a[3:])]) if a.startswith("$ID") and a[3:].isdigit()
                and int(a[3:]) < len(self.ids) else a for a in argv]

    def wait_outcome(self, waiter: RawClient, blocked_before: int):
        """"blocked", or the reply the waiter got at once."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            if _readable(waiter):
                return ("answered", waiter.read())
            if _blocked_clients(self.control) > blocked_before:
                return "blocked"
            if time.monotonic() > deadline:
                raise WaiterFailure(f"port {self.port}: a waiter neither blocked nor answered")
            time.sleep(0.002)

    def end_case(self) -> None:
        for client in [self.writer, *self.waiters]:
            if client is not None:
                client.close()
        self.writer, self.waiters, self.ids = None, [], []

    def close(self) -> None:
        self.end_case()
        self.control.close()


def _stream_state(client: RawClient, key: str) -> list:
    info = client.call("XINFO", "STREAM", key)
    if isinstance(info, Map):
        info = [x for pair in info for x in pair]
    if isinstance(info, list):  # the radix tree's shape is the implementation's
        info = [v for n, v in enumerate(info) if not (n % 2 == 1 and info[n - 1] in (
            b"radix-tree-keys", b"radix-tree-nodes"))
            and not (n % 2 == 0 and v in (b"radix-tree-keys", b"radix-tree-nodes"))]
    out: list = [info]
    groups = client.call("XINFO", "GROUPS", key)
    out.append(groups)
    for group in groups if isinstance(groups, list) else []:
        fields = list(group) if isinstance(group, Map) else list(zip(group[::2], group[1::2]))
        name = dict(fields)[b"name"]
        out.append(_without_idle_times(client.call("XINFO", "CONSUMERS", key, name)))
        pending = client.call("XPENDING", key, name, "-", "+", "100")
        out.append([[e[0], e[1], "<ms>", e[3]] for e in pending]  # (id, consumer, idle, count)
                   if isinstance(pending, list) else pending)
    return out


def key_state(client: RawClient, key: str) -> object:
    kind = client.call("TYPE", key)
    if kind == b"list":
        return kind, client.call("LRANGE", key, "0", "-1")
    if kind == b"zset":
        return kind, client.call("ZRANGE", key, "0", "-1", "WITHSCORES")
    if kind == b"stream":
        return kind, _stream_state(client, key)
    if kind == b"string":
        return kind, client.call("GET", key)
    if kind == b"set":
        return kind, sorted(client.call("SMEMBERS", key))
    return kind, None


def state(client: RawClient) -> list:
    out = []
    for db in ("0", "1"):
        client.call("SELECT", db)
        out += [(db, key, key_state(client, key)) for key in KEYS]
        ttl = client.call("PTTL", "a")
        out.append(("pttl a", ttl if ttl < 0 else "positive"))
    client.call("SELECT", "0")
    return out


def _kind(reply) -> str:
    if isinstance(reply, Err):
        return "error " + reply.message.split()[0]
    if isinstance(reply, tuple):
        return reply[0]
    return type(reply).__name__


def _signature(what: str, expected, actual) -> str:
    return f"{what}: redis {_kind(expected)} / minired {_kind(actual)}"


class Runner:
    """Both servers' sides; `run(case)` answers the first difference, or None."""

    def __init__(self, redis_port: int, minired_port: int, protocol: int = 2) -> None:
        self.sides = [Side(redis_port, protocol), Side(minired_port, protocol)]

    def close(self) -> None:
        for side in self.sides:
            side.close()

    def run(self, case: Case) -> BlockingMismatch | None:
        try:
            return self._run(case)
        except (OSError, ConnectionError, socket.timeout, WaiterFailure) as exc:
            for side in self.sides:  # fresh control connections for the next case
                try:
                    side.close()
                except OSError:
                    pass
                side.control = side._connect()
            return BlockingMismatch(case, "connection", "(answered)", repr(exc),
                                    f"connection: {type(exc).__name__}")

    def _both(self, what: str, case: Case, replies) -> BlockingMismatch | None:
        expected, actual = replies
        if expected == actual:
            return None
        return BlockingMismatch(case, what, expected, actual, _signature(what, expected, actual))

    def _run(self, case: Case) -> BlockingMismatch | None:
        for side in self.sides:
            side.start_case()
            side.control.call("FLUSHALL")
        for argv in case.setup:
            mismatch = self._both(argv[0], case, [s.writer.call(*argv) for s in self.sides])
            if mismatch:
                return mismatch
        self.answered = []
        for db, argv in case.waits:
            outcomes = []
            for side in self.sides:
                waiter = side.add_waiter(db)
                # (counted now: a waiter that answered at once may have served one that blocked)
                blocked = _blocked_clients(side.control)
                # An LRANGE pipelined behind the wait (in the same write, so that the server
                # has read it before the wait ends): it runs once the wait ends, on the data
                # then, before the server reads anything else.
                follow = ["LRANGE", argv[1] if argv[1] in KEYS else "a", "0", "-1"]
                waiter.send_raw(encode_command(argv) + encode_command(follow))
                if case.timeout:
                    # Whether it blocked before its few milliseconds passed is the clock's
                    # affair: only how it ended is compared, and the writes come after.
                    outcomes.append(("ended", waiter.read()))
                else:
                    outcomes.append(side.wait_outcome(waiter, blocked))
            mismatch = self._both(f"{argv[0]} at once", case, outcomes)
            if mismatch:
                return mismatch
            self.answered.append(outcomes[0] != "blocked")
        for argv in case.writes:
            name = argv[0].upper() if argv[0].upper() != "CLIENT" else "CLIENT UNBLOCK"
            replies = [s.writer.call(*s.substitute(argv)) for s in self.sides]
            mismatch = self._both(name, case, replies)
            if mismatch:
                return mismatch
        return self._finish(case)

    def _finish(self, case: Case) -> BlockingMismatch | None:
        counts = [_blocked_clients(s.control) for s in self.sides]
        mismatch = self._both("blocked clients after the writes", case, counts)
        if mismatch:
            return mismatch
        for side in self.sides:
            for client_id in side.ids:
                side.control.call("CLIENT", "UNBLOCK", str(client_id))
        for n, (_db, argv) in enumerate(case.waits):
            replies = []
            for side in self.sides:
                waiter = side.waiters[n]
                # A waiter that answered at once has only its LRANGE's reply left.
                replies.append(_rest(waiter, 1 if self.answered[n] else 2))
            mismatch = self._both(f"{argv[0]} reply", case, replies)
            if mismatch:
                return mismatch
        return self._both("final state", case, [state(s.control) for s in self.sides])


def _rest(waiter: RawClient, count: int) -> list:
    """The `count` replies a waiter has left (the wait's, unless it answered at once, and its
    pipelined LRANGE's), ended by "(closed)" where CLIENT KILL closed the connection. CLIENT
    UNBLOCK has ended the wait, so they are there or on their way."""
    replies: list = []
    try:
        while len(replies) < count:
            replies.append(waiter.read())
    except (ConnectionError, OSError):
        replies.append("(closed)")
    return replies


def shrink_case(runner: Runner, mismatch: BlockingMismatch) -> BlockingMismatch:
    """Drop writes, setup commands and waiters while the same difference still shows. The
    items are numbered waiters first, then setup, then writes, so that each pass tries the
    writes first; the last waiter stays."""
    def count(m: BlockingMismatch) -> int:
        return len(m.case.waits) + len(m.case.setup) + len(m.case.writes)

    def without(m: BlockingMismatch, i: int) -> Case | None:
        case = m.case
        waits, setup, writes = list(case.waits), list(case.setup), list(case.writes)
        if i < len(waits):
            if len(waits) == 1:
                return None
            del waits[i]
            writes = [_renumber(argv, i) for argv in writes]
        elif i < len(waits) + len(setup):
            del setup[i - len(waits)]
        else:
            del writes[i - len(waits) - len(setup)]
        return Case(setup, waits, writes, case.timeout)

    return drop_while_same(mismatch, count, without, runner.run,
                           lambda result: result.signature == mismatch.signature)


def _renumber(argv: list[str], dropped: int) -> list[str]:
    """CLIENT UNBLOCK $IDn after waiter `dropped` is gone."""
    out = []
    for a in argv:
        if a.startswith("$ID") and a[3:].isdigit():
            n = int(a[3:])
            a = f"$ID{n - 1}" if n > dropped else a
        out.append(a)
    return out
