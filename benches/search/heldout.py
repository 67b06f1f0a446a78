#!/usr/bin/env python3
"""Held-out evaluation of the tool search: catalogs the tuning never saw.

Two held-out sets, every method measured in the same run:

- **leave-servers-out** over the 25 catalogs of ``tests/corpus`` and all 486
  tasks of ``tasks.jsonl`` (dev and test): the servers are split into
  ``FOLDS`` (fixed, below). For each fold, the design's settings are tuned on
  the other folds only (their tasks, against a catalog of their servers
  only, labels outside it dropped), then the fold's tasks are ranked over the
  whole 399-tool catalog. The figures pool the five folds' held-out tasks.
- **RestBench** (``restbench/``: TMDB and Spotify, 94 tools, 157 human-written
  instructions), never used for any choice: ranked by the design tuned on
  all 25 catalogs.

References, as in ``eval.py``: ``bm25-plain`` (rank_bm25 Okapi over name and
description), ``dense-minilm`` (the full all-MiniLM-L6-v2 over ``name:
description``), ``rrf-plain`` (their reciprocal-rank fusion, k 60).

    benches/search/run.sh --heldout                   # the tables (about 10 minutes)
    benches/search/run.sh --heldout --variants all    # and every idea tried (about 30)
    benches/search/run.sh --heldout --json            # the figures as JSON

Two stress sets are made from the 486 tasks, and ranked the same way (each
task in its fold): ``composite``, two tasks of a fold joined into one request
of two steps ("<first>. Then <second>"), with ``both@10`` the share whose
steps each have a tool in the first 10; and ``pasted data``, each task with a
JSON record, log lines, CSV rows or an e-mail (``PASTES``) pasted under it.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("search_eval", HERE / "eval.py")
ev = importlib.util.module_from_spec(spec)
sys.modules["search_eval"] = ev
spec.loader.exec_module(ev)

#: The five server folds: greedy by task count (each server, most tasks first,
#: to the fold with the fewest tasks so far), fixed here so that the split is
#: read, not recomputed.
FOLDS = [
    ["atlassian"],
    ["chrome-devtools", "arxiv", "sentry", "aws-documentation", "tavily", "time"],
    ["kubernetes", "playwright", "filesystem", "gitlab", "brave-search", "exa"],
    ["firecrawl", "notion", "git", "everything", "context7", "sequential-thinking"],
    ["desktop-commander", "github", "memory", "slack", "clickhouse", "fetch"],
]


@dataclass
class Setting:
    """What the tuning chooses: BM25F's k1 and (weight, b) per field, the
    static weight of the fusion, and the fusion's kind."""

    k1: float
    fields: dict
    static_weight: float
    kind: str = "minmax"
    k: float = 60
    segment_weight: float = 1.0
    prf_beta: float = 0.0
    prf_top: int = 3
    server_weight: float = 0.0


def design_setting() -> Setting:
    """The settings toolgate-search ships (``eval.DESIGN``)."""
    d = ev.DESIGN
    return Setting(d["bm25f"]["k1"], dict(d["bm25f"]["fields"]), d["fuse"]["bm25f+static"]["weights"][1],
                   segment_weight=d["clause_weight"])


def first_setting() -> Setting:
    """The first design's (``eval.FIRST_DESIGN``), before this evaluation."""
    d = ev.FIRST_DESIGN
    return Setting(ev.DESIGN["bm25f"]["k1"], dict(d["fields"]), d["static_weight"])


def grid(kind: str = "minmax", segment_weights=(1.0,), prf=((0.0, 3),), server_weights=(0.0,)) -> list[Setting]:
    """The tuning grid: every combination, chosen by MRR on the training folds
    (b 0.75 everywhere and k1 1.2: the first full grid chose them for every
    fold)."""
    out = []
    fusion = [(w, 0) for w in (1, 1.5, 2, 2.5, 3)] if kind == "minmax" else [(w, k) for w in (0.5, 1, 1.5, 2) for k in (10, 30, 60)]
    for wn, wt, ws, wp, (w, k), sw, (pb, pt), sv in itertools.product(
        (2, 3, 5), (1, 2), (0.5, 1), (0.5, 1), fusion, segment_weights, prf, server_weights
    ):
        fields = {"name": (wn, 0.75), "server": (ws, 0.75), "title": (wt, 0.75), "description": (1.0, 0.75), "params": (wp, 0.75)}
        out.append(Setting(1.2, fields, w, kind, k, sw, pb, pt, sv))
    return out


class Ranker:
    """The design over one catalog: BM25F (re-weighted per setting) fused with
    the static cosine, then the exact-name rule. ``table`` is a
    ``StaticTable``-like object (``ids``, ``table(dims)``, ``size``)."""

    def __init__(self, catalog, table, queries: list[str], split: str = "none", static_kind: str = "one"):
        self.catalog = catalog
        self.names = [t.id for t in catalog]
        bf, st = ev.DESIGN["bm25f"], ev.DESIGN["static"]
        self.bm = ev.BM25F(catalog, bf["stopwords"], bf["stem"])
        if static_kind == "fields":
            static = ev.StaticFields(table, catalog, st["dims"], st["weighting"], st["sif_a"], (1, 1, 0.3))
        else:
            static = ev.Static(table, catalog, st["dims"], st["weighting"], st["sif_a"], st["text"])
        self.split = split
        # each query's segments (the whole query alone when not split)
        self.segments = [segments(q, split) for q in queries]
        flat = [x for segs in self.segments for x in segs]
        self.static = np.stack([static.score(q) for q in flat])
        if static_kind == "one":
            self.tool_vecs = static.tool_vecs
            self.query_vecs = np.stack([static.embed_ids(static.t.ids(q)) for q in flat])
            # each server's vector: the normalized mean of its tools' vectors
            servers = sorted({t.server for t in catalog})
            of = np.array([servers.index(t.server) for t in catalog])
            sv = np.stack([self.tool_vecs[of == i].mean(axis=0) for i in range(len(servers))])
            sv /= np.maximum(np.linalg.norm(sv, axis=1, keepdims=True), 1e-12)
            self.server_cos = (self.query_vecs @ sv.T)[:, of]  # queries x tools: the cosine of the tool's server
        self.terms = [self.bm.query_terms(q) for q in flat]
        self.boost = np.stack([ev.named_tools(q, catalog) for q in queries])
        self._lex = {}

    def lexical(self, s: Setting) -> np.ndarray:
        key = (s.k1, tuple(sorted(s.fields.items())))
        if key not in self._lex:
            self.bm.configure(s.k1, s.fields)
            self._lex[key] = np.stack([self.bm.weights[:, t].sum(axis=1) for t in self.terms])
        return self._lex[key]

    def scores(self, s: Setting) -> np.ndarray:
        lex = self.lexical(s)
        if s.kind == "minmax":
            fused = minmax(lex) + s.static_weight * minmax(self.static)
            if s.server_weight:
                fused = fused + s.server_weight * minmax(self.server_cos)
            if s.prf_beta:
                # pseudo-relevance feedback: the query vector moves towards
                # its first ranking's top tools, and the cosine is taken again
                top = np.argsort(-fused, axis=1)[:, : s.prf_top]
                q = self.query_vecs + s.prf_beta * self.tool_vecs[top].mean(axis=1)
                q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
                fused = minmax(lex) + s.static_weight * minmax(q @ self.tool_vecs.T)
        else:
            fused = np.stack([ev.fuse([lex[i], self.static[i]], [1.0, s.static_weight], self.names, s.kind, s.k)
                              for i in range(len(lex))])
        out, at = [], 0
        for segs in self.segments:
            part = fused[at:at + len(segs)]
            at += len(segs)
            # segment 0 is the whole query; a tool's score adds its best segment's
            out.append(part[0] if len(segs) == 1 else part[0] + s.segment_weight * part[1:].max(axis=0))
        fused = np.stack(out)
        top = fused.max(axis=1, keepdims=True) - fused.min(axis=1, keepdims=True) + 1
        return fused + self.boost * top


segments = ev.segments
data_like = ev.data_like


def minmax(x: np.ndarray) -> np.ndarray:
    """Each row min-max normalized (a constant row: zeros), as ``ev.fuse``."""
    lo, hi = x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)
    span = hi - lo
    return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1), 0.0)


def metrics(scores, tasks, names) -> dict:
    return ev.metrics(scores, tasks, names, list(range(len(tasks))))


def references(catalog, tasks, emb) -> dict[str, np.ndarray]:
    names = [t.id for t in catalog]
    queries = [t.query for t in tasks]
    plain = ev.BM25Plain(catalog)
    bm = np.stack([plain.score(q) for q in queries])
    dense = ev.Dense(emb, [[f"{t.id}: {t.description}" if t.description else t.id] for t in catalog])
    qv = emb.embed(queries)
    dn = np.stack([dense.score_vec(v) for v in qv])
    rrf = np.stack([ev.fuse([bm[i], dn[i]], [1, 1], names, "rrf", 60) for i in range(len(queries))])
    return {"bm25-plain": bm, "dense-minilm": dn, "rrf-plain": rrf}


def restrict(tasks, keep: set[str]):
    """Tasks with their labels cut to the tools in ``keep`` (none left: dropped)."""
    out = []
    for t in tasks:
        rel = [r for r in t.relevant if r in keep]
        if rel:
            out.append(ev.Task(t.id, t.split, t.server, t.kind, t.query, rel))
    return out


def tune(catalog, tasks, variant) -> tuple[Setting, dict]:
    names = [t.id for t in catalog]
    ranker = variant.ranker(catalog, [t.query for t in tasks])
    best = None
    for s in variant.settings:
        m = metrics(ranker.scores(s), tasks, names)
        if best is None or (m["mrr"], m["r@5"]) > (best[1]["mrr"], best[1]["r@5"]):
            best = (s, m)
    return best


@dataclass
class Variant:
    """One way of ranking: the static table, the query handling, the kind of
    static vector, and the settings its tuning chooses among."""

    name: str
    table: object
    settings: list
    split: str = "none"
    static_kind: str = "one"

    def ranker(self, catalog, queries):
        return Ranker(catalog, self.table, queries, self.split, self.static_kind)


def shipped(table) -> Variant:
    """What ships: the tuning procedure (the grid, chosen on the training
    folds) and the long-request handling."""
    return Variant("toolgate-search", table, grid(segment_weights=(ev.DESIGN["clause_weight"],)), split=ev.DESIGN["query"])


def fold_settings(catalog, tasks, variant):
    """Each fold of ``FOLDS`` with the setting ``variant`` chose for it, and
    its metrics: tuned on the other folds' tasks, against a catalog of their
    servers only."""
    for fold in FOLDS:
        out = set(fold)
        train_catalog = [t for t in catalog if t.server not in out]
        train = restrict([t for t in tasks if t.server not in out], {t.id for t in train_catalog})
        setting, m = tune(train_catalog, train, variant)
        yield fold, setting, m


def composites(tasks, folds) -> list:
    """Multi-step requests made of two held-out tasks of the same fold (the
    i-th with the (i + n/2)-th, in file order): "<first> Then <second>",
    labelled with both tasks' tools; ``server`` is the first's."""
    out = []
    for fold in folds:
        ts = [t for t in tasks if t.server in set(fold)]
        half = len(ts) // 2
        for a, b in zip(ts[:half], ts[half:2 * half]):
            q = a.query.rstrip(".?! ") + ". Then " + b.query[0].lower() + b.query[1:]
            out.append(ev.Task(f"{a.id}+{b.id}", "test", a.server, "composite", q, list(dict.fromkeys(a.relevant + b.relevant))))
            STEPS[out[-1].id] = [a.relevant, b.relevant]
    return out


#: Each composite task's steps' labels.
STEPS: dict[str, list] = {}


#: Data a user might paste under a request (made up for this test, none from
#: any catalog): a JSON record, log lines, CSV rows, an e-mail.
PASTES = [
    '{"order_id": 48213, "status": "shipped", "items": [{"sku": "A-1138", "qty": 2, "price": 19.99}], '
    '"customer": {"name": "Dana Whitfield", "email": "dana@example.com"}, "created_at": "2026-03-14T09:21:44Z"}',
    "2026-11-02 14:03:11 ERROR [worker-3] Connection refused: upstream db:5432\n"
    "2026-11-02 14:03:12 WARN retrying in 5s (attempt 2/5)\n2026-11-02 14:03:17 ERROR [worker-3] Timeout after 5000ms",
    "date,region,units,revenue\n2026-01-01,EMEA,120,5400\n2026-01-02,APAC,98,4410\n2026-01-03,AMER,143,6435",
    "Hi team, following up on yesterday's sync: we agreed to move the launch to the second week of March, "
    "Priya owns the checklist and Tom will confirm the venue. Let me know if I missed anything.",
]


def pasted(tasks) -> list:
    """Each task with one of ``PASTES`` (in turn) pasted under it, same labels."""
    return [ev.Task(t.id, t.split, t.server, "pasted", f"{t.query}\n\nFor context:\n{PASTES[i % len(PASTES)]}", t.relevant)
            for i, t in enumerate(tasks)]


def both_at(scores, tasks, names, parts: dict, k: int = 10) -> float:
    """Share of composite tasks with a tool of *each* step in the first k."""
    idx = {n: i for i, n in enumerate(names)}
    hits = 0
    for row_, t in zip(scores, tasks):
        top = set(np.argsort(-row_, kind="stable")[:k].tolist())
        hits += all(any(idx[r] in top for r in step) for step in parts[t.id])
    return hits / max(len(tasks), 1)


def row(name, m) -> str:
    both = f" {100 * m['both@10']:.1f} |" if "both@10" in m else ""
    return f"| {name} | {100 * m['r@1']:.1f} | {100 * m['r@5']:.1f} | {100 * m['r@10']:.1f} | {m['mrr']:.3f} |" + both


def load(threads: int):
    """The embedding model (its cache), the static table, the held-out
    catalog and its tasks: what every script over this set starts from."""
    emb = ev.Embeddings(threads)
    table = ev.StaticTable(emb, ev.DESIGN["static"]["pool"])
    catalog = ev.load_catalog(ev.REPO / "tests" / "corpus")
    return emb, table, catalog, ev.load_tasks(HERE / "tasks.jsonl", catalog)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", default="toolgate-search|first design (before)|tuned, no long-request handling",
                        help="names of the variants to run, joined by '|', or 'all' (default: toolgate-search, "
                             "the first design, and the tuning without the long-request handling)")
    args = parser.parse_args()

    emb, minilm, catalog, tasks = load(args.threads)
    names = [t.id for t in catalog]
    servers = {t.server for t in catalog}
    assert sorted(s for f in FOLDS for s in f) == sorted(servers), "FOLDS must cover every server once"
    query = ev.DESIGN["query"]
    variants = [
        shipped(minilm),
        Variant("first design (before)", minilm, [first_setting()]),
        # ideas, measured (README "What was tried")
        Variant("tuned, no long-request handling", minilm, grid()),
        Variant("rrf fusion (tuned)", minilm, grid("rrf")),
        Variant("static-fields (tuned)", minilm, grid(), static_kind="fields"),
        Variant("prf (tuned)", minilm, grid(prf=((0.5, 3), (1.0, 3), (1.0, 5), (2.0, 5)))),
        Variant("clauses, data kept (tuned)", minilm, grid(), split="clauses"),
        Variant("clause weight 0.5 (tuned)", minilm, grid(segment_weights=(0.5,)), split=query),
        Variant("clause weight 2 (tuned)", minilm, grid(segment_weights=(2.0,)), split=query),
        Variant("server vectors (tuned)", minilm, grid(segment_weights=(ev.DESIGN["clause_weight"],), server_weights=(0.0, 0.25, 0.5, 1.0)),
                split=query),
    ]
    if args.variants != "all":
        keep = set(args.variants.split("|"))
        variants = [v for v in variants if v.name in keep]

    sets = {"leave-servers-out": tasks, "composite (2 steps)": composites(tasks, FOLDS), "pasted data": pasted(tasks)}
    figures: dict[str, dict] = {k: {} for k in sets}
    for label, ts in sets.items():
        for k, sc in references(catalog, ts, emb).items():
            figures[label][k] = metrics(sc, ts, names)
            if label.startswith("composite"):
                figures[label][k]["both@10"] = both_at(sc, ts, names, STEPS)
    chosen = {}
    for v in variants:
        held = {k: [] for k in sets}
        pooled = {k: [] for k in sets}
        for fold, s, m in fold_settings(catalog, tasks, v):
            out = set(fold)
            chosen.setdefault(v.name, []).append((fold, s, m))
            for label, ts in sets.items():
                test = [t for t in ts if t.server in out]
                held[label].append(v.ranker(catalog, [t.query for t in test]).scores(s))
                pooled[label] += test
        for label in sets:
            figures[label][v.name] = metrics(np.concatenate(held[label]), pooled[label], names)
            if label.startswith("composite"):
                figures[label][v.name]["both@10"] = both_at(np.concatenate(held[label]), pooled[label], names, STEPS)
        print(f"({v.name}: leave-servers-out {row('', figures['leave-servers-out'][v.name])})", file=sys.stderr, flush=True)

    # RestBench: each variant tuned on all 25 catalogs
    rb_catalog = ev.load_catalog(HERE / "restbench" / "corpus")
    rb_tasks = ev.load_tasks(HERE / "restbench" / "tasks.jsonl", rb_catalog)
    rb_names = [t.id for t in rb_catalog]
    figures["restbench"] = {k: metrics(v, rb_tasks, rb_names) for k, v in references(rb_catalog, rb_tasks, emb).items()}
    for v in variants:
        s_all, _ = tune(catalog, tasks, v)
        chosen[v.name].append((["all 25"], s_all, None))
        figures["restbench"][v.name] = metrics(v.ranker(rb_catalog, [t.query for t in rb_tasks]).scores(s_all), rb_tasks, rb_names)
    emb.save()

    if args.json:
        print(json.dumps(figures, indent=1))
        return
    counts = {"restbench": len(rb_tasks), **{k: len(v) for k, v in sets.items()}}
    for name, rows in figures.items():
        extra = (" both@10 |", "---:|") if name.startswith("composite") else ("", "")
        print(f"\n### {name} ({counts[name]} tasks)\n\n| method | R@1 | R@5 | R@10 | MRR |{extra[0]}\n|---|---:|---:|---:|---:|{extra[1]}")
        for k, m in rows.items():
            print(row(k, m))
    print("\nSettings chosen (each fold's on the other folds' tasks; the last on all 25 catalogs, for RestBench):")
    for name, rows in chosen.items():
        print(f"- {name}:")
        for fold, s, m in rows:
            print(f"  - {fold[0]}{'...' if len(fold) > 1 else ''}: {s}" + (f" (train MRR {m['mrr']:.3f})" if m else ""))


if __name__ == "__main__":
    main()
