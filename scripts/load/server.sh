# Shared by scripts/load-test.sh, scripts/soak-test.sh and scripts/load-outside.sh (sourced with NAME set; optionally
# a before_server function and a SERVE_ARGS array): makes the repository's root the working folder, takes STORE
# (default sqlite) and SCRATCH (default .build) from the environment and sets CORES, installs the tools, builds, makes
# WORK (removed on exit), starts `applepay serve` with a sandbox, the admin API and no per-client limits on SQLite or
# a private PostgreSQL cluster, and sets BASE, SERVER_PID and FDS_BEFORE. Also: fail, loadavg, descriptors, rss_kb,
# store_payments, stop_server; EXTRA_PIDS are ended on exit.
# shellcheck shell=bash
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
STORE=${STORE:-sqlite}
SCRATCH=${SCRATCH:-.build}
CORES=$(nproc)
# The load generator and the JSON tool are this script's own, not build or test dependencies: installed only here.
missing=""
for tool in wrk jq curl sqlite3; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -x /usr/bin/time ] || missing="$missing time"
if [ -n "$missing" ]; then
    echo "$NAME: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ -z "${APPLEPAY:-}" ]; then
    swift build -c release --scratch-path "$SCRATCH" --product applepay >&2
    APPLEPAY="$ROOT/$SCRATCH/release/applepay"
fi
case "$APPLEPAY" in /*) ;; *) APPLEPAY="$ROOT/$APPLEPAY" ;; esac # the server starts in another folder

WORK=$(mktemp -d "${TMPDIR:-/tmp}/applepay-$NAME.XXXXXX")
chmod 755 "$WORK"
SERVER_PID=""
PG_DIR=""
PERF_PID=""
EXTRA_PIDS=() # outside parties a caller started (processor service, black hole, flood): ended on exit
cleanup() {
    for pid in ${EXTRA_PIDS[@]+"${EXTRA_PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
    if [ -n "$PERF_PID" ] && kill -0 "$PERF_PID" 2>/dev/null; then kill -INT "$PERF_PID" 2>/dev/null || true; fi
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    [ -z "$PG_DIR" ] || scripts/test-postgres.sh stop "$PG_DIR"
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "$NAME: FAIL: $*" >&2; exit 1; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

case "$STORE" in
    sqlite) STORE_URI="sqlite:$WORK/orders.sqlite" ;;
    postgres | postgresql)
        PG_DIR="$WORK/pg"
        STORE_URI=$(PG_FSYNC=${PG_FSYNC:-on} scripts/test-postgres.sh start "$PG_DIR")
        ;;
    *) fail "STORE is sqlite or postgres, not $STORE" ;;
esac
store_payments() { # how many payments the store holds
    if [ -n "$PG_DIR" ]; then
        PGUSER=$(sed -n 's/.*user=\([^&]*\).*/\1/p' <<<"$STORE_URI")
        "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql" -h "$PG_DIR" -U "$PGUSER" -d applepay_test \
            -tAc "SELECT count(*) FROM payments"
    else
        sqlite3 "$WORK/orders.sqlite" "SELECT count(*) FROM payments"
    fi
}

"$APPLEPAY" sandbox init "$WORK/sandbox" --merchant-id merchant.com.example.load >/dev/null
# A caller may start outside parties first (before_server) and give the server more arguments (SERVE_ARGS).
if declare -f before_server >/dev/null; then before_server; fi
# All the load comes from 127.0.0.1: no per-client connection limit, no rate limits (docs/LIMITS.md), where the
# server has them.
CONFIG=()
if grep -q -a perClientConnectionLimit "$APPLEPAY"; then
    echo '{"server": {"perClientConnectionLimit": 0, "rateLimits": "off"}}' >"$WORK/server.json"
    CONFIG=(--config "$WORK/server.json")
fi
export APPLEPAY_ADMIN_TOKEN="$NAME-admin-token-0123456789abcdef0123456789"
: >"$WORK/server.out" # before the server's shell opens it: the loop below reads it at once
# Started in WORK: with a PostgreSQL store the in-process sandbox processor keeps its ledger in the current folder.
(cd "$WORK" && exec "$APPLEPAY" serve --sandbox "$WORK/sandbox" "${CONFIG[@]}" ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} \
    --store "$STORE_URI" --port 0 \
    >"$WORK/server.out" 2>"$WORK/server.log") &
SERVER_PID=$!
. scripts/lib/await.sh
BASE=$(await_address "$WORK/server.out" 's|.*on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$SERVER_PID" 300 0.1) \
    || case $? in
        1) cat "$WORK/server.log" >&2; fail "the server did not start" ;;
        *) fail "the server did not say where it listens" ;;
    esac
curl -sf "$BASE/healthz" >/dev/null || fail "GET /healthz"
descriptors() { ls "/proc/$SERVER_PID/fd" | wc -l; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$SERVER_PID/status"; }
# The server's voluntary and involuntary context switches so far, summed over its threads (two numbers): a thread
# that waits for another switches voluntarily, one the scheduler preempts (a busy machine) involuntarily.
switches() { cat /proc/"$SERVER_PID"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { v += $2 }
    /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v, n }'; }
# The server's CPU time so far (user + system), in milliseconds.
cpu_ms() { process_cpu_ms "$SERVER_PID"; }
# A process's CPU time so far (user + system), in milliseconds: the fields after the command's closing parenthesis.
process_cpu_ms() { sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{ print ($12 + $13) * 1000 / hz }'; }
# The processor service's (PROCESSOR_PID, set by the calling script when it starts one), 0 without one.
processor_cpu_ms() { if [ -n "${PROCESSOR_PID:-}" ]; then process_cpu_ms "$PROCESSOR_PID"; else echo 0; fi; }
# Bytes the server has written to its files so far (`write_bytes` of /proc/PID/io: counted as pages are dirtied, so
# a WAL frame counts its pages; sockets are not in it); -1 where /proc does not show it.
written_bytes() { awk '/^write_bytes/ { print $2; found = 1 } END { if (!found) print -1 }' "/proc/$SERVER_PID/io" \
    2>/dev/null || echo -1; }
FDS_BEFORE=$(descriptors)
echo "$NAME: server $BASE (pid $SERVER_PID, $FDS_BEFORE descriptors, store $STORE); load average $(loadavg)," \
    "$CORES cores" >&2

# SIGTERM; the server must exit 0 within 30 s.
stop_server() {
    kill -TERM "$SERVER_PID"
    # Graceful shutdown finishes requests in flight (10 s grace); past 30 s the server is stuck: say so and kill it.
    for _ in $(seq 1 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        fail "the server did not exit within 30 s of SIGTERM (last log line: $(tail -1 "$WORK/server.log"))"
    fi
    code=0
    wait "$SERVER_PID" || code=$?
    SERVER_PID=""
    [ "$code" -eq 0 ] || fail "the server exited $code after SIGTERM"
    echo "$NAME: ok (server stopped with exit 0)" >&2
}
