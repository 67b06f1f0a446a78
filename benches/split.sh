#!/usr/bin/env bash
# Splits a proxied call's CPU into user and kernel time, for toolgate and
# for the fixture served directly (one server exchange: the floor of what a
# proxy pays twice, once per side).
#
#   benches/split.sh [stdio|http] [calls] [concurrency]    defaults: http 60000 50
#
# Drives verified `tools/call echo` (the benchmark's `drive` mode, 2,000
# unmeasured warm-up calls first) through toolgate in front of the fixture
# (the setup of benches/callgrind.sh), then straight at a fixture of its
# own, and prints calls/s and user and system CPU per call from
# /proc/PID/stat (clock ticks: use enough calls for a few hundred ticks).
# `TOOLGATE_BENCH_HTTP2=1` makes the load generator speak HTTP/2 with prior
# knowledge. Build first: cargo build --profile optimized --workspace --bins &&
# cargo bench --bench overhead --no-run.
set -euo pipefail

leg="${1:-http}"
calls="${2:-60000}"
conc="${3:-50}"
export TOOLGATE_METRICS__ENABLED=false TOOLGATE_LOG="warn,toolgate=info"
source "$(dirname "${BASH_SOURCE[0]}")/leg.sh"

tick_us=$((1000000 / $(getconf CLK_TCK)))
ticks() { awk '{ print $14, $15 }' /proc/"$1"/stat; }

# Measures `calls` calls against URL $3 while sampling process $2; $4:
# `gate` to fetch the tool's description first (toolgate), or nothing.
measure() {
    local label="$1" pid="$2" url="$3" gate="${4:-}" u0 s0 u1 s1 t0 t1
    "$bench" drive "$url" 2000 "$conc" $gate >/dev/null
    read -r u0 s0 < <(ticks "$pid")
    t0="$(date +%s%N)"
    "$bench" drive "$url" "$calls" "$conc" $gate >/dev/null
    t1="$(date +%s%N)"
    read -r u1 s1 < <(ticks "$pid")
    awk -v l="$label" -v n="$calls" -v ns="$((t1 - t0))" -v u="$(((u1 - u0) * tick_us))" -v s="$(((s1 - s0) * tick_us))" \
        'BEGIN { printf "%-34s %8.0f calls/s  user %5.1f µs/call  system %5.1f µs/call\n", l, n * 1e9 / ns, u / n, s / n }'
}

echo "leg $leg, $calls verified calls at concurrency $conc (toolgate $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1 /proc/loadavg))"
start_toolgate "$work/toolgate.err"
measure "toolgate ($leg upstream)" "$gate_pid" "$url" gate
stop_toolgate

start_http_fixture "$work/direct.out"
measure "fixture served directly (HTTP)" "$fixture_pid" "$fixture_url"
