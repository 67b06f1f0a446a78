#!/usr/bin/env python3
"""The Python design's ranking of every task, for comparison with
toolgate-search (the Rust crate, ``crates/search``).

Writes one JSON object per task: ``{"id", "top": [the first 10 exposed
names], "scores": [their scores]}`` for ``design: bm25f+static+names`` as
``eval.py`` runs it (``DESIGN``). ``--table shipped`` swaps the static table
for the one the crate ships (``crates/search/data/static.bin``: the same
table stored as int8 with one scale per row), which separates what
quantization changes from what the Rust code does differently.

    benches/search/run.sh --toolgate     # runs this, eval.py and the crate's eval
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("search_eval", HERE / "eval.py")
ev = importlib.util.module_from_spec(spec)
sys.modules["search_eval"] = ev
spec.loader.exec_module(ev)

SHIPPED = ev.REPO / "crates" / "search" / "data" / "static.bin"


def shipped_table(path: Path) -> np.ndarray:
    """crates/search/data/static.bin as float64 (PCA and SIF weights included)."""
    data = path.read_bytes()
    if data[:4] != b"TGST":
        sys.exit(f"rankings.py: {path} is not a static table")
    _version, rows, dims = np.frombuffer(data[4:16], dtype="<u4")
    scales = np.frombuffer(data[16 : 16 + 4 * rows], dtype="<f4").astype(np.float64)
    values = np.frombuffer(data[16 + 4 * rows :], dtype=np.int8).reshape(rows, dims)
    return values.astype(np.float64) * scales[:, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ev.REPO / "tests" / "corpus")  # or restbench/corpus
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl")
    parser.add_argument("--table", choices=("float", "shipped"), default="float")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()

    catalog = ev.load_catalog(args.corpus)
    tasks = ev.load_tasks(args.tasks, catalog)
    names = [t.id for t in catalog]
    d = ev.DESIGN
    bf, st = d["bm25f"], d["static"]
    lex = ev.BM25F(catalog, bf["stopwords"], bf["stem"]).configure(bf["k1"], bf["fields"])
    table = ev.StaticTable(ev.Embeddings(1), st["pool"])
    static = ev.Static(table, catalog, st["dims"], st["weighting"], st["sif_a"], st["text"])
    if args.table == "shipped":
        # the weights are baked into the shipped rows
        static.vectors = shipped_table(SHIPPED)
        static.w = np.ones(table.size)
        static.tool_vecs = np.stack([static.embed_ids(table.ids(static.tool_text(t))) for t in catalog])
    weights = list(d["fuse"]["bm25f+static"]["weights"])
    for task in tasks:
        scores = ev.design_scores(lex, static, catalog, task.query, weights, d["clause_weight"], d["query"])
        order = sorted(range(len(names)), key=lambda j: (-scores[j], names[j]))[: args.top]
        print(json.dumps({"id": task.id, "top": [names[j] for j in order], "scores": [round(float(scores[j]), 6) for j in order]}))


if __name__ == "__main__":
    main()
