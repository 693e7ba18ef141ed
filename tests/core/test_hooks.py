"""The engine's hook points as a feature sees them (minired/engine/hooks.py)."""
from __future__ import annotations

from minired.engine import dispatch
from minired.engine.client import Client
from minired.engine.hooks import Features
from minired.engine.server import Server
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK
from minired.startup import load_commands


def test_memory_admission_is_asked_before_commands_with_maxmemory_set():
    load_commands()
    server = Server()  # (no feature attached: nothing but the engine and the hook)
    assert server.memory_admission == server.over_maxmemory  # the engine's own, by default
    asked = []

    def admission() -> bool:  # what eviction would put there: free memory, then answer
        asked.append(True)
        return len(asked) > 1  # still over maxmemory from the second question on

    server.memory_admission = admission
    c = Client(server)
    # Without maxmemory there is no limit: nothing is asked.
    assert dispatch.execute(c, [b"SET", b"k", b"v"]) is OK and not asked
    server.config.set("maxmemory", "100mb")
    assert dispatch.execute(c, [b"SET", b"k", b"v"]) is OK
    assert c.db.get(b"k") == b"v" and len(asked) == 1
    refused = dispatch.execute(c, [b"SET", b"k", b"w"])
    assert type(refused) is RedisError and refused.message == errors.OOM
    assert c.db.get(b"k") == b"v" and len(asked) == 2
    # Every command is asked about (eviction runs before any command, as performEvictions
    # does), but one not flagged denyoom runs even over maxmemory.
    assert dispatch.execute(c, [b"GET", b"k"]) == b"v" and len(asked) == 3
    assert dispatch.execute(c, [b"DEL", b"k"]) == 1 and len(asked) == 4


def test_features_read_as_none_until_a_feature_sets_them():
    features = Features()
    assert features.anything is None
    features.pubsub = registry = object()
    assert features.pubsub is registry
    assert "pubsub" in repr(features)
    # A dunder stays missing: copy, pickle and inspect probe for them.
    assert not hasattr(features, "__wrapped__")
