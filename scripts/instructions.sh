#!/usr/bin/env bash
# Instructions the merchant server spends per request, counted by valgrind's callgrind: unlike requests/s, the
# count does not depend on what else the machine runs, so a change of a few per cent shows on a busy machine.
#
# Starts `applepay serve` (a sandbox, SQLite, per-client limits off, as the load test) under callgrind twice: once
# answering no request, once answering REQUESTS keep-alive GET PATH on one connection (a Python http.client loop);
# prints one JSON line with both totals and (total with REQUESTS - total with none) / REQUESTS. Compare two
# binaries (`APPLEPAY=old scripts/instructions.sh`, then the new one): two runs agree within about 1 %.
# KEEP=FOLDER keeps both callgrind files there, for `callgrind_annotate` (where the instructions go).
#
# valgrind 3.19 writes into the signal mask a program hands to rt_sigsuspend, and libdispatch hands a constant
# one (a crash in every valgrind tool but `none`): the server runs with a preloaded `sigsuspend` that passes a
# copy, compiled here with cc. It changes nothing else.
#
# Usage: scripts/instructions.sh [REQUESTS] [PATH]   (defaults 2000, /v1/products)
# Environment: APPLEPAY (the binary; default: build release into SCRATCH, default .build), KEEP (see above),
# BODY (a JSON body: the requests are then POSTs of it, answered 200 or 201; e.g. BODY='{"items":[{"sku":
# "COFFEE-250","quantity":2},{"sku":"MUG-01","quantity":1}]}' with PATH /v1/checkouts: the load test's checkout),
# SCENARIO=payments|replays (PATH ignored: REQUESTS checkouts priced and their tokens minted by `applepay sandbox
# mint --batch`, in both runs, then only in the second each paid once (the in-process sandbox processor's part
# included), or one paid in both runs and replayed REQUESTS times in the second, each answer byte for byte the first),
# PROCESSOR=service (the sandbox processor as `applepay processor serve` in a process of its own, not counted: the
# server alone, as the load test's PROCESSOR=service).
set -euo pipefail
REQUESTS=${1:-2000}
REQUEST_PATH=${2:-/v1/products}
cd "$(dirname "$0")/.."
. scripts/lib/await.sh
for tool in valgrind cc python3 jq; do
    command -v "$tool" >/dev/null || { echo "instructions: needs $tool" >&2; exit 1; }
done
if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "${SCRATCH:-.build}" --product applepay >&2
    APPLEPAY="$PWD/${SCRATCH:-.build}/release/applepay"
fi
case "$APPLEPAY" in /*) ;; *) APPLEPAY="$PWD/$APPLEPAY" ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/applepay-instructions.XXXXXX")
SERVER_PID=""
PROCESSOR_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
    if [ -n "$PROCESSOR_PID" ]; then kill -TERM "$PROCESSOR_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
cat >"$WORK/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}
C
cc -O2 -shared -fPIC -o "$WORK/sigsuspend.so" "$WORK/sigsuspend.c"
"$APPLEPAY" sandbox init "$WORK/sandbox" --merchant-id merchant.com.example.bench >/dev/null
echo '{"server": {"perClientConnectionLimit": 0, "rateLimits": "off"}}' >"$WORK/server.json"
SERVE_ARGS=()
case "${PROCESSOR:-inProcess}" in
    inProcess) ;;
    service)
        "$APPLEPAY" processor serve --ledger "sqlite:$WORK/ledger.sqlite" --sandbox "$WORK/sandbox" \
            >"$WORK/processor.out" 2>"$WORK/processor.log" &
        PROCESSOR_PID=$!
        url=$(await_address "$WORK/processor.out" 's|^Processor listening on \(http://[^ ]*\).*|\1|p' \
            "$PROCESSOR_PID" 300 0.1) || { echo "instructions: the processor did not start" >&2; exit 1; }
        SERVE_ARGS=(--processor "$url")
        ;;
    *) echo "instructions: PROCESSOR is inProcess or service, not $PROCESSOR" >&2; exit 64 ;;
esac

count() { # REQUESTS -> the run's total instructions
    local out="$WORK/callgrind.$1" base=""
    : >"$WORK/server.out"
    (cd "$WORK" && LD_PRELOAD="$WORK/sigsuspend.so" exec valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$APPLEPAY" serve --sandbox "$WORK/sandbox" --config "$WORK/server.json" \
        --store "sqlite:$WORK/orders.$1.sqlite" --port 0 ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} >"$WORK/server.out" \
        2>"$WORK/server.log") &
    SERVER_PID=$!
    base=$(await_address "$WORK/server.out" 's|.*on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$SERVER_PID" 600 0.2) \
        || case $? in
            1) cat "$WORK/server.log" >&2; exit 1 ;;
            *) echo "instructions: the server did not start" >&2; exit 1 ;;
        esac
    python3 - "$base" "$1" "$REQUEST_PATH" "${BODY:-}" "${SCENARIO:-}" "$APPLEPAY" "$WORK" "$REQUESTS" <<'PY'
import http.client, os, sys, urllib.parse
url, count, path, body, scenario = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
applepay, work, prepared = sys.argv[6], sys.argv[7], int(sys.argv[8])
if scenario:
    # Both runs do the same untimed-in-spirit part (checkouts priced; tokens minted by another process), so that
    # the difference is the payments (or the replays) alone.
    sys.path.insert(0, os.path.join(os.getcwd(), "scripts", "load"))
    import client as load
    shop = load.Client(sys.argv[1])
    made = load.create_checkouts(shop, prepared if scenario == "payments" else 1)
    folder = os.path.join(work, f"mint.{count}")
    os.makedirs(folder, exist_ok=True)
    bodies = load.mint(applepay, os.path.join(work, "sandbox"), folder, made)
    posts = []
    if scenario == "payments":
        posts = [(checkout, secret) for checkout, _, _, _, secret in made][:count]
    else:
        checkout, secret = made[0][0], made[0][4]
        first = shop.call("POST", f"/v1/checkouts/{checkout}/payment", bodies[checkout].encode(), secret=secret)
        if first[0] != 200:
            sys.exit(f"instructions: the payment to replay answered {first[0]}")
        posts = [(checkout, secret)] * count
    for checkout, secret in posts:
        status, answer = shop.call("POST", f"/v1/checkouts/{checkout}/payment", bodies[checkout].encode(), secret=secret)
        if status != 200 or (scenario == "replays" and answer != first[1]):
            sys.exit(f"instructions: a {scenario[:-1]} answered {status}")
    sys.exit(0)
method = "POST" if body else "GET"
headers = {"Content-Type": "application/json"} if body else {}
connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
for _ in range(count):
    connection.request(method, path, body=body.encode() if body else None, headers=headers)
    response = connection.getresponse()
    response.read()
    if response.status not in (200, 201):
        sys.exit(f"instructions: {method} {path} answered {response.status}")
connection.close()
PY
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
    SERVER_PID=""
    [ -z "${KEEP:-}" ] || cp "$out" "$KEEP/"
    sed -n 's/^summary: //p' "$out"
}
idle=$(count 0)
busy=$(count "$REQUESTS")
[ -z "${SCENARIO:-}" ] || REQUEST_PATH="$SCENARIO"
jq -cn --arg path "$REQUEST_PATH" --argjson requests "$REQUESTS" --argjson idle "$idle" --argjson busy "$busy" \
    '{path: $path, requests: $requests, instructionsIdle: $idle, instructions: $busy,
      instructionsPerRequest: (($busy - $idle) / $requests | round)}'
