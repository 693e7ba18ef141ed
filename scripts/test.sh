#!/usr/bin/env bash
# Install everything the test suite needs, then run all of it.
# Used as is by the README and by CI (.ci/run): one command, a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# The differential tests compare against a real Redis 7: Debian's redis-server package.
if ! command -v redis-server >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
# The package's service (if the machine starts services) is not used: tests start their own
# servers on free ports.

python3 -m pip install -q --disable-pip-version-check -e '.[test]'

# Node's Redis clients, for the test that checks minired against them.
if command -v npm >/dev/null 2>&1; then
    (cd tests/integration/node && npm install --silent --no-audit --no-fund >/dev/null)
fi

# -n 2: the machine has two cores; each xdist worker starts its own servers.
exec python3 -m pytest -n 2 -q "$@"
