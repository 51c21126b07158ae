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
# Every line of FOLDER/payments.tsv once over CONNECTIONS connections, on as many wrk threads as cores (fewer when
# there are fewer lines), each thread posting its share of the lines over its connections; ends wrk when all
# threads have finished.
run_once() { # scenario folder answers-name
    local wrk_pid line threads
    threads=$(awk -v c="$CONNECTIONS" -v k="$CORES" -v n="$(wc -l <"$2/payments.tsv")" \
        'BEGIN { t = c < k ? c : k; if (n < t) t = n; print (t < 1 ? 1 : t) }')
    rm -rf "$WORK/done" "$2/$3".* "$2/share".* && mkdir "$WORK/done"
    awk -v n="$threads" -v out="$2/share" '{ print > (out "." ((NR - 1) % n)) }' "$2/payments.tsv"
    SCENARIO=$1 CONNECTIONS=$CONNECTIONS MODE=once THREADS=$threads SPLIT=1 BODIES="$2/share" \
        ANSWERS="$2/$3" DONE_DIR="$WORK/done" \
        /usr/bin/time -f '%U %S %e' -o "$WORK/$1.time" \
        wrk --threads "$threads" --connections "$CONNECTIONS" --duration 600s --timeout 30s \
        --script scripts/load/bodies.lua "$BASE" >"$WORK/$1.wrk" &
    wrk_pid=$!
    while [ "$(ls "$WORK/done" | wc -l)" -lt "$threads" ] && kill -0 "$wrk_pid" 2>/dev/null; do sleep 0.02; done
    [ -s "$WORK/done/0" ] && kill -INT "$(cat "$WORK/done/0")" 2>/dev/null || true
    wait "$wrk_pid" || true
    line=$(tail -1 "$WORK/$1.wrk")
    annotate "$line" "$WORK/$1.time"
}

