#!/usr/bin/env bash
# `make run`: the merchant server in sandbox mode on an embedded SQLite store.
# Creates the sandbox (a test Apple authority and merchant certificates) on first use.
set -euo pipefail
SANDBOX="$1"; STORE="$2"; PORT="$3"
BIN="$(swift build -c release --show-bin-path)/applepay"
MERCHANT_ID="${MERCHANT_ID:-merchant.com.example.sandbox}"

if [ ! -f "$SANDBOX/root.pem" ]; then
    "$BIN" sandbox init "$SANDBOX" --merchant-id "$MERCHANT_ID"
fi
mkdir -p "$(dirname "$STORE")"
exec "$BIN" serve --sandbox "$SANDBOX" --store "sqlite:$STORE" --port "$PORT"
