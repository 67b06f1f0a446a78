#!/usr/bin/env bash
# Splits a proxied call's CPU into user and kernel time, for every process
# on its path: toolgate, the upstream behind it and the load generator; then
# the same through the floor's bare forwarder on that leg (crates/bench-floor,
# the least a gateway hop costs); then the fixture served directly and the
# load generator again (one server exchange: what a proxy pays twice, once
# per side). On one CPU (`taskset -c 0`, concurrency 1) a call's latency is
# about the sum of these, so the rows say where toolgate's added latency
# above the floor's goes.
#
#   benches/split.sh [stdio|http] [calls] [concurrency]    defaults: http 60000 50
#
# Drives verified `tools/call echo` (the benchmark's `drive` mode, 2,000
# unmeasured warm-up calls first) through toolgate in front of the fixture
# (the setup of benches/callgrind.sh), then straight at a fixture of its
# own, and prints calls/s and each process's CPU per call: from
# /proc/PID/stat for the servers (clock ticks: use enough calls for a few
# hundred ticks), from the shell's `time` for the load generator. Under
# `taskset -c 0` everything shares one CPU (the benchmark's pinned
# concurrency-1 rows). `TOOLGATE_BENCH_HTTP2=1` makes the load generator
# speak HTTP/2 with prior knowledge. Build first: cargo build --profile
# optimized --workspace --bins && cargo bench --bench overhead --no-run.
set -euo pipefail

leg="${1:-http}"
calls="${2:-60000}"
conc="${3:-50}"
export TOOLGATE_METRICS__ENABLED=false TOOLGATE_LOG="warn,toolgate=info"
source "$(dirname "${BASH_SOURCE[0]}")/leg.sh"

tick_us=$((1000000 / $(getconf CLK_TCK)))
ticks() { awk '{ print $14, $15 }' /proc/"$1"/stat; }

# Measures `calls` calls against URL $1 ($2: `gate` to fetch the tool's
# description first, for toolgate; `-` otherwise) and prints calls/s, then
# user and system CPU per call of each process given as LABEL PID pairs
# after it, and of the load generator.
measure() {
    local url="$1" gate="${2#-}" t0 t1 label pid
    shift 2
    local -a before=()
    "$bench" drive "$url" 2000 "$conc" $gate >/dev/null
    for ((i = 2; i <= $#; i += 2)); do before+=("$(ticks "${!i}")"); done
    t0="$(date +%s%N)"
    local TIMEFORMAT="%3U %3S"
    { time "$bench" drive "$url" "$calls" "$conc" $gate >/dev/null 2>&1; } 2>"$work/time"
    t1="$(date +%s%N)"
    awk -v n="$calls" -v ns="$((t1 - t0))" 'BEGIN { printf "  %8.0f calls/s\n", n * 1e9 / ns }'
    for ((i = 1; i <= $#; i += 2)); do
        label="${!i}"
        pid_arg=$((i + 1))
        pid="${!pid_arg}"
        read -r u0 s0 <<<"${before[$(((i - 1) / 2))]}"
        read -r u1 s1 < <(ticks "$pid")
        row "$label" "$(((u1 - u0) * tick_us))" "$(((s1 - s0) * tick_us))"
    done
    read -r u s <"$work/time"
    row "load generator" "$(awk -v x="$u" 'BEGIN { print x * 1e6 }')" "$(awk -v x="$s" 'BEGIN { print x * 1e6 }')"
}

# One process's line: label, user µs and system µs in all.
row() {
    awk -v l="$1" -v n="$calls" -v u="$2" -v s="$3" \
        'BEGIN { printf "  %-34s user %5.1f µs/call  system %5.1f µs/call\n", l, u / n, s / n }'
}

echo "leg $leg, $calls verified calls at concurrency $conc (toolgate $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1 /proc/loadavg))"
start_toolgate "$work/toolgate.err"
echo "through toolgate ($leg upstream):"
measure "$url" gate "toolgate" "$gate_pid" "the fixture behind it ($leg)" "$(upstream_pid)"
stop_toolgate

start_floor "$work/floor.err"
echo "through the floor's forwarder ($leg upstream):"
measure "$url" - "the floor" "$gate_pid" "the fixture behind it ($leg)" "$(upstream_pid)"
stop_toolgate

start_http_fixture "$work/direct.out"
echo "the fixture served directly (HTTP):"
measure "$fixture_url" - "the fixture" "$fixture_pid"
