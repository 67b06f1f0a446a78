#!/usr/bin/env bash
# Prints the sizes of the futures a proxied tools/call lives in: the state
# that is allocated, copied into its box and touched on every call.
#
#   benches/future-sizes.sh
#
# Builds the toolgate library with rustc's -Zprint-type-sizes (allowed on the
# stable toolchain by RUSTC_BOOTSTRAP=1, for this measuring build only, in a
# target directory of its own; layouts do not depend on the optimization
# level) and prints the size of each future named below. A boxed future is
# copied whole into its box, and every future that awaits another inline
# holds the other's state too: a rare path awaited inline sizes the hot one.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}/type-sizes"
out="$target/type-sizes.txt"
mkdir -p "$target"
(cd "$repo" && RUSTC_BOOTSTRAP=1 cargo rustc --release --lib --target-dir "$target" -- -Zprint-type-sizes) \
    >"$out" 2>"$target/build.log" || { tail -n 20 "$target/build.log" >&2; exit 1; }

# The layers a tools/call goes through, from the handler down to the
# upstream call (boxed once per call, see forward.rs).
futures=(
    'async fn body of <gateway::Gateway as toolgate_mcp::server::Handler>::request()'
    'async fn body of gateway::disclosure::Disclosure::call_tool<'
    'async fn body of gateway::forward::Forwarder::serve()'
    'async fn body of gateway::forward::Forwarder::forward()'
    'async fn body of toolgate_mcp::client::service::call<'
    'async fn body of toolgate_mcp::client::modern::rounds::drive<'
    'async fn body of <toolgate_mcp::client::service::Deadline<'
    'async fn body of toolgate_mcp::client::peer::Peer::call()'
)
for f in "${futures[@]}"; do
    size="$(grep -F "print-type-size type: \`{$f" "$out" | sed -n 's/.*`: \([0-9]*\) bytes.*/\1/p' | sort -n | tail -n1)"
    printf '%8s bytes  %s\n' "${size:-?}" "$f"
done
