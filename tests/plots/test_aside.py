"""plots.aside: figures rendered in forked children while the next is built (issue 57) write the
bytes an in-process render writes, every one of them, and a child that fails fails the block,
naming its figure, after the others are written."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.artist import Artist

from marketarena.plots import aside
from marketarena.plots.style import apply_theme, figure_data, save

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


def draw(folder, n=5):
    """``n`` figures, each with seaborn's jitter (numpy's global generator) and a legend."""
    paths = []
    for i in range(n):
        apply_theme()
        frame = pd.DataFrame({"agent": list("abc") * 20, "profit": np.arange(60.0) * (i + 1)})
        fig, ax = plt.subplots(figsize=(4, 3))
        sns.stripplot(frame, x="agent", y="profit", hue="agent", ax=ax)
        ax.set_title(f"figure {i}")
        paths.append(save(fig, folder / f"f{i}.png"))
    return paths


def written(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_rendered_aside_the_same_bytes_as_in_process(tmp_path):
    with figure_data(tmp_path / "here" / "data"):
        draw(tmp_path / "here")
    with figure_data(tmp_path / "aside" / "data"), aside.rendering_aside(2):
        paths = draw(tmp_path / "aside")
        assert aside._ACTIVE[-1].running  # children were started (5 figures, 2 at a time)
    assert aside._ACTIVE == []
    here, there = written(tmp_path / "here"), written(tmp_path / "aside")
    assert len(here) == 10 and set(here) == set(there)  # 5 PNGs, 5 CSVs of their data
    assert here == there
    assert all(p.is_file() for p in paths)


class Broken(Artist):
    def draw(self, renderer):
        raise ValueError("this figure cannot be drawn")


def test_a_failed_child_fails_the_block_naming_its_figure_after_the_others_are_written(
    tmp_path, capfd
):
    with pytest.raises(RuntimeError, match=r"bad\.png") as err, aside.rendering_aside(2):
        draw(tmp_path, n=2)
        fig, ax = plt.subplots()
        ax.add_artist(Broken())
        save(fig, tmp_path / "bad.png")
        draw(tmp_path / "after", n=2)
    assert "f0.png" not in str(err.value)
    assert "cannot be drawn" in capfd.readouterr().err  # the child's traceback
    names = sorted(p.name for p in tmp_path.rglob("f*.png"))
    assert names == ["f0.png", "f0.png", "f1.png", "f1.png"]
    assert aside._ACTIVE == []


def test_one_worker_renders_in_process(tmp_path):
    with aside.rendering_aside(1):
        assert aside._ACTIVE == []
        fig, ax = plt.subplots()
        ax.add_artist(Broken())
        with pytest.raises(ValueError, match="cannot be drawn"):  # raised here, at once
            save(fig, tmp_path / "bad.png")
