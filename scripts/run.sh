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
# The store holds customers' contacts: its folder is the server user's alone (the files are made 0600 by the server).
STORE_DIR="$(dirname "$STORE")"
if [ "$STORE_DIR" != "." ]; then mkdir -p -m 700 "$STORE_DIR" && chmod 700 "$STORE_DIR"; fi
echo "Try: curl -s http://$HOST:$PORT/v1/products   (stop with Ctrl-C)" >&2
exec "$BIN" serve --sandbox "$SANDBOX" --store "sqlite:$STORE" --host "$HOST" --port "$PORT"
