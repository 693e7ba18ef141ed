"""Random commands for every command minired implements, generated from real Redis's COMMAND DOCS
argument trees, give the same replies on both servers (the short, fixed-seed version of
bench/grammar_fuzz.py; the generator is tests/support/grammar.py)."""
from __future__ import annotations

import random

import pytest

from tests.support.grammar import load_grammars
from tests.support.grammar_diff import (
    ServerPair,
    comparable_commands,
    generate_sequence,
    minired_commands,
    run_sequence,
    shrink,
)
from tests.support.respclient import RawClient

SEEDS = range(4)
SEQUENCES_PER_SEED = 50
SEQUENCE_LENGTH = 8

# Commands with a known mismatch that the fuzzer still finds (see bench/grammar_fuzz.py),
# left out of this test until fixed. Remove a name as soon as its command is fixed.
KNOWN_MISMATCHES: set[str] = {
    "command|getkeysandflags",  # key-spec flags (access, update, insert, delete) left out
}


@pytest.fixture(scope="module")
def grammars(real_redis):
    client = RawClient(real_redis.port)
    try:
        return load_grammars(client)
    finally:
        client.close()


@pytest.fixture
def pair(diff, real_redis, mini):
    """Connections with short timeouts (a hang is a failure, not a stuck suite) on the servers
    `diff` has just flushed and reset."""
    servers = ServerPair(real_redis.port, mini.port)
    try:
        yield servers
    finally:
        servers.close()


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("seed", SEEDS)
def test_generated_sequences_match_redis(pair, grammars, seed, protocol):
    if protocol == 3:  # the same commands, answered in RESP3 (what redis-py 8 asks for)
        pair.protocol = 3
        pair.reconnect()
    implemented = minired_commands(pair.minired)
    compared, _excluded, _unimplemented = comparable_commands(grammars, implemented)
    names = [name for name in compared if name not in KNOWN_MISMATCHES]
    inner_names = sorted(set(grammars) & implemented)
    rng = random.Random(seed)
    for _ in range(SEQUENCES_PER_SEED):
        sequence = generate_sequence(rng, grammars, names, SEQUENCE_LENGTH, inner_names)
        mismatch = run_sequence(pair, sequence, grammars)
        if mismatch is not None:
            pytest.fail(shrink(pair, mismatch, grammars).describe(), pytrace=False)


def test_known_mismatches_are_commands_the_fuzzer_compares(pair, grammars):
    """A name left in KNOWN_MISMATCHES after its command was renamed or excluded hides nothing."""
    compared, _excluded, _unimplemented = comparable_commands(
        grammars, minired_commands(pair.minired))
    assert KNOWN_MISMATCHES <= set(compared)
