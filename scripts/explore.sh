#!/usr/bin/env bash
# The long search for new failures, apart from the test command: every hypothesis test, with
# random examples (the `explore` profile in tests/conftest.py), ROUNDS times (new draws each
# round; a test's own max_examples applies per round). scripts/test.sh runs the same tests
# derandomized: the same examples every run, so it fails only when the code changes.
#
#   ./scripts/explore.sh                 # 10 rounds, compiled build as installed
#   ROUNDS=50 ./scripts/explore.sh -k acl
#   MINIRED_PURE_PYTHON=1 ./scripts/explore.sh
#
# A failure prints "Falsifying example: test_name(arg=...)" (and @reproduce_failure with a
# blob that replays it exactly). Make it a regression test the test command always runs:
#   1. copy the arguments into an @example(...) decorator under the test's @given, e.g.
#        @given(rules=st.lists(...))
#        @example(rules=["+@read", "+@keyspace", "(+@read -@keyspace &x)"])
#      (from hypothesis import example), with a comment saying what it caught;
#   2. check that `python3 -m pytest tests/<file> -k <test>` fails with it, fix the cause, commit.
# Failing examples are also kept in .hypothesis/ (git-ignored) and replayed first by the next
# exploring run until they pass.
set -uo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-10}
mapfile -t files < <(grep -rlE "from hypothesis import|import hypothesis" \
    tests --include='test_*.py' | grep -v '/vendor/' | sort)
status=0
for round in $(seq 1 "$rounds"); do
    echo "== round $round of $rounds: ${#files[@]} files with hypothesis tests"
    MINIRED_HYPOTHESIS_PROFILE=explore python3 -m pytest -q "${files[@]}" "$@" || status=1
done
exit $status
