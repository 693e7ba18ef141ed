"""Differential fuzzing of the Lua bridge: generated scripts run by EVAL on a real redis-server
and on minired, replies compared byte for byte, minired checked alive after each.

    python bench/lua_fuzz.py [--seed N] [--count 5000] [--seconds 0] [--no-shrink]
                             [--pure] [--markdown findings.md]

What a script builds and does is in tests/support/lua_fuzz.py (shared with
tests/scripting/test_lua_fuzz_diff.py). Each distinct mismatch (told apart by the first bytes of
both replies) is shrunk - the script's statements dropped while it still mismatches - and
printed with both replies; a minired that dies or stops answering is a finding too, and is
restarted. --pure runs minired with MINIRED_PURE_PYTHON=1 (the uncompiled build, lupa's
bridge). A run is reproducible from its printed seed.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.support.lua_fuzz import LuaFuzzPair, Mismatch, generate
from tests.support.servers import MiniredProcess, RedisServer


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--count", type=int, default=5000, help="scripts to run")
    parser.add_argument("--seconds", type=float, default=0,
                        help="stop after this long, whatever --count says (0: no limit)")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--pure", action="store_true",
                        help="run minired uncompiled (MINIRED_PURE_PYTHON=1)")
    parser.add_argument("--markdown", default="", help="also write the findings to this file")
    return parser.parse_args()


class Servers:
    def __init__(self, pure: bool) -> None:
        self.pure = pure
        self.redis = RedisServer().start()
        self.minired = self._minired()
        self.pair = LuaFuzzPair(self.redis.port, self.minired.port)
        self.pair.reset()

    def _minired(self) -> MiniredProcess:
        if self.pure:
            os.environ["MINIRED_PURE_PYTHON"] = "1"
        return MiniredProcess().start()

    def restart_minired(self) -> None:
        self.pair.close()
        self.minired.stop()
        self.minired = self._minired()
        self.pair = LuaFuzzPair(self.redis.port, self.minired.port)
        self.pair.reset()

    def stop(self) -> None:
        self.pair.close()
        self.minired.stop()
        self.redis.stop()


def _signature(mismatch: Mismatch) -> tuple:
    if mismatch.died:
        return ("died",)
    return (mismatch.redis_reply[:24], mismatch.minired_reply[:24])


def main() -> int:
    args = _parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"seed {seed}" + (" (pure)" if args.pure else ""), flush=True)
    rng = random.Random(seed)
    servers = Servers(args.pure)
    findings: dict[tuple, Mismatch] = {}
    deadline = time.monotonic() + args.seconds if args.seconds else None
    started = time.monotonic()
    ran = 0
    try:
        for ran in range(1, args.count + 1):
            if deadline is not None and time.monotonic() > deadline:
                ran -= 1
                break
            script, protocol, function = generate(rng)
            try:
                mismatch = servers.pair.run(script, protocol, function)
            except (OSError, ConnectionError) as exc:
                print(f"redis did not answer (generator problem): {exc!r}\n{script}", flush=True)
                servers.stop()
                servers = Servers(args.pure)
                continue
            if mismatch is None:
                continue
            if mismatch.died:
                servers.restart_minired()
            elif not args.no_shrink and _signature(mismatch) not in findings:
                mismatch = servers.pair.shrink(mismatch)
            servers.pair.reset()
            if _signature(mismatch) in findings:
                continue
            findings[_signature(mismatch)] = mismatch
            print(f"# script {ran}: {mismatch.describe()}\n", flush=True)
    finally:
        servers.stop()
    print(f"seed {seed}: {ran} scripts in {time.monotonic() - started:.0f} s, "
          f"{len(findings)} distinct mismatches")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# lua_fuzz findings (seed {seed})\n\n")
            for mismatch in findings.values():
                f.write(f"```\n{mismatch.describe()}\n```\n\n")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
