"""What a background child tells its parent while it saves: Redis's childinfo.c.

A forked child writing a snapshot or an AOF base reports, over a pipe, how many keys it has
saved and how much copy-on-write memory it holds (its private dirty pages, which Redis reads
from /proc as zmalloc_get_private_dirty does): at most once a second while it works
(CHILD_INFO_TYPE_CURRENT_INFO, checked every 1024 keys as rdbSaveDb does), and once more when it
is done (CHILD_INFO_TYPE_RDB_COW_SIZE / _AOF_COW_SIZE). The parent drains the pipe from its tick
and once the child has exited with success; INFO's current_cow_size, current_cow_peak,
current_save_keys_processed, current_fork_perc, rdb_last_cow_size and aof_last_cow_size are
what it read. The per-key hook also spends rdb-key-save-delay (debugDelay), as
rdbSaveKeyValuePair does after each key, in a child or on the loop.
"""
from __future__ import annotations

import logging
import os
import struct
import time

from minired import LOG_VERBOSE

log = logging.getLogger("minired")

CURRENT_INFO = 0  # CHILD_INFO_TYPE_CURRENT_INFO
AOF_COW_SIZE = 1  # CHILD_INFO_TYPE_AOF_COW_SIZE
RDB_COW_SIZE = 2  # CHILD_INFO_TYPE_RDB_COW_SIZE

COW_DUTY_CYCLE = 100  # CHILD_COW_DUTY_CYCLE: a reading at most 1% of the child's time
REPORT_EVERY_KEYS = 1024
REPORT_SECONDS = 1.0

# kind, keys, cow bytes, when the cow was read (CLOCK_MONOTONIC, microseconds): one write of
# less than PIPE_BUF bytes, so the parent reads whole messages or a short tail it keeps.
_MESSAGE = struct.Struct("<BQQQ")


def _monotonic_us() -> int:
    return time.monotonic_ns() // 1000


def private_dirty() -> int:
    """The bytes of this process's private dirty pages (zmalloc_get_private_dirty): in a forked
    child, the memory copy-on-write gave it. 0 where /proc cannot tell."""
    for path in ("/proc/self/smaps_rollup", "/proc/self/smaps"):
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError:
            continue
        total = 0
        for line in text.splitlines():
            if line.startswith(b"Private_Dirty:"):
                total += int(line.split()[1]) * 1024  # kB
        return total
    return 0


class ChildReporter:
    """The child's end of the pipe (sendChildInfoGeneric)."""

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name  # "RDB" or "AOF rewrite", for the log
        self.cow = 0
        self.cow_updated = 0
        self.cow_cost = 0
        self.peak = 0
        self.readings = 0
        self.cow_sum = 0

    def send(self, kind: int, keys: int) -> None:
        now = _monotonic_us()
        if (kind != CURRENT_INFO or not self.cow_updated
                or now - self.cow_updated > self.cow_cost * COW_DUTY_CYCLE):
            self.cow = private_dirty()
            self.cow_updated = _monotonic_us()
            self.cow_cost = self.cow_updated - now
            self.peak = max(self.peak, self.cow)
            self.cow_sum += self.cow
            self.readings += 1
            final = kind != CURRENT_INFO
            if self.cow or final:
                log.log(logging.INFO if final else LOG_VERBOSE,
                        "Fork CoW for %s: current %d MB, peak %d MB, average %d MB", self.name,
                        self.cow >> 20, self.peak >> 20, (self.cow_sum // self.readings) >> 20)
        try:
            os.write(self.fd, _MESSAGE.pack(kind, keys, self.cow, self.cow_updated))
        except OSError as exc:  # the parent is gone
            log.warning("Child failed reporting info to parent, exiting. %s", exc.strerror)
            os._exit(1)


class KeyProgress:
    """Called after each key saved (rdbSaveDb's loop): rdb-key-save-delay, and in a child the
    report to the parent, looked at every 1024 keys and sent at most once a second."""

    def __init__(self, delay_us: int, reporter: ChildReporter | None = None) -> None:
        self.delay = delay_us
        self.reporter = reporter
        self.keys = 0
        self.reported_at = 0.0

    def __call__(self) -> None:
        if self.delay:  # (rdb-key-save-delay: tests slowing a save)
            from minired.features.rdb_file import debug_delay

            debug_delay(self.delay)
        keys = self.keys
        self.keys = keys + 1
        if self.reporter is not None and keys % REPORT_EVERY_KEYS == 0:
            now = time.monotonic()
            if now - self.reported_at >= REPORT_SECONDS:
                self.reporter.send(CURRENT_INFO, self.keys)
                self.reported_at = now


class ChildInfo:
    """The parent's view of its child: the pipe's read end and what was read from it
    (receiveChildInfo, updateChildInfo), and the last sizes INFO shows once it is done."""

    def __init__(self) -> None:
        self.fd = -1
        self.buffer = b""
        self.cow_peak = 0
        self.cow = 0
        self.cow_updated = 0  # microseconds, CLOCK_MONOTONIC; 0: no reading yet
        self.keys_processed = 0
        self.keys_total = 0
        self.rdb_last_cow = 0
        self.aof_last_cow = 0

    def open(self, keys_total: int) -> int:
        """A child is about to be forked (openChildInfoPipe, redisFork): the write end, for it."""
        self.close()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.fd = read_end
        self.cow_peak = self.cow = self.cow_updated = self.keys_processed = 0
        self.keys_total = keys_total
        return write_end

    def receive(self) -> None:
        """Drain the pipe, keeping a partial message for the next read."""
        size = _MESSAGE.size
        while self.fd >= 0:
            try:
                data = os.read(self.fd, size * 64)
            except BlockingIOError:
                return
            except OSError:
                return
            if not data:
                return
            self.buffer += data
            whole = len(self.buffer) - len(self.buffer) % size
            for offset in range(0, whole, size):
                self._update(*_MESSAGE.unpack_from(self.buffer, offset))
            self.buffer = self.buffer[whole:]

    def _update(self, kind: int, keys: int, cow: int, cow_updated: int) -> None:
        self.cow_peak = max(self.cow_peak, cow)
        if kind == CURRENT_INFO:
            self.cow = cow
            self.cow_updated = cow_updated
            self.keys_processed = keys
        elif kind == AOF_COW_SIZE:
            self.aof_last_cow = self.cow_peak
        elif kind == RDB_COW_SIZE:
            self.rdb_last_cow = self.cow_peak

    def close(self) -> None:
        """The child is gone (resetChildState, closeChildInfoPipe): no current figures."""
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.buffer = b""
        self.cow_peak = self.cow = self.cow_updated = 0
        self.keys_processed = self.keys_total = 0

    def cow_age(self) -> int:
        """INFO current_cow_size_age: seconds since the child's last reading."""
        if not self.cow_updated:
            return 0
        return max(0, (_monotonic_us() - self.cow_updated) // 1_000_000)

    def fork_percent(self) -> float:
        if not self.keys_total:
            return 0.0
        return self.keys_processed / self.keys_total * 100
