#!/usr/bin/env bash
# BullMQ's own test suite against redis-server and against minired, one after the other, with
# each server's CPU time over the whole suite (utime + stime, /proc/PID/stat): the issue-35 row
# "BullMQ's own suite, server CPU", and a fidelity check no test of ours makes.
#
#   bench/bullmq_suite/run.sh BULLMQ_CHECKOUT [vitest arguments, e.g. tests/worker.test.ts]
#
# BULLMQ_CHECKOUT is a copy of BullMQ's repository (github.com/taskforcesh/bullmq) whose
# tests/ match the npm package in package.json (5.81.5): its tests/ and vitest.setup.ts are
# copied into a work directory (WORK, default a new /tmp directory) beside this folder's files,
# the tests' `../src/...` imports reach the package's dist/cjs, and npm installs the rest.
# Files that cannot run on one machine (a Redis Cluster, Bun, BullMQ 6's adapters) are left
# out by EXCLUDE (vitest --exclude patterns). The tests are not in this repository: they are
# BullMQ's, MIT-licensed, and the npm package does not ship them.
#
# Output in LOGS (default WORK/logs): each server's vitest log and JSON report, its CPU, the
# comparison (compare_results.py), and each minired-only failure rerun alone RERUNS times (3)
# on both servers, since some of BullMQ's tests are timing-dependent on Redis too.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CHECKOUT=${1:?usage: run.sh BULLMQ_CHECKOUT [vitest arguments]}
shift
WORK=${WORK:-$(mktemp -d /tmp/bullmq-suite-XXXX)}
LOGS=${LOGS:-$WORK/logs}
RERUNS=${RERUNS:-3}
REDIS_PORT=${REDIS_PORT_A:-46379}
MINIRED_PORT=${MINIRED_PORT:-46380}
EXCLUDE=${EXCLUDE:-"tests/connection.test.ts tests/cluster.test.ts tests/bun-* tests/*.redis.test.ts"}
CLK=$(getconf CLK_TCK)
mkdir -p "$LOGS"

cp "$HERE"/package.json "$HERE"/vitest.config.ts "$HERE"/port-setup.ts "$WORK"/
cp -r "$CHECKOUT"/tests "$WORK"/
cp "$CHECKOUT"/vitest.setup.ts "$WORK"/
cd "$WORK"
[ -d node_modules ] || npm install --silent --no-audit --no-fund > "$LOGS/npm-install.log" 2>&1 \
    || { echo "npm install failed (see $LOGS/npm-install.log)"; exit 1; }
ln -sfn node_modules/bullmq/dist/cjs src
excludes=()
for pattern in $EXCLUDE; do excludes+=(--exclude "$pattern"); done

cpu_seconds() {  # utime + stime of PID, in seconds
    awk -v clk="$CLK" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / clk }' "/proc/$1/stat"
}

STARTED=""
trap 'for pid in $STARTED; do kill "$pid" 2>/dev/null; done' EXIT

start_server() {  # name port: sets SERVER_PID; retried, as an ephemeral client port may hold it
    local name=$1 port=$2 dir try
    for try in 1 2 3 4 5; do
        dir=$(mktemp -d "/tmp/bullmq-suite-$name-XXXX")
        if [ "$name" = redis ]; then
            (cd "$dir" && exec redis-server --port "$port" --save '' --appendonly no) \
                > "$LOGS/$name-server.log" 2>&1 &
        else
            (cd "$dir" && PYTHONPATH="$REPO:$REPO/queue" exec python3 -m minired --port "$port" \
                --save '' --appendonly no) > "$LOGS/$name-server.log" 2>&1 &
        fi
        SERVER_PID=$!
        STARTED="$STARTED $SERVER_PID"
        for _ in $(seq 100); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && kill -0 "$SERVER_PID" 2>/dev/null && return 0
            sleep 0.1
        done
        kill "$SERVER_PID" 2>/dev/null
        sleep 3
    done
    echo "$name did not start on port $port (see $LOGS/$name-server.log)"
    exit 1
}

for server in redis:$REDIS_PORT minired:$MINIRED_PORT; do
    name=${server%%:*}
    port=${server##*:}
    start_server "$name" "$port"
    started=$(date +%s)
    REDIS_PORT=$port VITEST_JSON_OUT="$LOGS/$name-results.json" \
        npx vitest run "${excludes[@]}" "$@" > "$LOGS/$name-run.log" 2>&1
    echo "$name: wall $(($(date +%s) - started)) s, server CPU $(cpu_seconds "$SERVER_PID") s" \
        | tee "$LOGS/$name-cpu.txt"
    grep -E '^ +(Test Files|Tests) ' "$LOGS/$name-run.log" | tee -a "$LOGS/$name-cpu.txt"
done

python3 "$HERE/compare_results.py" "$LOGS/redis-results.json" "$LOGS/minired-results.json" \
    | tee "$LOGS/comparison.txt"
status=${PIPESTATUS[0]}
: > "$LOGS/reruns.txt"
python3 "$HERE/compare_results.py" --list "$LOGS/redis-results.json" "$LOGS/minired-results.json" |
while IFS=$'\t' read -r test_file pattern; do
    for server in redis:$REDIS_PORT minired:$MINIRED_PORT; do
        passed=0
        for _ in $(seq "$RERUNS"); do
            REDIS_PORT=${server##*:} VITEST_JSON_OUT="$LOGS/rerun.json" npx vitest run "$test_file" \
                -t "$pattern" > "$LOGS/rerun-${server%%:*}.log" 2>&1 && passed=$((passed + 1))
        done
        printf '%s\t%s\t%s\t%d/%d passed\n' "$test_file" "$pattern" "${server%%:*}" "$passed" \
            "$RERUNS" | tee -a "$LOGS/reruns.txt"
    done
done
echo "logs in $LOGS"
exit "$status"
