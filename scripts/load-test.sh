#!/usr/bin/env bash
# Load test of the merchant server (`applepay serve`), on 127.0.0.1 only, with loops that stop by themselves.
#
# Builds release (unless APPLEPAY names a binary), makes a temporary sandbox and store (SQLite, or a private
# PostgreSQL cluster with STORE=postgres), starts the server on a free loopback port with the admin API on and the
# per-client limits off (all the load comes from 127.0.0.1), and runs five scenarios, each printing one JSON line:
#   products      wrk, GET /v1/products, keep-alive, 2 threads, CONNECTIONS connections, SECONDS seconds
#   checkouts     wrk, POST /v1/checkouts (two products; each request writes a checkout), same settings
#   sheetUpdates  wrk, POST /v1/checkouts/{id}/shipping-contact cycling through 200 checkouts, same settings
#   payments      PAYMENTS checkouts, created and priced by one keep-alive Python client and their tokens minted
#                 by one `applepay sandbox mint --batch` process (untimed), then posted once each by wrk
#                 (each request to a checkout's route carries its Checkout-Secret, as the client kept it)
#                 (scripts/load/bodies.lua: CONNECTIONS connections on as many wrk threads as cores, each thread
#                 its own share of the bodies handed to its connections one at a time, each stopping itself after
#                 its last answer; the answers are matched to their checkouts by the orders they name)
#   replays       the same bodies posted again
# Each line carries requests/s, latency p50/p99/max in ms, errors, the client's CPU share (wrk's user+system CPU
# time over wall time x cores, from /usr/bin/time), the load average after the scenario, where the processor runs
# (`processor`: inProcess or service) and serverCPUMillisecondsPerRequest (the server's user + system CPU time over
# the scenario's requests, from /proc; with PROCESSOR=service, the processor's own as
# processorCPUMillisecondsPerRequest).
# The payments line also carries contextSwitchesPerPayment and voluntarySwitchesPerPayment (the server's context
# switches during the scenario over its payments, all and the voluntary ones, from /proc) and the payments and
# Then the checks (the run fails otherwise): every payment answered success with its own order; every replay
# answered byte for byte the same; every order reads back `paid` with its checkout's total over
# GET /v1/orders/{id}?secret=...; the store holds exactly one payment per checkout; no 5xx in the server's log; the
# server holds no more descriptors than before the load; SIGTERM stops it with exit 0 within 30 s.
#
# Usage: scripts/load-test.sh [SECONDS] [CONNECTIONS] [PAYMENTS]   (defaults 10, 16, 2000)
# Environment: STORE=sqlite|postgres (default sqlite), SCRATCH (build folder, default .build), APPLEPAY (use this
# binary instead of building one), PERF_OUT=FILE (after the replays, PAYMENTS more payments on fresh checkouts as
# `paymentsProfiled`, with the server recorded by `perf record -g`; writes `perf report --no-children --sort
# dso,symbol` to FILE and keeps the recording as FILE.data; then their replays as `replaysProfiled`),
# STRACE_OUT=FILE (the same for `strace -f -c`: after the replays, PAYMENTS more payments as `paymentsTraced`, the
# server's system calls counted, and a line `paymentsSyscalls` with the calls per payment of each kind; FILE keeps
# strace's table),
# PG_FSYNC (the PostgreSQL cluster's fsync, default on: a payment is acknowledged once it is on disk, as on SQLite),
# PROCESSOR=inProcess|service (default inProcess: the sandbox processor inside the server, its HTTP exchange and
# ledger counted in the server's CPU; service: `applepay processor serve` in its own process, as a provider is, so
# that the server's CPU is the server's alone).
set -euo pipefail
DURATION=${1:-10}
CONNECTIONS=${2:-16}
PAYMENTS=${3:-2000}
NAME=load-test
PROCESSOR=${PROCESSOR:-inProcess}
PROCESSOR_PID=""
case "$PROCESSOR" in
    inProcess) ;;
    service)
        # Started by scripts/load/server.sh once the sandbox exists, before the merchant server: the sandbox
        # processor service with its own ledger, answering at once.
        before_server() {
            : >"$WORK/processor.out"
            "$APPLEPAY" processor serve --ledger "sqlite:$WORK/ledger.sqlite" --sandbox "$WORK/sandbox" \
                >"$WORK/processor.out" 2>"$WORK/processor.log" &
            PROCESSOR_PID=$!
            EXTRA_PIDS+=("$PROCESSOR_PID")
            local url=""
            for _ in $(seq 1 300); do
                url=$(sed -n 's|^Processor listening on \(http://[^ ]*\).*|\1|p' "$WORK/processor.out")
                [ -n "$url" ] && break
                sleep 0.1
            done
            [ -n "$url" ] || fail "the processor service did not start: $(cat "$WORK/processor.log")"
            SERVE_ARGS=(--processor "$url")
        }
        ;;
    *)
        echo "load-test: PROCESSOR is inProcess or service, not $PROCESSOR" >&2
        exit 64
        ;;
esac
. "$(dirname "$0")/load/server.sh"

# The untimed part first: checkouts for the sheet updates and the payments, priced, tokens minted in one process.
mkdir -p "$WORK/pay"
python3 scripts/load/client.py prepare "$BASE" "$WORK/pay" "$PAYMENTS" 200 "$APPLEPAY" "$WORK/sandbox" \
    || fail "could not prepare $PAYMENTS payments"
FOLDERS=("$WORK/pay")
if [ -n "${PERF_OUT:-}" ]; then # as many again for the profiled run, so that perf does not touch the figures
    mkdir -p "$WORK/profile"
    python3 scripts/load/client.py prepare "$BASE" "$WORK/profile" "$PAYMENTS" 0 "$APPLEPAY" "$WORK/sandbox" \
        || fail "could not prepare $PAYMENTS payments for the profile"
    FOLDERS+=("$WORK/profile")
fi
if [ -n "${STRACE_OUT:-}" ]; then # and for the traced run
    mkdir -p "$WORK/traced"
    python3 scripts/load/client.py prepare "$BASE" "$WORK/traced" "$PAYMENTS" 0 "$APPLEPAY" "$WORK/sandbox" \
        || fail "could not prepare $PAYMENTS payments for the system call count"
    FOLDERS+=("$WORK/traced")
fi
echo '/v1/checkouts	{"items":[{"sku":"COFFEE-250","quantity":2},{"sku":"MUG-01","quantity":1}]}' >"$WORK/checkout.tsv"

. scripts/load/scenarios.sh

# Runs a scenario (`run_wrk ...` or `run_once ...`) and adds to its line the server's CPU time per request (user +
# system, from /proc: a figure the machine's noise moves far less than the rate), the processor's with
# PROCESSOR=service, where the processor ran, and the KB the server wrote to its files per request (the store's
# WAL and checkpoints).
measured() {
    local cpu_before processor_before written_before line
    cpu_before=$(cpu_ms)
    processor_before=$(processor_cpu_ms)
    written_before=$(written_bytes)
    line=$("$@")
    jq -c --argjson b "$cpu_before" --argjson a "$(cpu_ms)" --argjson pb "$processor_before" \
        --argjson pa "$(processor_cpu_ms)" --arg processor "$PROCESSOR" \
        --argjson wb "$written_before" --argjson wa "$(written_bytes)" \
        '. + {processor: $processor,
            serverCPUMillisecondsPerRequest: ((($a - $b) / ([.requests, 1] | max) * 1000 | round) / 1000)}
         + (if $wb >= 0 and $wa >= 0
            then {serverKBWrittenPerRequest: ((($wa - $wb) / 1024 / ([.requests, 1] | max) * 10 | round) / 10)}
            else {} end)
         + (if $processor == "service"
            then {processorCPUMillisecondsPerRequest: ((($pa - $pb) / ([.requests, 1] | max) * 1000 | round) / 1000)}
            else {} end)' <<<"$line"
}

measured run_wrk products /v1/products
measured run_wrk checkouts /v1/checkouts "$WORK/checkout.tsv"
measured run_wrk sheetUpdates / "$WORK/pay/sheet.tsv"
# The payments scenario with the server's context switches counted from /proc: voluntary ones (a thread waits for
# another: how many times a payment's threads hand over to one another) and involuntary ones (the scheduler
# preempts a thread: the machine is busy), per payment.
read -r voluntary_before involuntary_before <<<"$(switches)"
line=$(measured run_once payments "$WORK/pay" answers)
read -r voluntary_after involuntary_after <<<"$(switches)"
jq -c --argjson v "$((voluntary_after - voluntary_before))" \
    --argjson i "$((involuntary_after - involuntary_before))" --argjson n "$(wc -l <"$WORK/pay/checkouts.tsv")" \
    '. + {contextSwitchesPerPayment: ((($v + $i) / $n * 10 | round) / 10),
        voluntarySwitchesPerPayment: (($v / $n * 10 | round) / 10)}' <<<"$line"
measured run_once replays "$WORK/pay" replays
if [ -n "${PERF_OUT:-}" ]; then # the same scenario again on fresh checkouts, recorded (its figures say perf's cost)
    perf record -g -o "$WORK/perf.data" -p "$SERVER_PID" >"$WORK/perf.log" 2>&1 &
    PERF_PID=$!
    sleep 0.5
    run_once paymentsProfiled "$WORK/profile" answers
    kill -INT "$PERF_PID"
    wait "$PERF_PID" || true
    PERF_PID=""
    perf report -i "$WORK/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null >"$PERF_OUT" || true
    cp "$WORK/perf.data" "$PERF_OUT.data"
    echo "load-test: profile of the payments scenario in $PERF_OUT" >&2
    run_once replaysProfiled "$WORK/profile" replays # not recorded; the checks below want the replays
fi
if [ -n "${STRACE_OUT:-}" ]; then # the server's system calls per payment, each kind (strace slows it: no timings)
    strace -f -c -o "$STRACE_OUT" -p "$SERVER_PID" 2>"$WORK/strace.log" &
    PERF_PID=$!
    sleep 1
    run_once paymentsTraced "$WORK/traced" answers >/dev/null
    kill -INT "$PERF_PID"
    wait "$PERF_PID" || true
    PERF_PID=""
    awk -v n="$(wc -l <"$WORK/traced/checkouts.tsv")" '
        $1 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ { if ($NF == "total") total = $4; else calls[$NF] = $4 }
        END {
            printf "{\"scenario\":\"paymentsSyscalls\",\"payments\":%d,\"perPayment\":{\"total\":%.1f", n, total / n
            for (name in calls) if (calls[name] / n >= 0.05) printf ",\"%s\":%.2f", name, calls[name] / n
            print "}}"
        }' "$STRACE_OUT"
    run_once replaysTraced "$WORK/traced" replays >/dev/null
fi

# The checks: answers and orders over the API, then the store, descriptors, the log, SIGTERM.
expected=0
for folder in "${FOLDERS[@]}"; do
    python3 scripts/load/client.py check "$BASE" "$folder" || fail "the payments' checks failed"
    expected=$((expected + $(wc -l <"$folder/checkouts.tsv")))
done
charged=$(store_payments)
[ "$charged" -eq "$expected" ] || fail "$charged payments recorded for $expected checkouts (double charge?)"
# wrk's connections are closed; the server's kept connections to the processor close once idle for the client's
# idle connection lifetime (30 s): wait for the descriptors to come back, at most 45 s.
sleep 1
FDS_AFTER=$(descriptors)
for _ in $(seq 1 44); do
    [ "$FDS_AFTER" -le "$((FDS_BEFORE + 2))" ] && break
    sleep 1
    FDS_AFTER=$(descriptors)
done
jq -nc --arg store "$STORE" --argjson orders "$expected" --argjson charged "$charged" \
    --argjson before "$FDS_BEFORE" --argjson after "$FDS_AFTER" --argjson rss "$(rss_kb)" --arg load "$(loadavg)" \
    --argjson cores "$CORES" '{scenario: "checks", store: $store, orders: $orders, paidOnce: true,
        replaysMatch: true, paymentsInStore: $charged, descriptorsBefore: $before, descriptorsAfter: $after,
        rssKB: $rss, loadAverage: $load, cores: $cores}'
[ "$FDS_AFTER" -le "$((FDS_BEFORE + 2))" ] \
    || fail "the server holds $FDS_AFTER descriptors, $FDS_BEFORE before the load"
grep -q '"status":5[0-9][0-9]' "$WORK/server.log" \
    && fail "the server answered 5xx: $(grep -m1 '"status":5' "$WORK/server.log")"

stop_server
