"""Embeddings that do not hang on the last bit of a float (issue 28): the same bytes whatever the
thread counts, at a stated precision (multiples of 2^-16), and similarities computed exactly."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import marketarena
from marketarena.embeddings import PRECISION_BITS, quantize, similarity

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "I compare every price before I buy.",
    "Quality first, whatever it costs.",
    "Fresh deals on everything you need!",
    "Ethically sourced, fairly priced.",
]

ENCODE = f"""
import hashlib, marketarena
from marketarena.embeddings import Embedder
v = Embedder(cache_dir=None).encode({TEXTS!r})
print(hashlib.sha256(v.tobytes()).hexdigest())
"""


def test_quantize_rounds_to_the_stated_grid_and_keeps_float32_exact():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = quantize(v)
    scaled = q.astype(np.float64) * 2**PRECISION_BITS
    assert q.dtype == np.float32 and np.array_equal(scaled, np.round(scaled))  # on the grid
    assert np.abs(q - v).max() <= 2.0 ** -(PRECISION_BITS + 1)  # rounded, not truncated
    assert np.array_equal(quantize(q), q)  # idempotent: re-quantising a stored vector is a no-op


def test_similarity_is_exact_whatever_the_summation_order():
    """BLAS (any kernel, any order) gives the exactly rounded sum: the correctly rounded fsum of
    the products equals the dot product summed forwards, backwards and by BLAS."""
    rng = np.random.default_rng(1)
    a = quantize(rng.normal(size=(8, 384)) / 20)
    b = quantize(rng.normal(size=(6, 384)) / 20)
    blas = similarity(a, b)
    for i in range(len(a)):
        for j in range(len(b)):
            products = [float(x) * float(y) for x, y in zip(a[i], b[j])]
            forward = backward = 0.0
            for p in products:
                forward += p
            for p in reversed(products):
                backward += p
            assert blas[i, j] == forward == backward == math.fsum(products)
    # the same values in float32 arithmetic are not exact: order would matter there
    f32 = a @ b.T
    assert not np.array_equal(f32.astype(np.float64), blas)


def encode_digest(**env) -> str:
    e = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "HF_HUB_OFFLINE": "1", **env}
    out = subprocess.run(
        [sys.executable, "-c", ENCODE],
        env=e,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_same_bytes_whatever_the_thread_counts_and_the_pinned_path_is_in_force():
    """OMP / MKL / OpenBLAS at 1 or 2 threads: the same bytes. And the vectors do depend on which
    kernels torch and MKL run (so on the CPU, unless pinned): the portable baseline path gives
    other bytes than the pinned AVX2 path in force by default."""
    one = encode_digest(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    two = encode_digest(OMP_NUM_THREADS="2", MKL_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    assert one == two
    if marketarena.pin_cpu_path():
        assert one != encode_digest(ATEN_CPU_CAPABILITY="default", MKL_CBWR="COMPATIBLE")


#: sha256 of the four texts' vectors on the pinned path: the same bytes on every x86-64 CPU with
#: AVX2 and FMA. Computed on an AMD EPYC with AVX-512, where oneDNN (torch's linear layers) ran its
#: AVX-512 kernels until ONEDNN_MAX_CPU_ISA was pinned too, and the pipeline's persona embeddings
#: differed from those of the machines before (dvc.lock's embed output since a170a1f); pinned, they
#: are those machines' bytes again.
PINNED_DIGEST = "d6676950579b70b794ec422b7933cdb4d062fb3eeb0098cec7d3752ebad81c79"


@pytest.mark.slow
def test_the_pinned_path_gives_the_same_vectors_on_every_cpu():
    if not marketarena.pin_cpu_path():
        pytest.skip("no AVX2 and FMA: nothing is pinned")
    assert encode_digest() == PINNED_DIGEST
    if "avx512f" in marketarena._cpu_flags():  # oneDNN's own choice here is AVX-512: other bytes
        assert encode_digest(ONEDNN_MAX_CPU_ISA="ALL") != PINNED_DIGEST


def test_the_embedder_refuses_an_unpinned_torch(tmp_path):
    """torch that ran an operation before marketarena pinned its path would write CPU-dependent
    vectors: the embedder says so instead."""
    if not marketarena.pin_cpu_path():
        pytest.skip("no AVX2 and FMA: nothing is pinned")
    code = (
        "import os, torch; torch.ones(3).sum()\n"  # torch's capability is fixed from here on
        "os.environ['ATEN_CPU_CAPABILITY'] = 'default'\n"
        "from marketarena.embeddings import Embedder\n"
        "Embedder(cache_dir=None).model\n"
    )
    e = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "HF_HUB_OFFLINE": "1"}
    e.pop("ATEN_CPU_CAPABILITY", None)
    out = subprocess.run(
        [sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=600
    )
    assert out.returncode != 0 and "ATEN_CPU_CAPABILITY" in out.stderr
