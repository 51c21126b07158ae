#!/usr/bin/env bash
# Load test of the merchant server (`applepay serve`), on 127.0.0.1 only, with loops that stop by themselves.
#
# Builds release, makes a temporary sandbox and SQLite store, starts the server on a free loopback port (--port 0),
# then runs three scenarios and prints one JSON line each (requests/s, latency p50/p99 in ms, errors):
#   products   wrk, GET /v1/products, keep-alive, CONNECTIONS connections, SECONDS seconds
#   checkouts  wrk, POST /v1/checkouts (body from a wrk Lua script), same settings
#   payments   PAYMENTS checkouts, each paid with its own sandbox token (minted beforehand, outside the timed part),
#              posted concurrently by curl --parallel; then every token is posted again (replays).
# The payment run is then checked over the API: every payment answered success with a distinct order, every order
# reads back `paid` with the checkout's total, every replay returns the first answer (same order id), the store
# holds exactly one payment per checkout, and the server holds no more file descriptors than before the load.
# Finally the server gets SIGTERM and must exit 0; the temporary folder is removed.
#
# Usage: scripts/load-test.sh [SECONDS] [CONNECTIONS] [PAYMENTS]   (defaults 10, 16, 500)
# Environment: SCRATCH (build folder, default .build), APPLEPAY (use this binary instead of building one).
set -euo pipefail
DURATION=${1:-10}
CONNECTIONS=${2:-16}
PAYMENTS=${3:-500}
SCRATCH=${SCRATCH:-.build}
cd "$(dirname "$0")/.."
ROOT=$PWD

# The load generator and the JSON tool are this script's own, not build or test dependencies: installed only here.
missing=""
for tool in wrk jq curl sqlite3; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    echo "load-test: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$ROOT/$SCRATCH/release/applepay"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/applepay-load.XXXXXX")
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "load-test: FAIL: $*" >&2; exit 1; }

"$APPLEPAY" sandbox init "$WORK/sandbox" --merchant-id merchant.com.example.load >/dev/null
# All the load comes from 127.0.0.1: no per-client connection limit, no rate limits (docs/LIMITS.md).
echo '{"server": {"perClientConnectionLimit": 0, "rateLimits": "off"}}' >"$WORK/server.json"
"$APPLEPAY" serve --sandbox "$WORK/sandbox" --config "$WORK/server.json" --store "sqlite:$WORK/orders.sqlite" --port 0 \
    >"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!
BASE=""
for _ in $(seq 1 100); do
    BASE=$(sed -n 's|.*on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$WORK/server.out")
    [ -n "$BASE" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; fail "the server did not start"; }
    sleep 0.1
done
[ -n "$BASE" ] || fail "the server did not say where it listens"
curl -sf "$BASE/healthz" >/dev/null || fail "GET /healthz"
descriptors() { ls "/proc/$SERVER_PID/fd" | wc -l; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$SERVER_PID/status"; }
FDS_BEFORE=$(descriptors)
echo "load-test: server $BASE (pid $SERVER_PID, $FDS_BEFORE descriptors); load average $(cut -d' ' -f1-3 /proc/loadavg)," \
    "$(nproc) cores" >&2

# wrk reports through a Lua done() hook: one JSON line on standard output.
cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout
  io.write(string.format(
    '{"scenario":"%s","connections":%s,"seconds":%.1f,"requests":%d,"requestsPerSecond":%.0f,' ..
    '"latencyMs":{"p50":%.2f,"p99":%.2f,"max":%.2f},"errors":%d,"non2xx":%d,"timeouts":%d}\n',
    os.getenv("SCENARIO"), os.getenv("CONNECTIONS"), summary.duration / 1e6, summary.requests,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, errors, summary.errors.status, summary.errors.timeout))
end
LUA
cat "$WORK/report.lua" >"$WORK/checkout.lua"
cat >>"$WORK/checkout.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"items": [{"sku": "COFFEE-250", "quantity": 2}, {"sku": "MUG-01", "quantity": 1}]}'
LUA
run_wrk() { # scenario path script
    SCENARIO=$1 CONNECTIONS=$CONNECTIONS wrk --threads 2 --connections "$CONNECTIONS" --duration "${DURATION}s" \
        --timeout 10s --script "$3" "$BASE$2" | tail -1
}
run_wrk products /v1/products "$WORK/report.lua"
run_wrk checkouts /v1/checkouts "$WORK/checkout.lua"

# The payment path. Untimed: create PAYMENTS checkouts and mint one token for each (bound to its total and
# applicationData), two mints at a time.
mkdir -p "$WORK/pay"
for i in $(seq 1 "$PAYMENTS"); do
    curl -sf -X POST "$BASE/v1/checkouts" -H 'Content-Type: application/json' \
        -d "{\"items\": [{\"sku\": \"COFFEE-250\", \"quantity\": $(( i % 3 + 1 ))}]}" \
        | jq -r '[.id, .paymentRequest.total.amount, .paymentRequest.currencyCode, .paymentRequest.applicationData] | @tsv'
done >"$WORK/checkouts.tsv"
[ "$(wc -l <"$WORK/checkouts.tsv")" -eq "$PAYMENTS" ] || fail "could not create $PAYMENTS checkouts"
export APPLEPAY WORK
xargs -P 2 -L 1 sh -c '"$APPLEPAY" sandbox mint "$WORK/sandbox" --amount "$2" --currency "$3" --application-data "$4" \
    | jq -c "{token: .}" >"$WORK/pay/$1.json"' mint <"$WORK/checkouts.tsv"
: >"$WORK/curl.cfg"
while IFS="$(printf '\t')" read -r id _ _ _; do
    [ -s "$WORK/pay/$id.json" ] || fail "no token minted for $id"
    # One block per transfer, separated by `next` (otherwise curl joins every data-binary into one body).
    [ -s "$WORK/curl.cfg" ] && echo next >>"$WORK/curl.cfg"
    cat >>"$WORK/curl.cfg" <<CFG
url = "$BASE/v1/checkouts/$id/payment"
data-binary = "@$WORK/pay/$id.json"
header = "Content-Type: application/json"
silent
max-time = 30
write-out = "%{http_code} %{time_total}\\n"
output = "$WORK/pay/$id.answer"
CFG
done <"$WORK/checkouts.tsv"
sed 's/\.answer"$/.replay"/' "$WORK/curl.cfg" >"$WORK/replay.cfg"

pay_round() { # scenario config -> one JSON line; per-transfer "status seconds" lines in $WORK/$1.times
    local start end
    start=$(date +%s.%N)
    curl -s --parallel --parallel-max "$CONNECTIONS" --config "$2" >"$WORK/$1.times" 2>"$WORK/$1.curl.log" || true
    end=$(date +%s.%N)
    sort -n -k2 "$WORK/$1.times" | awk -v scenario="$1" -v start="$start" -v end="$end" -v c="$CONNECTIONS" '
        { t[NR] = $2; if ($1 != 200) errors++ }
        END {
            p50 = t[int(NR * 0.50 + 0.5)]; p99 = t[int(NR * 0.99 + 0.5)]
            printf "{\"scenario\":\"%s\",\"connections\":%d,\"seconds\":%.2f,\"requests\":%d,\"requestsPerSecond\":%.0f,", scenario, c, end - start, NR, NR / (end - start)
            printf "\"latencyMs\":{\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f},\"errors\":%d}\n", p50 * 1000, p99 * 1000, t[NR] * 1000, errors + 0
        }'
}
pay_round payments "$WORK/curl.cfg"
pay_round replays "$WORK/replay.cfg"

# Every payment succeeded once, with its own order, paid for the checkout's total; every replay said the same.
orders=""
while IFS="$(printf '\t')" read -r id amount _ _; do
    answer="$WORK/pay/$id.answer"
    [ "$(jq -r .status "$answer")" = success ] || fail "payment of $id: $(jq -c . "$answer")"
    order=$(jq -r .orderId "$answer")
    cmp -s "$answer" "$WORK/pay/$id.replay" || fail "replay of $id answered $(cat "$WORK/pay/$id.replay"), first $(cat "$answer")"
    read -r status total checkout < <(curl -sf "$BASE/v1/orders/$order" | jq -r '[.status, .totals.total, .checkoutId] | @tsv')
    [ "$status" = paid ] && [ "$total" = "$amount" ] && [ "$checkout" = "$id" ] \
        || fail "order $order of $id: status $status, total $total (expected paid, $amount)"
    orders="$orders$order
"
done <"$WORK/checkouts.tsv"
[ "$(printf '%s' "$orders" | sort -u | wc -l)" -eq "$PAYMENTS" ] || fail "two checkouts share an order"
charged=$(sqlite3 "$WORK/orders.sqlite" "SELECT count(*) FROM payments")
[ "$charged" -eq "$PAYMENTS" ] || fail "$charged payments recorded for $PAYMENTS checkouts (double charge?)"

FDS_AFTER=$(descriptors)
echo "{\"scenario\":\"checks\",\"orders\":$PAYMENTS,\"paidOnce\":true,\"replaysMatch\":true,\"paymentsInStore\":$charged,\"descriptorsBefore\":$FDS_BEFORE,\"descriptorsAfter\":$FDS_AFTER,\"rssKB\":$(rss_kb),\"loadAverage\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
[ "$FDS_AFTER" -le "$((FDS_BEFORE + 2))" ] || fail "the server holds $FDS_AFTER descriptors, $FDS_BEFORE before the load"
grep -q '"status":5[0-9][0-9]' "$WORK/server.log" && fail "the server answered 5xx: $(grep -m1 '"status":5' "$WORK/server.log")"

kill -TERM "$SERVER_PID"
# Graceful shutdown finishes requests in flight (10 s grace); past 30 s the server is stuck: say so and kill it.
for _ in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    fail "the server did not exit within 30 s of SIGTERM (last log line: $(tail -1 "$WORK/server.log"))"
fi
code=0
wait "$SERVER_PID" || code=$?
SERVER_PID=""
[ "$code" -eq 0 ] || fail "the server exited $code after SIGTERM"
echo "load-test: ok (server stopped with exit 0)" >&2
