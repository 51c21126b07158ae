# Sourced by scripts/run.sh, scripts/instructions.sh and scripts/load/server.sh.
# shellcheck shell=bash

# await_address FILE PATTERN PID TRIES PAUSE: reads FILE up to TRIES times, PAUSE seconds apart, until the sed
# expression PATTERN (`s|...\(address\)...|\1|p`) prints the address a server wrote there, and prints it. Returns 1 as
# soon as process PID has exited, 2 if no address appeared in time.
await_address() {
    local file=$1 pattern=$2 pid=$3 tries=$4 pause=$5 address=""
    for _ in $(seq 1 "$tries"); do
        address=$(sed -n "$pattern" "$file")
        if [ -n "$address" ]; then
            echo "$address"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep "$pause"
    done
    return 2
}
