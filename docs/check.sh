#!/usr/bin/env bash
# Builds the book and checks every internal link of the documentation.
#
#   docs/check.sh
#
# 1. `mdbook build docs` writes docs/book/ (a chapter missing from src/ is an
#    error: book.toml sets create-missing = false).
# 2. lychee checks, offline, every link of the built pages (docs/book/, with
#    mdBook's own ids for headings) and of the Markdown read outside the book
#    (README.md, CHANGELOG.md, the READMEs beside the code, and the book's
#    sources as a forge shows them): that each linked file or directory
#    exists and each #fragment names a heading or element of its target.
#    Links to other sites are not fetched (CI has no internet); see
#    docs/lychee.toml.
#
# Needs mdbook 0.5 and lychee on the PATH (.ci/run installs the versions it
# pins with `cargo install --locked`, when they are missing).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf 'docs/check.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v mdbook >/dev/null || die "mdbook not found: cargo install --locked mdbook --version 0.5.4"
command -v lychee >/dev/null || die "lychee not found: cargo install --locked lychee --version 0.24.2"

start=$SECONDS
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
rm -rf docs/book
mdbook build docs >"$log" 2>&1 || { cat "$log" >&2; die "mdbook build failed"; }
cat "$log" >&2
# mdBook reports a broken {{#include}} or unbalanced HTML as a warning only.
if grep -qE '\b(WARN|ERROR)\b' "$log"; then
    die "mdbook build warned (above)"
fi
say "book built in docs/book in $((SECONDS - start)) s"

start=$SECONDS
markdown=(README.md CHANGELOG.md)
while IFS= read -r file; do
    markdown+=("$file")
done < <(git ls-files --cached --others --exclude-standard -- '*.md' ':!:README.md' ':!:CHANGELOG.md')
lychee --config docs/lychee.toml --root-dir "$repo" docs/book "${markdown[@]}" \
    || die "broken links (above)"
say "links checked in $((SECONDS - start)) s"
