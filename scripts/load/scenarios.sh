# The wrk scenarios shared by scripts/load-test.sh and scripts/load-outside.sh (sourced after scripts/load/server.sh,
# with WORK, BASE, CONNECTIONS, DURATION, CORES and STORE set): annotate, run_wrk, run_once.
# shellcheck shell=bash
# Adds the client's CPU share and the load average to wrk's JSON line.
annotate() { # JSON-line time-file
    local user system wall
    read -r user system wall <"$2"
    jq -c --argjson cpu "$(awk -v u="$user" -v s="$system" -v w="$wall" -v c="$CORES" \
        'BEGIN { printf "%.3f", (u + s) / (w * c) }')" --arg load "$(loadavg)" --arg store "$STORE" \
        '. + {store: $store, clientCPUShare: $cpu, loadAverage: $load}' <<<"$1"
}
# A scenario that runs for DURATION seconds: scenario, path, then a bodies file (none: GET the path).
run_wrk() {
    local line
    line=$(SCENARIO=$1 CONNECTIONS=$CONNECTIONS MODE=cycle THREADS=2 BODIES=${3:-} \
        /usr/bin/time -f '%U %S %e' -o "$WORK/$1.time" \
        wrk --threads 2 --connections "$CONNECTIONS" --duration "${DURATION}s" --timeout 10s \
        --script scripts/load/bodies.lua "$BASE$2" | tail -1)
    annotate "$line" "$WORK/$1.time"
}
# Every line of FOLDER/payments.tsv once: CONNECTIONS threads of one connection each; ends wrk when all have
# finished.
run_once() { # scenario folder answers-name
    local wrk_pid line
    rm -rf "$WORK/done" && mkdir "$WORK/done"
    awk -v n="$CONNECTIONS" -v out="$2/share" '{ print > (out "." ((NR - 1) % n)) }' "$2/payments.tsv"
    SCENARIO=$1 CONNECTIONS=$CONNECTIONS MODE=once THREADS=$CONNECTIONS SPLIT=1 BODIES="$2/share" \
        ANSWERS="$2/$3" DONE_DIR="$WORK/done" \
        /usr/bin/time -f '%U %S %e' -o "$WORK/$1.time" \
        wrk --threads "$CONNECTIONS" --connections "$CONNECTIONS" --duration 600s --timeout 30s \
        --script scripts/load/bodies.lua "$BASE" >"$WORK/$1.wrk" &
    wrk_pid=$!
    while [ "$(ls "$WORK/done" | wc -l)" -lt "$CONNECTIONS" ] && kill -0 "$wrk_pid" 2>/dev/null; do sleep 0.02; done
    [ -s "$WORK/done/0" ] && kill -INT "$(cat "$WORK/done/0")" 2>/dev/null || true
    wait "$wrk_pid" || true
    line=$(tail -1 "$WORK/$1.wrk")
    annotate "$line" "$WORK/$1.time"
}

