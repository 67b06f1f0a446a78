#!/usr/bin/env bash
# Prints one hash of everything the Docker test depends on beyond the Rust
# sources (which tests/run.sh covers): the Dockerfiles, .dockerignore and the
# test itself (the image has no config; run.sh writes the ones it mounts).
# tests/docker/run.sh records it in tests/docker/inputs.sha256 after a pass;
# tests/docker/ci.sh runs the test when the recorded hash differs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
files=(
    .dockerignore
    docker/Dockerfile
    docker/Dockerfile.prebuilt
    tests/docker/check.py
    tests/docker/inputs.sh
    tests/docker/run.sh
)
sha256sum "${files[@]}" | sha256sum | cut -d' ' -f1
