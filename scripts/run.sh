#!/usr/bin/env bash
# `make run`: the merchant server in sandbox mode on an embedded SQLite store.
# Creates the sandbox (a test Apple authority and merchant certificates) on first use.
# Usage: scripts/run.sh SANDBOX_DIR STORE_PATH PORT   (HOST, MERCHANT_ID and APPLEPAY_BIN may be set)
set -euo pipefail
SANDBOX="$1"; STORE="$2"; PORT="$3"
HOST="${HOST:-127.0.0.1}"
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
mkdir -p "$(dirname "$STORE")"
echo "Try: curl -s http://$HOST:$PORT/v1/products   (stop with Ctrl-C)" >&2
exec "$BIN" serve --sandbox "$SANDBOX" --store "sqlite:$STORE" --host "$HOST" --port "$PORT"
