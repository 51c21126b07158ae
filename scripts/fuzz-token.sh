#!/usr/bin/env bash
# Fuzzes the token path (PaymentToken parse → verify → decrypt, and the BER/CMS reader) with libFuzzer for
# SECONDS (default 120). Builds Sources/FuzzPaymentToken with -sanitize=fuzzer,address into its own scratch path,
# seeds the corpus from Tests/Fixtures (real tokens, their CMS signatures, the checked-in fuzz regression corpus)
# and leaves any finding as crash-*/timeout-*/oom-* in .build-fuzz/findings. Exits non-zero on a finding.
set -euo pipefail
SECONDS_TO_RUN="${1:-120}"
. "$(dirname "$0")/lib/fuzz-build.sh"
WORK="$ROOT/.build-fuzz"
fuzz_build FuzzPaymentToken

# The seed corpus: every real token, the DER of its CMS signature, and the regression corpus.
SEEDS="$WORK/seeds"
CORPUS="$WORK/corpus"
mkdir -p "$SEEDS" "$CORPUS" "$WORK/findings"
for token in Tests/Fixtures/apple-pay-tokens/*/token.json; do
    name="$(basename "$(dirname "$token")")"
    cp "$token" "$SEEDS/$name.json"
    python3 - "$token" "$SEEDS/$name.signature.der" <<'PY'
import base64, json, sys
token = json.load(open(sys.argv[1]))
token = token.get("paymentData", token)
open(sys.argv[2], "wb").write(base64.b64decode(token["signature"]))
PY
done
if [ -d Tests/Fixtures/fuzz-corpus ]; then cp Tests/Fixtures/fuzz-corpus/* "$SEEDS/"; fi

# -max_len: real tokens are about 4 KB; 16 KB leaves room to grow. -timeout: a token taking 2 s is a hang.
# -detect_leaks=0: LeakSanitizer reports the keys loaded once and the verifier's chain cache, still referenced, as
# leaks (probably Swift references it cannot follow), per input and at exit, hence ASAN_OPTIONS too; ASan's memory
# errors stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
"$BINARY" "$CORPUS" "$SEEDS" -max_total_time="$SECONDS_TO_RUN" -max_len=16384 -timeout=2 -rss_limit_mb=4096 -detect_leaks=0 \
    -artifact_prefix="$WORK/findings/" -print_final_stats=1
