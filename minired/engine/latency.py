"""Per-command latency histograms, for LATENCY HISTOGRAM and INFO's Latencystats section.

Redis records each call's duration in an hdr_histogram (1 ns to 1 s, two significant digits)
and reports it in two ways: LATENCY HISTOGRAM walks it with a logarithmic iterator (buckets
doubling from 1024 ns, each named by its highest value in microseconds, counts cumulative), and
INFO prints the configured percentiles. minired keeps, per command, a list of SLOTS counters
indexed by the duration's bit length: dispatch.call adds one to one slot per call, which is all
the recording costs.

That is coarser than hdr_histogram in two places, both in the values only (which commands
appear, the counts and the reply shapes are Redis's):
- a duration in the lowest 1/128 of an octave, which Redis counts in the bucket below, lands in
  the bucket that holds the rest of its octave;
- a percentile is the top (p0: the bottom) of its octave rather than of its 1% sub-bucket.

Histograms live in each server's counters for each command (table.CommandStats), beside
the INFO commandstats counters. `latency-tracking no` sets each histogram to None, which
call() skips, and keeps the counts aside: Redis still reports histograms recorded before
tracking stopped (`recorded`).
"""
from __future__ import annotations

from typing import Iterable

# The latency monitor (Redis's latency.c): per event, the last 160 one-second samples of
# durations past latency-monitor-threshold and the highest one seen.
_SERIES_SAMPLES = 160


class EventSeries:
    __slots__ = ("samples", "max")

    def __init__(self) -> None:
        self.samples: list[list[int]] = []  # [unix seconds, milliseconds], oldest first
        self.max = 0


def add_sample(server, event: str, nanoseconds: int) -> None:
    """latencyAddSample: one sample per second per event, the highest of that second."""
    milliseconds = nanoseconds // 1_000_000
    now = server.clock.ms() // 1000
    series = server.latency_events.get(event)
    if series is None:
        series = server.latency_events[event] = EventSeries()
    series.max = max(series.max, milliseconds)
    if series.samples and series.samples[-1][0] == now:
        series.samples[-1][1] = max(series.samples[-1][1], milliseconds)
        return
    series.samples.append([now, milliseconds])
    if len(series.samples) > _SERIES_SAMPLES:
        del series.samples[0]

SLOTS = 64  # bit lengths of any duration perf_counter_ns can measure

# Redis clamps durations to [1 ns, 1 s] (LATENCY_HISTOGRAM_MIN_VALUE/MAX_VALUE). These are the
# lowest and highest values hdr_histogram reports for a clamped 1 s.
_CLAMPED_LOWEST = 998_244_352
_CLAMPED_HIGHEST = 1_002_438_655
# The logarithmic iterator's buckets: 1024 ns doubling, twenty of them below the 1 s clamp,
# each reported as the highest value of its level (level + its sub-bucket's width - 1) in
# microseconds; what lies above the last one is reported once, as the histogram's highest
# trackable value.
_LOG_BUCKETS = 20
_BUCKET_USEC = [((1024 << k) + (8 << k) - 1) // 1000 for k in range(_LOG_BUCKETS)]
_OVERFLOW_USEC = ((1 << 30) - 1) // 1000


_EMPTY = [0] * SLOTS


def recorded(stats) -> list:
    """A command's counts (its table.CommandStats), whether tracking is on or off."""
    histogram = stats.latency_histogram
    if histogram is None:
        histogram = stats.kept_histogram
    return histogram if histogram is not None else _EMPTY


def reset(server) -> None:
    """CONFIG RESETSTAT: Redis frees every histogram."""
    tracking = server.config.get("latency-tracking") == "yes"
    for stats in server.command_stats:
        stats.latency_histogram = [0] * SLOTS if tracking else None
        stats.kept_histogram = None


def set_tracking(server, enabled: bool) -> None:
    """CONFIG SET latency-tracking: stop or resume recording, keeping what was recorded."""
    for stats in server.command_stats:
        if enabled and stats.latency_histogram is None:
            stats.latency_histogram = stats.kept_histogram or [0] * SLOTS
            stats.kept_histogram = None
        elif not enabled and stats.latency_histogram is not None:
            stats.kept_histogram = stats.latency_histogram
            stats.latency_histogram = None


def _log_bucket(slot: int) -> int:
    """The iterator's bucket (0 to _LOG_BUCKETS, the last for beyond them) of a slot."""
    return min(max(slot - 10, 0), _LOG_BUCKETS)


def cumulative_buckets(histogram: list) -> dict[int, int]:
    """LATENCY HISTOGRAM's histogram_usec: each non-empty bucket's highest value in
    microseconds -> the calls that took up to that long."""
    per_bucket = [0] * (_LOG_BUCKETS + 1)
    for slot, count in enumerate(histogram):
        if count:
            per_bucket[_log_bucket(slot)] += count
    buckets = {}
    total = 0
    for bucket, count in enumerate(per_bucket):
        if count:
            total += count
            usec = _BUCKET_USEC[bucket] if bucket < _LOG_BUCKETS else _OVERFLOW_USEC
            buckets[usec] = total
    return buckets


def value_at_percentile(histogram: list, percentile: float) -> int:
    """Nanoseconds, as hdr_value_at_percentile: the first slot whose cumulative count reaches
    the percentile's share of the calls, read at its top (its bottom for the 0th)."""
    total = sum(histogram)
    wanted = min(max(int(min(percentile, 100.0) / 100 * total + 0.5), 1), total)
    seen = 0
    for slot, count in enumerate(histogram):
        seen += count
        if seen >= wanted:
            bits = max(slot, 1)  # 0 ns counts as 1 ns, as Redis clamps it
            if percentile == 0.0:
                return min(1 << (bits - 1), _CLAMPED_LOWEST)
            return min((1 << bits) - 1, _CLAMPED_HIGHEST)
    return 0


def percentiles_line(name: str, histogram: list, percentiles: list[str]) -> str:
    """One INFO Latencystats line; `percentiles` as latency-tracking-info-percentiles shows
    them (Redis's %f with the trailing zeros trimmed)."""
    values = ",".join(f"p{shown}={value_at_percentile(histogram, float(shown)) / 1000:.3f}"
                      for shown in percentiles)
    return f"latency_percentiles_usec_{name}:{values}"


def info_lines(config, commands: Iterable) -> list[str]:
    """INFO's Latencystats section, for every command with calls recorded: `commands` gives
    (name, its CommandStats)."""
    if config.get("latency-tracking") != "yes":
        return []  # Redis shows the title alone; histograms recorded before stay for LATENCY
    shown = config.get("latency-tracking-info-percentiles").split()
    return [percentiles_line(name, stats.latency_histogram, shown)
            for name, stats in commands if stats.latency_histogram is not None
            and any(stats.latency_histogram)]
