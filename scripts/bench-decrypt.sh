#!/bin/sh
# Compares full Apple Pay token verification + decryption (EC_v1) with what OpenSSL's own primitives allow on this
# machine, in one run: `openssl speed` for P-256 ECDH and ECDSA verification, then `applepay bench decrypt`.
# Each token costs one ECDH and one ECDSA verification, so the bound is 1 / (1/ecdh + 1/verify) per second.
# Both sides are measured in user CPU time (openssl speed's default). The two are run alternately ROUNDS times and
# the best round of each is compared, so that load from other processes (which only ever slows a round) matters less.
#
# Usage: scripts/bench-decrypt.sh [SECONDS] [THREADS] [ROUNDS]
# Environment: SCRATCH (build folder, default .build), APPLEPAY (use this binary instead of building one).
set -eu
SECONDS_PER_RUN=${1:-3}
THREADS=${2:-1}
ROUNDS=${3:-3}
SCRATCH=${SCRATCH:-.build}
cd "$(dirname "$0")/.."

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$SCRATCH/release/applepay"
fi

results=""
round=1
while [ "$round" -le "$ROUNDS" ]; do
    speed=$(openssl speed -seconds "$SECONDS_PER_RUN" ecdhp256 ecdsap256 2>/dev/null)
    ecdh=$(printf '%s\n' "$speed" | awk '/ecdh \(nistp256\)/ { print $NF }')
    verify=$(printf '%s\n' "$speed" | awk '/ecdsa \(nistp256\)/ { print $NF }')
    bench=$("$APPLEPAY" bench decrypt --seconds "$SECONDS_PER_RUN" --threads "$THREADS")
    # Two numbers from the one-line JSON report, without needing jq.
    per_cpu=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerCPUSecond":\([0-9]*\).*/\1/p')
    per_wall=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerSecond":\([0-9]*\).*/\1/p')
    echo "round $round: ecdh $ecdh op/s, ecdsa verify $verify op/s; $bench"
    results="$results$ecdh $verify $per_cpu $per_wall
"
    round=$((round + 1))
done

printf '%s' "$results" | awk -v threads="$THREADS" '
    { if ($1 > ecdh) ecdh = $1; if ($2 > verify) verify = $2; if ($3 > cpu) cpu = $3; if ($4 > wall) wall = $4 }
    END {
        bound = 1 / (1 / ecdh + 1 / verify)
        printf "openssl speed (best round): ecdh P-256 %.0f op/s, ecdsa P-256 verify %.0f op/s -> bound %.0f tokens/s per core\n", ecdh, verify, bound
        printf "applepay bench decrypt (best round, %d thread%s): %d tokens per CPU second, %d tokens/s wall clock\n", threads, threads == 1 ? "" : "s", cpu, wall
        printf "ratio (tokens per CPU second / bound): %.2f (target >= 0.80)\n", cpu / bound
    }'
