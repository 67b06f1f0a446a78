#!/usr/bin/env python3
"""Tool search: which ranking should toolgate's ``search_tools`` use?

The catalog is every tool of the 25 stored corpus servers (``tests/corpus``)
merged as the gateway exposes them, ``<server>__<tool>`` (399 tools). The tasks
(``tasks.jsonl``, provenance in ``README.md``) are requests a user could give
an agent, each labelled with every tool of that catalog that serves it, and
split into ``dev`` (tuning) and ``test`` (final figures only).

For each ranking method this prints recall@1/5/10 (a hit is any labelled tool
among the first k) and MRR on dev and on test, with the time per query in
Python. Methods:

references (what a held-back check compares against)
  bm25-plain      Okapi BM25 (rank_bm25 BM25Okapi, k1 1.5, b 0.75) over
                  ``name description``, lowercase ``\\w+`` words, no stemming
  dense-minilm    all-MiniLM-L6-v2 (int8 ONNX), cosine between the query and
                  ``name: description`` (one vector, mean pooling)
  rrf-plain       reciprocal-rank fusion of the two (k 60)
prototypes (what toolgate could index: name, title, description, parameters,
server name)
  bm25f           BM25F over fields, identifier splitting, stopwords, Snowball
  dense-*         MiniLM over richer text, one vector or best passage
  static-*        a token->vector table distilled from the same MiniLM
  fuse-*          fusions of the above

``--tune`` searches the prototypes' settings on dev only and prints the best;
the constants in ``DESIGN`` are what it chose. Run it with ``run.sh``.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import importlib.util
import itertools
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = REPO / "target" / "search-cache"
KS = (1, 5, 10)

# --- The chosen design (from --tune on dev; see README) -----------------------

DESIGN = {
    # BM25F: per-field weight and length normalization b, shared k1.
    "bm25f": {
        "k1": 1.2,
        # (chosen by heldout.py's tuning on all 25 catalogs' tasks; the first
        # design, tuned on dev only, had name (5, .75), server (1, .75),
        # title (2, .75), description (1, .5), params (.5, .5), fusion 2.5)
        "fields": {
            # field: (weight, b)
            "name": (2.0, 0.75),
            "server": (0.5, 0.75),
            "title": (1.0, 0.75),
            "description": (1.0, 0.75),
            "params": (0.5, 0.75),
        },
        "stopwords": "lucene",
        "stem": True,
    },
    # Static embeddings: distilled table, dims after PCA, token weighting.
    "static": {"pool": "token", "dims": 256, "weighting": "sif", "sif_a": 3e-6, "text": "rich"},
    # Dense prototype used in fusions: "rich" (one vector) or "maxp" (best passage).
    "dense": "maxp",
    # Fusions (kind rrf: sum of w / (k + rank); minmax: sum of w * min-max normalized score;
    # zscore: sum of w * standardized score), weights in the order of the parts.
    "fuse": {
        "bm25f+static": {"kind": "minmax", "k": 0, "weights": (1.0, 1.5)},
        "bm25f+dense": {"kind": "minmax", "k": 0, "weights": (1.0, 3.5)},
        "bm25f+static+dense": {"kind": "minmax", "k": 0, "weights": (1.0, 1.5, 4.0)},
    },
    # The recommendation: which fusion, and whether a query that spells out a
    # multi-word tool name puts that tool first.
    "recommended": "bm25f+static",
    "name_boost": True,
    # Long requests (heldout.py): data lines left out, and each tool adds
    # clause_weight x its best clause's fused score ("none": the whole only).
    "query": "clauses-data",
    "clause_weight": 1.0,
}

#: The first design's settings (before the held-out evaluation), for comparison.
FIRST_DESIGN = {
    "fields": {"name": (5.0, 0.75), "server": (1.0, 0.75), "title": (2.0, 0.75), "description": (1.0, 0.5), "params": (0.5, 0.5)},
    "static_weight": 2.5,
    "query": "none",
}

# --- Catalog -------------------------------------------------------------------


@dataclass
class Param:
    name: str
    description: str
    enum: list[str]


@dataclass
class Tool:
    id: str  # <server>__<tool>, as the gateway exposes it
    server: str  # corpus file stem = the gateway's prefix
    name: str  # the upstream tool name
    title: str
    description: str
    params: list[Param]
    server_title: str  # serverInfo title/name and description (what initialize says)
    server_instructions: str


def squash(text) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def load_catalog(corpus: Path) -> list[Tool]:
    tools = []
    for path in sorted(corpus.glob("*.json")):
        data = json.loads(path.read_text())
        server = path.stem
        info = data.get("serverInfo") or {}
        server_title = squash(" ".join(str(info.get(k) or "") for k in ("title", "description")))
        instructions = squash(data.get("instructions") or "")
        for raw in data["tools"]:
            props = (raw.get("inputSchema") or {}).get("properties") or {}
            params = []
            for pname, schema in props.items():
                schema = schema if isinstance(schema, dict) else {}
                enum = schema.get("enum") or ((schema.get("items") or {}).get("enum") if isinstance(schema.get("items"), dict) else None) or []
                params.append(Param(pname, squash(schema.get("description")), [str(v) for v in enum]))
            title = raw.get("title") or (raw.get("annotations") or {}).get("title") or ""
            tools.append(
                Tool(
                    id=f"{server}__{raw['name']}",
                    server=server,
                    name=raw["name"],
                    title=squash(title),
                    description=squash(raw.get("description")),
                    params=params,
                    server_title=server_title,
                    server_instructions=instructions,
                )
            )
    return tools


@dataclass
class Task:
    id: str
    split: str
    server: str
    kind: str
    query: str
    relevant: list[str]


def load_tasks(path: Path, catalog: list[Tool]) -> list[Task]:
    ids = {t.id for t in catalog}
    tasks, problems = [], []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        unknown = [r for r in raw["relevant"] + raw.get("considered", []) if r not in ids]
        if unknown or not raw["relevant"] or raw["split"] not in ("dev", "test"):
            problems.append(f"line {n} ({raw.get('id')}): unknown tools {unknown} or bad split/labels")
        tasks.append(Task(raw["id"], raw["split"], raw["server"], raw["kind"], raw["query"], raw["relevant"]))
    if problems:
        sys.exit("eval.py: bad tasks:\n  " + "\n  ".join(problems))
    return tasks


# --- Text analysis (the part toolgate must reproduce exactly) --------------------

#: Lucene's classic English stop set (33 words).
STOP_LUCENE = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
#: A longer list: Lucene's plus pronouns, auxiliaries and the filler of requests
#: ("can you please show me ..."), all closed-class words.
STOP_LONG = STOP_LUCENE | set(
    "i me my mine myself we us our ours you your yours he him his she her hers its them what which who whom "
    "whose am been being have has had having do does did doing would should could can may might must shall "
    "from so than too very just also about any all each some only own same other again once here where when "
    "why how please want wants like lets let s t d ll m re ve don isn aren wasn weren doesn didn won "
    "wouldn shouldn couldn hasn haven hadn".split()
)
STOPWORDS = {"none": set(), "lucene": STOP_LUCENE, "long": STOP_LONG}

_stemmer = None


def stem(word: str) -> str:
    """Snowball English (Porter2), the algorithm of rust-stemmers' English."""
    global _stemmer
    if _stemmer is None:
        import snowballstemmer

        _stemmer = snowballstemmer.stemmer("english")
    return _stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """Identifier-aware words: camelCase and acronym boundaries split
    (``getUserData`` -> get user data, ``HTTPServer`` -> http server), then runs
    of Unicode letters and digits, lowercased (so snake_case, kebab-case,
    ``a/b``, ``x.y`` split too)."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    return re.findall(r"[^\W_]+", text.lower())


def analyze(text: str, stopwords: str = "lucene", stemming: bool = True) -> list[str]:
    """words(), minus stopwords and one-character words, each stemmed."""
    stop = STOPWORDS[stopwords]
    out = []
    for w in words(text):
        if len(w) < 2 or w in stop:
            continue
        out.append(stem(w) if stemming else w)
    return out


def plain_tokens(text: str) -> list[str]:
    """The reference baseline's tokenization: lowercase ``\\w+`` runs."""
    return re.findall(r"\w+", text.lower())


def tool_fields(tool: Tool) -> dict[str, str]:
    """The texts toolgate can index for one tool, by field."""
    params = []
    for p in tool.params:
        params.append(" ".join([p.name, p.description, " ".join(p.enum)]))
    return {
        "name": tool.name,
        "server": " ".join([tool.server, tool.server_title, tool.server_instructions]),
        "title": tool.title,
        "description": tool.description,
        "params": " ".join(params),
    }


def rich_text(tool: Tool, params: bool = True) -> str:
    """Natural text for embeddings: split name, server, title, description,
    then each parameter's words."""
    head = " ".join(words(tool.name))
    text = f"{head} ({' '.join(words(tool.server))})"
    if tool.title:
        text += f" {tool.title}"
    text += f": {tool.description}"
    if params and tool.params:
        text += " Parameters: " + "; ".join(
            " ".join(words(p.name)) + (f": {p.description}" if p.description else "") for p in tool.params
        )
    return text


# --- Lexical rankers -------------------------------------------------------------


class BM25Plain:
    """The reference: rank_bm25's BM25Okapi over ``name description``."""

    def __init__(self, catalog: list[Tool], tokenize=plain_tokens, k1: float = 1.5, b: float = 0.75):
        from rank_bm25 import BM25Okapi

        self.tokenize = tokenize
        self.bm25 = BM25Okapi([tokenize(f"{t.id} {t.description}") for t in catalog], k1=k1, b=b)

    def score(self, query: str) -> np.ndarray:
        return np.asarray(self.bm25.get_scores(self.tokenize(query)), dtype=np.float64)


FIELDS = ("name", "server", "title", "description", "params")


class BM25F:
    """BM25F: per term, a weighted sum over fields of its length-normalized
    frequency, saturated once, times its IDF::

        tf~(t,d) = sum_f w_f * tf_f(t,d) / (1 - b_f + b_f * len_f(d) / avglen_f)
        score(q,d) = sum_{t in set(q)} idf(t) * tf~ * (k1 + 1) / (k1 + tf~)
        idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))     (df: tools with t in any field)

    The per-field term counts are built once per analysis setting; weights,
    b and k1 can change without re-analysing (that is what --tune varies).
    """

    def __init__(self, catalog: list[Tool], stopwords: str = "lucene", stemming: bool = True):
        self.stopwords, self.stemming = stopwords, stemming
        docs = [{f: analyze(text, stopwords, stemming) for f, text in tool_fields(t).items()} for t in catalog]
        vocab = sorted({w for d in docs for ws in d.values() for w in ws})
        self.index = {w: i for i, w in enumerate(vocab)}
        n, v = len(catalog), len(vocab)
        self.tf = {f: np.zeros((n, v), dtype=np.float64) for f in FIELDS}
        self.length = {f: np.zeros(n) for f in FIELDS}
        for i, d in enumerate(docs):
            for f in FIELDS:
                for w in d[f]:
                    self.tf[f][i, self.index[w]] += 1
                self.length[f][i] = len(d[f])
        df = (sum(self.tf[f] > 0 for f in FIELDS) > 0).sum(axis=0)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        self.configure(DESIGN["bm25f"]["k1"], DESIGN["bm25f"]["fields"])

    def configure(self, k1: float, fields: dict[str, tuple[float, float]], cols=None) -> "BM25F":
        """Per-tool, per-term weights for these settings (only the term columns
        ``cols`` when given: tuning needs just the dev queries' terms)."""
        cols = slice(None) if cols is None else cols
        tilde = 0
        for f, (w, b) in fields.items():
            if w == 0:
                continue
            avg = max(self.length[f].mean(), 1e-9)
            norm = 1 - b + b * self.length[f] / avg
            tilde = tilde + w * self.tf[f][:, cols] / norm[:, None]
        tilde = np.asarray(tilde) + np.zeros((self.tf["name"].shape[0], 1))
        self.weights = self.idf[cols] * tilde * (k1 + 1) / (k1 + tilde)  # tools x terms
        return self

    def query_terms(self, query: str) -> list[int]:
        """Column indices of the query's distinct analysed terms that the catalog has."""
        out = {self.index[w] for w in analyze(query, self.stopwords, self.stemming) if w in self.index}
        return sorted(out)

    def score(self, query: str) -> np.ndarray:
        return self.weights[:, self.query_terms(query)].sum(axis=1)


# --- Dense rankers -------------------------------------------------------------------


def load_fidelity_embedder():
    """benches/fidelity/eval.py's Embedder: the same files (hash-checked), the
    same tokenizer settings and pooling."""
    path = HERE.parent / "fidelity" / "eval.py"
    spec = importlib.util.spec_from_file_location("fidelity_eval", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fidelity_eval"] = module
    spec.loader.exec_module(module)
    return module


class Embeddings:
    """The fidelity Embedder with an on-disk cache for index-side texts (query
    embeddings timed per query bypass it)."""

    def __init__(self, threads: int):
        self.fidelity = load_fidelity_embedder()
        self.embedder = self.fidelity.Embedder(threads)
        CACHE.mkdir(parents=True, exist_ok=True)
        self.path = CACHE / f"minilm-{self.fidelity.MODEL_SHA256[:12]}.npz"
        self.cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as z:
                self.cache = dict(zip(z["keys"].tolist(), z["vecs"]))
        self.dirty = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if self.key(t) not in self.cache))
        if missing:
            for t, v in zip(missing, self.embedder.embed(missing)):
                self.cache[self.key(t)] = v
            self.dirty = True
        return np.stack([self.cache[self.key(t)] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def embed_live(self, text: str) -> np.ndarray:
        return self.embedder.embed([text])[0]

    def save(self) -> None:
        if self.dirty:
            keys = list(self.cache)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.cache[k] for k in keys]))
            self.dirty = False


def passages(tool: Tool, window_words: int = 60) -> list[str]:
    """Max-over-passages texts: the rich head (name, server, title, whole
    description) and, for long descriptions, windows of whole sentences, and
    each parameter, all prefixed by the split name."""
    head = " ".join(words(tool.name))
    out = [rich_text(tool, params=False)]
    sentences = re.split(r"(?<=[.!?])\s+", tool.description)
    windows, window = [], []
    for s in sentences:
        if window and len(" ".join(window + [s]).split()) > window_words:
            windows.append(" ".join(window))
            window = []
        window.append(s)
    if window:
        windows.append(" ".join(window))
    if len(windows) > 1:
        out += [f"{head}: {w}" for w in windows]
    for p in tool.params:
        out.append(f"{head}: {' '.join(words(p.name))}" + (f": {p.description}" if p.description else ""))
    return list(dict.fromkeys(out))


class Dense:
    """Cosine between the query vector and each tool's vector(s); with several
    passages per tool the tool scores its best passage."""

    def __init__(self, emb: Embeddings, texts: list[list[str]]):
        self.emb = emb
        flat = [p for ps in texts for p in ps]
        self.starts = np.cumsum([0] + [len(ps) for ps in texts[:-1]])
        self.vecs = emb.embed(flat)
        self.single = all(len(ps) == 1 for ps in texts)

    def score_vec(self, q: np.ndarray) -> np.ndarray:
        sims = (self.vecs @ q).astype(np.float64)
        return sims if self.single else np.maximum.reduceat(sims, self.starts)

    def score(self, query: str) -> np.ndarray:
        return self.score_vec(self.emb.embed_live(query))


# --- Static embeddings -------------------------------------------------------------------


class StaticTable:
    """A WordPiece token -> vector table distilled from the same MiniLM: each
    vocabulary token alone (``[CLS] token [SEP]``) through the model, its
    output mean-pooled over the three positions (``pool="mean"``, the model's
    own sentence pooling) or taken at the token (``pool="token"``); then
    optionally PCA to fewer dimensions."""

    def __init__(self, emb: Embeddings, pool: str = "mean"):
        self.tokenizer = emb.embedder.tokenizer
        vocab = self.tokenizer.get_vocab()
        self.size = len(vocab)
        path = CACHE / f"static-{emb.fidelity.MODEL_SHA256[:12]}-{pool}.npy"
        if path.exists():
            self.raw = np.load(path)
        else:
            self.raw = self.distill(emb, pool)
            np.save(path, self.raw)
        self.cls, self.sep = vocab["[CLS]"], vocab["[SEP]"]

    def distill(self, emb: Embeddings, pool: str, batch: int = 512) -> np.ndarray:
        session = emb.embedder.session
        inputs = emb.embedder.inputs
        vocab = self.tokenizer.get_vocab()
        cls, sep = vocab["[CLS]"], vocab["[SEP]"]
        out = np.zeros((self.size, 384), dtype=np.float32)
        started = time.monotonic()
        for start in range(0, self.size, batch):
            ids = np.arange(start, min(start + batch, self.size))
            x = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1).astype(np.int64)
            feeds = {"input_ids": x, "attention_mask": np.ones_like(x)}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(x)
            hidden = session.run(None, feeds)[0]
            out[ids] = hidden.mean(axis=1) if pool == "mean" else hidden[:, 1]
        print(f"(distilled {self.size} token vectors, pool={pool}, in {time.monotonic() - started:.0f} s)", file=sys.stderr)
        return out

    def table(self, dims: int) -> np.ndarray:
        """The table, PCA-reduced to ``dims`` (fit on the whole vocabulary,
        centred) when dims < 384."""
        x = self.raw.astype(np.float64)
        if dims >= x.shape[1]:
            return x
        if not hasattr(self, "_svd"):
            centred = x - x.mean(axis=0)
            self._svd = (centred, np.linalg.svd(centred, full_matrices=False)[2])
        centred, vt = self._svd
        return centred @ vt[:dims].T

    def ids(self, text: str) -> list[int]:
        """WordPiece ids of the identifier-split words of ``text`` (no special tokens)."""
        return self.tokenizer.encode(" ".join(words(text)), add_special_tokens=False).ids


def zipf_probability(size: int, first_word: int = 1996) -> np.ndarray:
    """p(token) under Zipf's law by vocabulary rank. BERT's uncased vocab lists
    whole words from id 1996 ("the") in falling frequency, after special
    tokens and single characters and before ## pieces; specials and single
    characters count as the most frequent rank."""
    rank = np.maximum(np.arange(size) - first_word + 1, 1).astype(np.float64)
    p = 1.0 / rank
    return p / p.sum()


class Static:
    """Query and tool = weighted mean of static token vectors, cosine."""

    def __init__(self, table: StaticTable, catalog: list[Tool], dims: int, weighting: str, sif_a: float, text: str):
        self.t = table
        self.vectors = table.table(dims)
        self.text = text
        docs = [table.ids(self.tool_text(tool)) for tool in catalog]
        if weighting == "uniform":
            w = np.ones(table.size)
        elif weighting == "zipf":  # model2vec-style: log of the rank
            w = np.log(np.arange(table.size) + 2.0)
        elif weighting == "sif":
            p = zipf_probability(table.size)
            w = sif_a / (sif_a + p)
        elif weighting == "idf":  # IDF of the token over the catalog's tool texts
            n = len(docs)
            df = np.zeros(table.size)
            for d in docs:
                df[list(set(d))] += 1
            w = np.log(1 + (n - df + 0.5) / (df + 0.5))
        else:
            raise ValueError(weighting)
        self.w = w
        self.tool_vecs = np.stack([self.embed_ids(d) for d in docs])

    def tool_text(self, tool: Tool) -> str:
        if self.text == "plain":
            return f"{tool.name} {tool.description}"
        return rich_text(tool, params=(self.text == "rich"))

    def embed_ids(self, ids: list[int]) -> np.ndarray:
        if not ids:
            return np.zeros(self.vectors.shape[1])
        v = (self.vectors[ids] * self.w[ids, None]).sum(axis=0)
        return v / max(np.linalg.norm(v), 1e-12)

    def score(self, query: str) -> np.ndarray:
        return self.tool_vecs @ self.embed_ids(self.t.ids(query))


class StaticFields:
    """Static embeddings per field: a head vector (split name, server, title),
    a description vector and a parameters vector per tool; the score is a
    weighted sum of the query's cosines with each (BM25F's idea for vectors)."""

    def __init__(self, table: StaticTable, catalog: list[Tool], dims: int, weighting: str, sif_a: float,
                 weights: tuple[float, float, float]):
        base = Static(table, catalog, dims, weighting, sif_a, "plain")
        self.base, self.weights = base, weights
        heads, descs, params = [], [], []
        for t in catalog:
            heads.append(base.embed_ids(table.ids(" ".join([t.name, t.server, t.title]))))
            descs.append(base.embed_ids(table.ids(t.description)))
            params.append(base.embed_ids(table.ids(" ".join(f"{p.name} {p.description}" for p in t.params))))
        self.fields = [np.stack(heads), np.stack(descs), np.stack(params)]

    def score(self, query: str) -> np.ndarray:
        q = self.base.embed_ids(self.base.t.ids(query))
        return sum(w * (f @ q) for w, f in zip(self.weights, self.fields) if w)


class StaticMaxSim:
    """Soft term matching with the static table: each query token scores its
    best cosine with any token of the tool's text, weighted by the token's
    IDF over the catalog; a tool's score is the weighted mean over the query's
    distinct tokens (an exact word match counts 1, a related word less)."""

    def __init__(self, table: StaticTable, catalog: list[Tool], dims: int, text: str = "rich", power: float = 1.0):
        self.t = table
        v = table.table(dims)
        self.unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        helper = Static.__new__(Static)
        helper.text = text
        docs = [sorted(set(table.ids(helper.tool_text(tool)))) for tool in catalog]
        n = len(docs)
        df = np.zeros(table.size)
        for d in docs:
            df[d] += 1
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        flat = np.concatenate([np.array(d, dtype=np.int64) for d in docs])
        self.uniq, self.inv = np.unique(flat, return_inverse=True)
        self.uniq_unit = self.unit[self.uniq]
        self.starts = np.cumsum([0] + [len(d) for d in docs[:-1]])
        self.power = power

    def score(self, query: str) -> np.ndarray:
        q = sorted(set(self.t.ids(query)))
        if not q:
            return np.zeros(len(self.starts))
        sims = (self.unit[q] @ self.uniq_unit.T)[:, self.inv]  # query tokens x every tool's tokens
        best = np.maximum.reduceat(np.maximum(sims, 0) ** self.power, self.starts, axis=1)  # query tokens x tools
        w = self.idf[q]
        return (w @ best) / max(w.sum(), 1e-12)


# --- Query handling (long requests) ---------------------------------------------------


def data_like(line: str) -> bool:
    """Whether a line of a request reads as pasted data rather than words:
    under 60% of its whitespace-separated tokens are plain words (letters,
    an inner ' or -, surrounding punctuation ignored), or over 8% of its
    characters are symbols (neither letters, digits, spaces nor ``.,;:!?'-``)."""
    tokens = line.split()
    plain = sum(bool(re.fullmatch(r"[^\W\d_]+(?:['-][^\W\d_]+)*", t.strip(".,;:!?()[]{}\"'"))) for t in tokens)
    symbols = sum(not (c.isalnum() or c.isspace() or c in ".,;:!?'-") for c in line)
    return plain < 0.6 * len(tokens) or symbols > 0.08 * len(line)


#: At most this many clauses are ranked on their own (a bound on the cost).
MAX_CLAUSES = 16

#: Where a line splits into clauses: after sentence punctuation, and at the
#: words that join steps.
SPLIT = r"(?<=[.!?;:])\s+|,?\s+(?:and\s+then|and\s+also|then|after\s+that|afterwards|also|finally)\s+"


def segments(query: str, split: str) -> list[str]:
    """The whole query, then (``split`` "clauses" or "clauses-data") its
    clauses when it has several: its lines, each split at sentence ends and at
    "then" / "and then" / "after that" / "also" / "finally"; a clause of fewer
    than 3 words joins the next. With "clauses-data", lines that read as
    pasted data (``data_like``) are dropped, from the whole query too, unless
    every line does."""
    if split == "none":
        return [query]
    lines = [line for line in query.splitlines() if line.strip()]
    if split == "clauses-data":
        natural = [line for line in lines if not data_like(line)]
        if natural and len(natural) < len(lines):
            lines, query = natural, " ".join(natural)
    parts = [p for line in lines for p in re.split(SPLIT, line.strip(), flags=re.I)]
    merged, carry = [], ""
    for p in parts:
        p = (carry + " " + p).strip() if carry else p.strip()
        if len(p.split()) < 3:
            carry = p
            continue
        merged.append(p)
        carry = ""
    if carry and merged:
        merged[-1] += " " + carry
    return [query] + merged[:MAX_CLAUSES] if len(merged) > 1 else [query]


def design_scores(lex, static, catalog, query: str, weights, clause_weight: float, split: str) -> np.ndarray:
    """The design's scores of every tool for ``query``: min-max(BM25F) + w ×
    min-max(static) of the whole request (without its data lines), plus
    ``clause_weight`` × its best clause's, then the exact-name rule."""
    names = [t.id for t in catalog]
    segs = segments(query, split)
    parts = [fuse([lex.score(x), static.score(x)], list(weights), names, "minmax") for x in segs]
    fused = parts[0] if len(parts) == 1 else parts[0] + clause_weight * np.max(parts[1:], axis=0)
    boost = named_tools(query, catalog)
    return fused + boost * (fused.max() - fused.min() + 1)


_NAMED: dict[int, dict[str, list[int]]] = {}


def named_tools(query: str, catalog: list[Tool]) -> np.ndarray:
    """1 for each tool whose name the query spells out as one identifier
    (case-insensitive; the upstream name or the gateway's ``server__tool``),
    when that name has at least two words (``jira_get_issue``, ``get-sum``,
    ``API-post-search``), so that plain words like "fetch" or "click" in a
    request don't count as naming a tool."""
    key = id(catalog)
    if key not in _NAMED:
        table: dict[str, list[int]] = collections.defaultdict(list)
        for i, t in enumerate(catalog):
            if len(words(t.name)) >= 2:
                table[t.name.lower()].append(i)
                table[t.id.lower()].append(i)
        _NAMED[key] = table
    out = np.zeros(len(catalog))
    for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9_\-]*[A-Za-z0-9]", query):
        for i in _NAMED[key].get(w.lower(), ()):
            out[i] = 1
    return out


# --- Fusion -------------------------------------------------------------------------------


_NAME_RANK: dict[int, np.ndarray] = {}


def ranks_of(scores: np.ndarray, names: list[str]) -> np.ndarray:
    """1-based rank of each tool (ties by name)."""
    key = id(names)
    if key not in _NAME_RANK:
        nr = np.empty(len(names))
        nr[np.argsort(np.array(names))] = np.arange(len(names))
        _NAME_RANK[key] = nr
    order = np.lexsort((_NAME_RANK[key], -scores))
    r = np.empty(len(scores))
    r[order] = np.arange(1, len(scores) + 1)
    return r


def fuse(parts: list[np.ndarray], weights: list[float], names: list[str], kind: str, k: float = 60) -> np.ndarray:
    if kind == "rrf":
        return sum(w / (k + ranks_of(s, names)) for s, w in zip(parts, weights))
    if kind == "minmax":
        out = 0
        for s, w in zip(parts, weights):
            lo, hi = s.min(), s.max()
            out = out + w * ((s - lo) / (hi - lo) if hi > lo else np.zeros_like(s))
        return out
    if kind == "zscore":
        return sum(w * (s - s.mean()) / (s.std() or 1) for s, w in zip(parts, weights))
    raise ValueError(kind)


# --- Evaluation ------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    scores: np.ndarray  # tasks x tools
    seconds_per_query: float
    note: str = ""
    group: str = ""


def first_ranks(scores: np.ndarray, tasks: list[Task], names: list[str], which: list[int]) -> np.ndarray:
    """Rank (1-based) of the first labelled tool for each task in ``which``,
    with tools ordered by falling score, ties by name."""
    idx = {n: i for i, n in enumerate(names)}
    name_rank = np.empty(len(names))
    name_rank[np.argsort(np.array(names))] = np.arange(len(names))
    s = scores[which]
    rel = np.zeros(s.shape, dtype=bool)
    for row, t in enumerate(which):
        rel[row, [idx[r] for r in tasks[t].relevant]] = True
    best = np.where(rel, s, -np.inf).max(axis=1)
    greater = (s > best[:, None]).sum(axis=1)
    at_best = s == best[:, None]
    first_name = np.where(at_best & rel, name_rank, np.inf).min(axis=1)
    ties_before = (at_best & ~rel & (name_rank < first_name[:, None])).sum(axis=1)
    return greater + ties_before + 1


def metrics(scores: np.ndarray, tasks: list[Task], names: list[str], which: list[int]) -> dict:
    if not which:
        return {**{f"r@{k}": 0.0 for k in KS}, "mrr": 0.0, "n": 0}
    r = first_ranks(scores, tasks, names, which)
    return {**{f"r@{k}": float((r <= k).mean()) for k in KS}, "mrr": float((1 / r).mean()), "n": len(which)}


def run_method(name: str, fn, queries: list[str], note: str = "", group: str = "") -> Result:
    started = time.perf_counter()
    scores = np.stack([fn(q) for q in queries])
    per = (time.perf_counter() - started) / len(queries)
    return Result(name, scores, per, note, group)


def fused_result(name: str, parts: list[Result], weights: list[float], names, kind="rrf", k=60.0, note="", group="") -> Result:
    started = time.perf_counter()
    scores = np.stack([fuse([p.scores[i] for p in parts], weights, names, kind, k) for i in range(parts[0].scores.shape[0])])
    per = (time.perf_counter() - started) / scores.shape[0] + sum(p.seconds_per_query for p in parts)
    return Result(name, scores, per, note, group)


def split_indices(tasks: list[Task]) -> dict[str, list[int]]:
    return {s: [i for i, t in enumerate(tasks) if t.split == s] for s in ("dev", "test")}


def build_all(catalog, tasks, threads: int) -> tuple[list[Result], dict]:
    names = [t.id for t in catalog]
    queries = [t.query for t in tasks]
    emb = Embeddings(threads)
    results: list[Result] = []
    d = DESIGN

    # references
    plain = run_method("bm25-plain", BM25Plain(catalog).score, queries, "BM25Okapi k1 1.5 b .75, name+description, \\w+ words", "reference")
    results.append(plain)
    dense_plain = Dense(emb, [[f"{t.id}: {t.description}" if t.description else t.id] for t in catalog])
    dplain = run_method("dense-minilm", dense_plain.score, queries, "MiniLM cosine to `name: description`", "reference")
    results.append(dplain)
    results.append(fused_result("rrf-plain", [plain, dplain], [1, 1], names, "rrf", 60, "RRF k 60 of the two above", "reference"))

    # lexical prototypes
    results.append(run_method("bm25-alnum", BM25Plain(catalog, tokenize=lambda s: re.findall(r"[a-z0-9]+", s.lower())).score, queries,
                              "bm25-plain with names split at _ - (alnum runs)", "lexical"))
    bf = d["bm25f"]
    bm25f = BM25F(catalog, bf["stopwords"], bf["stem"]).configure(bf["k1"], bf["fields"])
    lex = run_method("bm25f", bm25f.score, queries, "chosen BM25F (DESIGN)", "lexical")
    results.append(lex)
    flat = {f: (1.0, 0.75) for f in FIELDS}
    results.append(run_method("bm25f-flat", BM25F(catalog, bf["stopwords"], bf["stem"]).configure(1.2, flat).score, queries,
                              "same analysis, every field weight 1, b .75", "lexical"))
    nostem = BM25F(catalog, bf["stopwords"], False).configure(bf["k1"], bf["fields"])
    results.append(run_method("bm25f-nostem", nostem.score, queries, "chosen BM25F without stemming", "lexical"))

    # dense prototypes
    drich = Dense(emb, [[rich_text(t)] for t in catalog])
    dense_rich = run_method("dense-rich", drich.score, queries, "one vector: split name, server, title, description, params", "dense")
    results.append(dense_rich)
    dmaxp = Dense(emb, [passages(t) for t in catalog])
    dense = run_method("dense-maxp", dmaxp.score, queries, "best passage: head, 60-word windows, each parameter", "dense")
    results.append(dense)
    emb.save()

    # static prototypes
    st = d["static"]
    table = StaticTable(emb, st["pool"])
    static = None
    for label, kw, note in [
        ("static", dict(st), "chosen static table (DESIGN)"),
        ("static-uniform", {**st, "weighting": "uniform"}, "unweighted mean of token vectors"),
        ("static-384", {**st, "dims": 384}, "no PCA"),
        ("static-meanpool", {**st, "pool": "mean"}, "table from the 3-position mean pool instead of the token's own output"),
    ]:
        tb = table if kw["pool"] == st["pool"] else StaticTable(emb, kw["pool"])
        m = Static(tb, catalog, kw["dims"], kw["weighting"], kw["sif_a"], kw["text"])
        r = run_method(label, m.score, queries, note + f" ({kw['pool']} pool, {kw['dims']} dims, {kw['weighting']}"
                       + (f" a={kw['sif_a']:g}" if kw["weighting"] == "sif" else "") + f", text {kw['text']})", "static")
        results.append(r)
        if label == "static":
            static, static_model = r, m
    results.append(run_method("static-fields", StaticFields(table, catalog, st["dims"], st["weighting"], st["sif_a"], (1, 1, 0.3)).score,
                              queries, "separate head/description/params vectors, cosines weighted 1/1/0.3", "static"))
    results.append(run_method("static-maxsim", StaticMaxSim(table, catalog, st["dims"], "rich", 3).score, queries,
                              "soft term match: each query token's best cosine to a tool token, cubed, IDF-weighted", "static"))
    emb.save()

    # fusions
    dense_pick = {"rich": dense_rich, "maxp": dense}[d["dense"]]
    combos = {
        "bm25f+static": [lex, static],
        "bm25f+dense": [lex, dense_pick],
        "bm25f+static+dense": [lex, static, dense_pick],
    }
    fused = {}
    for label, parts in combos.items():
        cfg = d["fuse"][label]
        note = f"{cfg['kind']}" + (f" k {cfg['k']}" if cfg["kind"] == "rrf" else "") + f", weights {tuple(cfg['weights'])}"
        if "dense" in label:
            note += f", dense-{d['dense']}"
        fused[label] = fused_result(f"fuse-{label}", parts, list(cfg["weights"]), names, cfg["kind"], cfg["k"], note, "fusion")
        results.append(fused[label])
    # with the exact-name rule: the recommendation first, then the other fusions
    if d["name_boost"]:
        started = time.perf_counter()
        boost = np.stack([named_tools(q, catalog) for q in queries])
        per = (time.perf_counter() - started) / len(queries)
        order = [d["recommended"]] + [c for c in combos if c != d["recommended"]]
        for label in order:
            rec = fused[label]
            top = rec.scores.max(axis=1, keepdims=True) - rec.scores.min(axis=1, keepdims=True) + 1
            name = f"design: {label}+names" if label == d["recommended"] else f"{label}+names"
            note = "fuse-" + label + ", and a tool whose multi-word name the query spells out goes first"
            if label == d["recommended"] and d["query"] != "none":
                # the design proper: with its handling of long requests (design_scores)
                started = time.perf_counter()
                scores = np.stack([design_scores(bm25f, static_model, catalog, q, d["fuse"][label]["weights"],
                                                 d["clause_weight"], d["query"]) for q in queries])
                results.append(Result(name, scores, lex.seconds_per_query + (time.perf_counter() - started) / len(queries),
                                      note + f"; long requests: {d['query']}, clause weight {d['clause_weight']:g}", "design"))
                continue
            results.append(Result(name, rec.scores + boost * top, rec.seconds_per_query + per, note, "design"))
    return results, {"emb": emb, "table": table}


def table_markdown(results: list[Result], tasks, names, splits=("dev", "test")) -> str:
    sp = split_indices(tasks)
    head = "| method | " + " | ".join(f"{s} {k}" for s in splits for k in ("R@1", "R@5", "R@10", "MRR")) + " | ms/query |"
    lines = [head, "|---|" + "---:|" * (4 * len(splits) + 1)]
    for r in results:
        m = {s: metrics(r.scores, tasks, names, idx) for s, idx in sp.items()}
        cells = [f"{100 * m[s][k]:.1f}" if k != "mrr" else f"{m[s][k]:.3f}" for s in splits for k in ("r@1", "r@5", "r@10", "mrr")]
        lines.append(f"| {r.name} | " + " | ".join(cells) + f" | {1000 * r.seconds_per_query:.2f} |")
    n = {s: len(i) for s, i in sp.items()}
    lines.append("")
    lines.append(f"dev {n['dev']} tasks, test {n['test']} tasks, {len(names)} tools; recall in %, a hit = any labelled tool in the top k.")
    return "\n".join(lines)


def kinds_markdown(results: list[Result], tasks, names, which: list[str], split: str) -> str:
    kinds = ("exact", "paraphrase", "hard")
    lines = [f"| method ({split}) | " + " | ".join(f"{k} R@1 | {k} R@5 | {k} MRR" for k in kinds) + " |", "|---|" + "---:|" * 9]
    for r in results:
        if r.name not in which:
            continue
        cells = []
        for k in kinds:
            idx = [i for i, t in enumerate(tasks) if t.split == split and t.kind == k]
            m = metrics(r.scores, tasks, names, idx)
            cells += [f"{100 * m['r@1']:.1f}", f"{100 * m['r@5']:.1f}", f"{m['mrr']:.3f}"]
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    counts = collections.Counter(t.kind for t in tasks if t.split == split)
    lines.append("")
    lines.append(f"{split} tasks by kind: " + ", ".join(f"{k} {counts[k]}" for k in kinds))
    return "\n".join(lines)


# --- Tuning (dev only) --------------------------------------------------------------------------


def dev_mrr(scores_fn, tasks, names, dev) -> float:
    return metrics(scores_fn, tasks, names, dev)["mrr"]


def tune(catalog, tasks, threads: int, parts: set[str]) -> None:
    names = [t.id for t in catalog]
    dev = split_indices(tasks)["dev"]
    dev_tasks = [tasks[i] for i in dev]
    dq = [t.query for t in dev_tasks]
    didx = list(range(len(dev_tasks)))

    def m(scores):
        return metrics(scores, dev_tasks, names, didx)

    def show(title, rows, top=12):
        print(f"\n## {title} (dev, best {top} by MRR)", flush=True)
        rows.sort(key=lambda r: (-r[1]["mrr"], -r[1]["r@5"]))
        print(f"  ({len(rows)} settings tried)")
        for cfg, mm in rows[:top]:
            print(f"  MRR {mm['mrr']:.3f}  R@1 {100 * mm['r@1']:.1f}  R@5 {100 * mm['r@5']:.1f}  R@10 {100 * mm['r@10']:.1f}  {cfg}")
        return rows[0][0]

    if "bm25f" in parts:
        # BM25F: analysis x weights x b x k1, on the dev queries' term columns only
        rows = []
        for stop, stemming in itertools.product(("none", "lucene", "long"), (False, True)):
            bm = BM25F(catalog, stop, stemming)
            terms = [bm.query_terms(q) for q in dq]
            cols = sorted({c for t in terms for c in t})
            pos = {c: i for i, c in enumerate(cols)}
            qv = np.zeros((len(dq), len(cols)), dtype=np.float32)
            for row, t in enumerate(terms):
                qv[row, [pos[c] for c in t]] = 1
            idf = bm.idf[cols]
            normed = {}
            for f in FIELDS:
                tf = bm.tf[f][:, cols]
                avg = max(bm.length[f].mean(), 1e-9)
                for b in (0.0, 0.3, 0.5, 0.75, 0.9):
                    normed[f, b] = (tf / (1 - b + b * bm.length[f] / avg)[:, None]).astype(np.float32)
            for k1, wn, ws, wt, wp, bn, bd in itertools.product(
                (0.9, 1.2, 1.5), (1, 2, 3, 5), (0, 0.5, 1, 2), (0, 1, 2), (0, 0.2, 0.5, 1), (0.0, 0.3, 0.75), (0.5, 0.75, 0.9)
            ):
                fields = {"name": (wn, bn), "server": (ws, bn), "title": (wt, bn), "description": (1.0, bd), "params": (wp, bd)}
                tilde = sum(w * normed[f, b] for f, (w, b) in fields.items() if w)
                weights = idf * tilde * (k1 + 1) / (k1 + tilde)
                rows.append(({"stop": stop, "stem": stemming, "k1": k1, "fields": fields}, m(qv @ weights.T)))
            print(f"(bm25f {stop} stem={stemming} done)", file=sys.stderr, flush=True)
        best_bm = show("BM25F", rows, 20)
    else:
        best_bm = {"stop": DESIGN["bm25f"]["stopwords"], "stem": DESIGN["bm25f"]["stem"], "k1": DESIGN["bm25f"]["k1"], "fields": DESIGN["bm25f"]["fields"]}

    if "refine" in parts:
        # second, narrower searches around the first searches' best (edges of their grids)
        bm = BM25F(catalog, "lucene", True)
        rows = []
        for k1, wn, bn, wt in itertools.product((0.9, 1.2, 1.5), (4, 5, 7, 10), (0.5, 0.75, 0.9), (1, 2, 3)):
            fields = {"name": (wn, bn), "server": (1, bn), "title": (wt, bn), "description": (1.0, 0.5), "params": (0.5, 0.5)}
            bm.configure(k1, fields)
            rows.append(({"k1": k1, "fields": fields}, m(np.stack([bm.score(q) for q in dq]))))
        show("BM25F refined (lucene, stemmed)", rows, 10)
        emb = Embeddings(threads)
        table = StaticTable(emb, "token")
        rows = []
        for dims, a in itertools.product((192, 256, 320), (3e-5, 1e-5, 3e-6, 1e-6)):
            s = Static(table, catalog, dims, "sif", a, "rich")
            rows.append(({"pool": "token", "dims": dims, "weighting": "sif", "sif_a": a, "text": "rich"}, m(np.stack([s.score(q) for q in dq]))))
        show("static refined (token pool, SIF, rich text)", rows, 6)
        bf, st = DESIGN["bm25f"], DESIGN["static"]
        bm = BM25F(catalog, bf["stopwords"], bf["stem"]).configure(bf["k1"], bf["fields"])
        lex = np.stack([bm.score(q) for q in dq])
        s = Static(StaticTable(emb, st["pool"]), catalog, st["dims"], st["weighting"], st["sif_a"], st["text"])
        sta = np.stack([s.score(q) for q in dq])
        dm = Dense(emb, [passages(t) for t in catalog])
        den = np.stack([dm.score_vec(v) for v in emb.embed(dq)])
        emb.save()
        boost = np.stack([named_tools(q, catalog) for q in dq])
        for label, comps, grid in (
            ("bm25f+static", [lex, sta], [(1, w) for w in (1.5, 2, 2.5, 3, 3.5, 4, 5, 7)]),
            ("bm25f+dense-maxp", [lex, den], [(1, w) for w in (2, 2.5, 3, 3.5, 4, 5, 7)]),
            ("bm25f+static+dense-maxp", [lex, sta, den], [(1, a, b) for a in (0.5, 0.75, 1, 1.5) for b in (1.5, 2, 2.5, 3, 4)]),
        ):
            rows = []
            for kind, ws in itertools.product(("minmax", "zscore"), grid):
                sc = np.stack([fuse([c[i] for c in comps], list(ws), names, kind) for i in range(len(dq))])
                mm = m(sc)
                mb = m(sc + boost * 1e6)
                rows.append(({"kind": kind, "weights": ws, "with exact-name rule": f"MRR {mb['mrr']:.3f} R@1 {100 * mb['r@1']:.1f}"}, mm))
            show(f"fusion {label} refined", rows, 6)
        return

    emb = Embeddings(threads)
    if "static" in parts:
        # static: pool x dims x weighting x text
        rows = []
        for pool in ("mean", "token"):
            table = StaticTable(emb, pool)
            for dims, weighting, text in itertools.product((128, 256, 384), ("uniform", "zipf", "sif", "idf"), ("plain", "head", "rich")):
                for a in ((1e-3, 1e-4, 1e-5) if weighting == "sif" else (0,)):
                    s = Static(table, catalog, dims, weighting, a, text)
                    sc = np.stack([s.score(q) for q in dq])
                    rows.append(({"pool": pool, "dims": dims, "weighting": weighting, "sif_a": a, "text": text}, m(sc)))
        best_st = show("static", rows, 20)
    else:
        best_st = dict(DESIGN["static"])
    if "fusion" not in parts:
        return

    # fusion: components as chosen above, every kind x weights
    bm = BM25F(catalog, best_bm["stop"], best_bm["stem"]).configure(best_bm["k1"], best_bm["fields"])
    lex = np.stack([bm.score(q) for q in dq])
    table = StaticTable(emb, best_st["pool"])
    s = Static(table, catalog, best_st["dims"], best_st["weighting"], best_st["sif_a"], best_st["text"])
    sta = np.stack([s.score(q) for q in dq])
    dm = Dense(emb, [passages(t) for t in catalog])
    dr = Dense(emb, [[rich_text(t)] for t in catalog])
    qv = emb.embed(dq)
    den = np.stack([dm.score_vec(v) for v in qv])
    denr = np.stack([dr.score_vec(v) for v in qv])
    emb.save()
    print("\n## components (dev)")
    for label, sc in (("bm25f", lex), ("static", sta), ("dense-maxp", den), ("dense-rich", denr)):
        mm = m(sc)
        print(f"  {label:12} MRR {mm['mrr']:.3f}  R@1 {100 * mm['r@1']:.1f}  R@5 {100 * mm['r@5']:.1f}  R@10 {100 * mm['r@10']:.1f}")
    for combo_name, parts in (
        ("bm25f+static", [lex, sta]),
        ("bm25f+dense-maxp", [lex, den]),
        ("bm25f+dense-rich", [lex, denr]),
        ("bm25f+static+dense-maxp", [lex, sta, den]),
        ("bm25f+static+dense-rich", [lex, sta, denr]),
    ):
        rows = []
        grid = [0, 0.25, 0.5, 0.75, 1, 1.5, 2] if len(parts) == 3 else [0.25, 0.5, 0.75, 1, 1.5, 2, 3]
        for kind in ("rrf", "minmax", "zscore"):
            for ks in ((10, 30, 60) if kind == "rrf" else (0,)):
                for ws in itertools.product(*([[1.0]] + [grid] * (len(parts) - 1))):
                    sc = np.stack([fuse([p[i] for p in parts], list(ws), names, kind, ks) for i in range(len(dq))])
                    rows.append(({"kind": kind, "k": ks, "weights": ws}, m(sc)))
        show(f"fusion {combo_name}", rows, 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tune", nargs="?", const="bm25f,static,fusion", metavar="PARTS",
                        help="search the prototypes' settings on dev and print the best (PARTS: any of "
                             "bm25f,static,fusion, or refine: the narrower second searches)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dev-only", action="store_true", help="print dev figures only (while choosing designs)")
    parser.add_argument("--misses", metavar="METHOD", help="list the dev tasks METHOD misses at rank 1 (dev only)")
    args = parser.parse_args()

    catalog = load_catalog(args.corpus)
    tasks = load_tasks(args.tasks, catalog)
    names = [t.id for t in catalog]
    if args.tune:
        tune(catalog, tasks, args.threads, set(args.tune.split(",")))
        return
    started = time.monotonic()
    results, _ = build_all(catalog, tasks, args.threads)
    if args.misses:
        r = next(r for r in results if r.name == args.misses)
        for i, t in enumerate(tasks):
            if t.split != "dev":
                continue
            s = r.scores[i]
            order = sorted(range(len(s)), key=lambda j: (-s[j], names[j]))
            top = [names[j] for j in order[:3]]
            if top[0] not in t.relevant:
                rank = next((p for p, j in enumerate(order, 1) if names[j] in t.relevant), None)
                print(f"- [{t.id} {t.kind}] {t.query}\n    want {t.relevant[:4]} (first at {rank}); got {top}")
        return
    if args.json:
        sp = split_indices(tasks)
        print(json.dumps({r.name: {"group": r.group, "note": r.note, "ms_per_query": 1000 * r.seconds_per_query,
                                   **{s: metrics(r.scores, tasks, names, idx) for s, idx in sp.items()}} for r in results}, indent=1))
        return
    if args.dev_only:
        print(table_markdown(results, tasks, names, ("dev",)))
        print(kinds_markdown(results, tasks, names, [r.name for r in results], "dev"))
        return
    print(table_markdown(results, tasks, names))
    print()
    print("Notes:")
    for r in results:
        print(f"- {r.name} [{r.group}]: {r.note}")
    print()
    which = ["bm25-plain", "dense-minilm", "rrf-plain", "bm25f", "static", "dense-rich", "dense-maxp"] + [r.name for r in results if r.group in ("fusion", "design")]
    print(kinds_markdown(results, tasks, names, which, "test"))
    print(f"\n({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
