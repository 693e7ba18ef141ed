"""Random waiters and writes end the waits as in Redis: the short, fixed-seed version of
`bench/grammar_fuzz.py --blocking`. Each case blocks one or two clients (BLPOP, BLMOVE,
BZMPOP, XREADGROUP BLOCK ...) on both servers, runs random writes, and compares every reply,
the waiters' included, and what the keys hold at the end (tests/support/blocking_diff.py)."""
from __future__ import annotations

import random

import pytest

from tests.support.blocking_diff import Runner, generate_case, shrink_case

SEEDS = range(3)
CASES_PER_SEED = 120
WRITES = 8


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_waits_end_as_in_redis(diff, real_redis, mini, seed):
    runner = Runner(real_redis.port, mini.port)
    try:
        rng = random.Random(seed)
        for _ in range(CASES_PER_SEED):
            mismatch = runner.run(generate_case(rng, WRITES))
            if mismatch is not None:
                pytest.fail(shrink_case(runner, mismatch).describe(), pytrace=False)
    finally:
        runner.close()
