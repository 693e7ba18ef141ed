#!/usr/bin/env bash
# Install everything the test suite needs, then run all of it.
# Used as is by the README and by CI (.ci/run): one command, a fresh machine.
#   0. ruff, and the documentation site built with mkdocs --strict
#   1. Redis's own Tcl suite against the compiled minired, redis-server as the control: the
#      units that run against an external server, then the normal-mode units that pass whole
#      (minired started by the suite itself from a config file; the other normal-mode units
#      are the long run, `python3 scripts/redis_tcl.py --normal`)
#   2. the pytest suite on the compiled build
#   3. the pytest suite on the uncompiled build (MINIRED_PURE_PYTHON=1)
# Arguments go to both pytest runs (e.g. `./scripts/test.sh -k lists`); with arguments, the Tcl
# suite is left out (run it alone with scripts/redis_tcl.py).
# Deterministic: hypothesis draws the same examples every run (tests/conftest.py); the long
# random search for new failures is scripts/explore.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests drive: redis-server (the differential tests compare every reply
# with a real Redis 7), redis-tools (redis-cli, redis-benchmark and redis-check-aof, which Redis's
# suite and the AOF replay test call), tcl (Redis's own test suite is written in it), and chromium with its
# driver (the dashboard's browser tests).
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-check-aof >/dev/null 2>&1 || missing+=(redis-tools)
command -v tclsh >/dev/null 2>&1 || missing+=(tcl)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The package's service (if the machine starts services) is not used: tests start their own
# servers on free ports.

python3 -m pip install -q --disable-pip-version-check -e '.[test]'

# The linter first ([tool.ruff] in pyproject.toml): a finding fails the command.
python3 -m ruff check --quiet .

# The documentation site (mkdocs.yml): strict, so a broken link, a missing anchor or a page left
# out of the navigation fails the command. Built into a temporary directory, removed after.
site=$(mktemp -d)
python3 -m mkdocs build --strict --site-dir "$site" || { rm -rf "$site"; exit 1; }
rm -rf "$site"

# Node's Redis clients, for the test that checks minired against them.
if command -v npm >/dev/null 2>&1; then
    (cd tests/integration/node && npm install --silent --no-audit --no-fund >/dev/null)
fi

status=0
if [ $# -eq 0 ]; then
    python3 scripts/redis_tcl.py || status=1
    python3 scripts/redis_tcl.py --normal --quick || status=1
fi
# -n 2: the machine has two cores; each xdist worker starts its own servers.
python3 -m pytest -n 2 -q "$@" || status=1
echo "== the same suite on the uncompiled build (MINIRED_PURE_PYTHON=1)"
MINIRED_PURE_PYTHON=1 python3 -m pytest -n 2 -q "$@" || status=1
exit $status
