"""Generated Lua scripts (tests/support/lua_fuzz.py) give byte-for-byte Redis's replies on both
of minired's bridges, and minired answers after each: the short, fixed-seed version of
bench/lua_fuzz.py."""
from __future__ import annotations

import random

import pytest

from tests.support.lua_fuzz import LuaFuzzPair, generate

SEEDS = range(3)
SCRIPTS_PER_SEED = 40


@pytest.fixture
def pair(diff, real_redis, mini):
    """Raw connections on the servers `diff` has just flushed, with the keys scripts read."""
    servers = LuaFuzzPair(real_redis.port, mini.port)
    servers.reset()
    try:
        yield servers
    finally:
        servers.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_scripts_match_redis(pair, bridge, seed):
    rng = random.Random(seed)
    for _ in range(SCRIPTS_PER_SEED):
        script, protocol, function = generate(rng)
        mismatch = pair.run(script, protocol, function)
        if mismatch is not None:
            if not mismatch.died:
                mismatch = pair.shrink(mismatch)
            pytest.fail(mismatch.describe())
