#!/usr/bin/env bash
# Counts how often toolgate (or the floor's bare forwarder) blocks per
# proxied tools/call, running natively: the voluntary context switches of
# all its threads (each is a tokio worker parking with nothing to do, or a
# lock wait) over `calls` verified calls, after 200 warm-up calls.
#
#   benches/switches.sh [stdio|http] [calls] [concurrency] [toolgate|floor]
#       defaults: http 2000 1 toolgate
#
# Why: under callgrind a process runs some fifty times slower than its
# peers, so whether its runtime finds the next message already waiting or
# parks for it depends on how slow it is, and a park costs about a thousand
# instructions. callgrind's call counts show how often each parked there
# (`Context::park_internal`); this shows how often each does natively.
# Build first, as for benches/callgrind.sh.
set -euo pipefail

leg="${1:-http}"
calls="${2:-2000}"
conc="${3:-1}"
what="${4:-toolgate}"
source "$(dirname "${BASH_SOURCE[0]}")/leg.sh"

switches() { cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s }'; }
case "$what" in
    toolgate) TOOLGATE_LOG="warn,toolgate=info" start_toolgate "$work/toolgate.err"; gate=gate ;;
    floor) start_floor "$work/floor.err"; gate="" ;;
    *) echo "the fourth argument is toolgate or floor" >&2; exit 1 ;;
esac
"$bench" drive "$url" 200 "$conc" $gate >/dev/null
wait_idle "$gate_pid"
before="$(switches "$gate_pid")"
"$bench" drive "$url" "$calls" "$conc" $gate >/dev/null
after="$(switches "$gate_pid")"
awk -v b="$before" -v a="$after" -v n="$calls" -v w="$what" -v l="$leg" -v c="$conc" \
    'BEGIN { printf "%s, %s leg, concurrency %s: %.2f voluntary context switches per call\n", w, l, c, (a - b) / n }'
