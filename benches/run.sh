#!/usr/bin/env bash
# Runs toolgate's overhead benchmark end to end and prints the report.
#
#   benches/run.sh [section...]        sections: calls memory catalog startup (default: all)
#
# 1. Builds the shipped binaries, toolgate and the fixture, and the floor's
#    bare forwarders (`cargo build --profile optimized --workspace --bins`:
#    fat LTO, one codegen unit, as the container image's `dist` build), and
#    copies them aside, so the benchmark measures exactly what toolgate ships
#    (cargo bench would otherwise build them with dev-dependency features),
#    against a floor built the same way.
# 2. Builds the benchmark (`cargo bench --bench overhead`, release profile)
#    and runs it against those binaries. The benchmark pins every process to
#    one CPU (taskset) for the concurrency-1 rows itself.
# 3. Prints the report and keeps a copy in $TARGET/bench/overhead-<date>.md.
#
# Environment (see benches/overhead/main.rs): TOOLGATE_BENCH_ROUNDS, TOOLGATE_BENCH_SECS,
# TOOLGATE_BENCH_WARMUP, TOOLGATE_BENCH_PIN_CPU, TOOLGATE_BENCH_SESSIONS.
# Everything listens on 127.0.0.1 only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-$repo/target}"

say() { printf 'benches/run.sh: %s\n' "$*" >&2; }

command -v taskset >/dev/null || say "warning: taskset (util-linux) not found; the pinned rows will fail"

say "building the optimized binaries"
cargo build --locked --profile optimized --workspace --bins
bin_dir="$target/bench/bin"
mkdir -p "$bin_dir"
cp -f "$target/optimized/toolgate" "$target/optimized/toolgate-fixture" \
    "$target/optimized/toolgate-floor-http" "$target/optimized/toolgate-floor-stdio" "$bin_dir/"

say "building the benchmark"
cargo bench --locked --bench overhead --no-run

say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
report="$target/bench/overhead-$(date -u +%Y%m%dT%H%M%SZ).md"
TOOLGATE_BENCH_BIN_DIR="$bin_dir" cargo bench --locked --bench overhead -- "$@" | tee "$report"
say "report saved to $report"
