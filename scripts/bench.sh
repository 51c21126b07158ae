#!/usr/bin/env bash
# `make bench`: one measured run of everything, then docs/PERFORMANCE.md's tables rewritten from it.
#   1. scripts/bench-decrypt.sh        EC_v1 and RSA_v1 against OpenSSL's bound, 1 thread
#   2. PROCESSOR=service load-test.sh  on SQLite with the sandbox processor in its own process: the server alone,
#                                      its CPU per request against the token-opening bound (the headline)
#   3. scripts/load-test.sh            on SQLite, the processor in process, with the server profiled (perf) during
#                                      the payments scenario
#   4. STORE=postgres load-test.sh     the same on a private PostgreSQL cluster (fsync on)
#   5. scripts/load-outside.sh         paymentsSlowProcessor (the processor answers after 300 ms, 1,000 connections)
#                                      and paymentsUnderNotificationFlood (a black-hole gateway, a notification flood)
#   6. scripts/soak-test.sh MINUTES    unless SOAK_MINUTES=0
# The JSON lines of the run go to RESULTS (default .build/bench/last.jsonl), the profile to .build/bench/;
# scripts/load/report.py writes the tables between docs/PERFORMANCE.md's bench markers. A failed step is named in
# the tables and makes the run exit 1; the other steps still run.
#
# Environment: SOAK_MINUTES (default 10), LOAD_SECONDS (default 10), CONNECTIONS (16), PAYMENTS (2000),
# SLOW_PAYMENTS (6000), SLOW_CONNECTIONS (1000), FLOOD_PAYMENTS (1000),
# DECRYPT_SECONDS (3), DECRYPT_ROUNDS (3), SCRATCH, APPLEPAY, RESULTS.
set -uo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
OUT=$SCRATCH/bench
RESULTS=${RESULTS:-$OUT/last.jsonl}
mkdir -p "$OUT"
if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2 || exit 1
    APPLEPAY="$PWD/$SCRATCH/release/applepay"
fi
export APPLEPAY
status=0
: >"$RESULTS"
before=$(cut -d' ' -f1-3 /proc/loadavg)
step() { # name command...: runs it, keeps its JSON lines, notes a failure
    local name=$1
    shift
    echo "bench: $name (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    if ! "$@" | tee -a "$RESULTS"; then
        echo "{\"scenario\":\"failed\",\"step\":\"$name\"}" >>"$RESULTS"
        status=1
    fi
}
step bench-decrypt scripts/bench-decrypt.sh "${DECRYPT_SECONDS:-3}" 1 "${DECRYPT_ROUNDS:-3}"
step load-sqlite-processor-apart env STORE=sqlite PROCESSOR=service \
    scripts/load-test.sh "${LOAD_SECONDS:-10}" "${CONNECTIONS:-16}" "${PAYMENTS:-2000}"
rm -f "$OUT/perf-payments.txt"
step load-sqlite env STORE=sqlite PERF_OUT="$PWD/$OUT/perf-payments.txt" \
    scripts/load-test.sh "${LOAD_SECONDS:-10}" "${CONNECTIONS:-16}" "${PAYMENTS:-2000}"
step load-postgres env STORE=postgres scripts/load-test.sh "${LOAD_SECONDS:-10}" "${CONNECTIONS:-16}" "${PAYMENTS:-2000}"
step load-slow-processor scripts/load-outside.sh slowProcessor "${SLOW_PAYMENTS:-6000}" "${SLOW_CONNECTIONS:-1000}"
step load-notification-flood scripts/load-outside.sh notificationFlood "${FLOOD_PAYMENTS:-1000}"
if [ "${SOAK_MINUTES:-10}" != 0 ]; then
    step soak scripts/soak-test.sh "${SOAK_MINUTES:-10}"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- Sources 2>/dev/null || commit="$commit with changes in Sources"
settings="commit $commit, LOAD_SECONDS=${LOAD_SECONDS:-10} CONNECTIONS=${CONNECTIONS:-16} PAYMENTS=${PAYMENTS:-2000}"
settings="$settings SOAK_MINUTES=${SOAK_MINUTES:-10} DECRYPT_SECONDS=${DECRYPT_SECONDS:-3} DECRYPT_ROUNDS=${DECRYPT_ROUNDS:-3}"
printf '{"scenario":"machine","date":"%s","cores":%s,"cpu":"%s","kernel":"%s","loadAverageBefore":"%s",%s}\n' \
    "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    "$(uname -sr)" "$before" "\"loadAverageAfter\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"settings\":\"$settings\"" \
    >>"$RESULTS"
python3 scripts/load/report.py "$RESULTS" docs/PERFORMANCE.md "$OUT/perf-payments.txt" || status=1
echo "bench: docs/PERFORMANCE.md written from $RESULTS (exit $status)" >&2
exit "$status"
