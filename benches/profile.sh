#!/usr/bin/env bash
# Counts what toolgate spends per proxied tools/call: figures that stay put
# on a busy machine, unlike timings.
#
#   benches/profile.sh [stdio|http] [calls] [concurrency] [toolgate|floor]
#       defaults: http 2000 1 toolgate
#
# Prints, per verified `tools/call echo` through toolgate (the fixture as the
# upstream, a shared stdio child or Streamable HTTP; the setup of
# benches/callgrind.sh), with metrics disabled:
# - CPU time of toolgate and of the upstream fixture, syscalls, context
#   switches (voluntary: a thread went to sleep; the kernel's count over
#   every toolgate thread) and CPU migrations, with `perf stat` over a native
#   run, and the syscalls by name (`perf trace -s`);
# - instructions and heap allocations (calls into mimalloc's allocate,
#   zero-allocate and reallocate entry points) under valgrind's callgrind,
#   and the functions that cost the most (inclusive).
# With `floor`, the same native figures of the floor's bare forwarder on that
# leg (crates/bench-floor), and no callgrind phase (benches/callgrind.sh
# counts its instructions).
# Each phase sends 200 unmeasured warm-up calls first. The callgrind profile
# is kept in $TARGET/bench/profile.<leg>.callgrind for callgrind_annotate.
# Build first: cargo build --profile optimized --workspace --bins &&
# cargo bench --bench overhead --no-run. Needs perf and valgrind.
set -euo pipefail

leg="${1:-http}"
calls="${2:-2000}"
conc="${3:-1}"
what="${4:-toolgate}"
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
export TOOLGATE_METRICS__ENABLED=false TOOLGATE_LOG="warn,toolgate=info"
source "$(dirname "${BASH_SOURCE[0]}")/leg.sh"

per_call() { awk -v n="$1" -v d="$calls" 'BEGIN { printf "%.2f", n / d }'; }

echo "$what, leg $leg, $calls verified calls at concurrency $conc (toolgate $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1 /proc/loadavg))"

# --- native: perf stat and perf trace ---
case "$what" in
    toolgate) gate=gate; start_toolgate "$work/native.err" ;;
    floor) gate=""; start_floor "$work/native.err" ;;
    *) echo "the fourth argument is toolgate or floor" >&2; exit 1 ;;
esac
"$bench" drive "$url" 200 "$conc" $gate >/dev/null
# The upstream: toolgate's child on the stdio leg, the fixture leg.sh started
# on the HTTP leg. Its CPU time is the sum over its threads (ns, schedstat).
upstream_pid="$(upstream_pid)"
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }
upstream_before="$(cpu_ns "$upstream_pid")"
perf stat -x, -o "$work/stat.csv" -e raw_syscalls:sys_enter,context-switches,cpu-migrations,task-clock \
    -p "$gate_pid" -- "$bench" drive "$url" "$calls" "$conc" $gate >/dev/null
upstream_after="$(cpu_ns "$upstream_pid")"
count() { awk -F, -v e="$1" '$3 ~ e { print $1 }' "$work/stat.csv" | head -n1; }
syscalls="$(count 'raw_syscalls:sys_enter')"
switches="$(count 'context-switches')"
migrations="$(count 'cpu-migrations')"
echo "$what CPU per call:      $(per_call "$(awk -v ms="$(count 'task-clock')" 'BEGIN { print ms * 1000 }')") µs"
echo "upstream CPU per call:      $(per_call "$(( (upstream_after - upstream_before) / 1000 ))") µs (the fixture)"
echo "syscalls per call:          $(per_call "$syscalls")"
echo "context switches per call:  $(per_call "$switches")"
echo "CPU migrations per call:    $(per_call "$migrations")"
perf trace -s -o "$work/trace.txt" -p "$gate_pid" -- "$bench" drive "$url" "$calls" "$conc" $gate >/dev/null 2>&1 || true
# perf trace -s prints one table per thread; sum the calls by syscall.
echo "syscalls by name, per call (perf trace -s):"
awk '$2 ~ /^[0-9]+$/ && $1 ~ /^[a-z_0-9]+$/ && NF >= 8 { n[$1] += $2 } END { for (s in n) print n[s], s }' "$work/trace.txt" |
    sort -rn | awk -v d="$calls" '{ printf "  %-20s %6.2f\n", $2, $1 / d }'
stop_toolgate
[[ "$what" == floor ]] && exit 0

# --- callgrind: instructions and allocations ---
raw="$work/callgrind.out"
start_toolgate "$work/callgrind.err" valgrind --tool=callgrind --compress-strings=no --callgrind-out-file="$raw"
"$bench" drive "$url" 200 "$conc" gate >/dev/null
wait_idle "$gate_pid"
callgrind_control -z "$gate_pid" >/dev/null 2>&1
"$bench" drive "$url" "$calls" "$conc" gate >/dev/null
callgrind_control -d "$gate_pid" >/dev/null 2>&1
sleep 1
dump="$(ls -t "$raw".* 2>/dev/null | head -n1)"
out="$target/bench/profile.$leg.callgrind"
mkdir -p "$target/bench"
cp "$dump" "$out"
stop_toolgate
total="$(callgrind_annotate "$out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)"
# Calls into the allocator's entry points, summed over every caller.
allocs="$(awk '
    /^cfn=/ { callee = substr($0, 5) }
    /^calls=/ { split($1, a, "="); if (callee ~ /^mi_(malloc|zalloc|realloc|calloc)(_aligned)?$/) n += a[2] }
    END { print n + 0 }' "$out")"
echo "instructions per call:      $((total / calls))"
echo "allocations per call:       $(per_call "$allocs")"
# Function names without their source file and binary.
functions() {
    callgrind_annotate --auto=no --inclusive="$1" "$out" 2>/dev/null | awk -v d="$calls" -v k="$2" '
        /^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ {
            n = $1; gsub(/,/, "", n); sub(/^ *[0-9,]+ \([^)]*\) +/, ""); sub(/^[^:]*:/, ""); sub(/ \[[^]]*\]$/, "")
            printf "  %9.0f  %s\n", n / d, substr($0, 1, 160); if (++shown == k) exit }' || true
}
echo "most costly functions, inclusive (instructions per call):"
functions yes 80
echo "profile kept in $out (callgrind_annotate --inclusive=yes $out)"
