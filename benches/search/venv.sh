#!/usr/bin/env bash
# Prepares the venv of the tool-search evaluation and prints its interpreter's
# path on stdout.
#
#   benches/search/venv.sh        -> target/search-venv/bin/python
#
# The venv is target/search-venv, installed by tests/venv.sh from
# requirements.txt beside this file with --no-deps (the file pins the
# complete set: the fidelity evaluation's model packages plus rank-bm25 and
# snowballstemmer).
#
# Environment:
#   TOOLGATE_SEARCH_PYTHON  use this interpreter instead (no venv, no pip;
#                           it must already have the requirements)
#   PYTHON                  interpreter that creates the venv (default python3)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if [[ -n "${TOOLGATE_SEARCH_PYTHON:-}" ]]; then
    [[ -x "$TOOLGATE_SEARCH_PYTHON" ]] || { echo "benches/search/venv.sh: not an executable: $TOOLGATE_SEARCH_PYTHON" >&2; exit 1; }
    echo "$TOOLGATE_SEARCH_PYTHON"
    exit 0
fi
exec "$repo/tests/venv.sh" "$repo/target/search-venv" "$here/requirements.txt" --no-deps
