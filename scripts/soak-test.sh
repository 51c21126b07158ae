#!/usr/bin/env bash
# Soak test of the merchant server: MINUTES of mixed traffic at a steady RATE (products, checkouts, sheet updates,
# payments with tokens minted in batches as it goes, replays, order reads) from scripts/load/soak.py, with the
# server's resident memory and open descriptors sampled every 10 s. Passes only if no request failed, both are flat
# (the last third's largest memory sample within max(10 %, 5 MB) of the first third's; descriptors back to their
# baseline after the load) and memory stays at or under 100 MB; then SIGTERM must stop the server with exit 0.
# Prints the samples and a last JSON verdict line (scripts/load/soak.py says exactly what is checked).
#
# Usage: scripts/soak-test.sh [MINUTES] [RATE]   (defaults 10, 100 requests/s)
# Environment: STORE=sqlite|postgres, SCRATCH, APPLEPAY, PG_FSYNC, as for scripts/load-test.sh.
set -euo pipefail
MINUTES=${1:-10}
RATE=${2:-100}
NAME=soak-test
. "$(dirname "$0")/load/server.sh"

mkdir -p "$WORK/soak"
python3 scripts/load/soak.py "$BASE" "$WORK/soak" "$MINUTES" "$APPLEPAY" "$WORK/sandbox" "$SERVER_PID" \
    "$FDS_BEFORE" "$RATE" || fail "the soak did not pass (see its last line)"
grep -q '"status":5[0-9][0-9]' "$WORK/server.log" && fail "the server answered 5xx: $(grep -m1 '"status":5' "$WORK/server.log")"
stop_server
