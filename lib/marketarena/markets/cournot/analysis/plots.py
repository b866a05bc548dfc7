"""Figures and tables of the ``cournot`` market (seed 003, Figures 2 and 3; appendix B.3 tests).

Conventions (``markets/_shared/analysis/oligopoly.py``, shared with bertrand): the figures are
faceted by *lineup* (the firms that met, seats in order; a round-robin roster has several), one line
per seat, the mean across that lineup's episodes per round with a Student-t band at
``plots.style.CONFIDENCE`` (95%; none with one episode), colours from :func:`agent_palette` over
all names. Reference lines use the seat's
colour: dashed = its Cournot-Nash value, dotted = its monopoly (joint-profit) value.

- :func:`figure_quantities` (Figure 2): one row per lineup, one panel per product, quantity per round.
- :func:`figure_cv` (Figure 3): specialisation CV per round, one panel per lineup.
- :func:`specialisation_table`: the block bootstrap test per run and pooled, Markdown + LaTeX.
- :func:`reference_table`: the Nash / monopoly solution of ``reference@cournot`` as Markdown.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from marketarena.markets._shared.analysis.oligopoly import (
    BAND,
    episodes_note,
    line_with_band,
    lineup_names,
    per_episode,
    seat_label,
)
from marketarena.plots.style import CONFIDENCE, agent_palette, apply_theme, no_data, save
from marketarena.plots.tables import format_number, latex_table, markdown_table, write_tables


def _reference_legend(ax, palette: dict) -> None:
    handles = [Line2D([], [], color=c, lw=1.6, label=n) for n, c in palette.items()]
    handles += [
        Line2D([], [], color="0.3", ls="--", label="Nash"),
        Line2D([], [], color="0.3", ls=":", lw=2, label="Monopoly"),
    ]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=True)


def figure_quantities(product_rounds: pd.DataFrame, path: str | Path) -> Path:
    """Quantity per product over rounds with each firm's Nash and monopoly quantity (Figure 2).

    One row of panels per lineup (the firms that met, seats in order), one column per product.
    """
    apply_theme()
    lineups = lineup_names(product_rounds)
    products = list(dict.fromkeys(product_rounds["product"])) if len(product_rounds) else []
    rows, cols = max(1, len(lineups)), max(1, len(products))
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(4.6 * cols + 1.6, 2.6 * rows + 0.6),
        sharey=True,
        sharex=True,
        squeeze=False,
    )
    palette = agent_palette(product_rounds["name"]) if len(product_rounds) else {}
    if not lineups:
        no_data(axes[0, 0])
    for r, lineup in enumerate(lineups):
        d = product_rounds[product_rounds["lineup"] == lineup]
        for c, prod in enumerate(products):
            ax = axes[r, c]
            for _, g in d[d["product"] == prod].groupby("agent_id", sort=True):
                colour = palette[g["name"].iloc[0]]
                line_with_band(
                    ax,
                    per_episode(g, ["step"], "quantity"),
                    "step",
                    "quantity",
                    colour,
                    seat_label(g),
                )
                ax.axhline(g["nash_quantity"].iloc[0], color=colour, ls="--", lw=1.1)
                ax.axhline(g["monopoly_quantity"].iloc[0], color=colour, ls=":", lw=2)
            ax.set_title(
                f"{lineup} ({episodes_note(d)}) — product {prod}" if c == 0 else f"product {prod}",
                fontsize=9,
            )
            ax.set_ylabel("quantity (units)" if c == 0 else "")
            ax.set_ylim(bottom=0)
        _reference_legend(
            axes[r, -1],
            {
                seat_label(g): palette[g["name"].iloc[0]]
                for _, g in d.groupby("agent_id", sort=True)
            },
        )
    for ax in axes[-1]:
        ax.set_xlabel("round (step)")
    fig.suptitle(
        f"Quantities per product by lineup (mean over each lineup's episodes, {BAND} "
        "band where it has two or more; dashed = Nash, dotted = monopoly)",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return save(fig, path)


def figure_cv(agent_rounds: pd.DataFrame, path: str | Path, max_cols: int = 3) -> Path:
    """Specialisation CV over rounds with each firm's Nash and monopoly CV (Figure 3), per lineup."""
    apply_theme()
    lineups = lineup_names(agent_rounds)
    n = max(1, len(lineups))
    cols = min(n, max_cols)
    rows = -(-n // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.4 * cols + 1.6, 2.8 * rows + 0.6), sharey=True, squeeze=False
    )
    if not lineups:
        no_data(axes[0, 0])
    palette = agent_palette(agent_rounds["name"]) if len(agent_rounds) else {}
    for k, lineup in enumerate(lineups):
        ax = axes[k // cols, k % cols]
        d = agent_rounds[agent_rounds["lineup"] == lineup]
        seats = {}
        for _, g in d.groupby("agent_id", sort=True):
            colour = palette[g["name"].iloc[0]]
            seats[seat_label(g)] = colour
            line_with_band(ax, per_episode(g, ["step"], "cv"), "step", "cv", colour, seat_label(g))
            ax.axhline(g["nash_cv"].iloc[0], color=colour, ls="--", lw=1.1)
            ax.axhline(g["monopoly_cv"].iloc[0], color=colour, ls=":", lw=2)
        ax.set_title(f"{lineup} ({episodes_note(d)})", fontsize=9)
        # the CV of M quantities is at most sqrt(M - 1): 1 for two products, more for more
        top = max(1.0, float(np.nanmax(d[["cv", "nash_cv", "monopoly_cv"]].to_numpy(float))))
        ax.set_ylim(-0.03, top * 1.05)
        ax.set_xlabel("round (step)")
        ax.set_ylabel("CV across products" if k % cols == 0 else "")
        ax.legend(
            handles=[Line2D([], [], color=c, label=s) for s, c in seats.items()],
            fontsize=7,
            loc="lower right",
        )
    for k in range(len(lineups), rows * cols):
        axes[k // cols, k % cols].set_visible(False)
    fig.suptitle(
        f"Specialisation CV per round (mean over each lineup's episodes, {BAND} band where "
        "it has two or more; dashed = Nash CV, dotted = monopoly CV)",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return save(fig, path)


TEST_COLUMNS = [
    "scope",
    "episode_id",
    "name",
    "mean",
    "nash_cv",
    "ci_lo",
    "ci_hi",
    "p_value",
    "significant",
]


def specialisation_frame(spec: pd.DataFrame) -> pd.DataFrame:
    """Rows of the test table: per name, its pooled test first, then each run."""
    if spec.empty:
        return pd.DataFrame(columns=TEST_COLUMNS)
    df = spec.copy()
    df["_pooled"] = df["scope"].ne("pooled")
    df = df.sort_values(["name", "_pooled", "episode_id"])
    return df[TEST_COLUMNS].reset_index(drop=True)


def specialisation_table(
    spec: pd.DataFrame,
    path_md: str | Path,
    path_tex: str | Path,
    alpha: float = 0.05,
    level: float = CONFIDENCE,
) -> list[Path]:
    """The one-sided block bootstrap test of mean CV > Nash CV, per run and pooled (md + tex);
    ``level``: the interval's level (params ``bootstrap.level``)."""
    frame = specialisation_frame(spec)
    shown = frame.rename(
        columns={
            "scope": "Scope",
            "episode_id": "Episode",
            "name": "Firm",
            "mean": "Mean CV",
            "nash_cv": "Nash CV",
            "ci_lo": "CI low",
            "ci_hi": "CI high",
            "p_value": "p",
            "significant": "Significant",
        }
    )
    shown["Significant"] = shown["Significant"].map({True: "yes", False: "no"})
    fmt = {c: (lambda v: format_number(v, 3)) for c in ("Mean CV", "Nash CV", "CI low", "CI high")}
    fmt["p"] = lambda v: format_number(v, 4)
    n = int(spec["n_resamples"].iloc[0]) if len(spec) else 0
    block = int(spec["block"].iloc[0]) if len(spec) else 0
    what = (
        f"circular block bootstrap (block {block}, {n:,} resamples) of the mean per-round CV, "
        f"one-sided against the firm's Nash CV; {level:.0%} percentile interval; significant at "
        f"p < {alpha:g}. Pooled: runs resampled independently."
    )
    md = markdown_table(
        shown,
        formats=fmt,
        align={"Scope": "l", "Episode": "l", "Firm": "l", "Significant": "c"},
        caption=f"**Specialisation test.** {what}",
    )
    tex_what = (
        f"circular block bootstrap (block {block}, {n:,} resamples) of the mean per-round CV, "
        f"one-sided against the firm's Nash CV; {100 * level:.0f}\\% percentile interval; significant at "
        f"$p < {alpha:g}$. Pooled: runs resampled independently."
    )
    tex = latex_table(
        shown,
        formats=fmt,
        align={"Scope": "l", "Episode": "l", "Firm": "l", "Significant": "c"},
        row_group="Firm",
        caption=f"Specialisation test: {tex_what}",
        label="tab:cournot_specialisation",
    )
    return list(write_tables(path_md, md, path_tex, tex))


def reference_table(summary: dict, path: str | Path) -> Path:
    """Nash and monopoly quantities, prices, profits and CVs per firm (seat) and product, Markdown."""
    products = summary.get("products") or [str(k) for k in range(summary["n_products"])]
    rows = []
    for which in ("nash", "monopoly"):
        sol = summary[which]
        for i in range(summary["n_firms"]):
            for k, prod in enumerate(products):
                rows.append(
                    {
                        "solution": which,
                        "firm": f"F{i + 1}",
                        "product": prod,
                        "quantity": sol["quantities"][i][k],
                        "price": sol["prices"][k],
                        "profit": sol["profits"][i][k],
                        "firm CV": sol["cv"][i],
                    }
                )
    text = markdown_table(
        pd.DataFrame(rows), caption="**Cournot references** (seat F1 = first cost row)."
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
