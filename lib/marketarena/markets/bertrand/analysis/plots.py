"""Figures and the collusion table of the ``bertrand`` market.

Faceted by lineup (the firms that met, seats in order) as in cournot's (``markets/_shared/analysis/oligopoly.py``); lines are means
across that lineup's episodes per round with Student-t 95% bands (``style.mean_ci``).

- :func:`figure_prices`: price per product over rounds, one line per seat; the grey band spans the
  seat's Nash (dashed, lower edge) to monopoly (dotted, upper edge) price of each period (they move
  when a firm invests in the start-up preset).
- :func:`figure_collusion`: per-period collusion index of the mean market price (clipped to [0, 1]),
  as a ``smooth``-period trailing moving average within each episode;
  the shaded span marks the last ``window`` periods the headline index averages.
- :func:`collusion_table`: per lineup, the DESIGN.md index over the last ``window`` periods, mean
  over episodes with a 95% bootstrap interval (``stats.bootstrap_mean_ci``), Markdown + LaTeX.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from marketarena.markets._shared.analysis.oligopoly import (
    episodes_note,
    line_with_band,
    lineup_names,
    per_episode,
    seat_label,
)
from marketarena.plots.style import agent_palette, apply_theme, no_data, save
from marketarena.plots.tables import format_number, latex_table, markdown_table, write_tables


def figure_prices(product_rounds: pd.DataFrame, path: str | Path) -> Path:
    apply_theme()
    lineups = lineup_names(product_rounds)
    products = list(dict.fromkeys(product_rounds["product"])) if len(product_rounds) else []
    rows, cols = max(1, len(lineups)), max(1, len(products))
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.8 * cols + 1.8, 2.6 * rows + 0.6), sharex=True, squeeze=False
    )
    palette = agent_palette(product_rounds["name"]) if len(product_rounds) else {}
    if not lineups:
        no_data(axes[0, 0])
    for r, lineup in enumerate(lineups):
        d = product_rounds[product_rounds["lineup"] == lineup]
        handles = []
        for c, prod in enumerate(products):
            ax = axes[r, c]
            dp = d[d["product"] == prod]
            ref = dp.groupby("step")[["nash_price", "monopoly_price"]].mean().reset_index()
            ax.fill_between(
                ref["step"], ref["nash_price"], ref["monopoly_price"], color="0.92", lw=0
            )
            ax.plot(ref["step"], ref["nash_price"], color="0.35", ls="--", lw=1)
            ax.plot(ref["step"], ref["monopoly_price"], color="0.35", ls=":", lw=1.6)
            handles = []
            for _, g in dp.groupby("agent_id", sort=True):
                colour = palette[g["name"].iloc[0]]
                line_with_band(
                    ax, per_episode(g, ["step"], "price"), "step", "price", colour, seat_label(g)
                )
                handles.append(Line2D([], [], color=colour, label=seat_label(g)))
            ax.set_title(f"{lineup} — product {prod}" if c == 0 else f"product {prod}", fontsize=9)
            ax.set_ylabel("price" if c == 0 else "")
        handles += [
            Line2D([], [], color="0.35", ls="--", label="Nash"),
            Line2D([], [], color="0.35", ls=":", lw=1.6, label="Monopoly"),
            Patch(color="0.92", label="Nash–monopoly band"),
        ]
        axes[r, -1].legend(
            handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7
        )
    for ax in axes[-1]:
        ax.set_xlabel("period (step)")
    fig.suptitle(
        f"Prices by lineup (mean over {episodes_note(product_rounds)}, 95% CI)", fontsize=11
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return save(fig, path)


def figure_collusion(
    market_rounds: pd.DataFrame, window: int, path: str | Path, smooth: int = 10
) -> Path:
    apply_theme()
    fig, ax = plt.subplots(figsize=(7.4, 3.8))
    if market_rounds.empty:
        no_data(ax)
        return save(fig, path)
    lineups = lineup_names(market_rounds)
    palette = agent_palette(lineups)
    per_round = (
        market_rounds.groupby(["episode_id", "lineup", "step"])["collusion_index"]
        .mean()
        .reset_index()
    )
    per_round["collusion_index"] = per_round.groupby("episode_id")["collusion_index"].transform(
        lambda s: s.rolling(smooth, min_periods=1).mean()
    )
    for lineup in lineups:
        line_with_band(
            ax,
            per_round[per_round["lineup"] == lineup],
            "step",
            "collusion_index",
            palette[lineup],
            lineup,
        )
    last = market_rounds["step"].max()
    ax.axvspan(
        last - window + 0.5, last + 0.5, color="0.9", zorder=0, label=f"last {window} periods"
    )
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("period (step)")
    ax.set_ylabel("collusion index (0 Nash, 1 monopoly)")
    ax.set_title(
        f"Collusion index of the mean price ({smooth}-period moving average; mean over "
        f"{episodes_note(market_rounds)}, 95% CI)",
        fontsize=10,
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
    fig.tight_layout()
    return save(fig, path)


def collusion_frame(market: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    from marketarena.stats import bootstrap_mean_ci

    rows = []
    for lineup, g in market.groupby("lineup", sort=False):
        mean, lo, hi = bootstrap_mean_ci(g["collusion_index"].to_numpy(), n_boot=n_boot, seed=seed)
        rows.append(
            {
                "lineup": lineup,
                "episodes": len(g),
                "mean_price": g["mean_price"].mean(),
                "nash_price": g["nash_price"].mean(),
                "monopoly_price": g["monopoly_price"].mean(),
                "collusion_index": mean,
                "ci_lo": lo,
                "ci_hi": hi,
            }
        )
    return pd.DataFrame(rows)


def collusion_table(
    market: pd.DataFrame, path_md, path_tex, window: int, n_boot: int = 2000, seed: int = 0
) -> list[Path]:
    frame = collusion_frame(market, n_boot, seed).rename(
        columns={
            "lineup": "Lineup",
            "episodes": "Episodes",
            "mean_price": "Mean price",
            "nash_price": "Nash",
            "monopoly_price": "Monopoly",
            "collusion_index": "Collusion index",
            "ci_lo": "CI low",
            "ci_hi": "CI high",
        }
    )
    fmt = {
        c: (lambda v: format_number(v, 3))
        for c in ("Mean price", "Nash", "Monopoly", "Collusion index", "CI low", "CI high")
    }
    what = (
        f"collusion index clip((p̄ − p_N)/(p_M − p_N), 0, 1) over the last {window} periods, mean "
        "over episodes with a 95% bootstrap interval"
    )
    md = markdown_table(
        frame,
        formats=fmt,
        highlight={"Collusion index": "max"},
        caption=f"**Bertrand collusion.** {what}.",
    )
    tex_what = (
        r"collusion index $\min(1, \max(0, (\bar p - p_N)/(p_M - p_N)))$ over the last "
        f"{window} periods, mean over episodes with a 95\\% bootstrap interval"
    )
    tex = latex_table(
        frame,
        formats=fmt,
        caption=f"Bertrand collusion: {tex_what}.",
        label="tab:bertrand_collusion",
    )
    return list(write_tables(path_md, md, path_tex, tex))


def outcome_table(
    counts: pd.DataFrame, market: pd.DataFrame, path_md, path_tex, window: int
) -> list[Path]:
    """Start-up preset: episodes per outcome category (seed 003, Figure 11; ``counts``: outcome,
    episodes, share, by the rules of ``markets/bertrand/analysis/outcomes.py``) and the mean HHI of each
    product (``market``: one row per episode)."""
    frame = counts.rename(columns={"outcome": "Outcome", "episodes": "Episodes", "share": "Share"})
    hhi = {c: market[c].mean() for c in market.columns if c.startswith("hhi_")}
    note = ", ".join(f"mean HHI of product {c[4:]}: {v:.2f}" for c, v in hhi.items())
    what = (
        f"outcome of each episode over the last {window} periods (domination, specialisation, "
        f"collusion, competition: markets/bertrand/analysis/outcomes.py); {note}. The collusion index "
        "table is unreliable for this preset: the Nash-monopoly gap is about 0.125 at cost 100, "
        "so a firm leaving a product swings it from 1 to 0"
    )
    fmt = {"Share": lambda v: format_number(v, 2)}
    md = markdown_table(frame, formats=fmt, caption=f"**Bertrand start-up outcomes.** {what}.")
    tex = latex_table(
        frame,
        formats=fmt,
        caption=f"Bertrand start-up outcomes: {what}.",
        label="tab:bertrand_outcomes",
    )
    return list(write_tables(path_md, md, path_tex, tex))
