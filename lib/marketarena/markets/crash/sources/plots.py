"""The seed's crash figures drawn from the authors' own runs (an imported instance:
``agent_bazaar.py``), one panel per model, and the tables of their score beside ours and of the
replay. Every title says these are the authors' pre-release runs.

- ``fig3_bankruptcy_models.png``: the seed's Figure 3 per model: the bankruptcy rate of each cell
  (stabilizing firms x discovery limit), mean over its seeds, runs per cell in brackets; the
  cells a model did not run are blank;
- ``figC_models.png``: appendix C per model with a grid (at least two numbers of stabilizing
  firms): price over unit cost, units filled per day and price volatility against the number of
  stabilizing firms, one line per discovery limit (the same colour in every row, one legend),
  95% bootstrap intervals over seeds;
- ``fig8_days_model.png``: the seed's Figure 8 for one model (the seed's, Gemini 3 Flash, when its
  runs are there; else the model with the most runs): per day, the mean price over unit cost, the
  active firms and the units filled, one column per number of stabilizing firms at discovery limit
  3, each run a thin line and the mean over runs a thick one;
- ``fig_survival_models.png``: survival curves per model at discovery limit 3: the share of firms
  still in business each day, one line per number of stabilizing firms (the same colour in every
  panel, one legend; the runs behind each line in the panel's title; a run that ended counts 0
  after its end);

The many-panel figures are laid out by matplotlib's constrained layout, which keeps the title,
panels and the one legend apart (a legend per panel covered lines; the title overprinted the
first row of ``figC_models.png``).
- ``fig_scores.png``: per model, our EAS (fixed anchors; mean over its runs, 95% interval) beside
  their composite market health (``published.py``), with the Spearman of the two
  (``plots/published_scores.py``'s ``scores_beside``, which lemon's imported figure draws too:
  one row per model, sorted by our score, ours on the left and theirs on the right with each
  model's rank under both, so that 20 names stay legible);
- tables ``<instance>_scores`` (per model: our EAS, their health, both ranks, the Spearman),
  ``<instance>_model_cells`` (per model and cell: the seed's variables and our EAS with
  intervals, their health), ``<instance>_departures`` (where a model's bankruptcy rate rises
  with stabilizing firms, against the seed's text: ``published.departures``), ``<instance>_replay`` (the replay's rules table) and
  ``<instance>_replay_runs`` (the runs where our rules disagree with a logged firm-day).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.published_scores import scores_beside, spearman_text
from marketarena.plots.style import (
    CONFIDENCE,
    apply_theme,
    dodge,
    mean_errorbar,
    no_data,
    save,
)
from marketarena.plots.tables import write_frame

AUTHORS = "the authors' pre-release runs (AI-Bazaar, Market-v1)"
FIGURE8_MODEL = "gemini-3-flash-preview"  # the seed's Figure 8
BAND = f"{CONFIDENCE:.0%}"


def _grid(n: int, width: float = 2.6, height: float = 2.2, cols: int = 5, **kw):
    cols = max(1, min(cols, n))
    rows = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kw)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def _shared_legend(fig, title: str) -> None:
    """One legend, right of the top row's last panel, for the series the panels share (each
    colour means the same in every panel; labels are numbers, listed in order), in place of a
    legend per panel drawn over its lines."""
    panels = [p for p in fig.axes if p.get_visible() and p.get_subplotspec() is not None]
    seen: dict[str, object] = {}
    for panel in panels:
        for handle, label in zip(*panel.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        top = [p for p in panels if p.get_subplotspec().rowspan.start == 0]
        last = max(top, key=lambda p: p.get_subplotspec().colspan.start)
        labels = sorted(seen, key=float)
        last.legend(
            [seen[k] for k in labels],
            labels,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            title=title,
            fontsize=8,
            title_fontsize=8,
            frameon=False,
        )


def bankruptcy_models(market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    models = sorted(market["model"].unique())
    fig, axes = _grid(len(models))
    stabs = sorted(market["stabilizing"].unique())
    dls = sorted(market["discovery_limit"].unique())
    for ax, model in zip(axes, models):
        sub = market[market["model"] == model]
        cells = sub.groupby(["stabilizing", "discovery_limit"])["bankruptcy_rate"].agg(
            ["mean", "size"]
        )
        grid = np.full((len(stabs), len(dls)), np.nan)
        for (s, d), row in cells.iterrows():
            grid[stabs.index(s), dls.index(d)] = row["mean"]
        ax.imshow(grid[::-1], vmin=0, vmax=1, cmap="Reds", aspect="auto")
        ax.grid(False)
        for (s, d), row in cells.iterrows():
            r, c = len(stabs) - 1 - stabs.index(s), dls.index(d)
            ax.text(
                c,
                r,
                f"{row['mean']:.2f}\n({int(row['size'])})",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if row["mean"] > 0.6 else "black",
            )
        ax.set_xticks(range(len(dls)), dls, fontsize=7)
        ax.set_yticks(range(len(stabs)), stabs[::-1], fontsize=7)
        ax.set_title(model, fontsize=8)
    fig.supxlabel("consumer discovery limit", fontsize=9)
    fig.supylabel("stabilizing firms", fontsize=9)
    fig.suptitle(f"Bankruptcy rate per cell, mean over seeds (runs); {AUTHORS}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def appendix_c_models(market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    grids = [m for m, g in market.groupby("model") if g["stabilizing"].nunique() >= 2]
    panels = [
        ("mean_price_over_cost", "price / unit cost"),
        ("volume", "units filled per day"),
        ("price_volatility", "price volatility (SD / c)"),
    ]
    dls = sorted(market["discovery_limit"].unique())  # one colour and offset each, everywhere
    fig, axes = plt.subplots(
        max(len(grids), 1),
        len(panels),
        figsize=(11, 2.6 * max(len(grids), 1) + 0.8),
        squeeze=False,
        layout="constrained",
    )
    if not grids:
        no_data(axes[0, 0], "no model ran more than one number of stabilizing firms")
    for r, model in enumerate(grids):
        sub = market[market["model"] == model]
        for c, (col, label) in enumerate(panels):
            ax = axes[r, c]
            for d, g in sub.groupby("discovery_limit"):
                i = dls.index(d)
                mean_errorbar(
                    ax,
                    g,
                    "stabilizing",
                    col,
                    f"{d}",
                    colour=f"C{i}",
                    offset=dodge(i, len(dls), 0.4),
                    method="bootstrap",
                    bounds=(0.0, np.inf),
                )
            ax.set_xticks(sorted(sub["stabilizing"].unique()))
            ax.set_ylabel(label, fontsize=8)
            if c == 0:
                ax.set_title(model, fontsize=9, loc="left")
            if r == len(grids) - 1:
                ax.set_xlabel("stabilizing firms")
    _shared_legend(fig, "consumer\ndiscovery limit")
    fig.suptitle(
        f"Appendix C per model: means over seeds with {BAND} bootstrap intervals; {AUTHORS}",
        fontsize=10,
    )
    return save(fig, path)


def figure8_model(market: pd.DataFrame) -> str | None:
    if market.empty:
        return None
    if FIGURE8_MODEL in set(market["model"]):
        return FIGURE8_MODEL
    return market["model"].value_counts().sort_index().idxmax()


def per_day_model(days: pd.DataFrame, market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    model = figure8_model(market)
    sub = market[(market["model"] == model) & (market["discovery_limit"] == 3)]
    stabs = sorted(sub["stabilizing"].unique())
    rows = [
        ("price_over_cost", "mean price / unit cost"),
        ("active", "active firms"),
        ("filled", "units filled"),
    ]
    fig, axes = plt.subplots(
        len(rows),
        max(len(stabs), 1),
        figsize=(3.4 * max(len(stabs), 1), 6.5),
        sharex=True,
        squeeze=False,
    )
    if not stabs:
        no_data(axes[0, 0], "no run at discovery limit 3")
        return save(fig, path)
    for c, s in enumerate(stabs):
        eps = sub[sub["stabilizing"] == s]["episode_id"]
        mine = days[days["episode_id"].isin(eps)]
        for r, (col, label) in enumerate(rows):
            ax = axes[r, c]
            for _, g in mine.groupby("episode_id"):
                ax.plot(g["step"] + 1, g[col], lw=0.6, alpha=0.35, color="C0")
            ax.plot(
                mine.groupby("step")[col].mean().index + 1,
                mine.groupby("step")[col].mean(),
                lw=1.6,
                color="C3",
            )
            if col == "price_over_cost":
                ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            if r == 0:
                ax.set_title(f"{s} stabilizing ({len(eps)} runs)", fontsize=9)
        axes[-1, c].set_xlabel("day")
    fig.suptitle(
        f"{model}, discovery limit 3: each run (thin) and the mean over the runs still "
        f"going (thick); {AUTHORS}",
        fontsize=9,
    )
    fig.tight_layout()
    return save(fig, path)


def survival_models(survival: pd.DataFrame, market: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    at3 = market[market["discovery_limit"] == 3]
    models = sorted(at3["model"].unique())
    stabs = sorted(at3["stabilizing"].unique())  # one colour each, in every panel
    fig, axes = _grid(len(models), width=2.8, height=2.4, layout="constrained")
    horizon = int(survival["step"].max()) + 1 if len(survival) else 1
    for ax, model in zip(axes, models):
        sub = at3[at3["model"] == model]
        runs = []
        for s, g in sub.groupby("stabilizing"):
            curves = [
                survival[survival["episode_id"] == ep]
                .set_index("step")["share_active"]
                .reindex(range(horizon))
                .fillna(0.0)
                .to_numpy()
                for ep in g["episode_id"]
            ]
            ax.plot(
                np.arange(1, horizon + 1),
                np.mean(curves, axis=0),
                lw=1.2,
                color=f"C{stabs.index(s)}",
                label=f"{s}",
            )
            runs.append((s, len(curves)))
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(
            f"{model}\nruns at {'/'.join(str(s) for s, _ in runs)}: "
            f"{'/'.join(str(n) for _, n in runs)}",
            fontsize=7.5,
        )
    _shared_legend(fig, "stabilizing\nfirms")
    fig.supxlabel("day", fontsize=9)
    fig.supylabel("share of firms in business", fontsize=9)
    fig.suptitle(
        f"Survival at discovery limit 3, per model and number of stabilizing firms; {AUTHORS}",
        fontsize=10,
    )
    return save(fig, path)


def scores(board: pd.DataFrame, rho: dict, path: Path) -> Path:
    return scores_beside(
        board,
        "their_health",
        "eas",
        "name",
        path,
        "their composite market health (mean over the model's cells)",
        f"our EAS (mean over the model's runs, {BAND} interval)",
        f"Their score beside ours, per model: {spearman_text(rho)}\n{AUTHORS}",
    )


def tables(
    frames: dict[str, pd.DataFrame], board: pd.DataFrame, rho: dict, tables_dir: Path, instance: str
) -> list[Path]:
    from marketarena.markets.crash.sources import published

    out = []
    shown = board[
        ["rank", "name", "runs", "eas", "eas_lo", "eas_hi", "their_health", "rank_theirs"]
    ].rename(columns={"name": "model", "rank": "rank_ours"})
    out += write_frame(
        shown,
        Path(tables_dir) / f"{instance}_scores",
        f"Per model: our EAS (fixed anchors; mean over its runs with a {BAND} "
        f"bootstrap interval) beside the authors' composite market health (mean over "
        f"its cells), with each ranking; Spearman of the two {rho['rho']:.3f} "
        f"[{rho['lo']:.3f}, {rho['hi']:.3f}] over {rho['n']} models (permutation "
        f"p {rho['p_perm']:.3g}); {AUTHORS}",
    )
    cells = published.cell_table(frames["agents"])
    out += write_frame(
        cells,
        Path(tables_dir) / f"{instance}_model_cells",
        f"Per model and cell: runs, the seed's variables and our EAS (means over "
        f"the cell's runs with {BAND} bootstrap intervals), their health; {AUTHORS}",
    )
    out += write_frame(
        frames["replay_rules"],
        Path(tables_dir) / f"{instance}_replay",
        "Our crash rules against their engine: every logged firm-day replayed from "
        "its logged inputs; the firm-days that agree within a cent (units, revenue, "
        "end cash, bankruptcy) under our rules, and those each other rule explains",
    )
    rises = published.departures(frames["market"])
    out += write_frame(
        rises,
        Path(tables_dir) / f"{instance}_departures",
        "Where the authors' runs depart from the seed's text (\"stabilizing firms reduce "
        'bankruptcy rates across all models"): per model and discovery limit, the bankruptcy '
        "rate (mean over seeds, runs beside) at the fewest and the most stabilizing firms the "
        f"model ran, where it rises: {len(rises)} such model x discovery-limit pairs; {AUTHORS}",
    )
    runs = frames["replay_runs"]
    out += write_frame(
        runs[runs["agree"] < 1].sort_values("agree"),
        Path(tables_dir) / f"{instance}_replay_runs",
        f"The runs where our rules disagree with a logged firm-day ({len(runs)} "
        f"runs replayed; {(runs['agree'] == 1).sum()} agree on every firm-day)",
    )
    return out


def draw_all(
    frames: dict[str, pd.DataFrame],
    board: pd.DataFrame,
    figures_dir: Path,
    tables_dir: Path,
    instance: str,
) -> list[Path]:
    from marketarena.markets.crash.sources import published

    market = frames["market"]
    rho = published.spearman(board)
    d = Path(figures_dir)
    return [
        bankruptcy_models(market, d / "fig3_bankruptcy_models.png"),
        appendix_c_models(market, d / "figC_models.png"),
        per_day_model(frames["days"], market, d / "fig8_days_model.png"),
        survival_models(frames["survival"], market, d / "fig_survival_models.png"),
        scores(board, rho, d / "fig_scores.png"),
        *tables(frames, board, rho, tables_dir, instance),
    ]
