#!/usr/bin/env bash
# Prepares the venv of the selection-fidelity evaluation and prints its
# interpreter's path on stdout.
#
#   benches/fidelity/venv.sh        -> target/fidelity-venv/bin/python
#
# The venv is target/fidelity-venv, installed by tests/venv.sh from
# requirements.txt beside this file with --no-deps (the file pins the
# complete set).
#
# Environment:
#   TOOLGATE_FIDELITY_PYTHON  use this interpreter instead (no venv, no pip;
#                             it must already have the requirements)
#   PYTHON                    interpreter that creates the venv (default python3)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
say() { printf 'benches/fidelity/venv.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if [[ -n "${TOOLGATE_FIDELITY_PYTHON:-}" ]]; then
    [[ -x "$TOOLGATE_FIDELITY_PYTHON" ]] || die "TOOLGATE_FIDELITY_PYTHON is not an executable: $TOOLGATE_FIDELITY_PYTHON"
    echo "$TOOLGATE_FIDELITY_PYTHON"
    exit 0
fi

py="$("$repo/tests/venv.sh" "$repo/target/fidelity-venv" "$here/requirements.txt" --no-deps)"
"$py" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
    || die "eval.py needs Python 3.11 or newer (tomllib); set PYTHON"
echo "$py"
