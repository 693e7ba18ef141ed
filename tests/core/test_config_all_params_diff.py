"""Every parameter Redis 7.0 has, checked against real Redis: the names CONFIG GET lists, their
defaults, and what CONFIG SET answers (and CONFIG GET then shows) for probe values of each
type. tests/core/test_server_config.py covers the CONFIG subcommands themselves."""
from __future__ import annotations

import pytest

from minired.engine.config import PARAMS, Config, ConfigError
from tests.support.respclient import Err

# minired's own parameters: hidden (CONFIG GET answers them by exact name only), so that
# CONFIG GET '*' lists Redis's names exactly (unit/introspection CONFIG SETs every one it lists).
_NOT_IN_BOTH = {
    "time-control": "minired's own (MINIRED ADVANCE clock control)",
    "fault-injection": "minired's own (MINIRED FAULT fault injection)",
    "temporary-dir": "minired's own (an EmbeddedServer's directory of its own)",
}

# Defaults that depend on how each server of the suite was started, not on the parameter.
_STARTUP_DEPENDENT = {
    "port": "each server listens on its own free port",
    "dir": "each server runs in a directory of its own",
    "loglevel": "the suite starts real Redis with --loglevel warning",
    "maxclients": "Redis lowers it to what the host's open-file limit allows",
}

# Parameters left out of the CONFIG SET probes, or probed with the accepted values listed only.
_NOT_PROBED = {
    "port": "it moves the shared servers (test_config_listen_diff.py uses servers of its own)",
    "bind": "it moves the shared servers (test_config_listen_diff.py uses servers of its own)",
}
_ONLY_INVALID_OR = {
    # Accepted values are applied to the host: the reply depends on it, not on the parameter.
    "maxclients": ("1", "100"),            # more than the open-file limit fails in Redis
    "oom-score-adj": ("no",),              # other values write /proc/self/oom_score_adj
    "appendonly": ("no",),                 # yes starts writing an AOF in each server's dir
    "watchdog-period": ("0",),             # a period arms Redis's SIGALRM watchdog
}

_GENERIC = ["1", "0", "-1", "abc", "1k", "1kb", "1GB", "", "yes", "NO", "100", "65536",
            "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
            "18446744073709551616", "10%", "+1", "01", " 1", "1 2 3", "1.5", "\u00b2"]
# Memory parameters whose lower bound refuses 1GB-like probes of the generic set too.
_MEMORY_WITH_A_FLOOR = {"proto-max-bulk-len", "client-query-buffer-limit"}
_MEMORY = ["18446744073709551616k", "1" * 127, "1" * 128, "k", "gb", "1bb", "1 k", "0777"]
_SPECIAL = {
    "client-output-buffer-limit": [
        "normal 0 0 0", "normal  0 0 0", "NORMAL 1k 2kb +5", "normal 1 2 ", "replica 1 2 3",
        "master 1 2 3", "slave 1 2 3 pubsub 4 5 6", "normal 0 0 9999999999",
        "normal 0 0 3000000000", "normal 18446744073709551616k 0 0", "normal 1 2 -0",
        "normal 1 2 0x5", "normal 1 2 3 bogus 1 2 3", "normal x 2 3",
        "normal 1 2 3 normal 4 5 6"],
    "oom-score-adj-values": [
        "0 200 3000", "0 200", "1 2 3", "+1 02 -3", "1  2", "1 2 3 4", "-2000 0 2000",
        "1 2 x", "1 2 3 ", "-0 0 0"],
    "shutdown-on-sigint": [
        "save", "NOW", "save now", "now save", "nosave force", "save nosave", "default now",
        "force now save", "save  now", "now now"],
    "latency-tracking-info-percentiles": [
        "50 99 99.9", "1e2", "inf", "nan", "-0", "1e-7", "99.99999999", "1e400", "1e-400",
        "5 ", "5  6", "0x1p3", "1.5e1", "100.0000001", ".5", "5.", "-inf", "infinity", "1,5",
        "0X1A", "0x.8", "1 2 101"],
    "proc-title-template": [
        "{title}", "{port}", "{server-mode}", "{unixsocket}", "{config-file}", "{tls-port}",
        "{listen-addr}", "x {bad}", "{{", "}}", "{", "a{", "{title", "  ", "{title} x",
        "{{title}}", "{}", "{a{port}"],
    "cluster-announce-hostname": ["a_b", "A-b.c", "a" * 255, "a" * 256, "é", "a b"],
    "save": ["3600 1 300 100", "0 1", "3600 0", "03600 02", "+3600 3", " 3600 3", "3600  3 4",
             "3600 9999999999", "9999999999999999999 1", "-0 1", "3600 -0", "0x10 1", "3600 3k"],
    "notify-keyspace-events": ["KEA", "AKE", "g$lshzxetd", "Kx", "nK", "AgK", "Em", "q"],
    "maxmemory-clients": ["0%", "100%", "101%", "-1%", "-0%", "%", "01%", "\u00b2%",
                          "99999999999999999999%", "18446744073709551615"],
    "repl-backlog-size": ["16383", "16384", "1mb"],
    "hz": ["501", "500"],
}
_SPECIAL["shutdown-on-sigterm"] = _SPECIAL["shutdown-on-sigint"]


def _config_get_all(client) -> dict[bytes, bytes]:
    reply = client.call("CONFIG", "GET", "*")
    return dict(zip(reply[::2], reply[1::2]))


def test_config_get_star_lists_redis_names(diff):
    theirs, ours = (set(_config_get_all(c)) for c in (diff.redis, diff.minired))
    allowed = {name.encode() for name in _NOT_IN_BOTH}
    assert theirs - allowed == ours - allowed, (
        f"only in Redis: {sorted(theirs - ours)}; only in minired: {sorted(ours - theirs)}")


def test_hidden_parameters_answer_only_by_exact_name(diff):
    hidden = [name for name, param in PARAMS.items() if param.hidden and name not in _NOT_IN_BOTH]
    assert hidden
    for name in hidden:
        assert diff.check("CONFIG", "GET", name) != []
    diff.check("CONFIG", "GET", "*delay*", pairs=True)
    diff.check("CONFIG", "GET", "use-exit-*", pairs=True)


def test_defaults_equal_redis(diff):
    theirs, ours = (_config_get_all(c) for c in (diff.redis, diff.minired))
    skipped = {name.encode() for name in (*_STARTUP_DEPENDENT, *_NOT_IN_BOTH)}
    differing = {name: (theirs[name], ours.get(name)) for name in theirs
                 if name not in skipped and theirs[name] != ours.get(name)}
    assert not differing


def _outcome(client, name: str, value: str, original: bytes):
    """The reply to CONFIG SET and what CONFIG GET shows after it (a refused value must leave
    the server's own value as it was); the original is put back."""
    reply, shown, _ = client.pipeline([("CONFIG", "SET", name, value), ("CONFIG", "GET", name),
                                       ("CONFIG", "SET", name, original)])
    if isinstance(reply, Err) and shown[1] == original:
        return reply, "<unchanged>"
    return reply, shown[1]


def _more_probes(name: str, answers: dict[str, object]) -> list[str]:
    """Probes for the parameter's type, told by Redis's answers to the generic ones."""
    probes = list(_SPECIAL.get(name, []))
    if answers.get("1GB", [None])[0] == b"OK" or name in _MEMORY_WITH_A_FLOOR:
        probes += _MEMORY
    refusal = answers.get("abc", [None])[0]
    marker = "must be one of the following: "
    if isinstance(refusal, Err) and marker in refusal.message:
        probes += [choice.upper() for choice in refusal.message.split(marker)[1].split(", ")]
    return probes


@pytest.fixture
def forget_probe_traces(diff):
    """Probes lower slowlog-log-slower-than and latency-monitor-threshold for a moment: what the
    servers logged meanwhile must not reach later tests comparing SLOWLOG or LATENCY."""
    yield
    for client in (diff.redis, diff.minired):
        client.call("SLOWLOG", "RESET")
        client.call("LATENCY", "RESET")


@pytest.mark.parametrize("first_letters", ["a-c", "d-l", "m-r", "s-z"])
def test_set_probes_answer_as_redis(diff, forget_probe_traces, first_letters):
    low, high = first_letters.split("-")
    names = [name.decode() for name in _config_get_all(diff.redis)
             if low <= name.decode()[0] <= high and name.decode() not in _NOT_PROBED]
    names += [name for name, param in PARAMS.items()
              if param.hidden and low <= name[0] <= high and name not in _NOT_IN_BOTH]
    mismatches = []
    for name in sorted(names):
        originals = [c.call("CONFIG", "GET", name)[1] for c in (diff.redis, diff.minired)]

        def probe(values: list[str]) -> dict[str, object]:
            answers = {}
            for value in values:
                theirs = answers[value] = _outcome(diff.redis, name, value, originals[0])
                ours = _outcome(diff.minired, name, value, originals[1])
                if theirs != ours:
                    mismatches.append(f"CONFIG SET {name} {value!r}: redis {theirs} "
                                      f"minired {ours}")
            return answers

        if name in _ONLY_INVALID_OR:
            probe([*_ONLY_INVALID_OR[name], "abc", "-1", "", "1 2", "YES"])
        else:
            probe(_more_probes(name, probe(_GENERIC)))
        for client, original in zip((diff.redis, diff.minired), originals):
            assert client.call("CONFIG", "GET", name)[1] == original, f"{name} not restored"
    assert not mismatches, "\n".join(mismatches[:40])


def test_aliases_set_their_parameter(diff):
    for alias, target, value in (("slave-priority", "replica-priority", "7"),
                                 ("min-slaves-max-lag", "min-replicas-max-lag", "3"),
                                 ("cluster-slave-no-failover", "cluster-replica-no-failover",
                                  "yes"),
                                 ("repl-ping-slave-period", "repl-ping-replica-period", "2")):
        original = diff.check("CONFIG", "GET", target)[1]
        diff.check("CONFIG", "SET", alias, value)
        diff.check("CONFIG", "GET", target)
        diff.check("CONFIG", "SET", alias, "bad-value")
        diff.check("CONFIG", "SET", alias, original)
        diff.check("CONFIG", "GET", alias)


def test_startup_values_are_shown_as_redis_shows_them():
    # As redis-server --unixsocketperm 0700 --client-output-buffer-limit "pubsub 1mb 2mb 60".
    config = Config(unixsocketperm="0700", client_output_buffer_limit="pubsub 1mb 2mb 60")
    assert config.get("unixsocketperm") == "700"
    assert config.get("client-output-buffer-limit") == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 60")
    with pytest.raises(ConfigError, match="octal"):
        Config(unixsocketperm="999")
    with pytest.raises(ConfigError, match="TLS"):
        Config(tls_port="6380")  # minired has no TLS listener to open


@pytest.mark.parametrize("pairs", [
    ("MAXMEMORY", "abc"),                       # a value error names the parameter in lowercase
    ("slave-read-only", "maybe"),               # an alias by its own name
    ("maxmemory", "abc", "nope", "1"),          # every name is checked before any value
    ("daemonize", "yes", "nope", "1"),          # the first failing name wins
    ("maxmemory", "1", "maxmemory", "2"),
    ("tls-port", "1", "maxmemory", "abc"),      # TLS is refused only once the rest is valid
    ("tls-cluster", "yes", "maxmemory", "10"),
    ("activedefrag", "yes", "maxmemory", "abc"),
    ("maxmemory", "abc", "activedefrag", "yes"),
])
def test_config_set_reports_the_error_redis_reports(diff, pairs):
    try:
        diff.check("CONFIG", "SET", *pairs)
        diff.check("CONFIG", "GET", "maxmemory")
    finally:
        diff.both("CONFIG", "SET", "maxmemory", "0")
