"""A published source's own score beside ours, per model: the figure crash's and lemon's imported
instances draw (``markets/crash/sources/plots.py``'s ``fig_scores.png``,
``markets/lemon/sources/plots.py``'s ``their_score.png``), and the sentence that states the
Spearman of the two orderings. Generic (a frame of models with both scores), so it stays with the
shared plot helpers: one row per model, sorted by our score, ours on the left and theirs on the
right with each model's rank under both, so that 20 names stay legible (a scatter with a label at
each point overprinted the names of the models whose scores are close)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.style import apply_theme, error_extents, no_data, save


def spearman_text(rho: dict) -> str:
    """The Spearman of the two orderings as a figure states it (``stats.
    cluster_bootstrap_spearman``'s dict), or why there is none."""
    if np.isnan(rho["rho"]):
        return f"no Spearman: {rho['n']} model(s) with both scores (3 needed)"
    return (
        f"Spearman ρ = {rho['rho']:.2f} [{rho['lo']:.2f}, {rho['hi']:.2f}] over {rho['n']} "
        f"models (bootstrap), permutation p = {rho['p_perm']:.3f}"
    )


def scores_beside(
    frame: pd.DataFrame,
    theirs: str,
    ours: str,
    label: str,
    path: Path,
    theirs_label: str,
    ours_label: str,
    title: str,
    theirs_err: str | None = None,
    empty: str = "no model has both scores",
) -> Path:
    """A published source's own score beside ours, one row per ``label`` (an imported instance's
    models) holding both, sorted by ours (the best on top): ours with its ``<ours>_lo``..``_hi``
    interval on the left, theirs (± ``theirs_err``) on the right, each model's rank under ours
    before its name and under theirs on the right edge. A row a name to itself: names never
    overprint however close the scores; the height grows with the rows. ``empty`` where no row
    has both."""
    apply_theme()
    shown = frame.dropna(subset=[theirs, ours]).sort_values([ours, label], ascending=[True, False])
    n = len(shown)
    fig, (left, right) = plt.subplots(
        1, 2, sharey=True, figsize=(8.6, 1.5 + 0.25 * max(n, 4)), layout="constrained"
    )
    fig.suptitle(title, fontsize=8.5)
    if not n:
        for ax in (left, right):
            no_data(ax, empty)
        return save(fig, path)
    y = np.arange(n)
    for ax in (left, right):
        for row in y[(n - 1 - y) % 2 == 1]:  # every other row shaded, from the top
            ax.axhspan(row - 0.5, row + 0.5, color="0.95", lw=0, zorder=0)
    left.errorbar(
        shown[ours],
        y,
        xerr=error_extents(shown[ours], shown[f"{ours}_lo"], shown[f"{ours}_hi"]),
        fmt="o",
        ms=4,
        capsize=2,
        color="C0",
        ecolor="0.6",
        lw=0.8,
    )
    right.errorbar(
        shown[theirs],
        y,
        xerr=shown[theirs_err] if theirs_err else None,
        fmt="s",
        ms=4,
        capsize=2,
        color="C1",
        ecolor="0.6",
        lw=0.8,
    )
    ranks = {c: shown[c].rank(ascending=False, method="min").astype(int) for c in (ours, theirs)}
    left.set_yticks(y, [f"{r}. {name}" for r, name in zip(ranks[ours], shown[label])], fontsize=7)
    left.set_ylim(-0.6, n - 0.4)
    edge = right.twinx()
    edge.set_ylim(left.get_ylim())
    edge.set_yticks(y, [f"#{r}" for r in ranks[theirs]], fontsize=7)
    edge.grid(False)
    right.tick_params(axis="y", left=False)
    left.set_xlabel(textwrap.fill(ours_label, 45), fontsize=8)
    right.set_xlabel(textwrap.fill(theirs_label, 45), fontsize=8)
    left.set_title("ours: rank. model", fontsize=8.5)
    right.set_title("theirs: their rank on the right", fontsize=8.5)
    return save(fig, path)
