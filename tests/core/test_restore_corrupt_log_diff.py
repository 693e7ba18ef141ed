"""RESTORE of a payload whose CRC is right but whose encoding is corrupt, compared with Redis
7.0: both answer Bad data format and log the reason at verbose level, as rdbReportError does in
a RESTORE ("Internal error in RDB reading offset 0, function at rdb.c:<line> -> ... integrity
check failed"). Redis names its own source line, minired does not; the reason, naming the
value's encoding, is the same."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.respclient import RawClient
from tests.support.servers import redis_server_binary, start_on_free_port, terminate

# A hash ziplist with a valid header and an invalid entry length (the suite's corrupt-dump case).
CORRUPT_HASH = (b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62"
                b"\x00\x04\x14\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xD9\x10\x54\x92\x15\xF5\x5F"
                b"\x52")
# The suite's corrupt-dump payloads (CRCs not checked: DEBUG SET-SKIP-CHECKSUM-VALIDATION 1).
PAYLOADS = {
    "hash ziplist, dup records": b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00"
                                 b"\x02\x61\x00\x04\x02\x62\x00\x04\x02\x61\x00\x04\x02"
                                 b"\x64\x00\xFF\x09\x00\xA1\x98\x36\x78\xCC\x8E\x93\x2E",
    "empty zipmap": b"\x09\x02\x00\xFF\x09\x00\xC0\xF1\xB8\x67\x4C\x16\xAC\xE3",
    "quicklist node of 0 bytes": b"\x12\x01\x01\x00\x0a\x00\x8f\xc6\xc0\x57\x1c\x0a\xb3\x3c",
}
LINE = re.compile(r" - Internal error in RDB reading offset 0, function at rdb\.c:\d+ -> "
                  r"(.*integrity check failed.*)")


def _restore_and_log(command: list, directory, payload: bytes = CORRUPT_HASH) -> tuple:
    logfile = directory / "server.log"
    proc, port = start_on_free_port(
        lambda port: [*command, "--port", str(port), "--save", "", "--loglevel", "verbose",
                      "--logfile", str(logfile), "--enable-debug-command", "yes",
                      "--sanitize-dump-payload", "no"],
        cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = RawClient(port)
        client.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1")
        reply = client.call("RESTORE", "key", "0", payload)
        client.call("PING")  # (the log line is written before the reply)
        client.close()
        return reply, LINE.findall(logfile.read_text())
    finally:
        terminate(proc)


def test_corrupt_restore_logs_the_integrity_failure(tmp_path):
    (tmp_path / "redis").mkdir()
    (tmp_path / "minired").mkdir()
    real = _restore_and_log([redis_server_binary()], tmp_path / "redis")
    mini = _restore_and_log([sys.executable, "-m", "minired"], tmp_path / "minired")
    assert mini == real and real[1]


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_corrupt_restore_logs_redis_reason(tmp_path, name):
    (tmp_path / "redis").mkdir()
    (tmp_path / "minired").mkdir()
    real = _restore_and_log([redis_server_binary()], tmp_path / "redis", PAYLOADS[name])
    mini = _restore_and_log([sys.executable, "-m", "minired"], tmp_path / "minired",
                            PAYLOADS[name])
    assert mini == real
    assert real[0].message == "ERR Bad data format"
