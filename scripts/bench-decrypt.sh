#!/bin/sh
# Compares full Apple Pay token verification + decryption with what OpenSSL's own primitives allow on this machine,
# in one run, for both token formats:
#   EC_v1:  one P-256 ECDH and one ECDSA verification a token   -> bound 1 / (1/ecdh + 1/verify), `openssl speed
#           ecdhp256 ecdsap256`
#   RSA_v1: one RSA-2048 private operation (unwrap the key) and one RSA-2048 verification (the signature)
#           -> bound 1 / (1/sign + 1/verify), `openssl speed rsa2048`
# Both sides are measured in user CPU time (openssl speed's default). Each pair is run alternately ROUNDS times and
# the best round of each is compared, so that load from other processes (which only ever slows a round) matters less.
# Prints the rounds, then one summary line per format and a last JSON line with both ratios.
#
# Usage: scripts/bench-decrypt.sh [SECONDS] [THREADS] [ROUNDS] [KINDS]   (KINDS default "EC_v1 RSA_v1")
# Environment: SCRATCH (build folder, default .build), APPLEPAY (use this binary instead of building one).
set -eu
SECONDS_PER_RUN=${1:-3}
THREADS=${2:-1}
ROUNDS=${3:-3}
KINDS=${4:-"EC_v1 RSA_v1"}
SCRATCH=${SCRATCH:-.build}
cd "$(dirname "$0")/.."

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$SCRATCH/release/applepay"
fi

summary=""
for kind in $KINDS; do
    results=""
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
        if [ "$kind" = "EC_v1" ]; then
            speed=$(openssl speed -seconds "$SECONDS_PER_RUN" ecdhp256 ecdsap256 2>/dev/null)
            first=$(printf '%s\n' "$speed" | awk '/ecdh \(nistp256\)/ { print $NF }')
            second=$(printf '%s\n' "$speed" | awk '/ecdsa \(nistp256\)/ { print $NF }')
            names="ecdh P-256, ecdsa P-256 verify"
        else
            speed=$(openssl speed -seconds "$SECONDS_PER_RUN" rsa2048 2>/dev/null)
            first=$(printf '%s\n' "$speed" | awk '/^rsa 2048 bits/ { print $(NF-1) }')
            second=$(printf '%s\n' "$speed" | awk '/^rsa 2048 bits/ { print $NF }')
            names="rsa2048 private, rsa2048 verify"
        fi
        bench=$("$APPLEPAY" bench decrypt --seconds "$SECONDS_PER_RUN" --threads "$THREADS" --kind "$kind")
        # Two numbers from the one-line JSON report, without needing jq.
        per_cpu=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerCPUSecond":\([0-9]*\).*/\1/p')
        per_wall=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerSecond":\([0-9]*\).*/\1/p')
        echo "$kind round $round: openssl $names: $first / $second op/s; $bench"
        results="$results$first $second $per_cpu $per_wall
"
        round=$((round + 1))
    done
    line=$(printf '%s' "$results" | awk -v threads="$THREADS" -v kind="$kind" '
        { if ($1 > a) a = $1; if ($2 > b) b = $2; if ($3 > cpu) cpu = $3; if ($4 > wall) wall = $4 }
        END {
            bound = 1 / (1 / a + 1 / b)
            printf "%s %.0f %.0f %.0f %d %d %.3f\n", kind, a, b, bound, cpu, wall, cpu / bound
        }')
    set -- $line
    printf '%s: openssl (best round) %s op/s and %s op/s -> bound %s tokens/s per core; applepay (best round, %s thread(s)) %s tokens per CPU second (%s/s wall); ratio %s (target >= 0.9)\n' \
        "$1" "$2" "$3" "$4" "$THREADS" "$5" "$6" "$7"
    summary="$summary\"$1\":{\"bound\":$4,\"tokensPerCPUSecond\":$5,\"ratio\":$7},"
done
printf '{%s"threads":%s,"loadAverage":"%s"}\n' "$summary" "$THREADS" "$(cut -d' ' -f1-3 /proc/loadavg)"
