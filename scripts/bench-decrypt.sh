#!/bin/sh
# Compares full Apple Pay token verification + decryption (EC_v1) with what OpenSSL's own primitives allow on this
# machine, in one run: `openssl speed` for P-256 ECDH and ECDSA verification, then `applepay bench decrypt`.
# Each token costs one ECDH and one ECDSA verification, so the bound is 1 / (1/ecdh + 1/verify) per second.
# Both sides are measured in CPU time (openssl speed's default), so other load on the machine matters less.
#
# Usage: scripts/bench-decrypt.sh [SECONDS] [THREADS]   (environment: SCRATCH=.build, APPLEPAY=path to a binary)
set -eu
SECONDS_PER_RUN=${1:-3}
THREADS=${2:-1}
SCRATCH=${SCRATCH:-.build}
cd "$(dirname "$0")/.."

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$SCRATCH/release/applepay"
fi

speed=$(openssl speed -seconds "$SECONDS_PER_RUN" ecdhp256 ecdsap256 2>/dev/null)
ecdh=$(printf '%s\n' "$speed" | awk '/ecdh \(nistp256\)/ { print $NF }')
verify=$(printf '%s\n' "$speed" | awk '/ecdsa \(nistp256\)/ { print $NF }')
bench=$("$APPLEPAY" bench decrypt --seconds "$SECONDS_PER_RUN" --threads "$THREADS")
# Pull two numbers out of the one-line JSON report without needing jq.
per_cpu=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerCPUSecond":\([0-9]*\).*/\1/p')
per_wall=$(printf '%s\n' "$bench" | sed -n 's/.*"tokensPerSecond":\([0-9]*\).*/\1/p')

awk -v ecdh="$ecdh" -v verify="$verify" -v cpu="$per_cpu" -v wall="$per_wall" -v threads="$THREADS" 'BEGIN {
    bound = 1 / (1 / ecdh + 1 / verify)
    printf "openssl speed: ecdh P-256 %.0f op/s, ecdsa P-256 verify %.0f op/s -> bound %.0f tokens/s per core\n", ecdh, verify, bound
    printf "applepay bench decrypt (%d thread%s): %d tokens/s wall clock, %d tokens per CPU second\n", threads, threads == 1 ? "" : "s", wall, cpu
    printf "ratio (per CPU second / bound): %.2f (target >= 0.80)\n", cpu / bound
}'
printf '%s\n' "$bench"
