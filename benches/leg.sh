# Shared by benches/callgrind.sh and benches/profile.sh (sourced, with $leg
# set to stdio or http): finds the optimized binaries and the overhead bench,
# starts the fixture when the upstream is HTTP, and writes $work/toolgate.toml
# (toolgate in front of the fixture, one shared upstream session). Sets repo,
# target, bin, bench, work and pids, and an EXIT trap that ends what was
# started and removes $work.

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
# TOOLGATE_BENCH_BIN_DIR: where toolgate and toolgate-fixture are (default
# the `optimized` build), e.g. a copy of an older build to compare with.
bin="${TOOLGATE_BENCH_BIN_DIR:-$target/optimized}"
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

case "$leg" in
    stdio)
        upstream="command = \"$bin/toolgate-fixture\"" ;;
    http)
        "$bin/toolgate-fixture" --http 127.0.0.1:0 >"$work/fixture.out" 2>/dev/null &
        pids+=($!)
        for _ in $(seq 100); do grep -q LISTENING "$work/fixture.out" && break; sleep 0.1; done
        upstream="url = \"$(sed -n 's/^LISTENING //p' "$work/fixture.out")\"" ;;
    *) echo "leg must be stdio or http" >&2; exit 1 ;;
esac
cat >"$work/toolgate.toml" <<EOF
[server]
listen = "127.0.0.1:0"

[[upstream]]
name = "fx"
$upstream
sharing = "shared"
EOF
