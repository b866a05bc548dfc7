"""A figure's bytes depend only on its data (issue 28): no metadata in the PNG, and seaborn's
jitter, drawn from numpy's global generator, does not depend on what ran before."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from marketarena.plots.style import apply_theme, save  # noqa: E402


def strip_figure(path, seed_before: int):
    np.random.seed(seed_before)  # whatever ran before in the process
    np.random.random(17)
    apply_theme()
    data = pd.DataFrame({"x": np.arange(40) % 7, "name": ["a", "b"] * 20})
    fig, ax = plt.subplots(figsize=(3, 2))
    sns.stripplot(data=data, x="x", y="name", jitter=0.3, ax=ax)
    return save(fig, path)


def png_chunks(data: bytes) -> list[bytes]:
    out, i = [], 8
    while i < len(data):
        n = int.from_bytes(data[i : i + 4], "big")
        out.append(data[i + 4 : i + 8])
        i += 12 + n
    return out


def test_same_data_same_png_bytes_whatever_the_global_rng(tmp_path):
    a = strip_figure(tmp_path / "a.png", 1).read_bytes()
    b = strip_figure(tmp_path / "b.png", 2).read_bytes()
    assert a == b


def test_the_jitter_is_drawn(tmp_path):
    """The seed fixes the jitter, it does not remove it: different data, different pixels."""
    a = strip_figure(tmp_path / "a.png", 1).read_bytes()
    apply_theme()
    fig, ax = plt.subplots(figsize=(3, 2))
    sns.stripplot(
        data=pd.DataFrame({"x": np.arange(40) % 7, "name": ["a", "b"] * 20}),
        x="x",
        y="name",
        jitter=0.0,
        ax=ax,
    )
    assert save(fig, tmp_path / "c.png").read_bytes() != a


def test_png_holds_pixels_only(tmp_path):
    data = strip_figure(tmp_path / "a.png", 0).read_bytes()
    chunks = png_chunks(data)
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND"
    assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(chunks), chunks
    assert b"Matplotlib" not in data
