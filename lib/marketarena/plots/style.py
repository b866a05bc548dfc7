"""Shared look of every marketarena figure; market-independent.

What lives here:

- :func:`apply_theme` sets one theme (seaborn's white grid in its ``paper`` context, readable font
  sizes: :data:`THEME`, written out as matplotlib settings so that a figures stage does not import
  seaborn, whose import pulls in scipy.stats, 1.5 s of a stage's start) and the export resolution
  :data:`DPI`.
- :func:`agent_palette` gives each agent (or strategy) name one colour. Names are de-duplicated and
  sorted, and colours are handed out in that order, so a figure that is given the same set of names
  always paints a name in the same colour. Figure functions therefore build the palette once from
  *all* names in their input frame, never from the subset a panel happens to show. Up to 10 names use
  the ten saturated tab20 colours, up to 20 add the ten light ones (so that two neighbours in the
  sorted order, e.g. ``cost_plus_10`` / ``cost_plus_20``, never get a dark/light pair of one hue
  unless there are more than ten names); beyond 20 names the husl space is sampled evenly.
- :func:`agent_markers` does the same for marker shapes, so that lines of similar colour can still be
  told apart when many agents share a figure.
- :func:`mean_ci` (``marketarena.stats``, re-exported here) is the one aggregation every figure
  uses: the mean across episodes with a 95% interval of that mean, Student-t by default (NaNs
  skipped; no interval with fewer than two episodes) or a percentile bootstrap over episodes
  (``method="bootstrap"``: never outside the observed values, so never outside what the quantity
  can be), optionally clipped to ``bounds`` (a share to [0, 1], a price to [0, inf)). It lives
  with the statistics so that the analysis stages use it without importing matplotlib.
- :func:`save` writes a figure (creating folders), closes it and returns the path; inside a
  :func:`figure_data` block (the figures stage) also what it draws, as CSV (``plots.drawn``).

A figure's bytes depend only on its data (issue 28), so that DVC sees the same output on every run
and machine: :func:`apply_theme`, which every figure function calls first, also reseeds numpy's
global generator (seaborn's ``stripplot`` draws its jitter from it; :func:`save` reseeds it after
each figure too), and :func:`save` writes PNGs without metadata (no ``Software`` version, no date). Pixels are rendered by matplotlib's Agg with
its bundled FreeType, so the same locked versions draw the same bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import colors as mcolors
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from marketarena.plots import aside
from marketarena.stats import CONFIDENCE, mean_ci

DPI = 150
"""Resolution of exported PNGs."""


JITTER_SEED = 0
"""Seed of numpy's global generator at the start of every figure (seaborn's jitter)."""

PNG_METADATA = {"Software": None}
"""What :func:`save` writes into a PNG besides the pixels: nothing (matplotlib would add its version)."""

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p")


#: seaborn's "deep" palette (six of them and a dark grey are the colour codes ``b g r m y c k``)
_DEEP = [
    mcolors.to_rgb(h)
    for h in ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3")
    + ("#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
]
#: our settings over the theme
OURS = {
    "figure.dpi": 100,
    "savefig.dpi": DPI,
    "axes.titleweight": "bold",
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.title_fontsize": 9,
    "lines.linewidth": 1.5,
    "lines.markersize": 4,
    "grid.linewidth": 0.6,
}
#: the theme as matplotlib settings: what ``seaborn.set_theme(context="paper", style="whitegrid",
#: font_scale=1.1, rc=OURS)`` sets, value for value (``tests/plots/test_theme.py`` holds them equal
#: to seaborn's), but the default colour map (seaborn's "rocket" exists only once seaborn is
#: imported; every image here names its own map). Font sizes: the notebook context's times 0.8
#: (paper) times 1.1.
THEME = {
    # the white grid
    "axes.axisbelow": True,
    "axes.edgecolor": ".8",
    "axes.facecolor": "white",
    "axes.grid": True,
    "axes.labelcolor": ".15",
    "axes.linewidth": 1.0,
    "axes.spines.bottom": True,
    "axes.spines.left": True,
    "axes.spines.right": True,
    "axes.spines.top": True,
    "figure.facecolor": "white",
    "font.family": ["sans-serif"],
    "font.sans-serif": [
        "Arial",
        "DejaVu Sans",
        "Liberation Sans",
        "Bitstream Vera Sans",
        "sans-serif",
    ],
    "grid.color": ".8",
    "grid.linestyle": "-",
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "text.color": ".15",
    "xtick.bottom": False,
    "xtick.color": ".15",
    "xtick.direction": "out",
    "xtick.top": False,
    "ytick.color": ".15",
    "ytick.direction": "out",
    "ytick.left": False,
    "ytick.right": False,
    # the paper context, fonts scaled by 1.1
    "font.size": 12 * 0.8 * 1.1,
    "xtick.labelsize": 11 * 0.8 * 1.1,
    "ytick.labelsize": 11 * 0.8 * 1.1,
    "patch.linewidth": 1 * 0.8,
    "xtick.major.width": 1.25 * 0.8,
    "ytick.major.width": 1.25 * 0.8,
    "xtick.minor.width": 1 * 0.8,
    "ytick.minor.width": 1 * 0.8,
    "xtick.major.size": 6 * 0.8,
    "ytick.major.size": 6 * 0.8,
    "xtick.minor.size": 4 * 0.8,
    "ytick.minor.size": 4 * 0.8,
    # the palette
    "axes.prop_cycle": plt.cycler("color", _DEEP),
    # ours, over the theme
    **OURS,
}
#: the colour codes as seaborn's theme remaps them (``"b"`` is the palette's blue, ``"k"`` a dark grey)
COLOR_CODES = dict(zip("bgrmyck", [*(_DEEP[i] for i in (0, 2, 3, 4, 8, 9)), (0.1, 0.1, 0.1)]))


def apply_theme() -> None:
    """Set the theme shared by all marketarena figures (:data:`THEME`, idempotent), and reseed
    numpy's global generator, which the strip plots' jitter draws from, so that a figure's bytes
    depend on its data only, not on what ran before it in the process."""
    np.random.seed(JITTER_SEED)
    plt.rcParams.update(THEME)
    for code, rgb in COLOR_CODES.items():  # item by item: each assignment clears the colour cache
        mcolors.colorConverter.colors[code] = rgb


def sorted_names(names: Iterable[object]) -> list[str]:
    """Distinct names as strings, sorted; NaN / None are dropped."""
    out = {str(n) for n in names if n is not None and not (isinstance(n, float) and np.isnan(n))}
    return sorted(out)


def _base_colours(n: int) -> list[tuple[float, float, float]]:
    if n <= 10:
        return [tuple(c) for c in plt.get_cmap("tab20").colors[0::2][:n]]
    if n <= 20:
        tab20 = plt.get_cmap("tab20").colors
        return [tuple(c) for c in (list(tab20[0::2]) + list(tab20[1::2]))[:n]]
    import seaborn as sns  # only here: more than 20 names (its import costs a stage 1.5 s)

    return [tuple(c) for c in sns.color_palette("husl", n)]


def agent_palette(names: Iterable[object]) -> dict[str, tuple[float, float, float]]:
    """Map each distinct name to an RGB colour; deterministic for a given set of names."""
    ordered = sorted_names(names)
    return dict(zip(ordered, _base_colours(len(ordered)), strict=True))


def agent_markers(names: Iterable[object]) -> dict[str, str]:
    """Map each distinct name to a marker shape, cycling a fixed list in sorted-name order.

    The cycle length (12) is coprime with 10, so two names sharing a tab20 hue get different markers.
    """
    ordered = sorted_names(names)
    return {n: _MARKERS[i % len(_MARKERS)] for i, n in enumerate(ordered)}


def integer_steps(ax: Axes, steps: Sequence[int] | None = None) -> None:
    """Integer-only ticks on the x axis; every step labelled when there are few of them.

    With ``steps`` the x range is fixed to all of them (± 0.4), so that small multiples share one
    time axis even when a panel has no data at some steps.
    """
    if steps is not None and len(steps) > 0:
        ax.set_xlim(min(steps) - 0.4, max(steps) + 0.4)
    if steps is not None and 0 < len(steps) <= 12:
        ax.set_xticks(sorted({int(s) for s in steps}))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def no_data(ax: Axes, message: str = "no data") -> None:
    """Mark an axis as empty with a centred note (used instead of crashing on empty input)."""
    ax.text(
        0.5,
        0.5,
        message,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=11,
        color="0.45",
        style="italic",
    )
    ax.set_xticks([])
    ax.set_yticks([])


def error_extents(centre, lo, hi) -> list:
    """``errorbar``'s ``[below, above]`` extents of an interval ``[lo, hi]`` around ``centre``.
    A percentile bootstrap interval can leave out its point estimate (a TrueSkill mu of a
    handful of auctions, a skewed mean); its bar then stops at the estimate on that side (an
    extent of 0) instead of matplotlib refusing a negative one."""
    centre, lo, hi = (np.asarray(v, dtype=float) for v in (centre, lo, hi))
    with np.errstate(invalid="ignore"):
        return [np.maximum(centre - lo, 0.0), np.maximum(hi - centre, 0.0)]


def mean_errorbar(
    ax: Axes,
    df: pd.DataFrame,
    x: str,
    value: str,
    label: str | None = None,
    colour=None,
    ls: str = "-",
    offset: float = 0.0,
    **ci,
) -> None:
    """Markers at the mean of ``value`` per ``x`` with its :func:`mean_ci` interval as error bars
    (``ci``: ``method``, ``bounds``... of :func:`mean_ci`); ``offset`` shifts the x positions
    (dodging, so that series with equal values stay visible)."""
    m = mean_ci(df, [x], value, **ci)
    ax.errorbar(
        m[x] + offset,
        m["mean"],
        yerr=error_extents(m["mean"], m["lo"], m["hi"]),
        marker="o",
        capsize=3,
        lw=1.2,
        ls=ls,
        label=label,
        color=colour,
    )


def dodge(i: int, n: int, width: float) -> float:
    """The x offset of series ``i`` of ``n`` spread over ``width`` (0 for a single series)."""
    return 0.0 if n <= 1 else (i - (n - 1) / 2) * width / (n - 1)


#: where :func:`save` writes each figure's drawn data (None: nowhere); set by :func:`figure_data`
_DATA_FOLDER: list[Path] = []


@contextlib.contextmanager
def figure_data(folder: str | Path):
    """While in this block, :func:`save` also writes what each figure draws to
    ``folder/<stem>.csv`` (``plots.drawn``)."""
    _DATA_FOLDER.append(Path(folder))
    try:
        yield
    finally:
        _DATA_FOLDER.pop()


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (parents created), close it, return the path; and its drawn
    data inside a :func:`figure_data` block. Inside ``plots.aside.rendering_aside`` the writing
    happens in a forked child while the caller goes on (the same bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _DATA_FOLDER[-1] / f"{path.stem}.csv" if _DATA_FOLDER else None

    def write() -> None:
        fig.savefig(
            path,
            dpi=DPI,
            bbox_inches="tight",
            facecolor="white",
            metadata=PNG_METADATA if path.suffix.lower() == ".png" else None,
        )
        if data is not None:
            from marketarena.plots import drawn

            drawn.write(fig, data)

    try:
        aside.render(write, path)
    finally:
        plt.close(fig)
        np.random.seed(JITTER_SEED)  # the next figure starts from the seed too
    return path


__all__ = [
    "CONFIDENCE",
    "DPI",
    "agent_markers",
    "agent_palette",
    "apply_theme",
    "dodge",
    "figure_data",
    "integer_steps",
    "mean_ci",
    "error_extents",
    "mean_errorbar",
    "no_data",
    "save",
    "sorted_names",
]
