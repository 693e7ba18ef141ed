"""The fixtures of a test module that injects faults into one shared embedded minired."""
from __future__ import annotations

import pytest

from minired.embed import EmbeddedServer


def fault_server_fixtures():
    """`srv`, a module's EmbeddedServer with fault injection on, and `_clean` (autouse), which
    clears its faults and data around each test so that no fault outlives the test that set it.

    Bind both at module level (`srv, _clean = fault_server_fixtures()`): pytest finds fixtures
    by the module's names, and a fixture defined here once serves each module its own server.
    """
    @pytest.fixture(scope="module")
    def srv():
        server = EmbeddedServer(fault_injection=True).start()
        try:
            yield server
        finally:
            server.stop()

    @pytest.fixture(autouse=True)
    def _clean(srv):
        srv.faults.reset()
        srv.flushall()
        yield
        srv.faults.reset()

    return srv, _clean
