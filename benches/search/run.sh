#!/usr/bin/env bash
# Runs the tool-search evaluation: prepares the venv (venv.sh) and runs
# eval.py with any arguments given.
#
#   benches/search/run.sh              # the table: every method on dev and test
#   benches/search/run.sh --dev-only   # dev figures only (while choosing a design)
#   benches/search/run.sh --tune       # search the prototypes' settings on dev
#   benches/search/run.sh --json       # the figures as JSON
#
# One onnxruntime thread by default (--threads N). The first run distils the
# static token table (30,522 tokens through the model, about a minute of CPU)
# and embeds the catalog; both are cached under target/search-cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$("$here/venv.sh")"
exec "$py" "$here/eval.py" "$@"
