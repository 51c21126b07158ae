#!/usr/bin/env bash
# The merchant server while outside parties misbehave (issue 22), on 127.0.0.1 only; one scenario per run, each
# printing one JSON line, then the payments' checks (every payment answered success with its own order, once):
#   slowProcessor      paymentsSlowProcessor: the sandbox processor service runs apart (`applepay processor serve`)
#                      and answers every charge after DELAY_MS (default 300) ms; PAYMENTS payments (default 6000)
#                      posted once each over CONNECTIONS connections (default 1000) from as many wrk threads as
#                      cores. The line adds the server's CPU time per payment and the processor service's, and the
#                      server's peak thread count and resident memory, sampled every 200 ms.
#   notificationFlood  paymentsUnderNotificationFlood: Apple's merchant-token API is a black hole (a socket that
#                      never accepts, so every pull waits for its deadline) while wrk floods the unauthenticated
#                      notification URL from FLOOD_CONNECTIONS connections (default 200) with new event ids;
#                      meanwhile PAYMENTS payments (default 1000) are posted once each over CONNECTIONS connections
#                      (default 16) to the in-process sandbox processor. The line adds the flood's own figures.
#
# Usage: scripts/load-outside.sh slowProcessor|notificationFlood [PAYMENTS] [CONNECTIONS]
# Environment: as scripts/load-test.sh (STORE, SCRATCH, APPLEPAY), DELAY_MS, FLOOD_CONNECTIONS.
set -euo pipefail
SCENARIO=${1:-}
DURATION=10
NAME=load-outside
cd "$(dirname "$0")/.."
case "$SCENARIO" in
    slowProcessor)
        PAYMENTS=${2:-6000}
        CONNECTIONS=${3:-1000}
        DELAY_MS=${DELAY_MS:-300}
        ;;
    notificationFlood)
        PAYMENTS=${2:-1000}
        CONNECTIONS=${3:-16}
        FLOOD_CONNECTIONS=${FLOOD_CONNECTIONS:-200}
        ;;
    *)
        echo "usage: scripts/load-outside.sh slowProcessor|notificationFlood [PAYMENTS] [CONNECTIONS]" >&2
        exit 64
        ;;
esac

# Started by scripts/load/server.sh once the sandbox exists, before the merchant server.
before_server() {
    if [ "$SCENARIO" = slowProcessor ]; then
        : >"$WORK/processor.out"
        "$APPLEPAY" processor serve --ledger "sqlite:$WORK/ledger.sqlite" --sandbox "$WORK/sandbox" \
            --fault "delay:1000000000:$(awk -v m="$DELAY_MS" 'BEGIN { printf "%.3f", m / 1000 }')" \
            >"$WORK/processor.out" 2>"$WORK/processor.log" &
        EXTRA_PIDS+=("$!")
        PROCESSOR_PID=$!
        local url=""
        for _ in $(seq 1 300); do
            url=$(sed -n 's|^Processor listening on \(http://[^ ]*\).*|\1|p' "$WORK/processor.out")
            [ -n "$url" ] && break
            sleep 0.1
        done
        [ -n "$url" ] || fail "the processor service did not start: $(cat "$WORK/processor.log")"
        SERVE_ARGS=(--processor "$url")
    else
        python3 -c '
import socket, sys, time
hole = socket.socket()
hole.bind(("127.0.0.1", 0))
hole.listen(4096)  # connections complete in the backlog and are never accepted: nothing is ever answered
print(hole.getsockname()[1], flush=True)
time.sleep(3600)' >"$WORK/hole.port" &
        EXTRA_PIDS+=("$!")
        for _ in $(seq 1 100); do [ -s "$WORK/hole.port" ] && break; sleep 0.1; done
        SERVE_ARGS=(--sandbox-gateway "https://127.0.0.1:$(cat "$WORK/hole.port")")
    fi
}

PROCESSOR_PID=""

. scripts/load/server.sh
. scripts/load/scenarios.sh

mkdir -p "$WORK/pay"
python3 scripts/load/client.py prepare "$BASE" "$WORK/pay" "$PAYMENTS" 0 "$APPLEPAY" "$WORK/sandbox" \
    || fail "could not prepare $PAYMENTS payments"

# The server's threads and resident memory every 200 ms while the payments run.
sample_server() {
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        awk '/^Threads/ { t = $2 } /^VmRSS/ { r = $2 } END { print t, r }' "/proc/$SERVER_PID/status" \
            >>"$WORK/samples" 2>/dev/null || true
        sleep 0.2
    done
}
sample_server &
SAMPLER_PID=$!
EXTRA_PIDS+=("$SAMPLER_PID")

cpu_before=$(cpu_ms)
if [ "$SCENARIO" = notificationFlood ]; then
    wrk --threads 2 --connections "$FLOOD_CONNECTIONS" --duration 600s --timeout 10s \
        --script scripts/load/flood.lua "$BASE" >"$WORK/flood.wrk" &
    FLOOD_PID=$!
    EXTRA_PIDS+=("$FLOOD_PID")
    sleep 2 # the flood is under way, its pulls waiting on the black hole
    line=$(run_once paymentsUnderNotificationFlood "$WORK/pay" answers)
    kill -INT "$FLOOD_PID" 2>/dev/null || true
    wait "$FLOOD_PID" || true
    flood=$(tail -1 "$WORK/flood.wrk")
    jq -e . >/dev/null <<<"$flood" || fail "the flood printed no summary: $(tail -3 "$WORK/flood.wrk")"
    line=$(jq -c --argjson flood "$flood" '. + {flood: $flood}' <<<"$line")
else
    processor_before=$(processor_cpu_ms)
    line=$(run_once paymentsSlowProcessor "$WORK/pay" answers)
    line=$(jq -c --argjson b "$processor_before" --argjson a "$(processor_cpu_ms)" \
        '. + {processorCPUMillisecondsPerRequest: ((($a - $b) / ([.requests, 1] | max) * 1000 | round) / 1000)}' \
        <<<"$line")
fi
kill "$SAMPLER_PID" 2>/dev/null || true
read -r threads rss < <(awk '$1 > t { t = $1 } $2 > r { r = $2 } END { print t + 0, r + 0 }' "$WORK/samples")
# The server's CPU per payment: with the flood, the flood's requests are in it too, so only beside the slow processor.
jq -c --argjson threads "$threads" --argjson rss "$rss" --argjson b "$cpu_before" --argjson a "$(cpu_ms)" \
    --arg scenario "$SCENARIO" \
    '(if $scenario == "slowProcessor"
      then {serverCPUMillisecondsPerRequest: ((($a - $b) / ([.requests, 1] | max) * 1000 | round) / 1000)}
      else {} end) as $cpu | . + $cpu + {serverThreadsMax: $threads, serverRSSMaxKB: $rss}' <<<"$line"

python3 scripts/load/client.py check "$BASE" "$WORK/pay" >/dev/null \
    || fail "the payments' checks failed"
charged=$(store_payments)
expected=$(wc -l <"$WORK/pay/checkouts.tsv")
[ "$charged" -eq "$expected" ] || fail "$charged payments recorded for $expected checkouts"
stop_server
