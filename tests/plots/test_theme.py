"""The figures' theme is seaborn's, written out as matplotlib settings (``plots.style.THEME``) so
that a figures stage does not import seaborn (issue 57): the settings, the colour codes and a
drawn figure's bytes are the same as under ``seaborn.set_theme`` itself."""

from __future__ import annotations

import hashlib
import io

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest

from marketarena.plots import style

seaborn = pytest.importorskip("seaborn")


def _seaborn_theme() -> None:
    seaborn.set_theme(
        context="paper",
        style="whitegrid",
        font_scale=1.1,
        rc=style.OURS,
    )


def _state() -> tuple[dict, dict]:
    rc = {k: v for k, v in mpl.rcParams.items() if k != "image.cmap"}
    codes = {c: mpl.colors.colorConverter.colors[c] for c in "bgrmyck"}
    return rc, codes


COLOUR_DEFAULTS = {c: mpl.colors.to_rgb(c) for c in "bgrmyck"}


def _defaults() -> None:
    """matplotlib's own settings and colour codes, the codes' colours looked up once (cached:
    a theme must clear that cache, as seaborn's does)."""
    mpl.rcdefaults()
    for code, rgb in COLOUR_DEFAULTS.items():
        mpl.colors.colorConverter.colors[code] = rgb
    assert all(mpl.colors.to_rgba(c)[:3] == COLOUR_DEFAULTS[c] for c in "bgrmyck")


@pytest.fixture
def fresh():
    _defaults()
    yield
    _defaults()


def test_the_theme_is_seaborns_setting_for_setting(fresh):
    _seaborn_theme()
    theirs = _state()
    _defaults()
    style.apply_theme()
    ours = _state()
    differ = sorted(k for k in theirs[0] if theirs[0][k] != ours[0][k])
    assert differ == []
    assert ours[1] == theirs[1]
    assert ours[1]["b"] != COLOUR_DEFAULTS["b"]  # the codes really moved


def _png() -> str:
    fig, ax = plt.subplots(figsize=(3, 2))
    x = np.arange(6)
    for i in range(3):
        ax.plot(x, x * (i + 1), marker="o", label=f"line {i}")
    ax.bar(x, x / 2, color="g", yerr=0.5, capsize=3)  # error bars in "k" (matplotlib's default)
    ax.set_title("a title")
    ax.legend(title="legend")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata=style.PNG_METADATA)
    plt.close(fig)
    return hashlib.sha256(buf.getvalue()).hexdigest()


def test_a_figure_draws_the_same_bytes_as_under_seaborns_theme(fresh):
    _seaborn_theme()
    theirs = _png()
    _defaults()
    style.apply_theme()
    assert _png() == theirs
    _defaults()
    assert _png() != theirs  # the theme shows in the bytes
