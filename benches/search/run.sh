#!/usr/bin/env bash
# Runs the tool-search evaluation: prepares the venv (venv.sh) and runs
# eval.py with any arguments given.
#
#   benches/search/run.sh              # the table: every method on dev and test
#   benches/search/run.sh --dev-only   # dev figures only (while choosing a design)
#   benches/search/run.sh --tune       # search the prototypes' settings on dev
#   benches/search/run.sh --json       # the figures as JSON
#   benches/search/run.sh --toolgate   # the references and the Python design
#                                      # beside toolgate-search (crates/search)
#   benches/search/run.sh --heldout    # catalogs the tuning never saw: leave-
#                                      # servers-out, RestBench, stress sets
#                                      # (heldout.py; --variants all: every idea)
#   benches/search/run.sh --ceiling    # how high leave-servers-out recall@10
#                                      # could go (ceiling.py, heldout-misses.tsv)
#
# One onnxruntime thread by default (--threads N). The first run distils the
# static token table (30,522 tokens through the model, about a minute of CPU)
# and embeds the catalog; both are cached under target/search-cache.
#
# --toolgate runs eval.py --json and rankings.py (the Python design's ranking
# of each task, with its float table and with the int8 table the crate ships),
# writes them to target/search-toolgate/, then the crate's evaluation
# (cargo bench -p toolgate-search --bench eval), which prints one table:
# bm25-plain, dense-minilm, rrf-plain and the Python design from eval.py,
# and toolgate-search's own figures, then how often its ranking is the
# Python design's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
py="$("$here/venv.sh")"
if [[ "${1:-}" == "--heldout" ]]; then
    shift
    exec "$py" "$here/heldout.py" "$@"
fi
if [[ "${1:-}" == "--ceiling" ]]; then
    shift
    exec "$py" "$here/ceiling.py" "$@"
fi
if [[ "${1:-}" != "--toolgate" ]]; then
    exec "$py" "$here/eval.py" "$@"
fi
shift
out="$repo/target/search-toolgate"
mkdir -p "$out"
echo "benches/search/run.sh: Python figures (eval.py --json, about two minutes)" >&2
"$py" "$here/eval.py" --json "$@" >"$out/python.json"
"$py" "$here/rankings.py" >"$out/rankings-float.jsonl"
"$py" "$here/rankings.py" --table shipped >"$out/rankings-shipped.jsonl"
echo "benches/search/run.sh: toolgate-search (cargo bench -p toolgate-search --bench eval)" >&2
cd "$repo"
exec cargo bench -p toolgate-search --bench eval -- --reference "$out/python.json" \
    --rankings "$out/rankings-float.jsonl" --rankings "$out/rankings-shipped.jsonl"
