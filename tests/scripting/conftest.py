"""The two ways minired's scripts reach Python, for tests that must hold on both."""
from __future__ import annotations

import pytest


@pytest.fixture(params=["native", "lupa"])
def bridge(request, mini):
    """Give the shared minired an EVAL sandbox on the requested bridge (restored after): the
    native one (luabridge.pyx: redis.call, the script entry and the result encoder in C, in
    the compiled build) or lupa's with sandbox.lua's own encoder (the fallback)."""
    from minired.scripting.feature import engine_of
    from minired.scripting.sandbox import Sandbox

    def install(server, native):
        engine = engine_of(server)
        engine.scripts.clear()  # compiled functions belong to one Lua state
        engine._eval_sandbox = Sandbox("eval", engine, native=native) if native is not None else None
        return engine._eval_sandbox.native if native is not None else None

    native = mini.call(install, mini.server, request.param == "native")
    if request.param == "native" and not native:
        pytest.skip("the uncompiled build has only lupa's bridge")
    assert native == (request.param == "native")
    yield request.param
    mini.call(install, mini.server, None)
