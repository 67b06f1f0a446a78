# Shared by benches/callgrind.sh, profile.sh and split.sh (sourced, with $leg
# set to stdio or http): finds the optimized binaries and the overhead bench,
# starts the fixture when the upstream is HTTP, and writes $work/toolgate.toml
# (toolgate in front of the fixture, one shared upstream session). Sets repo,
# target, bin, bench, work and pids, and an EXIT trap that ends what was
# started and removes $work; and start_toolgate, start_floor, upstream_pid, stop_toolgate
# and start_http_fixture for the scripts to start what they measure.

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
# TOOLGATE_BENCH_BIN_DIR: where toolgate and toolgate-fixture are (default
# the `optimized` build), e.g. a copy of an older build to compare with.
bin="${TOOLGATE_BENCH_BIN_DIR:-$target/optimized}"
# TOOLGATE_BENCH_FLOOR_DIR: where the floor's forwarders are (default: the
# same place), e.g. today's floor beside an older toolgate.
floor_bin="${TOOLGATE_BENCH_FLOOR_DIR:-$bin}"
bench="$(ls -t "$target"/release/deps/overhead-* 2>/dev/null | grep -v '\.d$' | head -n1)"
[[ -x "$bench" ]] || { echo "build the bench first: cargo bench --bench overhead --no-run" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Starts toolgate on $work/toolgate.toml, logging to $1, under the wrapper
# in the remaining arguments if any (e.g. valgrind); sets $gate_pid and $url.
start_toolgate() {
    local log="$1"
    shift
    "$@" "$bin/toolgate" serve --config "$work/toolgate.toml" 2>"$log" &
    gate_pid=$!
    pids+=("$gate_pid")
    url=""
    for _ in $(seq 600); do grep -qs "listening on" "$log" && break; sleep 0.1; done
    url="$(sed -n 's/.*listening on //p' "$log" | head -n1)"
    [[ -n "$url" ]] || { cat "$log" >&2; exit 1; }
}

# Starts the floor's forwarder for $leg (crates/bench-floor) in front of the
# fixture, as start_toolgate starts toolgate (same arguments; sets $gate_pid
# and $url): toolgate-floor-stdio starts its own fixture child,
# toolgate-floor-http forwards to the fixture this script started.
start_floor() {
    local log="$1" upstream
    shift
    case "$leg" in stdio) upstream="$bin/toolgate-fixture" ;; http) upstream="$fixture_url" ;; esac
    "$@" "$floor_bin/toolgate-floor-$leg" "$upstream" >"$log.out" 2>"$log" &
    gate_pid=$!
    pids+=("$gate_pid")
    url=""
    for _ in $(seq 600); do grep -qs "^LISTENING " "$log.out" && break; sleep 0.1; done
    url="$(sed -n 's/^LISTENING //p' "$log.out" | head -n1)"
    [[ -n "$url" ]] || { cat "$log" >&2; exit 1; }
}

# Waits until process $1 has used no CPU for a second (at most 120 s): the
# background work of start-up (the catalog's token count, over 100 M
# instructions) then no longer lands among the measured calls.
wait_idle() {
    local before after
    for _ in $(seq 120); do
        before="$(awk '{ print $14 + $15 }' /proc/"$1"/stat 2>/dev/null || echo 0)"
        sleep 1
        after="$(awk '{ print $14 + $15 }' /proc/"$1"/stat 2>/dev/null || echo 0)"
        [[ "$before" == "$after" ]] && return
    done
}

# The pid of the upstream behind what was started last ($gate_pid): its
# stdio child, or the HTTP fixture this script started.
upstream_pid() {
    case "$leg" in
        stdio) pgrep -P "$gate_pid" | head -n1 ;;
        http) echo "$fixture_pid" ;;
    esac
}

stop_toolgate() {
    kill "$gate_pid" 2>/dev/null || true
    wait "$gate_pid" 2>/dev/null || true
}

# Starts the fixture over Streamable HTTP on a free port, its output in $1;
# sets $fixture_pid and $fixture_url.
start_http_fixture() {
    "$bin/toolgate-fixture" --http 127.0.0.1:0 >"$1" 2>/dev/null &
    fixture_pid=$!
    pids+=("$fixture_pid")
    for _ in $(seq 100); do grep -q LISTENING "$1" && break; sleep 0.1; done
    fixture_url="$(sed -n 's/^LISTENING //p' "$1")"
}

case "$leg" in
    stdio)
        upstream="command = \"$bin/toolgate-fixture\"" ;;
    http)
        start_http_fixture "$work/fixture.out"
        upstream="url = \"$fixture_url\"" ;;
    *) echo "leg must be stdio or http" >&2; exit 1 ;;
esac
# TOOLGATE_BENCH_UPSTREAM_PROTOCOL pins the revision toolgate speaks to the
# fixture, as in the overhead benchmark (default: negotiated, 2026-07-28).
[[ -n "${TOOLGATE_BENCH_UPSTREAM_PROTOCOL:-}" ]] && upstream+=$'\n'"protocol = \"$TOOLGATE_BENCH_UPSTREAM_PROTOCOL\""
cat >"$work/toolgate.toml" <<EOF
[server]
listen = "127.0.0.1:0"

[[upstream]]
name = "fx"
$upstream
sharing = "shared"
EOF
