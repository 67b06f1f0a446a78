#!/usr/bin/env bash
# Makes (or refreshes) a Python venv from a requirements file and prints its
# interpreter's path on stdout.
#
#   tests/venv.sh VENV REQUIREMENTS [PIP_ARGS...]
#
# pip runs only when the requirements (or the Python version) changed since
# the last install: a stamp file in the venv records their hash. A broken
# venv (e.g. its base Python was replaced) is recreated.
#
# Environment:
#   PYTHON   interpreter that creates the venv (default python3)
set -euo pipefail

venv="$1"
requirements="$2"
shift 2
say() { printf 'tests/venv.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

base="${PYTHON:-python3}"
command -v "$base" >/dev/null || die "$base not found; install Python 3.11 or newer"
py="$venv/bin/python"
if [[ -x "$py" ]] && ! "$py" -c 'import sys' 2>/dev/null; then
    say "venv at $venv is broken; recreating it"
    rm -rf "$venv"
fi
if [[ ! -x "$py" ]]; then
    say "creating venv at $venv"
    mkdir -p "$(dirname "$venv")"
    "$base" -m venv "$venv" || die "'$base -m venv' failed; on Debian/Ubuntu install the python3-venv package"
fi
stamp="$venv/.requirements.sha256"
want="$({ cat "$requirements"; "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
    say "installing $requirements into $venv"
    "$py" -m pip install --quiet --disable-pip-version-check --no-input "$@" -r "$requirements" >&2 \
        || die "pip install -r $requirements failed"
    echo "$want" >"$stamp"
else
    say "$venv up to date"
fi
echo "$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"
