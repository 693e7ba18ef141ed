"""RESTORE of a payload whose CRC is right but whose encoding is corrupt, compared with Redis
7.0: both answer Bad data format and log the reason at verbose level, as rdbReportError does in
a RESTORE ("Internal error in RDB reading offset 0, function at rdb.c:<line> -> ... integrity
check failed"). Redis names its own source line and the value's type, minired neither."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.support.respclient import RawClient
from tests.support.servers import free_port, redis_server_binary, terminate, wait_for_ping

# A hash ziplist with a valid header and an invalid entry length (the suite's corrupt-dump case).
CORRUPT_HASH = (b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62"
                b"\x00\x04\x14\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xD9\x10\x54\x92\x15\xF5\x5F"
                b"\x52")
LINE = re.compile(r" - Internal error in RDB reading offset 0, function at rdb\.c:\d+ -> "
                  r".*integrity check failed")


def _restore_and_log(command: list, directory) -> tuple:
    port = free_port()
    logfile = directory / "server.log"
    proc = subprocess.Popen([*command, "--port", str(port), "--save", "", "--loglevel", "verbose",
                             "--logfile", str(logfile)], cwd=directory,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ping(port)
        client = RawClient(port)
        reply = client.call("RESTORE", "key", "0", CORRUPT_HASH)
        client.call("PING")  # (the log line is written before the reply)
        client.close()
        return reply, bool(LINE.search(logfile.read_text()))
    finally:
        terminate(proc)


def test_corrupt_restore_logs_the_integrity_failure(tmp_path):
    (tmp_path / "redis").mkdir()
    (tmp_path / "minired").mkdir()
    real = _restore_and_log([redis_server_binary()], tmp_path / "redis")
    mini = _restore_and_log([sys.executable, "-m", "minired"], tmp_path / "minired")
    assert mini == real and real[1]
