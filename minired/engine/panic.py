"""How minired dies as Redis dies: the first lines of Redis's bug report in the log, every log
handler flushed, then the signal Redis dies of (so that a supervisor or a test harness sees the
same exit). DEBUG SEGFAULT/PANIC/ASSERT/OOM and serverPanic's callers use it."""
from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger("minired")


def die(signum: int, *lines: str) -> None:
    log.warning("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===")
    for line in lines:
        log.warning("%s", line)
    log.warning("\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n")
    logging.shutdown()  # every handler flushed: the process ends without unwinding
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def server_panic(message: str, origin: str) -> None:
    """serverPanic: the Guru Meditation lines (origin: Redis's source file), then SIGABRT."""
    die(signal.SIGABRT, "------------------------------------------------",
        "!!! Software Failure. Press left mouse button to continue",
        f"Guru Meditation: {message} #{origin}")
