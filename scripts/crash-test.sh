#!/usr/bin/env bash
# Crash test of the merchant server and the processor service, on 127.0.0.1 only (`make crash`).
#
# Builds release (or uses $APPLEPAY), makes a temporary sandbox, starts `applepay processor serve` (SQLite ledger)
# and `applepay serve --processor` (SQLite store, admin API on) on fixed free loopback ports, creates PAYMENTS
# checkouts, mints their tokens in one `applepay sandbox mint --batch` run, then posts the payments (with each
# checkout's Checkout-Secret) from 8 client threads (retrying connection errors with the same token) while SIGKILLing the merchant server SERVER_KILLS times
# and the processor PROCESSOR_KILLS times at random moments, each restarted at once on the same port, store and
# ledger. Then one reconciliation pass (POST /admin/v1/reconcile?olderThanSeconds=0) and the checks:
#   every acknowledged payment (200 "success") is paid in the store and approved exactly once in the ledger;
#   no idempotency key approved twice, no checkout with two non-declined orders or two approved charges;
#   no order pending or unknown after the pass; every paid order's total equals its ledger charge's amount, and
#   every approved ledger charge has a paid order.
# Prints one JSON line of figures (kills, payments posted, acknowledged, reconciled, doubleCharges, ...) and exits 1
# on any violation (listed on standard error; the work folder is then kept and named).
#
# Usage: scripts/crash-test.sh [PAYMENTS] [SERVER_KILLS] [PROCESSOR_KILLS]   (defaults 300, 20, 5)
# With CRASH_PSP=stripe|checkout|adyen the server charges through that provider's connector against its local fake
# (Tests/CommandLineTests/python/psp, validating against Tests/Fixtures/psp) instead of the processor service; the
# fake is never killed, and payments only a webhook could settle (Adyen, Checkout.com after a restart) are counted as
# awaitingWebhook.
# Environment: APPLEPAY (use this binary instead of building one), SCRATCH (build folder, default .build),
# CRASH_CLIENTS (client threads, default 8), CRASH_SEED (replay a run's kill schedule; printed as "seed").
set -euo pipefail
PAYMENTS=${1:-300}
SERVER_KILLS=${2:-20}
PROCESSOR_KILLS=${3:-5}
SCRATCH=${SCRATCH:-.build}
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$ROOT/$SCRATCH/release/applepay"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/applepay-crash.XXXXXX")
KEEP=0
cleanup() { if [ "$KEEP" -eq 0 ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

seed=()
[ -n "${CRASH_SEED:-}" ] && seed=(--seed "$CRASH_SEED")
[ -n "${CRASH_PSP:-}" ] && seed+=(--psp "$CRASH_PSP")
code=0
python3 "$ROOT/scripts/crash_test.py" --applepay "$APPLEPAY" --work "$WORK" --payments "$PAYMENTS" \
    --server-kills "$SERVER_KILLS" --processor-kills "$PROCESSOR_KILLS" --clients "${CRASH_CLIENTS:-8}" \
    "${seed[@]}" || code=$?
if [ "$code" -ne 0 ]; then
    KEEP=1
    echo "crash-test: FAIL (exit $code); logs, store and ledger kept in $WORK" >&2
    exit 1
fi
echo "crash-test: ok" >&2
