#!/usr/bin/env bash
# Runs toolgate's soak benchmark (benches/soak/main.rs) and prints its report.
#
#   benches/soak.sh                                  # 1,000 sessions, 1,000,000 calls
#   TOOLGATE_SOAK_CALLS=20000 benches/soak.sh        # a quick try
#   benches/soak.sh replicas                         # two replicas sharing sessions: 50 sessions, 20,000 calls
#   benches/soak.sh replicas --sessions 500 --calls 500000 --kill-every 10
#
# Arguments go to the benchmark (`replicas` and its settings: see
# benches/soak/replicas.rs).
# Builds the shipped binaries (`cargo build --profile optimized --workspace
# --bins`) and copies them aside, so the soak runs what toolgate ships (cargo bench
# would otherwise rebuild them with dev-dependency features), then runs the
# benchmark against them. The report is kept in $TARGET/bench/soak-<date>.md;
# the exit status is non-zero when the run failed. Environment: see the top of
# benches/soak/main.rs. Everything listens on 127.0.0.1 only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-$repo/target}"

cargo build --locked --profile optimized --workspace --bins
bin_dir="$target/bench/bin"
mkdir -p "$bin_dir"
cp -f "$target/optimized/toolgate" "$target/optimized/toolgate-fixture" \
    "$target/optimized/toolgate-floor-http" "$target/optimized/toolgate-floor-stdio" "$bin_dir/"
cargo bench --locked --bench soak --no-run
report="$target/bench/soak-$(date -u +%Y%m%dT%H%M%SZ).md"
TOOLGATE_BENCH_BIN_DIR="$bin_dir" cargo bench --locked --bench soak -- "$@" | tee "$report"
