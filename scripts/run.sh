#!/usr/bin/env bash
# `make run`: the sandbox Apple Pay gateway and the merchant server in sandbox mode on an embedded SQLite store,
# with the checkout page at http://HOST:PORT/. Creates the sandbox (a test Apple authority and merchant
# certificates) on first use. Ctrl-C stops both.
# Usage: scripts/run.sh SANDBOX_DIR STORE_PATH PORT   (HOST, GATEWAY_PORT, MERCHANT_ID and APPLEPAY_BIN may be set)
set -euo pipefail
SANDBOX="$1"; STORE="$2"; PORT="$3"
HOST="${HOST:-127.0.0.1}"
GATEWAY_PORT="${GATEWAY_PORT:-8443}"
BIN="${APPLEPAY_BIN:-$(swift build -c release --show-bin-path)/applepay}"
MERCHANT_ID="${MERCHANT_ID:-merchant.com.example.sandbox}"

if [ ! -f "$SANDBOX/sandbox.json" ]; then
    echo "Creating a sandbox for $MERCHANT_ID in $SANDBOX" >&2
    "$BIN" sandbox init "$SANDBOX" --merchant-id "$MERCHANT_ID" >/dev/null
fi
# The admin API's token: made once per sandbox (0600), unless APPLEPAY_ADMIN_TOKEN is already set.
if [ -z "${APPLEPAY_ADMIN_TOKEN:-}" ]; then
    if [ ! -f "$SANDBOX/admin-token" ]; then
        (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$SANDBOX/admin-token")
    fi
    APPLEPAY_ADMIN_TOKEN="$(cat "$SANDBOX/admin-token")"
    export APPLEPAY_ADMIN_TOKEN
fi
echo "Admin API: curl -H \"Authorization: Bearer \$(cat $SANDBOX/admin-token)\" http://$HOST:$PORT/admin/v1/orders" >&2
# The store holds customers' contacts: its folder is the server user's alone (the files are made 0600 by the server).
STORE_DIR="$(dirname "$STORE")"
if [ "$STORE_DIR" != "." ]; then mkdir -p -m 700 "$STORE_DIR" && chmod 700 "$STORE_DIR"; fi

# The sandbox gateway (Apple's merchant-validation endpoint) in the background, stopped with the server.
GATEWAY_OUT=$(mktemp "${TMPDIR:-/tmp}/applepay-gateway.XXXXXX")
"$BIN" sandbox gateway --port "$GATEWAY_PORT" "$SANDBOX" >"$GATEWAY_OUT" &
GATEWAY_PID=$!
cleanup() {
    kill -TERM "$GATEWAY_PID" 2>/dev/null || true
    wait "$GATEWAY_PID" 2>/dev/null || true
    rm -f "$GATEWAY_OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/lib/await.sh"
GATEWAY=$(await_address "$GATEWAY_OUT" 's|.*gateway on \(https://[^ ]*\).*|\1|p' "$GATEWAY_PID" 100 0.1) \
    || case $? in
        1) echo "run: the sandbox gateway did not start" >&2; exit 1 ;;
        *) echo "run: the sandbox gateway did not say where it listens" >&2; exit 1 ;;
    esac
echo "Sandbox gateway on $GATEWAY" >&2
echo "Open http://$HOST:$PORT/ for the checkout page; try: curl -s http://$HOST:$PORT/v1/products   (stop with Ctrl-C)" >&2
"$BIN" serve --sandbox "$SANDBOX" --sandbox-gateway "$GATEWAY" --store "sqlite:$STORE" --host "$HOST" --port "$PORT"
