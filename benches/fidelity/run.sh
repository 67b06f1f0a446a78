#!/usr/bin/env bash
# Runs the selection-fidelity evaluation end to end: builds toolgate, prepares
# the evaluation's venv (venv.sh) and runs eval.py with any arguments given.
#
#   benches/fidelity/run.sh                  # the table and the tasks the minimal form loses
#   benches/fidelity/run.sh --json           # the same as JSON
#   benches/fidelity/run.sh --only git       # one task file
#   benches/fidelity/run.sh --config FILE    # with a config's [disclosure] and [[upstream]] settings
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
cargo build --quiet --bin toolgate
py="$("$here/venv.sh")"
exec "$py" "$here/eval.py" --toolgate "$repo/target/debug/toolgate" "$@"
