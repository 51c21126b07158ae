#!/usr/bin/env bash
# Fuzzes what clients and operators hand the merchant side (issue 14) with libFuzzer, SECONDS (default 120) per
# target: `request` (PaymentRequest decoding + validate()), `store` (StoreConfiguration.decode, then pricing a
# checkout) and `http` (MerchantAPI.respond(to:) in process). Builds Sources/FuzzMerchant with
# -sanitize=fuzzer,address into its own scratch path, seeds each target from Tests/Fixtures/fuzz-merchant/TARGET
# (the seeds and every finding kept as a regression input), and leaves findings in .build-fuzz/merchant/findings.
# Usage: scripts/fuzz-merchant.sh [SECONDS] [TARGET...]; extra libFuzzer flags in FUZZ_FLAGS (e.g. -runs=10000000).
# Exits non-zero on a finding.
set -euo pipefail
SECONDS_TO_RUN="${1:-120}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then TARGETS=(request store http); fi
. "$(dirname "$0")/lib/fuzz-build.sh"
WORK="$ROOT/.build-fuzz/merchant"
fuzz_build FuzzMerchant

# -detect_leaks=0: as in fuzz-token.sh (objects kept for the whole run read as leaks). -max_len: the body limit is
# 64 KB; 8 KB inputs reach every field limit and keep executions fast.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
status=0
for target in "${TARGETS[@]}"; do
    mkdir -p "$WORK/$target/corpus" "$WORK/findings"
    echo "== $target" >&2
    # shellcheck disable=SC2086
    FUZZ_TARGET="$target" "$BINARY" "$WORK/$target/corpus" "Tests/Fixtures/fuzz-merchant/$target" \
        -max_total_time="$SECONDS_TO_RUN" -max_len=8192 -timeout=5 -rss_limit_mb=4096 -detect_leaks=0 \
        -artifact_prefix="$WORK/findings/$target-" -print_final_stats=1 ${FUZZ_FLAGS:-} || status=1
done
exit $status
