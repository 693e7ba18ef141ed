"""INFO's instantaneous_* rates, sampled as Redis's serverCron samples them, and the memory
minired held once started (used_memory_startup).

Every 100 ms a timer on the server's loop reads each counter and keeps its rate per second since
the previous reading in a ring of the last 16; INFO shows the ring's mean (Redis's
trackInstantaneousMetric and getInstantaneousMetric). The command path pays nothing: the
counters read are the ones INFO's totals already show.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from minired.engine.server import used_memory
from minired.engine.table import calls_total

if TYPE_CHECKING:
    from minired.engine.server import Server

SAMPLE_PERIOD = 0.1  # serverCron's run_with_period(100)
SAMPLES = 16  # STATS_METRIC_SAMPLES


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class Rate:
    """One counter's recent rates per second."""

    __slots__ = ("samples", "index", "last_ms", "last_reading")

    def __init__(self, now_ms: int, reading: int) -> None:
        self.samples = [0] * SAMPLES
        self.index = 0
        self.last_ms = now_ms
        self.last_reading = reading

    def track(self, now_ms: int, reading: int) -> None:
        if reading < self.last_reading:
            # CONFIG RESETSTAT zeroed the counter: Redis forgets the samples then too.
            self.samples = [0] * SAMPLES
            self.index = 0
        else:
            elapsed = now_ms - self.last_ms
            per_second = (reading - self.last_reading) * 1000 // elapsed if elapsed > 0 else 0
            self.samples[self.index] = per_second
            self.index = (self.index + 1) % SAMPLES
        self.last_ms = now_ms
        self.last_reading = reading

    def mean(self) -> int:
        return sum(self.samples) // SAMPLES


class Metrics:
    """Per-server sampler; INFO reads `ops`, `input_bytes` and `output_bytes`."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.startup_memory = used_memory()
        stats = server.stats
        now = _now_ms()
        self.ops = Rate(now, calls_total(server))
        self.input_bytes = Rate(now, stats.net_input_bytes)
        self.output_bytes = Rate(now, stats.net_output_bytes)
        self._timer: asyncio.TimerHandle | None = None
        self.stopped = False

    def sample(self) -> None:
        stats = self.server.stats
        now = _now_ms()
        self.ops.track(now, calls_total(self.server))
        self.input_bytes.track(now, stats.net_input_bytes)
        self.output_bytes.track(now, stats.net_output_bytes)

    def _tick(self) -> None:
        self.sample()
        self.start()

    def start(self) -> None:
        # A server driven in-process without a loop (the benchmarks' harnesses) never samples.
        loop = self.server.loop
        if not self.stopped and loop is not None:
            self._timer = loop.call_later(SAMPLE_PERIOD, self._tick)

    def stop(self) -> None:
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()


def attach(server: "Server") -> None:
    metrics = Metrics(server)
    server.features.metrics = metrics
    server.hooks.start.append(metrics.start)
    server.hooks.shutdown.append(metrics.stop)
