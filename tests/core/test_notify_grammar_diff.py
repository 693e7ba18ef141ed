"""Random commands for every command minired implements send the same keyspace notifications
as in Redis: the short, fixed-seed version of `bench/grammar_fuzz.py --notifications`. After
each command (once the replies agree) the exact (channel, message) lists two subscribers
received, one per server, are compared (tests/support/notify_diff.py)."""
from __future__ import annotations

import random

import pytest

from tests.core.test_grammar_diff import KNOWN_MISMATCHES
from tests.support.grammar import load_grammars
from tests.support.grammar_diff import (
    SETUP,
    ServerPair,
    comparable_commands,
    generate_sequence,
    minired_commands,
    run_sequence,
    shrink,
)
from tests.support.notify_diff import EventWatch, with_expired_keys
from tests.support.respclient import RawClient
from tests.support.servers import debug_server_pair

SEEDS = range(3)
SEQUENCES_PER_SEED = 100
SEQUENCE_LENGTH = 8


@pytest.fixture(scope="module")
def servers():
    """A pair of the module's own: the event watch turns the expiry cycle off with DEBUG,
    which the shared servers must not be given."""
    with debug_server_pair() as pair:
        yield pair


@pytest.fixture(scope="module")
def grammars(servers):
    client = RawClient(servers[0].port)
    try:
        return load_grammars(client)
    finally:
        client.close()


# n: "new" on every key created; m: "keymiss" on every read lookup that finds nothing.
@pytest.mark.parametrize("flags", ["KEA", "KEAnm"])
@pytest.mark.parametrize("seed", SEEDS)
def test_generated_sequences_notify_as_in_redis(servers, grammars, seed, flags):
    real, mini = servers
    pair = ServerPair(real.port, mini.port)
    watch = EventWatch(real.port, mini.port, flags)
    try:
        implemented = minired_commands(pair.minired)
        compared, _excluded, _unimplemented = comparable_commands(grammars, implemented)
        names = [name for name in compared if name not in KNOWN_MISMATCHES]
        inner_names = sorted(set(grammars) & implemented)
        rng = random.Random(seed)
        for _ in range(SEQUENCES_PER_SEED):
            sequence = with_expired_keys(
                generate_sequence(rng, grammars, names, SEQUENCE_LENGTH, inner_names),
                len(SETUP))
            mismatch = run_sequence(pair, sequence, grammars, watch)
            if mismatch is not None:
                pytest.fail(shrink(pair, mismatch, grammars, watch).describe(), pytrace=False)
    finally:
        watch.close()
        pair.close()
