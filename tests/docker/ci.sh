#!/usr/bin/env bash
# CI's entry to the Docker test (tests/docker/run.sh), which takes longer
# than the rest of CI can spare on every run (a from-scratch `dist` build,
# engine and base-image setup: see the figures in docker/README-docker.md).
#
# It runs the test only when the Docker inputs (tests/docker/inputs.sh: the
# Dockerfiles, .dockerignore and the test itself) differ from the hash
# recorded in tests/docker/inputs.sha256, which run.sh writes after a pass.
# A change to the Docker files therefore runs the test in CI until someone
# commits the new hash from a passing run (locally, or CI's log names it).
# The hash lives in the repository, so a clean clone knows.
#
# TOOLGATE_DOCKER_TEST=always runs it anyway; =never skips it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

say() { printf 'tests/docker/ci.sh: %s\n' "$*" >&2; }

want="$(tests/docker/inputs.sh)"
have="$(cat tests/docker/inputs.sha256 2>/dev/null || true)"
case "${TOOLGATE_DOCKER_TEST:-auto}" in
    never)
        say "skipped (TOOLGATE_DOCKER_TEST=never)"
        exit 0
        ;;
    always) ;;
    auto)
        if [[ "$want" == "$have" ]]; then
            say "skipped: the Docker inputs are unchanged since the last recorded pass ($want)"
            exit 0
        fi
        say "the Docker inputs changed (recorded ${have:-none}, now $want): running tests/docker/run.sh"
        ;;
    *)
        say "TOOLGATE_DOCKER_TEST must be auto, always or never"
        exit 2
        ;;
esac
tests/docker/run.sh
say "passed; to record it, commit tests/docker/inputs.sha256 = $want"
