"""CLIENT LIST's reply buffer figures (rbs, rbp) compared with real Redis, as unit/replybufsize
tests them: an idle client's buffer shrinks to 1 KiB once its peak is reset, a busy one's grows
back to 16 KiB."""
from __future__ import annotations

import re
import time

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import debug_server_pair
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def debug_pair():
    # (servers of the module's own: the shared ones refuse DEBUG)
    with debug_server_pair() as pair:
        yield pair


@pytest.fixture(params=("redis", "minired"))
def port(request, debug_pair):
    server = debug_pair[0 if request.param == "redis" else 1]
    admin = RawClient(server.port)
    yield server.port
    admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "RESET")
    admin.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
    admin.call("FLUSHALL")
    admin.close()


def _rbs(admin: RawClient, name: str) -> int:
    for line in admin.call("CLIENT", "LIST").decode().splitlines():
        if f" name={name} " in line:
            return int(re.search(r" rbs=(\d+)", line).group(1))
    raise AssertionError(f"no client {name}")


def test_reply_buffer_shrinks_when_idle_and_grows_when_busy(port):
    admin = RawClient(port)
    assert admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100") == b"OK"
    client = RawClient(port)
    client.call("CLIENT", "SETNAME", "test_client")
    assert _rbs(admin, "test_client") <= 16384
    wait_until(lambda: _rbs(admin, "test_client") == 1024, "the idle client's buffer shrunk")
    admin.call("SET", "bigval", b"x" * 32768)
    assert admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "NEVER") == b"OK"

    def grown() -> bool:
        client.call("GET", "bigval")
        return _rbs(admin, "test_client") == 16384
    wait_until(grown, "the busy client's buffer grown")
    client.close()
    admin.close()



def _figures(reply: bytes) -> tuple[int, int]:
    found = re.search(rb" rbs=(\d+) rbp=(\d+)", reply)
    return int(found.group(1)), int(found.group(2))


def test_a_new_client_s_peak_is_its_full_buffer_until_the_cron_resets_it(port):
    """createClient sets the peak to the buffer's size: rbp=16384 before any reply, kept
    while peaks are never reset. With the default reset time (5 s) the first cron visit
    resets it anyway (Redis 7.0 stamps a new client's reset in seconds and compares it in
    milliseconds), so an idle client's buffer shrinks within a few visits, not after 5 s.
    minired showed rbp=0 at once and shrank the buffer at the first visit."""
    admin = RawClient(port)
    assert admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "NEVER") == b"OK"
    client = RawClient(port)
    assert _figures(client.call("CLIENT", "INFO")) == (16384, 16384)
    time.sleep(0.35)  # three visits or so: the peak fills the buffer, which keeps its size
    assert _figures(client.call("CLIENT", "INFO")) == (16384, 16384)
    client.close()
    assert admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "RESET") == b"OK"
    client = RawClient(port)
    wait_until(lambda: _figures(client.call("CLIENT", "INFO"))[0] == 1024, "the buffer shrunk",
               timeout=3)  # (well before the 5 s reset time)
    client.close()
    admin.close()
