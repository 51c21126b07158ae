#!/usr/bin/env bash
# A private PostgreSQL cluster for the tests: initdb into a temporary folder, listening only on a Unix socket in
# that folder (listen_addresses=''), nothing on the network.
#
#   scripts/test-postgres.sh start DIR   creates and starts the cluster in DIR (which must not exist yet) and the
#                                        database applepay_test; prints the URI for APPLEPAY_TEST_POSTGRES
#   scripts/test-postgres.sh stop DIR    stops it (immediately) and removes DIR; does nothing when DIR is gone
#   scripts/test-postgres.sh halt DIR    stops the server (fast: sessions are cut) but keeps the cluster
#   scripts/test-postgres.sh resume DIR  starts a halted cluster again
#   scripts/test-postgres.sh run CMD...  start, run CMD with APPLEPAY_TEST_POSTGRES exported, stop (also when CMD
#                                        fails or is interrupted); exits with CMD's status
#
# PG_FSYNC sets the cluster's fsync (default off: the tests need no durability across a power loss; the load test
# turns it on).
# PostgreSQL refuses to run as root: as root the cluster runs as Debian's `postgres` user, owning DIR.
set -euo pipefail

BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    echo "test-postgres: no PostgreSQL server under /usr/lib/postgresql/*/bin (run scripts/setup.sh)" >&2
    exit 1
fi

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

user_name() {
    if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

# The server is a daemon that outlives this script: it must not keep any descriptor of whoever started the script.
# Swift's Foundation.Process (swift-corelibs-foundation) learns that a child ended when the child's end of a
# socketpair it inherited closes; a postmaster holding that end made Process.waitUntilExit() wait for as long as
# the cluster ran (the outage test's "start" never returned). pg_ctl passes its descriptors on, so close every
# one above standard error first (in a subshell: bash reads this script through fd 255).
close_inherited_descriptors() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd="${fd##*/}"
        if [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
}

server_start() {
    local dir="$1"
    (
        close_inherited_descriptors
        as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 -c fsync=${PG_FSYNC:-off}" \
            start >/dev/null
    ) || { cat "$dir/server.log" >&2; exit 1; }
}

start() {
    local dir="$1"
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$dir"
    chmod 700 "$dir"
    as_owner "$BIN/initdb" -D "$dir/data" -A trust -U "$(user_name)" -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    server_start "$dir"
    as_owner "$BIN/createdb" -h "$dir" -U "$(user_name)" applepay_test
    echo "postgresql:///applepay_test?host=$dir&user=$(user_name)"
}

stop() {
    local dir="$1"
    if [ -d "$dir/data" ]; then
        as_owner "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) start "$2" ;;
    stop) stop "$2" ;;
    halt) as_owner "$BIN/pg_ctl" -D "$2/data" -m fast -w -t 60 stop >/dev/null ;;
    resume) server_start "$2" ;;
    run)
        shift
        dir="$(mktemp -d /tmp/applepay-pg.XXXXXX)"
        trap 'stop "$dir"' EXIT
        trap 'exit 130' INT TERM
        APPLEPAY_TEST_POSTGRES="$(start "$dir")"
        export APPLEPAY_TEST_POSTGRES
        # The server's binaries, for tests that stop and start the cluster under load.
        export APPLEPAY_TEST_POSTGRES_DIR="$dir"
        status=0
        "$@" || status=$?
        exit "$status"
        ;;
    *)
        echo "usage: scripts/test-postgres.sh start DIR | stop DIR | run CMD..." >&2
        exit 64
        ;;
esac
