"""LATENCY and MEMORY diagnostics and INFO's Latencystats, against a real Redis 7.0.

Durations differ between the two servers, so latency replies are compared by shape: the same
commands, call counts and reply types, bucket names Redis's histogram can produce, cumulative
counts, ordered percentiles. Texts, errors and help are compared byte for byte.
"""
from __future__ import annotations

import re

import pytest

from minired.commands.diagnostics import memory_doctor_report
from minired.embed import EmbeddedServer
from minired.engine import latency
from tests.support.respclient import Double, Map, RawClient, Verbatim
from tests.support.waiting import wait_blocked

# The highest value (microseconds) of each bucket LATENCY HISTOGRAM can name: 1024 ns doubling,
# as hdr_histogram reports them, and the 1 s clamp.
REDIS_BUCKETS = {((1024 << k) + (8 << k) - 1) // 1000 for k in range(20)} | {1073741}


@pytest.fixture
def restore_config(diff):
    """Put back what a test changes on the shared servers."""
    yield
    for name, value in (("latency-tracking", "yes"), ("latency-monitor-threshold", "0"),
                        ("latency-tracking-info-percentiles", "50 99 99.9")):
        diff.both("CONFIG", "SET", name, value)


def _pairs(reply) -> list[tuple]:
    """A map reply (RESP3 Map, RESP2 flat array) as its (key, value) pairs."""
    if isinstance(reply, Map):
        return list(reply)
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return list(zip(reply[::2], reply[1::2]))


def _histograms(reply, protocol: int) -> list[tuple[bytes, int]]:
    """LATENCY HISTOGRAM's (command, calls), after checking every entry's shape."""
    assert isinstance(reply, Map) if protocol == 3 else type(reply) is list
    found = []
    for name, entry in _pairs(reply):
        assert isinstance(entry, Map) if protocol == 3 else type(entry) is list
        fields = _pairs(entry)
        assert [key for key, _ in fields] == [b"calls", b"histogram_usec"]
        calls, buckets = fields[0][1], _pairs(fields[1][1])
        assert type(calls) is int and calls > 0 and buckets
        names = [usec for usec, _ in buckets]
        counts = [count for _, count in buckets]
        assert set(names) <= REDIS_BUCKETS and names == sorted(set(names)), names
        assert counts == sorted(set(counts)) and counts[-1] == calls, buckets
        found.append((name, calls))
    return found


def _run_some_commands(diff) -> None:
    diff.check("SET", "k", "v")
    diff.check("GET", "k")
    diff.check("GET", "nokey")
    diff.both("CLIENT", "ID")


# --- help, arity, unknown subcommands --------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_help_texts_match_redis(diff, protocol):
    diff.hello(protocol)
    diff.check("LATENCY", "HELP")
    diff.check("MEMORY", "HELP")


def test_arity_and_unknown_subcommand_errors(diff):
    for args in [("LATENCY",), ("LATENCY", "DOCTOR", "x"), ("LATENCY", "GRAPH"),
                 ("LATENCY", "GRAPH", "a", "b"), ("LATENCY", "HISTORY"), ("LATENCY", "FOO"),
                 ("LATENCY", "HELP", "x"), ("MEMORY",), ("MEMORY", "STATS", "x"),
                 ("MEMORY", "DOCTOR", "x"), ("MEMORY", "MALLOC-STATS", "x"), ("MEMORY", "FOO"),
                 ("MEMORY", "HELP", "x")]:
        diff.check_error(*args)


# --- LATENCY events: minired records none, as a Redis that saw no spike -------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_latency_doctor_graph_and_events(diff, restore_config, protocol):
    diff.hello(protocol)
    diff.check("LATENCY", "DOCTOR")  # monitoring disabled (threshold 0)
    diff.check("LATENCY", "GRAPH", "command")
    diff.check("LATENCY", "GRAPH", "no-such-event")
    diff.check("LATENCY", "LATEST")
    diff.check("LATENCY", "HISTORY", "command")
    diff.check("LATENCY", "RESET")
    diff.check("LATENCY", "RESET", "command", "fork")
    diff.check("CONFIG", "SET", "latency-monitor-threshold", "100")
    diff.check("LATENCY", "DOCTOR")  # enabled, nothing observed


# --- LATENCY HISTOGRAM ---------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_latency_histogram_names_counts_and_shapes(diff, protocol):
    diff.hello(protocol)
    diff.check("CONFIG", "RESETSTAT")
    _run_some_commands(diff)
    theirs, ours = diff.both("LATENCY", "HISTOGRAM", "get", "SET", "client", "GET", "nosuch")
    # As asked, repeats included; a container brings its subcommands.
    assert _histograms(ours, protocol) == _histograms(theirs, protocol) == [
        (b"get", 2), (b"set", 1), (b"client|id", 1), (b"get", 2)]
    theirs, ours = diff.both("LATENCY", "HISTOGRAM")
    assert sorted(_histograms(ours, protocol)) == sorted(_histograms(theirs, protocol))
    assert (b"config|resetstat", 1) in _histograms(ours, protocol)
    for args in [("nosuch",), ("",), ("client|",), ("get|x",), ("client|id|x",), ("|id",),
                 ("hset",)]:  # unknown, malformed, or never called
        diff.check("LATENCY", "HISTOGRAM", *args)


def test_latency_histogram_in_a_transaction(diff):
    diff.check("CONFIG", "RESETSTAT")
    diff.check("MULTI")
    diff.check("LATENCY", "HISTOGRAM", "set")
    diff.check("EXEC")


def test_a_blocked_command_joins_its_histogram_when_answered(diff, real_redis, mini):
    """A command that blocks is counted in LATENCY HISTOGRAM once its wait is served or
    ended by CLIENT UNBLOCK (updateStatsOnUnblock), never when it times out."""
    waiters = [RawClient(real_redis.port), RawClient(mini.port)]
    try:
        ids = [waiter.call("CLIENT", "ID") for waiter in waiters]
        diff.check("CONFIG", "RESETSTAT")
        for waiter in waiters:  # timed out: not counted
            waiter.call("BLPOP", "none", "0.01")
            waiter.call("XREAD", "BLOCK", "10", "STREAMS", "s", "$")
        for waiter in waiters:  # served: counted
            waiter.send("BLPOP", "l", "0")
        wait_blocked(diff.redis, diff.minired)
        diff.check("LPUSH", "l", "x")
        assert waiters[0].read() == waiters[1].read()
        for waiter in waiters:  # ended by CLIENT UNBLOCK: counted
            waiter.send("BZPOPMIN", "z", "0")
        wait_blocked(diff.redis, diff.minired)
        for client, waiter_id in zip((diff.redis, diff.minired), ids):
            assert client.call("CLIENT", "UNBLOCK", waiter_id) == 1
        assert waiters[0].read() == waiters[1].read()
        theirs, ours = diff.both("LATENCY", "HISTOGRAM", "blpop", "xread", "bzpopmin")
        assert _histograms(ours, 2) == _histograms(theirs, 2) == [(b"blpop", 1),
                                                                  (b"bzpopmin", 1)]
    finally:
        for waiter in waiters:
            waiter.close()


def test_resetstat_forgets_the_histograms(diff):
    _run_some_commands(diff)
    diff.check("CONFIG", "RESETSTAT")
    theirs, ours = diff.both("LATENCY", "HISTOGRAM")
    assert _histograms(ours, 2) == _histograms(theirs, 2) == [(b"config|resetstat", 1)]


def test_tracking_off_keeps_what_was_recorded(diff, restore_config):
    diff.check("CONFIG", "RESETSTAT")
    diff.check("GET", "k")
    diff.check("CONFIG", "SET", "latency-tracking", "no")
    diff.check("GET", "k")
    diff.check("INFO", "latencystats")  # the title alone
    theirs, ours = diff.both("LATENCY", "HISTOGRAM", "get")
    assert _histograms(ours, 2) == _histograms(theirs, 2) == [(b"get", 1)]
    diff.check("CONFIG", "SET", "latency-tracking", "yes")
    diff.check("GET", "k")
    theirs, ours = diff.both("LATENCY", "HISTOGRAM", "get")
    assert _histograms(ours, 2) == _histograms(theirs, 2) == [(b"get", 2)]


# --- INFO latencystats ---------------------------------------------------------------------------

_LINE = re.compile(r"latency_percentiles_usec_([a-z_|-]+):(.*)")


def _latencystats(reply) -> dict[str, list[tuple[str, float]]]:
    text = (reply.text if isinstance(reply, Verbatim) else reply).decode()
    lines = text.split("\r\n")
    assert lines[0] == "# Latencystats" and lines[-1] == ""
    found = {}
    for line in lines[1:-1]:
        name, values = _LINE.fullmatch(line).groups()
        pairs = [value.split("=") for value in values.split(",")] if values else []
        for _, number in pairs:
            assert re.fullmatch(r"\d+\.\d{3}", number), line
        found[name] = [(percentile, float(number)) for percentile, number in pairs]
    return found


@pytest.mark.parametrize("protocol", [2, 3])
def test_info_latencystats_lines(diff, restore_config, protocol):
    diff.hello(protocol)
    diff.check("CONFIG", "RESETSTAT")
    _run_some_commands(diff)
    theirs, ours = diff.both("INFO", "latencystats")
    theirs, ours = _latencystats(theirs), _latencystats(ours)
    assert set(ours) == set(theirs) == {"config|resetstat", "set", "get", "client|id"}
    for name, values in ours.items():
        assert [p for p, _ in values] == [p for p, _ in theirs[name]] == ["p50", "p99", "p99.9"]
        p50, p99, p999 = (number for _, number in values)
        assert 0 < p50 <= p99 <= p999, (name, values)

    diff.check("CONFIG", "SET", "latency-tracking-info-percentiles", "100 0 50.5")
    theirs, ours = diff.both("INFO", "latencystats")
    theirs, ours = _latencystats(theirs), _latencystats(ours)
    assert set(ours) == set(theirs)
    for name, values in ours.items():
        assert [p for p, _ in values] == [p for p, _ in theirs[name]] == ["p100", "p0", "p50.5"]
        p100, p0, p50_5 = (number for _, number in values)
        assert p0 <= p50_5 <= p100

    diff.check("CONFIG", "SET", "latency-tracking-info-percentiles", "")
    theirs, ours = diff.both("INFO", "latencystats")
    assert _latencystats(ours) == _latencystats(theirs)  # names only, no values


def test_latencystats_is_in_all_but_not_default(diff):
    for request in [(), ("all",), ("everything",), ("default",)]:
        theirs, ours = diff.both("INFO", *request)
        titles = [re.findall(rb"^# (\w+)", text, re.M) for text in (theirs, ours)]
        assert titles[1] == titles[0], request


# --- MEMORY --------------------------------------------------------------------------------------

_STATS_DOUBLES = {b"dataset.percentage", b"peak.percentage", b"allocator-fragmentation.ratio",
                  b"allocator-rss.ratio", b"rss-overhead.ratio", b"fragmentation"}


def _stats_shape(reply, protocol: int) -> list:
    """MEMORY STATS's names in order, each value's type; db.N entries in full."""
    assert isinstance(reply, Map) if protocol == 3 else type(reply) is list
    shape = []
    for name, value in _pairs(reply):
        if name.startswith(b"db."):
            shape.append((name, _pairs(value)))
        elif name in _STATS_DOUBLES:
            assert type(value) is (Double if protocol == 3 else bytes), (name, value)
            float(value)
            shape.append((name, "double"))
        else:
            assert type(value) is int, (name, value)
            shape.append((name, "int"))
    return shape


@pytest.mark.parametrize("protocol", [2, 3])
def test_memory_stats_names_order_and_types(diff, protocol):
    diff.hello(protocol)
    theirs, ours = diff.both("MEMORY", "STATS")
    assert _stats_shape(ours, protocol) == _stats_shape(theirs, protocol)
    diff.check("MSET", "a", "1", "b", "2")
    diff.check("SET", "c", "3", "EX", "100")
    diff.check("SELECT", "3")
    diff.check("SET", "d", "4")
    theirs, ours = diff.both("MEMORY", "STATS")
    assert _stats_shape(ours, protocol) == _stats_shape(theirs, protocol)
    stats = dict(_pairs(ours))
    assert stats[b"keys.count"] == dict(_pairs(theirs))[b"keys.count"] == 4
    assert stats[b"total.allocated"] >= stats[b"overhead.total"] > 0


def test_memory_doctor_on_an_empty_instance(diff):
    # A fresh minired: the shared one's process holds what earlier tests grew.
    with EmbeddedServer() as server:
        client = RawClient(server.port)
        try:
            for protocol in (2, 3):
                diff.redis.call("HELLO", protocol)
                client.call("HELLO", protocol)
                assert client.call("MEMORY", "DOCTOR") == diff.redis.call("MEMORY", "DOCTOR")
        finally:
            client.close()


def test_memory_doctor_reports_above_the_empty_threshold():
    mib = 1024 * 1024
    assert memory_doctor_report(4 * mib, 4 * mib, 0).startswith("Hi Sam, this instance is empty")
    assert memory_doctor_report(6 * mib, 6 * mib, 0) == (
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        "occurs on this base.\n")
    report = memory_doctor_report(6 * mib, 10 * mib, 1001)
    header, peak, scripts, footer = report.split("\n\n")
    assert header == "Sam, I detected a few issues in this Redis instance memory implants:"
    assert peak.startswith(" * Peak memory: In the past this instance used more than 150%")
    assert scripts.startswith(" * Many scripts: There seem to be many cached scripts")
    assert footer == "I'm here to keep you safe, Sam. I want to help you.\n"


@pytest.mark.parametrize("protocol", [2, 3])
def test_memory_malloc_stats_is_libc_mallocs_answer(diff, protocol):
    """Redis answers jemalloc's report when built with it (Debian's is), a bulk string saying
    it has none otherwise; minired's allocator is not jemalloc."""
    diff.hello(protocol)
    theirs, ours = diff.both("MEMORY", "MALLOC-STATS")
    assert ours == b"Stats not supported for the current allocator" and type(ours) is bytes
    text = theirs.text if isinstance(theirs, Verbatim) else theirs
    assert text == ours or text.startswith(b"___ Begin jemalloc statistics ___")


# --- the histogram's arithmetic ------------------------------------------------------------------

def _histogram_of(*nanoseconds: int) -> list:
    histogram = [0] * latency.SLOTS
    for duration in nanoseconds:
        histogram[duration.bit_length()] += 1
    return histogram


def test_buckets_and_percentiles_follow_hdr_histogram():
    histogram = _histogram_of(0, 900, 1500, 1500, 3000, 600_000_000, 5_000_000_000)
    assert latency.cumulative_buckets(histogram) == {1: 2, 2: 4, 4: 5, 1073741: 7}
    assert latency.value_at_percentile(histogram, 0.0) == 1  # 0 ns is counted as 1 ns
    assert latency.value_at_percentile(histogram, 50.0) == 2047
    assert latency.value_at_percentile(histogram, 100.0) == 1_002_438_655  # clamped to 1 s
    assert latency.percentiles_line("get", histogram, ["50", "99.9"]) == (
        "latency_percentiles_usec_get:p50=2.047,p99.9=1002438.655")
    assert latency.cumulative_buckets(_histogram_of()) == {}


def test_a_paused_histogram_keeps_its_counts():
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec, stats_of

    server = Server()
    stats = stats_of(server, CommandSpec("probe", None, 1, frozenset()))
    stats.latency_histogram[11] += 1
    latency.set_tracking(server, False)
    assert stats.latency_histogram is None  # what dispatch.call skips
    assert sum(latency.recorded(stats)) == 1
    latency.set_tracking(server, True)
    assert stats.latency_histogram[11] == 1


def test_servers_of_one_process_keep_their_own_command_statistics():
    """Two in-process servers (as an EmbeddedServer beside the pytest plugin's, or the nodes of
    a one-process cluster) each count, reset and track only their own commands, as two
    redis-servers do."""
    with EmbeddedServer() as one, EmbeddedServer() as other:
        a, b = RawClient(one.port), RawClient(other.port)
        try:
            for _ in range(3):
                a.call("SET", "k", "v")
            a.call("GET")  # (rejected: arity)
            b.call("GET", "k")
            stats_a = a.call("INFO", "commandstats").decode()
            stats_b = b.call("INFO", "commandstats").decode()
            assert "cmdstat_set:calls=3," in stats_a and "cmdstat_get:calls=0," in stats_a
            assert "rejected_calls=1" in stats_a.split("cmdstat_get:")[1].split("\r\n")[0]
            assert "cmdstat_set" not in stats_b and "cmdstat_get:calls=1," in stats_b
            assert b.call("CONFIG", "SET", "latency-tracking", "no") == b"OK"
            assert b.call("CONFIG", "RESETSTAT") == b"OK"
            assert "cmdstat_set:calls=3," in a.call("INFO", "commandstats").decode()
            assert b"latency_percentiles_usec_set" in a.call("INFO", "latencystats")
            assert b.call("LATENCY", "HISTOGRAM", "set") == []  # (RESP2: an empty map)
        finally:
            a.close()
            b.close()
