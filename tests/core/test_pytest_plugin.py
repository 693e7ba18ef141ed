"""The pytest plugin's fixtures, exercised in a generated test suite run by pytester, alone and
under xdist (each worker must get its own server)."""
from __future__ import annotations

pytest_plugins = ("pytester",)

SAMPLE_SUITE = '''
import os

def _record(server):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["RECORD_DIR"], f"{worker}-{os.getpid()}"), "a") as f:
        f.write(f"{server.port}\\n")

def test_client_sets(minired_client, minired_server):
    _record(minired_server)
    assert minired_client.set("shared", "1")

def test_database_is_clean_per_test(minired_client, minired_server):
    _record(minired_server)
    assert minired_client.dbsize() == 0
    minired_client.set("shared", "2")

def test_url(minired_url, minired_server):
    _record(minired_server)
    assert minired_url == f"redis://127.0.0.1:{minired_server.port}"

def test_clock_control(minired_client, minired_server):
    _record(minired_server)
    before = minired_client.execute_command("MINIRED", "CLOCK")
    assert minired_client.execute_command("MINIRED", "ADVANCE", 1000) >= before + 1000
''' + "".join(f'''
def test_isolated_{i}(minired_client, minired_server):
    _record(minired_server)
    assert minired_client.dbsize() == 0
    minired_client.set("k{i}", "v")
''' for i in range(8))


def _ports_by_process(record_dir):
    return {path.name: set(path.read_text().split()) for path in record_dir.iterdir()}


def test_plugin_fixtures(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("RECORD_DIR", str(tmp_path))
    pytester.makepyfile(SAMPLE_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    (ports,) = _ports_by_process(tmp_path).values()
    assert len(ports) == 1  # one server for the whole session


def test_plugin_under_xdist_gives_each_worker_its_own_server(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("RECORD_DIR", str(tmp_path))
    pytester.makepyfile(SAMPLE_SUITE)
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    by_process = _ports_by_process(tmp_path)
    assert len(by_process) == 2
    first, second = by_process.values()
    assert len(first) == len(second) == 1 and not first & second


def test_time_control_can_be_turned_off(pytester):
    pytester.makepyfile('''
def test_off(minired_client):
    import pytest, redis
    with pytest.raises(redis.ResponseError, match="time-control"):
        minired_client.execute_command("MINIRED", "ADVANCE", 1)
''')
    result = pytester.runpytest_subprocess("--minired-no-time-control", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
