# Shared by scripts/fuzz-token.sh and scripts/fuzz-merchant.sh (sourced): sets ROOT (the repository, made the
# working folder), SCRATCH (FUZZ_SCRATCH, default .build-fuzz/libfuzzer) and SWIFT (default swift), and defines
# fuzz_build PRODUCT: builds that fuzz target with -sanitize=fuzzer,address -DFUZZING into SCRATCH and sets BINARY
# to it.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRATCH="${FUZZ_SCRATCH:-$ROOT/.build-fuzz/libfuzzer}"
SWIFT="${SWIFT:-swift}"
cd "$ROOT"

fuzz_build() {
    "$SWIFT" build -c release --scratch-path "$SCRATCH" --product "$1" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -v "Cannot export local symbol" >&2
    BINARY="$("$SWIFT" build -c release --scratch-path "$SCRATCH" --show-bin-path)/$1"
}
