"""Fault injection: rules that make chosen commands fail on purpose (MINIRED FAULT, --fault-injection).

A rule is an action (ERROR, DELAY, STALL, DROP, DROP-REPLY, HANG, PARTIAL; the network's
BANDWIDTH, SLICE, CUT, TIMEOUT, SLOW-CLOSE, RESET; on new connections REFUSE and STALL-ACCEPT)
and what it matches (command names, a key glob, a client's name or id, a script, inside
scripts or not), with COUNT, AFTER and PROBABILITY deciding which matches fire and FOR how long
the rule lasts. Rules are tried in the order they were added;
the first one that fires decides the command's fate. Rules are indexed by the command names
they give (those without COMMAND apply to every command), so a command no rule names costs a
dict lookup however many rules there are, and each rule's globs are compiled once, when added.

How it plugs in: `Server.faults` is a FaultInjector when the server was started with fault
injection, None otherwise. Dispatch asks `intercept` about every client command once the process
has used one (dispatch.use_extras: one check per command until then), and the script bridge asks
`in_script` about every redis.call while `Server.faults` is set. What the connection must do
differently (hold the reply, cut the connection, write part of the reply) travels back as a
`disruption.Disruption` reply, which the connection hands back to `deliver` (disruption.py); HANG parks the client
in the blocking machinery with nothing to wait for (TIMEOUT too, with a timer that closes
the connection). REFUSE and STALL-ACCEPT act on connections as they are accepted (the server's
connect hook), before any command: they are kept apart from the command rules.

When a rule matches a command sent inside MULTI, it acts on the command as it is queued (that is
when the client sends it): ERROR refuses it as Redis refuses a command at queue time, so EXEC then
answers EXECABORT; the commands EXEC runs are not matched again. A rule on EXEC acts on EXEC.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools
import random
import time
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable

from minired.data.glob import matcher
from minired.engine import client_reply, dispatch
from minired.engine.args import parse_int
from minired.engine.blocking import Block
from minired.engine.table import COMMANDS, stats_of
from minired.features import disruption
from minired.features.disruption import Disruption
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import Replies

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import ClientProtocol, Server
    from minired.engine.table import CommandSpec

ACTIONS = ("ERROR", "DELAY", "STALL", "DROP", "DROP-REPLY", "HANG", "PARTIAL", "BANDWIDTH",
           "SLICE", "CUT", "TIMEOUT", "SLOW-CLOSE", "RESET", "REFUSE", "STALL-ACCEPT")
_MATCHES = frozenset({"COMMAND", "KEY", "CLIENT-NAME", "CLIENT-ID", "SCRIPT", "IN-SCRIPT"})
_OPTIONS = _MATCHES | {"COUNT", "AFTER", "PROBABILITY", "SEED", "JITTER", "FOR"}
# STALL stops the whole server (time.sleep on the loop): past a minute it is a hung test run,
# not a slow command; HANG and DELAY wait without stopping anyone else.
STALL_MAX_MS = 60_000
# Every other duration (DELAY, JITTER, SLICE's pause, TIMEOUT, SLOW-CLOSE, FOR) is capped the
# same: a rule is a test's fault, and a test that waits longer than a minute is a hung one.
MAX_MS = 60_000
MAX_COUNT = (1 << 63) - 1  # COUNT, AFTER: any count a 64-bit counter holds
MAX_BYTES = 1 << 30  # BANDWIDTH's rate, SLICE's and CUT's sizes: a reply is never larger
# The numbers each action takes after its name: (what an error calls it, lowest, highest).
_NUMBERS = {
    "DELAY": (("DELAY's ms", 0, MAX_MS),),
    "STALL": (("STALL's ms", 0, STALL_MAX_MS),),
    "BANDWIDTH": (("BANDWIDTH's bytes per second", 1, MAX_BYTES),),
    "SLICE": (("SLICE's bytes", 1, MAX_BYTES), ("SLICE's pause ms", 0, MAX_MS)),
    "CUT": (("CUT's bytes", 0, MAX_BYTES),),
    "TIMEOUT": (("TIMEOUT's ms", 0, MAX_MS),),
    "SLOW-CLOSE": (("SLOW-CLOSE's ms", 0, MAX_MS),),
}
# Actions that act on a new connection as it is accepted rather than on a command.
_ON_ACCEPT = frozenset({"REFUSE", "STALL-ACCEPT"})
# Actions that run the command first and then change what the connection does with its reply.
_AFTER_RUNNING = frozenset({"DELAY", "DROP-REPLY", "PARTIAL", "BANDWIDTH", "SLICE", "CUT",
                            "SLOW-CLOSE"})
# BANDWIDTH writes a reply in this many pieces a second (each rate/100 bytes, 10 ms apart).
_BANDWIDTH_PIECES_PER_S = 100
_SCRIPT_RUNNERS = frozenset({"eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro"})
_BY_NAME = frozenset({"fcall", "fcall_ro"})


def _never_ready(client: "Client", key: bytes) -> Any:
    return None  # a hung client waits on no key: never called


# HANG: the client is parked with no key and no timeout, so it waits forever (CLIENT UNBLOCK
# or a disconnect ends it, with no reply); its later input waits unparsed behind it.
HANG = Block([], 0, _never_ready, Replies())
# STALL-ACCEPT parks a new connection the same way, before it has sent anything: what it sends
# waits unread in its query buffer until the rule ends and unblocks it (with no reply).
STALLED_AT_ACCEPT = Block([], 0, _never_ready, Replies())


class Rule:
    """One MINIRED FAULT ADD: its action, what it matches, and its counters."""

    __slots__ = ("id", "spec", "action", "error", "ms", "size", "jitter", "commands", "key",
                 "client_name", "client_id", "script", "in_script", "count", "after",
                 "probability", "rng", "lasts_ms", "timer", "stalled", "matched", "fired")

    key: "Callable[[bytes], bool] | None"
    client_name: "Callable[[bytes], bool] | None"

    def __init__(self, rule_id: int, spec: str) -> None:
        self.id = rule_id
        self.spec = spec  # as given, for MINIRED FAULT LIST
        self.action = ""
        self.error = ""
        self.ms = 0  # DELAY, STALL, TIMEOUT, SLOW-CLOSE; SLICE's pause
        self.size = 0  # BANDWIDTH's bytes per second, SLICE's and CUT's bytes
        self.jitter = 0  # DELAY's JITTER: the delay is ms +- up to this, drawn from `rng`
        self.commands: frozenset | None = None
        self.key = None  # the KEY glob, compiled
        self.client_name = None  # the CLIENT-NAME glob, compiled
        self.client_id: int | None = None
        self.script: bytes | None = None
        self.in_script = False
        self.count = 0  # 0: no limit
        self.after = 0
        self.probability: float | None = None
        self.rng: random.Random | None = None
        self.lasts_ms = 0  # FOR: the rule removes itself this long after it was added
        self.timer: Any = None  # the loop's timer that does it
        self.stalled: list = []  # STALL-ACCEPT: the connections it holds until it ends
        self.matched = 0
        self.fired = 0

    def matches(self, c: "Client", spec: "CommandSpec", argv: list, script: bytes | None,
                keys: list) -> bool:
        """Whether every condition but the command's name (the index picked the rule by it)
        holds. `c` is the client that sent the command (for a command run by a script, the
        script's caller); `script` the running script's sha or function name, or None outside
        scripts; `keys` a one-item list that holds the command's keys once they are needed."""
        if self.client_id is not None and c.id != self.client_id:
            return False
        if self.client_name is not None and not self.client_name(c.name or b""):
            return False
        if self.key is not None:
            if not keys:
                keys.append(spec.keys(argv))
            if not any(map(self.key, keys[0])):
                return False
        if self.script is not None:
            if script is None:
                script = _script_of(spec, argv)
            if script is None or not _same_script(self.script, script):
                return False
        return True

    def fires(self) -> bool:
        """Count a match, and tell whether the action applies to it (AFTER, PROBABILITY)."""
        if self.count and self.fired >= self.count:
            return False  # a STALL-ACCEPT kept (to release its connections) past its COUNT
        self.matched += 1
        if self.matched <= self.after:
            return False
        if self.probability is not None and self.rng.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def delay_ms(self) -> int:
        """DELAY's hold: ms, moved by up to JITTER either way (never below 0)."""
        if not self.jitter:
            return self.ms
        return max(0, self.ms + self.rng.randint(-self.jitter, self.jitter))

    def entry(self) -> dict:
        return {b"id": self.id, b"spec": self.spec.encode("utf-8", "surrogateescape"),
                b"matched": self.matched, b"fired": self.fired}


def _script_of(spec: "CommandSpec", argv: list) -> bytes | None:
    """The script a client command runs: EVAL's body's sha, EVALSHA's sha, FCALL's function."""
    name = spec.name
    if spec.parent is not None or name not in _SCRIPT_RUNNERS or len(argv) < 2:
        return None
    if name in _BY_NAME:
        return argv[1]
    if name.startswith("evalsha"):
        return argv[1].lower()
    return hashlib.sha1(argv[1]).hexdigest().encode()


def _same_script(wanted: bytes, script: bytes) -> bool:
    return wanted == script or (len(script) == 40 and wanted.lower() == script.lower())


def _number(value: bytes, what: str, lowest: int, highest: int) -> int:
    """An argument that must be a whole number in [lowest, highest], or a clear error (STALL
    keeps its own past its cap, which says what to use instead)."""
    text = value.decode("utf-8", "replace")
    digits = text[1:] if text[:1] == "-" else text
    number = int(text) if digits.isascii() and digits.isdigit() and len(digits) <= 19 else None
    if number is not None and number > highest and what.startswith("STALL"):
        raise RedisError(errors.FAULT_STALL_TOO_LONG.format(STALL_MAX_MS))
    if number is None or not lowest <= number <= highest:
        raise RedisError(errors.FAULT_NUMBER.format(what, lowest, highest, text))
    return number


def _quote(arg: bytes) -> str:
    text = arg.decode("utf-8", "surrogateescape")
    if text and not any(ch.isspace() or ch in "\"'\\" for ch in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FaultInjector:
    """The fault rules of one server, its LOADING window, and what they do to commands."""

    __slots__ = ("server", "rules", "_by_command", "_any_command", "_on_accept", "_ids",
                 "loading_until", "loading_started", "passing")

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.rules: list[Rule] = []
        # The rules by command name ("get", "client|kill", "client"), and those without
        # COMMAND; each list in the order the rules were added.
        self._by_command: dict[str, list[Rule]] = {}
        self._any_command: list[Rule] = []
        self._on_accept: list[Rule] = []  # REFUSE and STALL-ACCEPT, in the order added
        self._ids = itertools.count(1)
        self.loading_until = 0.0  # time.monotonic() at which the LOADING window ends; 0: none
        self.loading_started = 0  # Unix time the LOADING window opened (INFO's loading_start_time)
        # Set while a command an action lets through runs again through dispatch (intercept).
        self.passing = False

    # --- managing rules ------------------------------------------------------------------------

    def add(self, args: list) -> Rule:
        """A rule from MINIRED FAULT ADD's arguments (what follows ADD); raises RedisError."""
        rule = Rule(next(self._ids), " ".join(_quote(arg) for arg in args))
        self._parse(rule, args)
        self.rules.append(rule)
        for bucket in self._buckets(rule):
            bucket.append(rule)
        loop = self.server.loop
        if rule.lasts_ms and loop is not None:
            rule.timer = loop.call_at(loop.time() + rule.lasts_ms / 1000 + 0.001,
                                      self.remove, rule.id)
        dispatch.use_extras()
        return rule

    def _buckets(self, rule: Rule) -> list:
        """The index lists that hold `rule`."""
        if rule.action in _ON_ACCEPT:
            return [self._on_accept]
        if rule.commands is None:
            return [self._any_command]
        return [self._by_command.setdefault(name, []) for name in sorted(rule.commands)]

    def _parse(self, rule: Rule, args: list) -> None:
        if not args:
            raise RedisError(errors.FAULT_SYNTAX.format("an action is required"))
        action = args[0].decode("utf-8", "replace").upper()
        if action not in ACTIONS:
            raise RedisError(errors.FAULT_UNKNOWN_ACTION.format(action, ", ".join(ACTIONS)))
        rule.action = action
        i = 1
        numbers = _NUMBERS.get(action, ())
        if action == "ERROR":
            if len(args) < 2:
                raise RedisError(errors.FAULT_SYNTAX.format(f"{action} needs an argument"))
            text = args[1].decode("utf-8", "surrogateescape")
            if not text or "\r" in text or "\n" in text:
                raise RedisError(errors.FAULT_SYNTAX.format(
                    "the error line must be one non-empty line"))
            rule.error = text
            i = 2
        elif numbers:
            if len(args) < 1 + len(numbers):
                raise RedisError(errors.FAULT_NEEDS_ARGUMENTS.format(
                    action, " and ".join(what for what, _, _ in numbers)))
            values = [_number(args[1 + n], *numbers[n]) for n in range(len(numbers))]
            if action in ("BANDWIDTH", "CUT"):
                rule.size = values[0]
            elif action == "SLICE":
                rule.size, rule.ms = values
            else:
                rule.ms = values[0]
            i = 1 + len(numbers)
        elif len(args) > 1 and args[1].decode("utf-8", "replace").upper() not in _OPTIONS:
            raise RedisError(errors.FAULT_SYNTAX.format(
                f"{action} takes no argument, got '{args[1].decode('utf-8', 'replace')}'"))
        seed: int | None = None
        in_script: bool | None = None
        while i < len(args):
            option = args[i].decode("utf-8", "replace").upper()
            if option not in _OPTIONS:
                raise RedisError(errors.FAULT_SYNTAX.format(f"unknown option '{option}'"))
            if i + 1 >= len(args):
                raise RedisError(errors.FAULT_SYNTAX.format(f"{option} needs a value"))
            if option in _MATCHES and action in _ON_ACCEPT:
                raise RedisError(errors.FAULT_CONNECTION_MATCH.format(action))
            value = args[i + 1]
            i += 2
            if option == "COMMAND":
                names = set()
                for name in value.lower().split(b","):
                    root = COMMANDS.get(name.split(b"|", 1)[0])
                    if root is None or (b"|" in name and name.split(b"|", 1)[1]
                                        not in root.subcommands):
                        raise RedisError(errors.FAULT_UNKNOWN_COMMAND.format(
                            name.decode("utf-8", "replace")))
                    names.add(name.decode())
                rule.commands = frozenset(names)
            elif option == "KEY":
                rule.key = matcher(value)
            elif option == "CLIENT-NAME":
                rule.client_name = matcher(value)
            elif option == "CLIENT-ID":
                rule.client_id = parse_int(value)
            elif option == "SCRIPT":
                rule.script = value
            elif option == "IN-SCRIPT":
                flag = value.lower()
                if flag not in (b"yes", b"no"):
                    raise RedisError(errors.FAULT_SYNTAX.format("IN-SCRIPT takes yes or no"))
                in_script = flag == b"yes"
            elif option == "COUNT":
                rule.count = _number(value, "COUNT", 1, MAX_COUNT)
            elif option == "AFTER":
                rule.after = _number(value, "AFTER", 0, MAX_COUNT)
            elif option == "PROBABILITY":
                try:
                    probability = float(value)
                except ValueError:
                    probability = -1.0
                if not 0.0 <= probability <= 1.0:
                    raise RedisError(errors.FAULT_SYNTAX.format(
                        "PROBABILITY must be between 0 and 1"))
                rule.probability = probability
            elif option == "JITTER":
                if action != "DELAY":
                    raise RedisError(errors.FAULT_OPTION_NOT_FOR.format(option, action))
                rule.jitter = _number(value, "JITTER's ms", 0, MAX_MS)
            elif option == "FOR":
                rule.lasts_ms = _number(value, "FOR's ms", 1, MAX_MS)
            else:  # SEED
                seed = parse_int(value)
        if seed is not None and rule.probability is None and not rule.jitter:
            raise RedisError(errors.FAULT_SEED_ALONE)
        if rule.probability is not None or rule.jitter:
            rule.rng = random.Random(seed)
        rule.in_script = bool(in_script)
        if rule.in_script and action != "ERROR":
            raise RedisError(errors.FAULT_IN_SCRIPT_ERROR_ONLY)
        if action == "REFUSE" and not (rule.lasts_ms or rule.count):
            raise RedisError(errors.FAULT_UNBOUNDED.format(action, "FOR <ms> or COUNT <n>"))
        if action == "STALL-ACCEPT" and not rule.lasts_ms:
            raise RedisError(errors.FAULT_UNBOUNDED.format(action, "FOR <ms>"))

    def remove(self, rule_id: int) -> bool:
        for index, rule in enumerate(self.rules):
            if rule.id == rule_id:
                del self.rules[index]
                for bucket in self._buckets(rule):
                    bucket.remove(rule)
                if rule.timer is not None:
                    rule.timer.cancel()
                for client in rule.stalled:  # STALL-ACCEPT's connections are read from now on
                    waiter = client.blocked
                    if not client.closing and waiter is not None \
                            and waiter.block is STALLED_AT_ACCEPT:
                        self.server.blocking.unblock(client, False)
                rule.stalled.clear()
                return True
        return False

    def reset(self) -> None:
        """Every rule removed and the LOADING window closed."""
        for rule in list(self.rules):
            self.remove(rule.id)
        self.loading_until = 0.0

    def entries(self) -> list:
        return [rule.entry() for rule in self.rules]

    def start_loading(self, ms: int) -> None:
        """Answer every command not flagged `loading` with Redis's LOADING error for ms (0 ends
        the window)."""
        if ms < 0:
            raise RedisError(errors.FAULT_LOADING_MS)
        self.loading_until = time.monotonic() + ms / 1000 if ms > 0 else 0.0
        if ms > 0:
            self.loading_started = int(time.time())
            dispatch.use_extras()

    def loading_seconds_left(self) -> float | None:
        """While the LOADING window is open, the seconds until it closes (INFO says
        `loading:1` then, as Redis does while it loads a file); None otherwise."""
        if not self.loading_until:
            return None
        left = self.loading_until - time.monotonic()
        return left if left > 0 else None

    def kill_clients(self, kind: bytes | None = None, spare: "Client | None" = None) -> int:
        """Cut every connection (of a type: normal or pubsub), as a restart does, except
        `spare` (the client asking); returns how many were cut."""
        if kind is not None and kind not in (b"normal", b"pubsub"):
            raise RedisError(errors.FAULT_KILL_TYPE)
        killed = 0
        for client in list(self.server.clients.values()):
            if client is spare or client.closing:
                continue
            if kind is not None:
                subscribed = bool(client.channels or client.patterns or client.shard_channels)
                if subscribed != (kind == b"pubsub"):
                    continue
            client.close()
            killed += 1
        return killed

    # --- acting on connections ---------------------------------------------------------------

    def on_connect(self, c: "Client") -> None:
        """The server's connect hook: a REFUSE or STALL-ACCEPT rule may take the new
        connection (the first one that fires)."""
        if not self._on_accept or c.connection is None:
            return
        for rule in self._on_accept:
            if not rule.fires():
                continue
            if rule.action == "REFUSE":
                if rule.count and rule.fired >= rule.count:
                    self.remove(rule.id)
                disruption.reset(c.connection)  # accepted, then reset before a byte is read
            else:  # STALL-ACCEPT: kept (past its COUNT too) until FOR ends, DEL or RESET
                c.server.blocking.block(c, STALLED_AT_ACCEPT, c.connection._resume)
                rule.stalled.append(c)
            return

    # --- acting on commands ------------------------------------------------------------------

    def deliver(self, conn: "ClientProtocol", reply: Any, out: list) -> None:
        disruption.deliver(conn, reply, out)

    def send_disrupted(self, conn: "ClientProtocol", reply: Any) -> bool:
        return disruption.send(conn, reply)

    def _candidates(self, spec: "CommandSpec") -> Any:
        """The rules that may match a command by its name, in the order they were added."""
        by_command = self._by_command
        lists = [found for found in (by_command.get(spec.full_name),
                                     by_command.get(spec.root_name)
                                     if spec.parent is not None else None,
                                     self._any_command) if found]
        if len(lists) <= 1:
            return lists[0] if lists else ()
        return _once_each(heapq.merge(*lists, key=attrgetter("id")))

    def _first_firing(self, c: "Client", spec: "CommandSpec", argv: list, in_script: bool,
                      script: bytes | None) -> Rule | None:
        keys: list = []
        for rule in self._candidates(spec):
            if rule.in_script == in_script and rule.matches(c, spec, argv, script, keys) \
                    and rule.fires():
                if rule.count and rule.fired >= rule.count:
                    self.remove(rule.id)
                return rule
        return None

    def intercept(self, c: "Client", spec: "CommandSpec", argv: list) -> Any:
        """Called by dispatch for a client command that passed its checks: the reply that
        replaces the normal course, or None to let the command go on as usual."""
        if self.passing or spec.root_name == "minired":
            return None  # (MINIRED FAULT RESET must get through whatever the rules say)
        if self.loading_until:
            refused = self._loading(c, spec)
            if refused is not None:
                return refused
        if not self.rules:
            return None
        rule = self._first_firing(c, spec, argv, False, None)
        if rule is None:
            return None
        action = rule.action
        if action == "ERROR":
            if spec.name == "exec" and spec.parent is None and c.multi is not None:
                # The error as given, and the transaction discarded (nothing it queued runs,
                # the client leaves MULTI), as Redis does for an EXEC it redirects (MOVED).
                c.multi = None
                c.multi_failed = False
                c.unwatch_all()
                stats_of(c.server, spec).rejected_calls += 1
                c.server.stats.count_error(rule.error)
                return RedisError(rule.error)
            return dispatch._reject(c, spec, rule.error)
        if action == "STALL":
            time.sleep(rule.ms / 1000)  # the whole server stops: that is the point
            return None
        if action == "HANG":
            return HANG
        if action == "TIMEOUT":
            loop = c.server.loop
            if loop is not None:  # HANG, then the connection closed (+1 ms: see ConnectionFault.hold)
                loop.call_at(loop.time() + rule.ms / 1000 + 0.001, c.close)
            return HANG
        if action == "DROP" or action == "RESET":
            c.reply_mode |= client_reply.DISRUPTED
            return Disruption(send=False, close=True, reset=action == "RESET")
        reply = self._run(c, argv)
        make = _disruption_for(rule)
        if type(reply) is Block:
            if not reply.keys:
                return reply  # held by CLIENT PAUSE: the fault applies when it runs again
            c.reply_mode |= client_reply.DISRUPTED  # the reply comes later (Client.send)
            return _deferred(reply, make)
        c.reply_mode |= client_reply.DISRUPTED
        return make(reply)

    def _run(self, c: "Client", argv: list) -> Any:
        """The command run as if no rule had matched it."""
        self.passing = True
        try:
            return dispatch._execute(c, argv)
        finally:
            self.passing = False

    def _loading(self, c: "Client", spec: "CommandSpec") -> RedisError | None:
        if time.monotonic() >= self.loading_until:
            self.loading_until = 0.0
            return None
        if "loading" in spec.flags:
            if spec.name != "exec" or spec.parent is not None or not c.multi:
                return None
            # EXEC is refused if a command it queued would be (is_denyloading_command).
            if all("loading" in queued.flags for queued, _ in c.multi):
                return None
        return dispatch._reject(c, spec, errors.LOADING)

    def in_script(self, caller: "Client", spec: "CommandSpec", argv: list,
                  script: bytes) -> str | None:
        """Called by the script bridge before redis.call/pcall runs a command: the error text
        the call raises instead, or None. Only rules with IN-SCRIPT yes (always ERROR) apply."""
        if not self.rules:
            return None
        rule = self._first_firing(caller, spec, argv, True, script)
        return None if rule is None else rule.error


def _once_each(rules: Any) -> Any:
    """The merged rules without repeats (a rule naming both CLIENT and CLIENT|KILL is in both
    lists), so each match is counted once."""
    last = None
    for rule in rules:
        if rule is not last:
            yield rule
            last = rule


def _disruption_for(rule: Rule) -> Any:
    """A function wrapping a reply in what `rule` does to it on the connection."""
    action = rule.action
    if action == "DELAY":
        return lambda reply: Disruption((reply,), hold_ms=rule.delay_ms())
    if action == "PARTIAL":
        return lambda reply: Disruption((reply,), partial=True, close=True)
    if action == "CUT":
        return lambda reply: Disruption((reply,), cut=rule.size, close=True)
    if action == "SLICE":
        return lambda reply: Disruption((reply,), slice_bytes=rule.size, slice_ms=rule.ms)
    if action == "BANDWIDTH":
        piece = max(1, rule.size // _BANDWIDTH_PIECES_PER_S)
        pause_ms = piece * 1000 / rule.size
        return lambda reply: Disruption((reply,), slice_bytes=piece, slice_ms=pause_ms)
    if action == "SLOW-CLOSE":
        return lambda reply: Disruption((reply,), slow_close_ms=rule.ms)
    return lambda reply: Disruption(send=False, close=True)  # DROP-REPLY


def _deferred(block: Block, make: Any) -> Block:
    """A blocking command's Block whose eventual reply (served or timed out) is disrupted."""

    def retry(client: "Client", key: bytes) -> Any:
        reply = block.retry(client, key)
        return None if reply is None else make(reply)

    return Block(block.keys, block.timeout_ms, retry, make(block.timeout_reply),
                 block.retry_when_deleted, block.value_type)


def attach(server: "Server") -> None:
    """With fault-injection on (--fault-injection): MINIRED FAULT may add rules."""
    server.faults = FaultInjector(server)
    server.hooks.connect.append(server.faults.on_connect)
