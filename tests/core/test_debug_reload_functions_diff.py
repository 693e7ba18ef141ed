"""DEBUG RELOAD and function libraries compared with Redis 7.0: a reload empties the libraries
with the keys and loads the file's back; NOFLUSH keeps them, so a library in the file that is
already loaded fails the load, unless MERGE lets the file's replace it."""
from __future__ import annotations

import pytest

from tests.support.differential import Differential
from tests.support.servers import MiniredProcess, RedisServer

LIB = "#!lua name={0}\nredis.register_function('{0}', function() return 'hello' end)"


@pytest.fixture
def both(tmp_path):
    args = ("--enable-debug-command", "yes")
    with RedisServer(*args) as redis, MiniredProcess(*args, "--dir", str(tmp_path)) as mini:
        diff = Differential(redis.port, mini.port)
        try:
            yield diff
        finally:
            diff.close()


def test_debug_reload_options_with_function_libraries(both):
    both.check("FUNCTION", "LOAD", LIB.format("test"))
    both.check("DEBUG", "RELOAD")
    both.check("FCALL", "test", "0")
    both.check("DEBUG", "RELOAD", "NOFLUSH")
    both.check("DEBUG", "RELOAD", "NOFLUSH", "MERGE")
    both.check("FUNCTION", "LIST")
    both.check("FUNCTION", "DELETE", "test")
    both.check("SET", "x", "1")
    both.check("FUNCTION", "LOAD", LIB.format("test1"))
    both.check("DEBUG", "RELOAD")
    both.check("FUNCTION", "LOAD", LIB.format("test2"))
    both.check("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE")
    both.check("FCALL", "test1", "0")
    both.check("FCALL", "test2", "0")
    both.check("DEBUG", "RELOAD", "NOSAVE")
    both.check("FCALL", "test2", "0")
    both.check("GET", "x")
