#!/usr/bin/env bash
# Two projects' own test suites, unchanged, with minired as their redis-server executable:
# python-redis-lock (its conftest starts `redis-server` from PATH) and pytest-redis (its tests
# start the server given by --redis-exec). Needs the network (PyPI), so it is not part of the
# test command; run it by hand after changing how minired starts, logs or stops.
#
#   ./scripts/third_party_suites.sh                          # minired from this checkout
#   SERVER=/usr/bin/redis-server ./scripts/third_party_suites.sh   # the control run
#   WORK=/tmp/tp ./scripts/third_party_suites.sh             # reuse downloads and the venv
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

# -p no:minired: an installed minired's own pytest plugin has no business in these suites
status=0
echo "== pytest-redis 4.0.0 with $SERVER"
(cd pytest_redis-4.0.0 && python -m pytest tests -q -p no:cacheprovider -p no:minired \
    -o addopts="" --redis-exec "$WORK/bin/redis-server") | tail -5 || status=1
echo "== python-redis-lock 4.0.1 with $SERVER"
(cd python_redis_lock-4.0.1 && PYTHONPATH=tests DJANGO_SETTINGS_MODULE=test_project.settings \
    PYTHONUNBUFFERED=yes python -m pytest tests -q -p no:cacheprovider -p no:minired \
    --ignore=src) \
    | tail -5 || status=1
echo "work folder: $WORK"
exit $status
