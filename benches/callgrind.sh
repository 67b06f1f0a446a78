#!/usr/bin/env bash
# Counts the instructions toolgate spends per proxied tools/call, with
# valgrind's callgrind (stable on a noisy machine, unlike timings); or those
# of the floor's bare forwarder on the same leg (crates/bench-floor), to
# compare.
#
#   benches/callgrind.sh [stdio|http] [calls] [concurrency] [toolgate|floor]
#       defaults: stdio 2000 1 toolgate
#
# toolgate (or the floor's forwarder) runs under callgrind in front of the
# fixture (a shared stdio child, or the fixture over Streamable HTTP); the
# benchmark's `drive` mode sends 200 warm-up calls, then opens the counted
# run's sessions (counted apart); toolgate is left until it is idle, the
# counters are zeroed, it sends `calls` verified calls and the counters are
# dumped (before the sessions close). Only
# the process under test is counted, not the fixture (callgrind does not
# follow children). Prints instructions and heap allocations per call (calls
# into mimalloc's allocate, zero-allocate and reallocate entry points, as
# benches/profile.sh counts them) and the functions that cost the most
# (inclusive), and keeps the profile in
# $TARGET/bench/callgrind.<leg>.out (callgrind.floor-<leg>.out) for
# callgrind_annotate / kcachegrind. It also prints what opening a session
# cost (its profile beside, in callgrind.<leg>.opening.out).
# Build first (benches/run.sh does): cargo build --profile optimized --workspace --bins &&
# cargo bench --bench overhead --no-run.
set -euo pipefail

leg="${1:-stdio}"
calls="${2:-2000}"
conc="${3:-1}"
what="${4:-toolgate}"
source "$(dirname "${BASH_SOURCE[0]}")/leg.sh"

raw="$work/callgrind.out"
# TOOLGATE_CALLGRIND_ARGS: more callgrind options, e.g.
# --separate-callers8=mi_malloc_aligned to see where allocations come from.
extra="${TOOLGATE_CALLGRIND_ARGS:-}"
mkdir -p "$target/bench"
case "$what" in
    toolgate)
        out="$target/bench/callgrind.$leg.out"
        gate=gate
        TOOLGATE_LOG="warn,toolgate=info" start_toolgate "$work/toolgate.err" \
            valgrind --tool=callgrind $extra --callgrind-out-file="$raw" ;;
    floor)
        out="$target/bench/callgrind.floor-$leg.out"
        gate=""
        start_floor "$work/floor.err" valgrind --tool=callgrind $extra --callgrind-out-file="$raw" ;;
    *) echo "the fourth argument is toolgate or floor" >&2; exit 1 ;;
esac

# callgrind_control by pid: without one it zeroes and dumps every callgrind
# run on the machine, another's included.
# The counted run opens its sessions (each fetches echo's description and
# makes a first call) and waits (`hold`); the counters are dumped (the
# sessions' opening, printed per session), toolgate is left until idle, the
# counters are zeroed, and only then are the `calls` calls made. The counters are dumped again before the
# sessions close. So the count is of those calls alone, at any concurrency:
# not of 50 sessions opened and 50 first calls besides at concurrency 50, as
# before the fourteenth round.
dump_counts() {
    callgrind_control -d "$gate_pid" >/dev/null
    sleep 1
    ls -t "$raw".* 2>/dev/null | head -n1
}
instructions_in() {
    callgrind_annotate "$1" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
# Calls into the allocator's entry points, summed over every caller (the
# profile names a function once, then by its number alone).
allocations_in() {
    awk '
    /^c?fn=/ {
        s = $0; sub(/^c?fn=/, "", s); f = s
        if (match(s, /^\([0-9]+\)/)) { id = substr(s, 2, RLENGTH - 2); if (length(s) > RLENGTH) name[id] = substr(s, RLENGTH + 2); f = name[id] }
        if ($0 ~ /^cfn=/) callee = f
    }
    /^calls=/ { split($1, a, "="); if (callee ~ /^mi_(malloc|zalloc|realloc|calloc)(_aligned)?('\''|$)/) n += a[2] }
    END { print n + 0 }' "$1"
}
per() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.1f", n / d }'; }

"$bench" drive "$url" 200 "$conc" $gate >/dev/null
wait_idle "$gate_pid"
callgrind_control -z "$gate_pid" >/dev/null
# The handshake's files and the load generator's output are kept out of
# $work, whose changes toolgate's config watcher would wake to and count.
side="$(mktemp -d)"
trap 'cleanup; rm -rf "$side"' EXIT
hold="$side/hold"
"$bench" drive "$url" "$calls" "$conc" $gate hold "$hold" >"$side/drive.out" &
drive_pid=$!
await_file() {
    until [[ -e "$1" ]]; do
        kill -0 "$drive_pid" 2>/dev/null || { echo "drive ended early" >&2; wait "$drive_pid"; exit 1; }
        sleep 0.1
    done
}
await_file "$hold.ready"
opening="$(dump_counts)"
wait_idle "$gate_pid"
callgrind_control -z "$gate_pid" >/dev/null
touch "$hold.go"
await_file "$hold.done"
dump="$(dump_counts)"
touch "$hold.exit"
wait "$drive_pid"
cat "$side/drive.out"
total="$(instructions_in "$dump")"
allocs="$(allocations_in "$dump")"
opened="$(instructions_in "$opening")"
echo "$what, leg $leg, concurrency $conc: $((total / calls)) instructions per call ($total for $calls calls)"
echo "$what, leg $leg, concurrency $conc: $(per "$allocs" "$calls") allocations per call"
# A session's opening: initialize, the initialized notification, (toolgate)
# echo's description, and a first call, over a connection of its own.
echo "$what, leg $leg, concurrency $conc: $((opened / conc)) instructions and $(per "$(allocations_in "$opening")" "$conc") allocations per session opened"
cp "$dump" "$out"
cp "$opening" "${out%.out}.opening.out"
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | sed -n '1,60p' | cut -c1-200
