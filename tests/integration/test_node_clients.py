"""Node's two main Redis clients (ioredis, and node-redis over RESP3) against minired: the same
script prints the same results as against a real Redis. scripts/test.sh installs them."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

NODE_DIR = pathlib.Path(__file__).parent / "node"


def _run(port: int) -> list[str]:
    node = shutil.which("node")
    assert node, "node is needed for this test (scripts/test.sh installs the clients with npm)"
    assert (NODE_DIR / "node_modules" / "ioredis").is_dir(), \
        "run `npm install` in tests/integration/node (scripts/test.sh does)"
    result = subprocess.run([node, str(NODE_DIR / "client_check.js"), str(port)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def test_ioredis_and_node_redis_see_what_they_see_on_redis(real_redis, mini):
    from tests.support.respclient import RawClient

    for port in (real_redis.port, mini.port):
        client = RawClient(port)
        client.call("FLUSHALL")
        client.close()
    expected = _run(real_redis.port)
    assert len(expected) == 17
    assert _run(mini.port) == expected
