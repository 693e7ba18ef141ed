#!/usr/bin/env bash
# Four projects' own test suites, with minired as their redis-server executable:
# python-redis-lock (its conftest starts `redis-server` from PATH), pytest-redis (its tests
# start the server given by --redis-exec), and redis-py's (run against a started server, once
# on minired and once on redis-server: it targets newer servers than 7.0, so minired must pass
# exactly what Redis 7.0 passes). fakeredis 2.41.0's: its real-server tests (`-m real`) once on
# each server, compared the same way; then its Hypothesis state machines, which compare a real
# server with fakeredis command by command, with minired in fakeredis's place (the one change
# made to its files: base.py's make_fake_client and a flush of that side; health checks off). Needs the network (PyPI), so it is not part of the test
# command; run it by hand after changing how minired starts, logs or stops, or what it answers.
#
#   ./scripts/third_party_suites.sh                          # minired from this checkout
#   SERVER=/usr/bin/redis-server ./scripts/third_party_suites.sh   # the control run
#   WORK=/tmp/tp ./scripts/third_party_suites.sh             # reuse downloads and the venv
#   SUITES=redis-py ./scripts/third_party_suites.sh          # some of them only
#
# Versions: python-redis-lock 4.0.1; pytest-redis 4.0.0, the newest sdist that ships its tests
# (the 5.x sdists hold only the package). The 4.0.0 sdist leaves out tests/conftest.py, so the
# fixtures its test_redis.py asks for are declared here (the factories are pytest-redis's API).
# python-redis-lock's suite takes about 6 minutes against redis-server (it waits on lock
# timeouts); its two eventlet tests fail with either server (eventlet lacks select.poll here).
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-$(mktemp -d /tmp/minired-third-party.XXXXXX)}"
SERVER="${SERVER:-minired}"
SUITES=" ${SUITES:-pytest-redis python-redis-lock redis-py fakeredis} "
mkdir -p "$WORK/bin"
cd "$WORK"

if [ ! -d python_redis_lock-4.0.1 ]; then
    pip download --no-binary :all: --no-deps python-redis-lock==4.0.1 -d "$WORK"
    tar xzf python_redis_lock-4.0.1.tar.gz
fi
if [ ! -d pytest_redis-4.0.0 ]; then
    pip download --no-binary pytest-redis --no-deps pytest-redis==4.0.0 -d "$WORK"
    tar xzf pytest_redis-4.0.0.tar.gz
    cat > pytest_redis-4.0.0/tests/conftest.py <<'EOF'
"""Fixtures test_redis.py expects; the 4.0.0 sdist ships the tests without them."""

from pytest_redis import factories

redis_proc2 = factories.redis_proc(port=6381)
redis_nooproc2 = factories.redis_noproc(port=6381, startup_timeout=1)
redis_proc3 = factories.redis_proc(port=6385, password="secretpassword")
redis_nooproc3 = factories.redis_noproc(port=6385, password="secretpassword")
redisdb2 = factories.redisdb("redis_proc2")
redisdb2_noop = factories.redisdb("redis_nooproc2")
redisdb3 = factories.redisdb("redis_proc3")
redisdb3_noop = factories.redisdb("redis_nooproc3")
redis_otherdb = factories.redisdb("redis_proc", dbnum=1)
EOF
fi
if [ ! -x venv/bin/python ]; then
    python3 -m venv --system-site-packages venv
    venv/bin/pip install -q pytest redis mirakuru port-for mock process-tests django \
        django-redis gevent eventlet
    venv/bin/pip install -q --no-deps ./pytest_redis-4.0.0 ./python_redis_lock-4.0.1
fi

if [ "$SERVER" = minired ]; then
    printf '#!/bin/sh\nPYTHONPATH=%s exec python3 -m minired "$@"\n' "$HERE" > bin/redis-server
    chmod +x bin/redis-server
else
    ln -sf "$SERVER" bin/redis-server
fi
export PATH="$WORK/bin:$WORK/venv/bin:$PATH"

serve() {  # serve NAME EXECUTABLE PORT [ARG...]: a server in a fresh folder, its pid in $served
    local dir exe=$2 port=$3
    dir=$(mktemp -d "$WORK/$1.XXXXXX")
    shift 3
    (cd "$dir" && exec "$exe" --port "$port" --save "" "$@" >server.log 2>&1) &
    served=$!
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
}
free_port() {
    python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}
compare_junit() {  # compare_junit CONTROL.xml SUBJECT.xml: fails if a test passed on the control only
    python3 - "$1" "$2" <<'PY'
import sys
import xml.etree.ElementTree as ET

def passed(path):
    return {f"{case.get('classname')}::{case.get('name')}" for case in ET.parse(path).iter("testcase")
            if not any(child.tag in ("failure", "error", "skipped") for child in case)}

control, subject = passed(sys.argv[1]), passed(sys.argv[2])
print(f"redis-server passes {len(control)}, the subject {len(subject)}; "
      f"passed on redis-server only: {len(control - subject)}")
for name in sorted(control - subject):
    print("  ", name)
sys.exit(1 if control - subject else 0)
PY
}

# -p no:minired: an installed minired's own pytest plugin has no business in these suites
status=0
if [[ "$SUITES" == *" pytest-redis "* ]]; then
    echo "== pytest-redis 4.0.0 with $SERVER"
    (cd pytest_redis-4.0.0 && python -m pytest tests -q -p no:cacheprovider -p no:minired \
        -o addopts="" --redis-exec "$WORK/bin/redis-server") | tail -5 || status=1
fi
if [[ "$SUITES" == *" python-redis-lock "* ]]; then
    echo "== python-redis-lock 4.0.1 with $SERVER"
    (cd python_redis_lock-4.0.1 && PYTHONPATH=tests DJANGO_SETTINGS_MODULE=test_project.settings \
        PYTHONUNBUFFERED=yes python -m pytest tests -q -p no:cacheprovider -p no:minired \
        --ignore=src) \
        | tail -5 || status=1
fi

if [[ "$SUITES" == *" redis-py "* ]]; then
# redis-py's suite, from the sdist of the redis-py installed here (it ships its tests): the files
# that need one server, without the cluster, sentinel, module and cloud ones (their extra
# dependencies are left out). Each server gets a fresh directory and port.
REDIS_PY=$(venv/bin/python -c "import redis; print(redis.__version__)")
if [ ! -d "redis-$REDIS_PY" ]; then
    pip download --no-binary :all: --no-deps "redis==$REDIS_PY" -d "$WORK"
    tar xzf "redis-$REDIS_PY.tar.gz"
    venv/bin/pip install -q pytest-asyncio pytest-timeout ujson pybreaker xxhash numpy
fi
redis_py_run() {  # redis_py_run NAME EXECUTABLE: the suite's JUnit report in $WORK/NAME.xml
    local port
    port=$(free_port)
    serve "$1-data" "$2" "$port" --enable-debug-command yes
    (cd "redis-$REDIS_PY" && python -m pytest -q -p no:cacheprovider -p no:minired -o addopts="" \
        --timeout 60 --tb=no --redis-url="redis://localhost:$port/9" --junitxml="$WORK/$1.xml" \
        tests/test_commands.py tests/test_pipeline.py tests/test_pubsub.py \
        tests/test_scripting.py tests/test_lock.py tests/test_connection.py \
        tests/test_encoding.py tests/test_hash.py tests/test_monitor.py tests/test_function.py \
        tests/test_keyspace_notifications.py tests/test_data_structure.py tests/test_client.py \
        tests/test_connection_pool.py tests/test_retry.py tests/test_cache.py \
        tests/test_asyncio/test_commands.py tests/test_asyncio/test_pipeline.py \
        tests/test_asyncio/test_pubsub.py tests/test_asyncio/test_scripting.py \
        tests/test_asyncio/test_lock.py tests/test_asyncio/test_connection.py \
        tests/test_asyncio/test_encoding.py tests/test_asyncio/test_hash.py \
        tests/test_asyncio/test_monitor.py tests/test_asyncio/test_function.py) \
        | tail -1 || true
    kill "$served"; wait "$served" 2>/dev/null || true
}
echo "== redis-py $REDIS_PY's suite with $SERVER, then with redis-server (the control)"
redis_py_run subject "$WORK/bin/redis-server"
redis_py_run control "$(command -v redis-server)"
compare_junit "$WORK/control.xml" "$WORK/subject.xml" || status=1
fi
if [[ "$SUITES" == *" fakeredis "* ]]; then
if [ ! -d fakeredis-2.41.0 ]; then
    pip download --no-binary :all: --no-deps fakeredis==2.41.0 -d "$WORK"
    tar xzf fakeredis-2.41.0.tar.gz
    venv/bin/pip install -q valkey pytest-asyncio pytest-mock hypothesis lupa pytest-timeout
    venv/bin/pip install -q --no-deps ./fakeredis-2.41.0
    python3 - fakeredis-2.41.0/test/test_hypothesis <<'PY'
import pathlib, sys
folder = pathlib.Path(sys.argv[1])
base = folder / "base.py"
text = base.read_text()
for old, new in [
    ("""        cls = _FAKE_CLIENT_CLASSES.get(self.server_type, fakeredis.FakeStrictRedis)
        server = fakeredis.FakeServer(server_type=self.server_type, version=self.version)
        return cls(server=server, db=self.db)""",
     """        import os
        return redis.StrictRedis(self.host, port=int(os.environ["MINIRED_PORT"]), db=self.db)"""),
    ("""        try:
            self.real.execute_command("discard")
        except redis.ResponseError:
            pass
        self.real.flushall()""",
     """        for client in (self.real, self.fake):
            try:
                client.execute_command("discard")
            except redis.ResponseError:
                pass
        self.real.flushall()
        self.fake.flushall()""")]:
    assert old in text, old
    text = text.replace(old, new)
base.write_text(text)
conftest = folder / "conftest.py"
text = conftest.read_text().replace("from hypothesis import settings", "from hypothesis import HealthCheck, settings")
text = text.replace('"250")))', '"250")), suppress_health_check=list(HealthCheck), deadline=None)')
conftest.write_text(text)
PY
fi
for port in 6390 6391; do  # (fakeredis's tests name these ports)
    if redis-cli -p "$port" ping >/dev/null 2>&1; then
        echo "port $port is taken: fakeredis's tests need it free" >&2
        exit 1
    fi
done
fakeredis_real() {  # fakeredis_real NAME EXECUTABLE: its -m real tests against EXECUTABLE on 6390
    serve "$1-fakeredis" "$2" 6390
    (cd fakeredis-2.41.0 && python -m pytest -q -p no:cacheprovider -p no:minired -m real \
        --timeout 60 --tb=no --junitxml="$WORK/fakeredis-$1.xml" test/test_mixins test/test_async \
        test/test_keyspace_notifications.py) | tail -1 || true
    kill "$served"; wait "$served" 2>/dev/null || true
}
echo "== fakeredis 2.41.0's real-server tests with $SERVER, then with redis-server (the control)"
fakeredis_real subject "$WORK/bin/redis-server"
fakeredis_real control "$(command -v redis-server)"
compare_junit "$WORK/fakeredis-control.xml" "$WORK/fakeredis-subject.xml" || status=1
echo "== fakeredis 2.41.0's Hypothesis machines: redis-server against $SERVER"
serve hypothesis-redis "$(command -v redis-server)" 6390
redis_pid=$served
serve hypothesis-subject "$WORK/bin/redis-server" 6391
subject_pid=$served
(cd fakeredis-2.41.0 && MINIRED_PORT=6391 FAKEREDIS_HYPOTHESIS_EXAMPLES=150 python -m pytest -q \
    -p no:cacheprovider -p no:minired --timeout 900 --tb=short test/test_hypothesis) | tail -30 \
    || status=1
kill "$redis_pid" "$subject_pid"; wait 2>/dev/null || true
fi
echo "work folder: $WORK"
exit $status
