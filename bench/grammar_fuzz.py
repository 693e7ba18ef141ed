"""Grammar-driven differential fuzzing: random commands built from real Redis 7.0's COMMAND DOCS,
run in lockstep on a real redis-server and on minired, replies compared.

    python bench/grammar_fuzz.py [--seconds 120] [--seed N] [--commands zadd,zrange]
                                 [--skip xgroup|setid] [--sequence-length 12]
                                 [--markdown findings.md] [--resp3]
                                 [--notifications KEA] [--blocking]

For each distinct mismatch (command + a short signature of the difference) prints the shortest
sequence found that reproduces it and both replies; then a summary. A run is reproducible from
its printed seed.

--notifications FLAGS sets notify-keyspace-events on both servers (KEA, KEAnm, Em ...) and
also compares, after each command, the exact (channel, message) list a `PSUBSCRIBE __key*__:*`
subscriber of each server received (tests/support/notify_diff.py); the background expiry
cycle is off on both then, so that expiry is lazy and lands on the same command, and every
sequence starts with k1 expired (notify_diff.EXPIRED_SETUP).

--blocking fuzzes blocking commands instead (tests/support/blocking_diff.py): for each case a
waiter on another connection (sometimes two) blocks in BLPOP, BLMOVE, BZMPOP, XREADGROUP BLOCK
... on the case's keys, once INFO clients shows it blocked on both servers random writes run
(pushes, XADD, RENAME, MULTI, SWAPDB, EVAL, CLIENT UNBLOCK ...), and the waiters' replies and
the keys' final contents are compared. Waits are forever except in the cases about a timeout,
whose writes start once it fired: no clock decides anything. --commands, --skip and
--notifications do not apply; --sequence-length is the number of writes.

The generator and the comparison live in tests/support/grammar.py and
tests/support/grammar_diff.py, shared with tests/core/test_grammar_diff.py.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.support.blocking_diff import Runner, generate_case, shrink_case
from tests.support.grammar import exclusion_reason, load_grammars
from tests.support.grammar_diff import (
    SETUP,
    Mismatch,
    OutOfStep,
    RedisFailure,
    ServerPair,
    comparable_commands,
    generate_sequence,
    minired_commands,
    run_sequence,
    shrink,
)
from tests.support.notify_diff import EventWatch, with_expired_keys
from tests.support.respclient import RawClient
from tests.support.servers import MiniredProcess, RedisServer


class Servers:
    """A real redis-server and a minired subprocess; minired is restarted when it dies."""

    protocol = 2  # --resp3 sets 3 for every pair of servers of the run
    notifications = ""  # --notifications: notify-keyspace-events, and events compared

    def __init__(self) -> None:
        # The event watch turns the expiry cycle off with DEBUG.
        extra = ("--enable-debug-command", "yes") if self.notifications else ()
        self.redis = RedisServer(*extra).start()
        self.minired = MiniredProcess(*extra).start()
        self.pair = ServerPair(self.redis.port, self.minired.port, protocol=self.protocol)
        self.watch = self._watch()

    def _watch(self) -> EventWatch | None:
        if not self.notifications:
            return None
        return EventWatch(self.redis.port, self.minired.port, self.notifications)

    def _rewatch(self) -> None:
        """New subscribers: the old ones may hold late messages, or a dead server's socket."""
        if self.watch is not None:
            self.watch.close()
            self.watch = self._watch()

    def restart_minired(self) -> None:
        self.minired.stop()
        self.minired = MiniredProcess(*self.minired.extra_args).start()
        self.pair.close()
        self.pair = ServerPair(self.redis.port, self.minired.port, protocol=self.protocol)
        self._rewatch()

    def recover(self) -> None:
        """After a timeout the connections may hold late replies: start them afresh, and
        minired too if it no longer answers."""
        try:
            self.pair.reconnect()
            self.pair.minired.call("PING")
            self._rewatch()
        except (OSError, ConnectionError):
            self.restart_minired()

    def stop(self) -> None:
        if self.watch is not None:
            self.watch.close()
        self.pair.close()
        self.minired.stop()
        self.redis.stop()


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--commands", default="",
                        help="comma-separated command names (subcommands as object|encoding)")
    parser.add_argument("--skip", default="",
                        help="comma-separated command names left out (known mismatches)")
    parser.add_argument("--sequence-length", type=int, default=12)
    parser.add_argument("--markdown", default="", help="also write the findings to this file")
    parser.add_argument("--resp3", action="store_true",
                        help="compare RESP3 replies (HELLO 3 on every connection)")
    parser.add_argument("--notifications", default="", metavar="FLAGS",
                        help="set notify-keyspace-events to FLAGS (KEA, KEAnm ...) and compare "
                             "each command's keyspace events too")
    parser.add_argument("--blocking", action="store_true",
                        help="fuzz blocking commands: a waiter blocks, random writes, its reply "
                             "and the keys' final contents compared")
    return parser.parse_args()


def _select(args, grammars, implemented) -> tuple[list[str], list[str], list[str]]:
    compared, excluded, unimplemented = comparable_commands(grammars, implemented)
    if args.commands:
        wanted = {c.strip().lower() for c in args.commands.split(",") if c.strip()}
        unknown = wanted - set(grammars)
        if unknown:
            sys.exit(f"unknown commands: {sorted(unknown)}")
        compared = [c for c in compared if c in wanted]
    skipped = {c.strip().lower() for c in args.skip.split(",") if c.strip()}
    compared = [c for c in compared if c not in skipped]
    return compared, excluded, unimplemented


def _fuzz(servers: Servers, grammars, names, inner_names, args,
          rng) -> tuple[dict[str, Mismatch], int]:
    findings: dict[str, Mismatch] = {}
    deadline = time.monotonic() + args.seconds
    sequences = 0
    previous: list[list[str]] = []
    while time.monotonic() < deadline:
        sequence = generate_sequence(rng, grammars, names, args.sequence_length, inner_names)
        if servers.watch is not None:
            sequence = with_expired_keys(sequence, len(SETUP))
        sequences += 1
        try:
            mismatch = run_sequence(servers.pair, sequence, grammars, servers.watch)
        except RedisFailure as exc:
            print(f"redis did not answer (generator problem): {exc}", flush=True)
            servers.recover()
            continue
        except OutOfStep as exc:
            print(f"{exc} after the previous sequence:", flush=True)
            print("\n".join("  " + " ".join(argv) for argv in previous), flush=True)
            servers.recover()
            continue
        finally:
            previous = sequence
        if mismatch is None or mismatch.signature in findings:
            if mismatch is not None and "died" in mismatch.signature:
                servers.recover()
            continue
        if "died" in mismatch.signature:
            servers.recover()
            findings[mismatch.signature] = mismatch
        else:
            findings[mismatch.signature] = shrink(servers.pair, mismatch, grammars,
                                                  servers.watch)
        finding = findings[mismatch.signature]
        if not _reproduces_on_fresh_servers(finding, grammars):
            print("(does not reproduce on fresh servers: it depends on state that outlived "
                  "FLUSHALL in an earlier sequence)", flush=True)
        print(finding.describe(), "\n", flush=True)
    return findings, sequences


def _fuzz_blocking(servers: Servers, args, rng) -> tuple[dict, int]:
    findings: dict = {}
    deadline = time.monotonic() + args.seconds
    cases = 0
    runner = Runner(servers.redis.port, servers.minired.port, servers.protocol)
    try:
        while time.monotonic() < deadline:
            case = generate_case(rng, args.sequence_length)
            cases += 1
            mismatch = runner.run(case)
            if mismatch is None or mismatch.signature in findings:
                continue
            if servers.minired.proc is not None and servers.minired.proc.poll() is not None:
                findings[mismatch.signature] = mismatch  # minired died: nothing to shrink on
                servers.restart_minired()
                runner.close()
                runner = Runner(servers.redis.port, servers.minired.port, servers.protocol)
            else:
                findings[mismatch.signature] = shrink_case(runner, mismatch)
            print(findings[mismatch.signature].describe(), "\n", flush=True)
    finally:
        runner.close()
    return findings, cases


def _reproduces_on_fresh_servers(finding: Mismatch, grammars) -> bool:
    """Hidden server state (a stale errno, a config) can survive FLUSHALL and make a shrunk
    sequence look like a reproduction when it is not one."""
    if "died" in finding.signature:
        return True
    fresh = Servers()
    try:
        again = run_sequence(fresh.pair, finding.sequence, grammars, fresh.watch)
    except (RedisFailure, OutOfStep):
        return False
    finally:
        fresh.stop()
    return again is not None and again.signature == finding.signature


def _markdown(findings: dict[str, Mismatch], seed: int) -> str:
    out = [f"# grammar_fuzz findings (seed {seed})", ""]
    for signature, mismatch in sorted(findings.items()):
        out += [f"## {signature}", "", "```"]
        out += [" ".join(repr(a) if a == "" or " " in a else a for a in argv)
                for argv in mismatch.sequence]
        out += ["```", f"- redis:   `{mismatch.redis_reply!r}`",
                f"- minired: `{mismatch.minired_reply!r}`", ""]
    return "\n".join(out)


def main() -> int:
    args = _parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"seed {seed}" + (" (RESP3)" if args.resp3 else "")
          + (f" (notify-keyspace-events {args.notifications})" if args.notifications else "")
          + (" (blocking)" if args.blocking else ""),
          flush=True)
    Servers.protocol = 3 if args.resp3 else 2
    Servers.notifications = args.notifications
    servers = Servers()
    if args.blocking:
        try:
            findings, cases = _fuzz_blocking(servers, args, random.Random(seed))
        finally:
            servers.stop()
        print(f"seed {seed}: {cases} blocking cases of {args.sequence_length} writes, "
              f"{len(findings)} distinct mismatches")
        for signature in sorted(findings):
            print(f"  {signature}")
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write("\n\n".join(["# grammar_fuzz --blocking findings (seed "
                                       f"{seed})"] + [f"```\n{m.describe()}\n```"
                                                      for m in findings.values()]))
        return 0
    try:
        grammars = load_grammars(RawClient(servers.redis.port))
        implemented = minired_commands(servers.pair.minired)
        names, excluded, unimplemented = _select(args, grammars, implemented)
        inner_names = sorted(set(grammars) & implemented)
        findings, sequences = _fuzz(servers, grammars, names, inner_names, args,
                                    random.Random(seed))
    finally:
        servers.stop()
    print(f"seed {seed}: {sequences} sequences of {args.sequence_length} commands, "
          f"{len(names)} commands exercised, {len(findings)} distinct mismatches")
    print(f"excluded ({len(excluded)}): " + ", ".join(
        f"{n} ({exclusion_reason(n)})" for n in excluded))
    print(f"not implemented by minired ({len(unimplemented)}): " + ", ".join(unimplemented))
    for signature in sorted(findings):
        print(f"  {signature}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(_markdown(findings, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
