#!/usr/bin/env bash
# Prepares the venv of the selection-fidelity evaluation and prints its
# interpreter's path on stdout.
#
#   benches/fidelity/venv.sh        -> target/fidelity-venv/bin/python
#
# The venv is target/fidelity-venv, installed from requirements.txt beside
# this file with --no-deps (the file pins the complete set). pip runs only
# when the requirements (or the Python version) changed since the last
# install: a stamp file in the venv records their hash.
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

venv="$repo/target/fidelity-venv"
requirements="$here/requirements.txt"
base="${PYTHON:-python3}"
command -v "$base" >/dev/null || die "$base not found; install Python 3.11 or newer"
py="$venv/bin/python"
if [[ -x "$py" ]] && ! "$py" -c 'import sys' 2>/dev/null; then
    say "venv at $venv is broken; recreating it"
    rm -rf "$venv"
fi
if [[ ! -x "$py" ]]; then
    say "creating venv at $venv"
    mkdir -p "$repo/target"
    "$base" -m venv "$venv" || die "'$base -m venv' failed; on Debian/Ubuntu install the python3-venv package"
fi
"$py" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
    || die "eval.py needs Python 3.11 or newer (tomllib); set PYTHON"
stamp="$venv/.requirements.sha256"
want="$({ cat "$requirements"; "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
    say "installing benches/fidelity/requirements.txt into the venv"
    "$py" -m pip install --quiet --disable-pip-version-check --no-input --no-deps -r "$requirements" >&2 \
        || die "pip install -r benches/fidelity/requirements.txt failed"
    echo "$want" >"$stamp"
fi
echo "$py"
